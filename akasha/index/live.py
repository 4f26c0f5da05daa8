"""The corpus in memory: the chunks, files and search structures (BM25, dense) one process searches.

Every ingest changes it through :meth:`LiveCorpus.apply`, which edits the structures in place
(a cost that grows with the change, not the corpus) under one rollback guard: a failure part
way empties the corpus in memory, never searched half built, and the next use reloads the
last committed corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from akasha.metadata import own
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk


def doc_of(chunk_id: str) -> str:
    """The file or document key of a chunk id (``<key>#<seq>``)."""
    return chunk_id.rsplit("#", 1)[0]


@dataclass
class Change:
    """What one ingest does to the corpus in memory (made by :mod:`akasha.index.changes`).

    ``added``: chunks whose text enters the search structures; ``stale``: ids that leave them (gone, or
    replaced by an added chunk). ``chunks`` and ``files`` are the whole corpus afterwards, or with
    ``partial=True`` the documents that enter or change, ``dropped`` the document keys that leave.
    """

    added: list[Chunk]
    stale: list[str]
    chunks: Mapping[str, Chunk]
    files: Mapping[str, str]
    partial: bool = False
    dropped: Sequence[str] = field(default_factory=tuple)


class LiveCorpus:
    """The searchable corpus of one process: ``bm25`` and ``dense`` over ``chunks`` of ``files``.

    ``state_key`` names the corpus state held (None: nothing loaded), ``source`` the data
    source it belongs to, ``committed`` the (source, state) this process last persisted,
    ``lexical_only`` a corpus with BM25 but no vectors yet (see ``sync(lexical=True)``).
    """

    def __init__(self, tokenizer: str) -> None:
        self.tokenizer = tokenizer
        #: Called by the rollback guard before the corpus is emptied (the index commits what waits for it).
        self.on_rollback: Callable[[], None] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the corpus in memory (the next use reloads the last committed one)."""
        self.bm25, self.dense = BM25Index(tokenizer=self.tokenizer), DenseIndex()
        self.chunks: Mapping[str, Chunk] = {}
        self.files: dict[str, str] = {}
        self.state_key: str | None = None
        self.source: str | None = None
        self.committed: tuple[str, str] | None = None
        self.lexical_only = False
        self._by_doc: tuple[Mapping[str, Chunk], dict[str, list[str]]] | None = None

    def replace(self, bm25: BM25Index, dense: DenseIndex, chunks: Mapping[str, Chunk], files: Mapping[str, str],
                state_key: str, source: str | None) -> None:
        """Make fully built structures the corpus in memory (a snapshot, a store's records, a BM25 file)."""
        self.bm25, self.dense, self.chunks, self.files = bm25, dense, chunks, dict(files)
        self.state_key, self.source = state_key, source

    def serve(self, chunks: list[Chunk], matrix: np.ndarray, files: Mapping[str, str], state_key: str,
              source: str) -> None:
        """Make stored records (with their vectors, row for row) the corpus: BM25 over their texts."""
        ids = [c.id for c in chunks]
        bm25 = BM25Index(tokenizer=self.tokenizer)
        bm25.add(ids, [c.text for c in chunks])
        self.replace(bm25, DenseIndex.from_matrix(ids, matrix), {c.id: c for c in chunks}, files, state_key, source)

    def apply(self, change: Change, state_key: str, source: str, *, vectors: Mapping[str, np.ndarray] | None,
              tokens: list[list[str]] | None = None,
              passages: Callable[[Sequence[Chunk]], list[bytes | None] | None] | None = None) -> None:
        """Apply ``change`` to the structures, the chunks and the files, then name the state ``state_key``.

        ``vectors`` (content hash -> vector) for the added chunks, or None for BM25 alone
        (``lexical_only``); ``tokens``: the added texts' BM25 tokens when computed ahead.
        The rollback guard: on any exception the corpus in memory is emptied.
        """
        try:
            self.bm25.remove(change.stale)
            if vectors is None:
                self.dense = DenseIndex()  # vectors come with the first dense search
            else:
                self.dense.remove(change.stale)
            if change.added:
                ids = [c.id for c in change.added]
                if tokens is not None:
                    self.bm25.add_tokens(ids, tokens)
                else:
                    self.bm25.add(ids, [c.text for c in change.added])
                if vectors is not None:
                    self.dense.add(ids, np.stack([vectors[own(c.metadata, "content_hash")] for c in change.added]),
                                   passages(change.added) if passages is not None else None)
            if change.partial:
                self._edit_in_place(change)
            else:
                self.chunks, self.files = change.chunks, dict(change.files)
        except BaseException:
            if self.on_rollback is not None:
                self.on_rollback()
            self.reset()  # half-updated structures must never be searched
            raise
        self.state_key, self.source, self.lexical_only = state_key, source, vectors is None

    def _edit_in_place(self, change: Change) -> None:
        """Replace the chunks and files of ``change``'s documents: a copy per call would cost as much as the
        corpus (a YAML pipeline ingests ten documents at a time into thousands)."""
        chunks = self.chunks
        if not isinstance(chunks, dict):  # a snapshot's lazily decoded chunks: decode once, then edit in place
            chunks = {cid: chunks[cid] for cid in chunks}
        by_doc = self.doc_chunk_ids()
        for key in (*change.files, *change.dropped):
            for cid in by_doc.pop(key, ()):
                chunks.pop(cid, None)
        chunks.update(change.chunks)
        for cid in change.chunks:
            by_doc.setdefault(doc_of(cid), []).append(cid)
        for key in change.dropped:
            self.files.pop(key, None)
        self.files.update(change.files)
        self.chunks, self._by_doc = chunks, (chunks, by_doc)

    def doc_chunk_ids(self) -> dict[str, list[str]]:
        """Document or file key -> its chunk ids in the corpus in memory (kept up to date by partial changes)."""
        if self._by_doc is None or self._by_doc[0] is not self.chunks:
            by_doc: dict[str, list[str]] = {}
            for chunk_id in self.chunks:
                by_doc.setdefault(doc_of(chunk_id), []).append(chunk_id)
            self._by_doc = (self.chunks, by_doc)
        return self._by_doc[1]

    def filtered(self, pairs: Sequence[tuple[str, float]], k: int, filters: Mapping[str, object] | None
                 ) -> list[tuple[Chunk, float]]:
        """The first ``k`` of ``pairs`` (chunk id, score) whose chunk's metadata matches ``filters``."""
        from akasha.stores.base import first_matching

        return first_matching(((self.chunks.get(chunk_id), score) for chunk_id, score in pairs), filters, k)
