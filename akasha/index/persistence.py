"""Committing the corpus in memory and reading committed corpora back.

A commit writes the snapshot first, then the store's state (with the embedder's identity on
its first commit), then the manifest row naming the snapshot: a crash in between leaves the
previous row, which names a complete snapshot. Documents are committed in batches
(:meth:`Persistence.documents_changed`); a BM25 file (``CorpusIndex(bm25_file=...)``) is read
at start and rewritten after each ingestion.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from akasha.index.bm25_file import read_bm25_file, write_bm25_file
from akasha.index.live import LiveCorpus
from akasha.index.manifest import Manifest
from akasha.index.paths import storage_error
from akasha.index.snapshot import SUFFIX as SNAPSHOT_SUFFIX
from akasha.index.snapshot import is_own_file as is_own_snapshot_file
from akasha.index.snapshot import read_snapshot, write_snapshot
from akasha.index.sources import digest
from akasha.index.store_link import StoreLink
from akasha.metadata import drop_own, put_own
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk

log = logging.getLogger(__name__)

#: Documents are committed once 1/COMMIT_SHARE of the corpus, COMMIT_EVERY documents or COMMIT_SECONDS passed.
COMMIT_SHARE = 20
COMMIT_EVERY = 500
COMMIT_SECONDS = 2.0
#: The source key of the corpus built by :meth:`CorpusIndex.add_documents`.
DOCUMENTS_SOURCE = "documents"


def shared_key(source_key: str, corpus: str) -> str:
    """The key a shared store keeps a corpus's state under: the corpus name, never a machine's path
    (a folder synced under a corpus name replaces what the store held under that name)."""
    if source_key == DOCUMENTS_SOURCE:
        return DOCUMENTS_SOURCE if not corpus else f"{DOCUMENTS_SOURCE}:{corpus}"
    return f"folder:{corpus}"


def lexical_state(files: Mapping[str, str]) -> str:
    """The state key of a corpus held for BM25 alone (never committed)."""
    return "lexical:" + digest(json.dumps(sorted(files.items()), ensure_ascii=False))


class Persistence:
    """Writes the corpus in memory to the cache folder, the manifest and the store, and reads it back."""

    def __init__(self, live: LiveCorpus, manifest: Manifest, cache_dir: Path | None, link: StoreLink | None,
                 embedder_name: str, namespace: Callable[[], str], corpus: str) -> None:
        self.live = live
        self.manifest = manifest
        self.cache_dir = cache_dir
        self.link = link
        self.embedder_name = embedder_name
        self._namespace = namespace  # resolved on first use (the embedder's identity)
        self.corpus = corpus
        self.shared_registry: dict[str, Any] | None = None  # identities to save into the store at its next commit
        self.pending = 0  # documents changed since the last commit (see documents_changed)
        self.since_snapshot = 0  # documents changed since the last snapshot was written
        self.last_commit = time.monotonic()
        self.bm25_path: Path | None = None
        self.bm25_written: str | None = None  # the corpus state the BM25 file holds

    def commit(self, source_key: str, state_key: str, files: Mapping[str, str], *, snapshot: bool = True) -> None:
        """Persist the corpus in memory: snapshot file first (unless ``snapshot=False``), then the store's
        state, then the manifest row naming the snapshot."""
        self.pending, self.last_commit = 0, time.monotonic()
        name = None
        if self.cache_dir is not None and snapshot:
            self.since_snapshot = 0
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.embedder_name)[:40]
            name = f"{slug}-{state_key[:32]}{SNAPSHOT_SUFFIX}"
            try:
                write_snapshot(self.cache_dir / "snapshots" / name, state_key, self.live.bm25, self.live.dense,
                               self.live.chunks)
            except OSError as exc:  # the next sync retries; the in-memory index is complete and usable
                raise storage_error(self.cache_dir, exc) from exc
        if self.link is not None:
            if self.shared_registry is not None:  # the store learns this embedder's identity with its first commit
                from akasha.embeddings.identity import REGISTRY_KEY, registry_state

                self.link.store.save_state(REGISTRY_KEY, registry_state(self.shared_registry))
                self.shared_registry = None
            self.link.save_state(shared_key(source_key, self.corpus), state_key, dict(files))
        self.manifest.store_corpus(source_key, self._namespace(), state_key, dict(files), name)
        self.live.committed = (source_key, state_key)
        if name is not None:
            self.drop_stale_snapshots()

    def documents_changed(self, count: int) -> None:
        """Count ``count`` documents ingested; commit once :data:`COMMIT_SHARE`, :data:`COMMIT_EVERY` or
        :data:`COMMIT_SECONDS` is reached (a commit writes the whole corpus's file list)."""
        self.since_snapshot += count
        self.pending += count
        if (self.pending * COMMIT_SHARE >= len(self.live.files) or self.pending >= COMMIT_EVERY
                or time.monotonic() - self.last_commit >= COMMIT_SECONDS):
            self.commit_documents()

    def commit_documents(self, *, snapshot: bool | None = None) -> None:
        """Commit the documents corpus in memory if documents wait for it; by default the snapshot is
        rewritten only once a tenth of the corpus changed since the last one (a restart in between
        rebuilds from the cache, embedding nothing)."""
        live = self.live
        if self.pending and live.source == DOCUMENTS_SOURCE and live.state_key is not None:
            self.commit(DOCUMENTS_SOURCE, live.state_key, live.files,
                        snapshot=self.since_snapshot * 10 >= len(live.files) if snapshot is None else snapshot)

    def commit_before_rollback(self) -> None:
        """The rollback guard's last word: documents that wait for their commit are committed (without a
        snapshot) as the corpus was before the failed change, so emptying the memory loses none of them."""
        try:
            self.commit_documents(snapshot=False)
        except Exception:  # the first failure is the one to raise; these documents are ingested again next time
            log.warning("could not commit the documents ingested before a failed ingest", exc_info=True)
        self.pending = 0

    def load_snapshot(self, name: str, state_key: str, files: Mapping[str, str],
                      materialise: Callable[[], Mapping[str, Chunk]]) -> bool:
        """Make the snapshot ``name`` (of ``state_key``) the corpus in memory; False when it is unusable.
        ``materialise`` gives the chunks of ``files`` for a snapshot that does not hold them."""
        assert self.cache_dir is not None  # a snapshot name comes from a cache folder's manifest
        loaded = read_snapshot(self.cache_dir / "snapshots" / name, state_key)
        if loaded is None:
            return False
        bm25, dense, stored_chunks = loaded
        if bm25.tokenizer_id != self.live.bm25.tokenizer_id or len(bm25) != len(dense):
            return False
        if stored_chunks is not None:  # stored in the dense rows' order, one per row: consistent by construction
            chunks: Mapping[str, Chunk] = stored_chunks
        else:
            chunks = materialise()
            if set(dense.ids) != set(chunks):
                return False
        self.live.replace(bm25, dense, chunks, files, state_key, self.live.source)
        return True

    def drop_stale_snapshots(self) -> None:
        """Delete snapshot files no manifest row names, and temp files a killed writer left over an hour ago."""
        assert self.cache_dir is not None  # snapshots are written only into a cache folder
        in_use = self.manifest.snapshots_in_use()
        for path in (self.cache_dir / "snapshots").glob("*"):
            try:  # only akasha's own files
                if not is_own_snapshot_file(path):
                    continue
                stale_tmp = path.name.endswith(".tmp") and time.time() - path.stat().st_mtime > 3600
                if (path.suffix in (".npz", SNAPSHOT_SUFFIX) and path.name not in in_use) or stale_tmp:
                    path.unlink()
            except OSError:
                pass

    def database_bytes(self) -> int:
        """The size of the manifest's database files (0 for an in-memory cache)."""
        if self.cache_dir is None:
            return 0
        return sum(p.stat().st_size for p in self.cache_dir.glob("index.sqlite3*") if p.is_file())

    def restore_from_store(self) -> bool:
        """A cache that never held this corpus (a new machine, an in-memory cache after a restart):
        rebuild the last corpus committed into the store from the store's own records and vectors."""
        if self.link is None:
            return False
        source_key = self.link.last_source()
        if not source_key:
            return False
        stored = self.link.load_state(source_key)
        if stored is None or not stored[1]:
            return False
        chunks, matrix = self.link.records_of(stored[1])
        if not chunks:
            return False
        self.live.serve(chunks, matrix, stored[1], stored[0], source_key)
        self.live.committed = (source_key, stored[0])
        log.info("restored %d chunks of the last corpus committed into %s", len(chunks), self.link.name)
        return True

    def read_bm25_file(self, path: Path, settings_key: str, tokenizer: str) -> None:
        """Make the BM25 file's corpus, when it exists, the lexical-only corpus in memory; its chunks also go
        into the manifest, so a later ingestion or dense search rebuilds from them without re-chunking."""
        self.bm25_path = path
        loaded = read_bm25_file(path)
        if loaded is None:
            return
        if loaded.chunking != settings_key:
            log.warning("%s holds chunks of other chunk settings (%s, now %s); not loaded: ingest the documents "
                        "again and it is rewritten", path, loaded.chunking, settings_key)
            return
        by_doc: dict[str, list[Chunk]] = {}
        for chunk in loaded.chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        known = self.manifest.parsed_status_of(settings_key, list(set(loaded.documents.values())))
        for doc, content in loaded.documents.items():
            pieces = by_doc.get(doc)
            if content in known or not pieces:
                continue
            stored = []
            for chunk in sorted(pieces, key=lambda c: int(c.id.rpartition("#")[2])):
                meta = dict(chunk.metadata)
                drop_own(meta, "source")
                drop_own(meta, "chunk_id")
                text_hash = digest(chunk.text)
                put_own(meta, "content_hash", text_hash)
                stored.append((int(chunk.id.rpartition("#")[2]), text_hash, chunk.text, meta))
            self.manifest.store_parsed(content, settings_key, stored)
            known[content] = ("ok", None)
        chunks = {c.id: c for c in loaded.chunks}
        bm25 = BM25Index(tokenizer=tokenizer)
        if chunks:
            bm25.add(list(chunks), [c.text for c in chunks.values()])
        state_key = lexical_state(loaded.documents)
        self.live.replace(bm25, DenseIndex(), chunks, loaded.documents, state_key, loaded.source)
        self.live.committed, self.live.lexical_only = None, True
        self.bm25_written = state_key
        log.info("loaded %d chunks of %d documents for BM25 from %s", len(chunks), len(loaded.documents), path)

    def write_bm25_file(self, settings_key: str) -> None:
        """Rewrite the BM25 file when the corpus in memory changed since it was last written or read."""
        path, live = self.bm25_path, self.live
        if path is None or live.state_key is None or live.state_key == self.bm25_written:
            return
        try:
            write_bm25_file(path, source=str(live.source), chunking=settings_key, documents=live.files,
                            chunks=live.chunks.values())
        except OSError as exc:
            raise storage_error(path.parent, exc) from exc
        self.bm25_written = live.state_key
