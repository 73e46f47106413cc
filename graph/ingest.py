"""What the workers and the command line use to run ingestion as jobs (re-exported from sources).

Kept apart from ``graph.api`` so that importing the doors' API stays light (this pulls in
numpy and the Redis index).
"""

from seekgraph.providers.embeddings import Embedder
from seekgraph.sources.indexes.redis_index import RedisIndex
from seekgraph.sources.ingestion.ingest_jobs import (
    IngestError,
    IngestJobs,
    IngestTask,
    WorkerEmbedding,
)

__all__ = ["Embedder", "IngestError", "IngestJobs", "IngestTask", "RedisIndex", "WorkerEmbedding"]
