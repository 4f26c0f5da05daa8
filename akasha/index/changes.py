"""What changed between the corpus in memory and the files (or documents) an ingest brings.

A file or document is its content key, its chunks come from the manifest, and a chunk counts
as changed only when its text hash differs; :meth:`~akasha.index.live.LiveCorpus.apply` carries
out the :class:`~akasha.index.live.Change` these functions return.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from akasha.index.lazy_chunks import LazyChunks
from akasha.index.live import Change, LiveCorpus, doc_of
from akasha.index.manifest import Manifest
from akasha.index.reports import SyncReport
from akasha.metadata import chunk_metadata, own
from akasha.types import Chunk


def count(report: SyncReport, previous: Mapping[str, str], files: Mapping[str, str]) -> None:
    """Fill ``report``'s unchanged / indexed / removed counts for going from ``previous`` to ``files``."""
    report.unchanged = sum(1 for p, h in files.items() if previous.get(p) == h)
    report.indexed = len(files) - report.unchanged
    report.removed = sum(1 for p in previous if p not in files)


def _stored_chunks(manifest: Manifest, settings_key: str, files: Mapping[str, str]) -> dict[str, Chunk]:
    """The manifest's chunks of ``files`` (key -> content key), keyed ``<key>#<seq>``, in file order."""
    stored = manifest.load_chunks_many(list(set(files.values())), settings_key)
    out: dict[str, Chunk] = {}
    for key, content in files.items():
        for seq, _text_hash, text, meta in stored[content]:
            chunk_id = f"{key}#{seq}"
            out[chunk_id] = Chunk(chunk_id, text, chunk_metadata(meta, key, chunk_id))
    return out


def _edited(old: Mapping[str, Chunk], fresh: Mapping[str, Chunk]) -> list[Chunk]:
    """The chunks of ``fresh`` that are new or whose text differs from ``old``'s chunk of the same id."""
    return [c for cid, c in fresh.items()
            if cid not in old or own(old[cid].metadata, "content_hash") != own(c.metadata, "content_hash")]


def materialise(live: LiveCorpus, files: Mapping[str, str], manifest: Manifest, settings_key: str
                ) -> tuple[Mapping[str, Chunk], dict[str, Chunk]]:
    """The chunks of the corpus ``files``, and those of them read from the manifest (unchanged paths keep
    their in-memory chunks, by id, so chunks still in a snapshot's records stay undecoded)."""
    by_path = live.doc_chunk_ids()
    reused = {path for path, content in files.items() if live.files.get(path) == content and path in by_path}
    fresh = _stored_chunks(manifest, settings_key, {p: c for p, c in files.items() if p not in reused})
    fresh_ids: dict[str, list[str]] = {}
    for cid in fresh:
        fresh_ids.setdefault(doc_of(cid), []).append(cid)
    order = [cid for path in files for cid in (by_path[path] if path in reused else fresh_ids.get(path, ()))]
    old = live.chunks
    if isinstance(old, LazyChunks):
        return old.derive(order, fresh), fresh
    return {cid: fresh[cid] if cid in fresh else old[cid] for cid in order}, fresh


def corpus_change(live: LiveCorpus, files: Mapping[str, str], manifest: Manifest, settings_key: str) -> Change:
    """The change that makes ``files`` (path -> content key) the whole corpus in memory."""
    chunks, fresh = materialise(live, files, manifest, settings_key)
    added = _edited(live.chunks, fresh)
    stale = [cid for cid in live.chunks if cid not in chunks] + [c.id for c in added if c.id in live.chunks]
    return Change(added, stale, chunks, files)


def documents_change(live: LiveCorpus, upserts: Mapping[str, str], removals: Sequence[str], manifest: Manifest,
                     settings_key: str) -> Change:
    """The change that puts ``upserts`` (key -> content key) into the corpus in memory and drops
    ``removals``, at a cost that grows with the change, not with the corpus. Unchanged documents
    are left out of it."""
    changed = {k: c for k, c in upserts.items() if live.files.get(k) != c}
    fresh = _stored_chunks(manifest, settings_key, changed)
    added = _edited(live.chunks, fresh)
    by_doc = live.doc_chunk_ids()
    old = [cid for key in (*changed, *removals) for cid in by_doc.get(key, ())]
    stale = [cid for cid in old if cid not in fresh] + [c.id for c in added if c.id in live.chunks]
    return Change(added, stale, fresh, changed, partial=True, dropped=tuple(removals))


def portable_previous(previous: Mapping[str, str], root: Path | None, corpus: str) -> Mapping[str, str]:
    """A corpus committed by a release that keyed files by absolute path, keyed the portable way."""
    if root is None or not any(os.path.isabs(p) for p in previous):
        return previous
    from akasha.index.portable import document_key

    return {document_key(p, root, corpus) if os.path.isabs(p) else p: h for p, h in previous.items()}
