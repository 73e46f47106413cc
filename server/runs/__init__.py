"""The run machinery: runs on an instance or a worker, their queue, locks, fencing and routing.

Nothing here knows HTTP or the command line: ``server.http`` and ``server.cli`` use it.
"""
