"""Where documents are kept and searched: the embedded and Redis indexes.

Both backends' scoring, the document ingestion writes (``index_source``), and the in-memory test
double.
"""
