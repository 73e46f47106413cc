"""Where knowledge comes from: the ``Source`` protocol and registry, then one room per concern.

At the top, what every room shares: ``base`` (the ``Source`` protocol, the person asking),
``registry`` (the sources a run may search, the workspace's users), ``errors``, and
``resilient`` (calling a remote service: timeouts, retries, a circuit breaker). The rooms:
``indexes`` (where documents are kept and searched), ``ingestion`` (files, exports and
workspaces read into documents), ``connectors`` (live systems and a remote search service)
and ``web``. Arrows point downward: connectors and the web may use ingestion, ingestion may
use the indexes, never the other way.
"""
