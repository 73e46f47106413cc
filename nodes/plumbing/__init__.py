"""What the nodes of every flow use; no node lives here.

The run's ``Context`` and ``Services``, admission, the prompts, model decisions, views of the
evidence, and writing the answer.
"""
