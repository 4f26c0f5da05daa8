"""Keeping a :class:`~akasha.stores.base.Store` in step with a content-keyed index.

The index decides what changed, what to embed and when a state is committed; this link
carries the outcome into the store in the form its own tools read: one record per chunk,
with its text, vector and metadata (source, page, chunk index, content hash, embedder).
The committed corpus state is saved there too, so another machine embeds nothing.

Crash safety: records are written first, stale ones removed next, the state saved last, so a
failure part way leaves the previous state readable and the next sync re-applies the same
difference (upserts by chunk id, idempotent removals).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from akasha.metadata import own, put_own
from akasha.stores.base import batches
from akasha.types import Chunk

log = logging.getLogger(__name__)

#: Records written per store call (Chroma refuses very large batches).
WRITE_BATCH = 1000
#: The source key under which the store points at the corpus committed last.
LAST = "__last__"


def state_key_for(namespace: str, source_key: str) -> str:
    """The key under which the store keeps one corpus's committed state."""
    return hashlib.sha256(f"{namespace}|{source_key}".encode()).hexdigest()[:32]


class StoreLink:
    """Writes an index's corpus into ``store`` and reads back what another machine left there."""

    def __init__(self, store: Any, embedder_name: Callable[[], str], namespace: Callable[[], str],
                 corpus: str = "") -> None:
        """``embedder_name`` and ``namespace`` are called on use (the identity is resolved on first use)."""
        self.store = store
        self._embedder_name = embedder_name
        self._namespace = namespace
        self.corpus = corpus

    @property
    def embedder_name(self) -> str:
        """The identity of the vectors this link writes (``embedder`` metadata of every record)."""
        return self._embedder_name()

    @property
    def namespace(self) -> str:
        """The namespace of the corpus states this link saves and reads."""
        return self._namespace()

    @property
    def name(self) -> str:
        return str(getattr(self.store, "name", type(self.store).__name__))

    # ------------------------------------------------------------------ reads
    def vectors_for(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors the store already holds for these chunk texts (same embedder), by content hash."""
        if not content_hashes:
            return {}
        return dict(self.store.vectors_for(list(content_hashes), self.embedder_name))

    def load_state(self, source_key: str) -> tuple[str, dict[str, str]] | None:
        """(state key, {path: content key}) the store last committed for this source, or None."""
        state = self.store.load_state(state_key_for(self.namespace, source_key))
        if not state or state.get("namespace") != self.namespace:
            return None
        files = state.get("files")
        if not isinstance(files, Mapping):
            return None
        return str(state.get("state", "")), {str(k): str(v) for k, v in files.items()}

    # ----------------------------------------------------------------- writes
    def publish(self, chunks: Sequence[Chunk], vectors: Mapping[str, np.ndarray], documents: Sequence[str],
                keep: set[str]) -> None:
        """Upsert ``chunks`` (vectors by content hash) the store lacks, then drop the records of ``documents``
        (files that changed or vanished) whose ids are not in ``keep``, the current corpus's."""
        fresh = self._not_yet_stored(chunks)
        for part in batches(fresh, WRITE_BATCH):
            records = [self.record(chunk) for chunk in part]
            matrix = np.stack([np.asarray(vectors[own(c.metadata, "content_hash")], dtype=np.float32) for c in part])
            self.store.upsert(records, matrix)
        stale: list[str] = []
        for names in batches(documents, WRITE_BATCH):
            found = self.store.ids_of_documents(list(names))
            stale.extend(i for i in found if i not in keep)
        if stale:
            self.store.remove(stale)
        if fresh or stale:
            log.debug("store %s: wrote %d records, removed %d", self.name, len(fresh), len(stale))

    def save_state(self, source_key: str, state_key: str, files: Mapping[str, str]) -> None:
        """Save one corpus's committed state, then point "the last committed corpus" at it."""
        namespace = self.namespace
        self.store.save_state(state_key_for(namespace, source_key),
                              {"namespace": namespace, "source": source_key, "state": state_key,
                               "embedder": self.embedder_name, "files": dict(files)})
        self.store.save_state(state_key_for(namespace, LAST), {"namespace": namespace, "source": source_key})

    def last_source(self) -> str | None:
        """The source key of the corpus committed last into the store (for this embedder and chunking)."""
        pointer = self.store.load_state(state_key_for(self.namespace, LAST))
        if not pointer or pointer.get("namespace") != self.namespace:
            return None
        return str(pointer.get("source") or "") or None

    def records_of(self, files: Mapping[str, str] | None) -> tuple[list[Chunk], np.ndarray]:
        """Every stored record of these files (by document id; ``None``: all), each id once, with its vectors
        row for row: a corpus rebuilt from the store."""
        chunks: list[Chunk] = []
        seen: set[str] = set()
        blocks: list[np.ndarray] = []
        for part, vectors in self.store.scan():
            keep = []
            for i, chunk in enumerate(part):
                if chunk.id not in seen and (files is None or chunk.doc_id in files):
                    seen.add(chunk.id)
                    keep.append(i)
            chunks.extend(part[i] for i in keep)
            blocks.append(np.asarray(vectors, dtype=np.float32).reshape(len(part), -1)[keep])
        matrix = np.concatenate(blocks, axis=0) if blocks else np.zeros((0, 0), dtype=np.float32)
        return chunks, matrix

    def record(self, chunk: Chunk) -> Chunk:
        """The chunk as the store keeps it: metadata names its source, document and embedder."""
        meta = dict(chunk.metadata)
        meta.setdefault("source", chunk.doc_id)
        put_own(meta, "doc_id", chunk.doc_id)  # a document's own doc_id stays (akasha.metadata)
        meta["embedder"] = self.embedder_name
        if self.corpus:
            meta["corpus"] = self.corpus
        return Chunk(chunk.id, chunk.text, meta)

    def _not_yet_stored(self, added: Sequence[Chunk]) -> list[Chunk]:
        """``added`` minus chunks the store already holds with the same text (a second machine's first sync);
        records an earlier release wrote (no ``doc_id``) count as missing, so they are rewritten in full."""
        if not added:
            return []
        stored: dict[str, str] = {}
        for part in batches(added, WRITE_BATCH):
            for chunk in self.store.fetch([c.id for c in part]):
                if own(chunk.metadata, "doc_id") is not None:  # an earlier release's record lacks it: rewrite
                    stored[chunk.id] = str(own(chunk.metadata, "content_hash", ""))
        return [c for c in added if stored.get(c.id) != own(c.metadata, "content_hash")]


__all__ = ["StoreLink", "state_key_for", "WRITE_BATCH"]
