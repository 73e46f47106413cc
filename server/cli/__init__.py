"""The ``seekgraph`` command line."""
