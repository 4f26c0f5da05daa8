"""What a sync, an ingest or a prune did: the reports :class:`~akasha.index.CorpusIndex` returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SyncReport:
    """What one :meth:`CorpusIndex.sync` did.

    ``indexed`` files whose chunks entered the index (new, edited, renamed or copied), ``unchanged``
    files already indexed at the same path with the same content, ``skipped`` files that could not be
    read (``skipped_files``: ``(path, reason)``), ``removed`` files gone since the last sync, ``embedded``
    texts sent to the embedder, ``chunks`` in the index now; ``written``: the chunks of the documents
    given to :meth:`CorpusIndex.add_documents`.
    """

    indexed: int = 0
    unchanged: int = 0
    skipped: int = 0
    removed: int = 0
    embedded: int = 0
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    written: int = 0


@dataclass
class PruneReport:
    """What one :meth:`CorpusIndex.prune` removed, and the database size before and after (bytes)."""

    file_versions: int = 0
    chunks: int = 0
    vectors: int = 0
    stat_rows: int = 0
    snapshots: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
