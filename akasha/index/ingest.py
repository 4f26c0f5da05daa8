"""The one ingest path: embed what a change adds, write it to the store, apply it in memory.

Order makes a failure safe: vectors are embedded first (committed to the cache per batch, so
a retry resumes from them), the store receives its records next, and the corpus in memory
changes last, under the rollback guard of :meth:`~akasha.index.live.LiveCorpus.apply`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from akasha.background import Background
from akasha.embeddings.base import Embedder, as_matrix
from akasha.errors import AkashaError
from akasha.index.live import Change, LiveCorpus
from akasha.index.manifest import Manifest
from akasha.index.reports import SyncReport
from akasha.index.sources import digest
from akasha.index.store_link import StoreLink
from akasha.metadata import own
from akasha.retrieval.bm25 import ADD_BATCH as BM25_BATCH
from akasha.retrieval.search import SearchSettings
from akasha.stores.base import batches
from akasha.types import Chunk

#: With ``progress=None``, the embedding bar appears when a sync embeds more texts than this
#: (the file bar's threshold is :data:`akasha.index.sources.LONG_FILES`).
LONG_TEXTS = 500


class Ingest:
    """Carries a :class:`~akasha.index.live.Change` into the cache, the store and the corpus in memory."""

    def __init__(self, live: LiveCorpus, manifest: Manifest, embedder: Callable[[], Embedder],
                 embedder_id: Callable[[], str], link: StoreLink | None,
                 settings: Callable[[], SearchSettings]) -> None:
        self.live = live
        self.manifest = manifest
        self.embedder = embedder  # the index's current one (read at every ingest, as the search engines read it)
        self._embedder_id = embedder_id  # resolved on first use, never while the index is built
        self.link = link
        self.settings = settings  # the index's current ones (read at every ingest)
        self.progress: bool | None = False  # the current sync's progress setting

    def run(self, change: Change, report: SyncReport, state_key: str, source: str, *,
            to_store: Sequence[Chunk] = (), touched: Iterable[str] = (), lexical: bool = False) -> None:
        """Apply ``change`` and name the corpus ``state_key``; ``lexical=True`` builds BM25 alone (no vectors).

        An external store receives the ``to_store`` chunks and loses the records of ``touched``
        documents that the corpus no longer has.
        """
        if lexical:
            self.live.apply(change, state_key, source, vectors=None)
            return
        tokens = self.tokens_ahead(change.added)  # BM25's tokenising runs while the embedder works
        vectors = self.vectors_for(list({c.id: c for c in [*change.added, *to_store]}.values()), report)
        if self.link is not None:  # may raise too: the next ingest re-applies the same difference
            self.link.publish(list(to_store), vectors, sorted(set(touched)), keep=set(change.chunks))
        self.live.apply(change, state_key, source, vectors=vectors,
                        tokens=tokens.result() if tokens is not None else None, passages=self.passages_for)

    def tokens_ahead(self, chunks: list[Chunk]) -> Background | None:
        """BM25's tokens of ``chunks``' texts, computed on a thread while the encoder (native code, the GIL
        released) embeds them; None for none or over :data:`~akasha.retrieval.bm25.ADD_BATCH` (``BM25Index.add``
        then tokenises batch by batch, bounding memory). Same tokens, same index."""
        if not chunks or len(chunks) > BM25_BATCH:
            return None
        texts = [c.text for c in chunks]
        tokenize = self.live.bm25.tokenize
        return Background(lambda: [tokenize(text) for text in texts], "akasha-bm25-tokens")

    def vectors_for(self, chunks: Sequence[Chunk], report: SyncReport) -> dict[str, np.ndarray]:
        """Vectors for the chunk texts, embedding (in committed batches) only the missing ones."""
        model = self._embedder_id()
        texts = {own(c.metadata, "content_hash"): c.text for c in chunks}
        if not texts:
            return {}
        width = self.manifest.common_width(model)  # as the cache holds most of them; None before the first
        cached = self.manifest.cached_hashes(model, list(texts), width)
        missing = [h for h in texts if h not in cached]  # a cached vector of another width counts as missing
        if missing and self.link is not None:  # vectors another machine already wrote into the shared store
            shared = self.link.vectors_for(missing)
            if shared:
                found = [h for h in missing if h in shared]
                self.manifest.store_vectors(model, found, np.stack([shared[h] for h in found]))
                missing = [h for h in missing if h not in shared]
        embedder = self.embedder()
        batch = max(1, int(getattr(embedder, "batch_size", 64) or 64))
        bar: Any = None
        if missing and (self.progress or (self.progress is None and len(missing) > LONG_TEXTS)):
            from tqdm.auto import tqdm

            bar = tqdm(total=len(missing), desc="embedding", unit="text")
        with_passages = getattr(embedder, "embed_documents_with_passages", None) \
            if self.settings().passage_fetch else None
        try:
            for hashes in batches(missing, batch):
                if with_passages is not None:
                    vectors, passages = with_passages([texts[h] for h in hashes])
                    matrix = as_matrix(vectors, len(hashes), model)
                    self.manifest.store_passages(model, hashes, passages, matrix.shape[1])
                else:
                    matrix = as_matrix(embedder.embed_documents([texts[h] for h in hashes]), len(hashes), model)
                if width is None:
                    width = int(matrix.shape[1])
                elif matrix.shape[1] != width:  # checked before caching: one stray width never poisons the cache
                    raise ValueError(f"embedder {model!r} returned {matrix.shape[1]}-dimensional vectors where its "
                                     f"earlier ones have {width}; nothing was cached: check the embeddings server")
                self.manifest.store_vectors(model, hashes, matrix)
                report.embedded += len(hashes)
                if bar is not None:
                    bar.update(len(hashes))
        finally:
            if bar is not None:
                bar.close()
        vectors = self.manifest.load_vectors(model, list(texts), width)
        lost = [h for h in texts if h not in vectors]
        if lost:
            raise AkashaError(f"{len(lost)} vectors for {model!r} vanished from {self.manifest.path}")
        return vectors

    def embed_for_split(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts a splitter embeds (the ``semantic`` splitter's sentences), through the embeddings
        cache like chunk vectors (a sentence or a chunk of the same text is never embedded twice)."""
        pieces = [Chunk(f"split#{n}", text, {"content_hash": digest(text)}) for n, text in enumerate(texts)]
        vectors = self.vectors_for(pieces, SyncReport())
        return np.stack([vectors[c.metadata["content_hash"]] for c in pieces]) if pieces else np.zeros((0, 0))

    def passages_for(self, chunks: Sequence[Chunk]) -> list[bytes | None] | None:
        """The packed passage vectors of ``chunks`` from the manifest (None for a chunk without any), or
        None when passage ranking is off (``SearchSettings.passage_fetch=0``)."""
        if not self.settings().passage_fetch or not chunks:
            return None
        stored = self.manifest.load_passages(self._embedder_id(), [own(c.metadata, "content_hash") for c in chunks])
        return [stored.get(own(c.metadata, "content_hash")) for c in chunks]
