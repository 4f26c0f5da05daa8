"""The bookkeeping of the stores that live inside the process (memory, faiss).

Both keep their vectors in rows (a numpy matrix, a faiss index); :class:`InProcessStore` keeps
the look-ups beside them (chunk id -> row, row -> chunk, the chunks of each document and content
hash, the index's state) and answers the contract methods that need nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from akasha.metadata import own
from akasha.retrieval.bm25 import BM25Index
from akasha.stores.base import BaseStore, batches, first_matching, json_state
from akasha.stores.query import lexical_tokenizer
from akasha.types import Chunk


class InProcessStore(BaseStore):
    """A store whose records and state are Python objects; subclasses hold the vectors by row number.

    Its lexical side is a BM25 index of the texts, built at the first lexical query, then updated for
    the ids written since (see docs/results.md).
    """

    capabilities = frozenset({"dense", "lexical"})
    lexical_side = True

    def __init__(self, dimension: int | None = None, embedder: str | None = None) -> None:
        super().__init__(dimension, embedder)
        self._row_of: dict[str, int] = {}  # chunk id -> row
        self._chunk_at: dict[int, Chunk] = {}  # row -> chunk
        self._by_doc: dict[str, set[str]] = {}  # doc id -> chunk ids
        self._by_hash: dict[str, set[str]] = {}  # content hash -> chunk ids
        self._states: dict[str, dict[str, Any]] = {}
        self._bm25: Any = None  # built at the first lexical query
        self._bm25_tokenizer: str | None = None  # the lexical_tokenizer it was built with
        self._bm25_stale: set[str] = set()  # ids written or removed since the index was last brought up to date

    # ------------------------------------------------ for the subclasses
    def _put(self, chunk: Chunk, row: int) -> None:
        """Record a copy of ``chunk`` at ``row`` (any earlier record of its id was dropped with :meth:`_drop`)."""
        stored = Chunk(chunk.id, chunk.text, dict(chunk.metadata))
        self._bm25_stale.add(chunk.id)
        self._row_of[chunk.id] = row
        self._chunk_at[row] = stored
        self._by_doc.setdefault(stored.doc_id, set()).add(chunk.id)
        content_hash = own(stored.metadata, "content_hash")
        if isinstance(content_hash, str):
            self._by_hash.setdefault(content_hash, set()).add(chunk.id)

    def _drop(self, ids: Iterable[str]) -> list[int]:
        """Forget the records with these ids; the rows they held (ids without a record are skipped)."""
        rows = []
        for chunk_id in ids:
            row = self._row_of.pop(chunk_id, None)
            if row is None:
                continue
            self._bm25_stale.add(chunk_id)
            chunk = self._chunk_at.pop(row)
            for table, key in ((self._by_doc, chunk.doc_id), (self._by_hash, own(chunk.metadata, "content_hash"))):
                found = table.get(key) if isinstance(key, str) else None
                if found is not None:
                    found.discard(chunk_id)
                    if not found:
                        del table[key]
            rows.append(row)
        return rows

    def _rows_for(self, hashes: list[str], embedder: str) -> dict[str, int]:
        """content hash -> the row of one record of that text made by ``embedder`` (none named: the store's)."""
        out: dict[str, int] = {}
        for content_hash in hashes:
            for chunk_id in sorted(self._by_hash.get(content_hash, ())):
                row = self._row_of[chunk_id]
                if self._chunk_at[row].metadata.get("embedder", self.embedder) == embedder:
                    out[content_hash] = row
                    break
        return out

    def _vectors_at(self, rows: list[int]) -> np.ndarray:
        """The unit vectors held at ``rows`` (at least one), one row each (a subclass keeps them)."""
        raise NotImplementedError

    def _vectors_for(self, hashes: list[str], embedder: str) -> dict[str, np.ndarray]:
        found = self._rows_for(hashes, embedder)  # _vectors_at needs at least one row
        return dict(zip(found, self._vectors_at(list(found.values())), strict=True)) if found else {}

    def _scan(self, batch: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
        for part in batches(sorted(self._chunk_at), batch):  # row order
            yield [self._chunk_at[row] for row in part], self._vectors_at(list(part))

    def _lexical(self, tokens: tuple[str, ...], k: int, filters: dict[str, Any] | None) -> list[tuple[Chunk, float]]:
        """BM25 over the records' texts (tokenized with the store's ``lexical_tokenizer``), best first."""
        if not tokens or not self._row_of:
            return []
        ranked = self._lexical_index().search(list(tokens), len(self._row_of) if filters else k)
        return first_matching(((self._chunk_at[self._row_of[i]], score) for i, score in ranked), filters, k)

    def _lexical_index(self) -> Any:
        """The BM25 index of the records' texts, brought up to date with the writes since the last lexical query."""
        tokenize = lexical_tokenizer(self.lexical_tokenizer)
        if self._bm25 is None or self._bm25_tokenizer != self.lexical_tokenizer:
            self._bm25, self._bm25_tokenizer = BM25Index(), self.lexical_tokenizer
            self._bm25_stale = set(self._row_of)
        if self._bm25_stale:
            changed = sorted(self._bm25_stale)
            self._bm25.remove(changed)
            present = [i for i in changed if i in self._row_of]
            self._bm25.add_tokens(present, [tokenize(self._chunk_at[self._row_of[i]].text) for i in present])
            self._bm25_stale = set()
        return self._bm25

    def _holds_alone(self, tokens: Sequence[str], chunk_id: str) -> bool:
        return bool(self._lexical_index().sole_holder(list(tokens), chunk_id))

    # ------------------------------------------------ the contract methods
    def _fetch(self, ids: list[str]) -> list[Chunk]:
        return [self._chunk_at[self._row_of[i]] for i in ids if i in self._row_of]

    def _ids_of_documents(self, doc_ids: list[str]) -> list[str]:
        return [i for d in doc_ids for i in sorted(self._by_doc.get(d, ()))]

    def _count(self) -> int:
        return len(self._row_of)

    def _load_state(self, key: str) -> dict[str, Any] | None:
        found = self._states.get(key)
        return json_state(key, found) if found is not None else None

    def _save_state(self, key: str, state: dict[str, Any]) -> None:
        self._states[key] = state


__all__ = ["InProcessStore"]
