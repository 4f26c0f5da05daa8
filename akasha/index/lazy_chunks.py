"""A read-mostly chunk table that parses each chunk from its stored JSON record on first use.

A snapshot stores every chunk as one ``[text, metadata]`` JSON record, back to back, with an
array of record ends. Reloading an unchanged corpus builds no chunk objects, a search parses
only the chunks it returns, and after an edit untouched chunks keep their records
(:meth:`LazyChunks.derive`), so the next snapshot copies their bytes.

The snapshot's checksum covers the records; should one still fail to decode, the lookup
raises :class:`DamagedRecordError` naming the chunk and the fix, never a bare ``JSONDecodeError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import numpy as np

from akasha.errors import AkashaError
from akasha.types import Chunk


class DamagedRecordError(AkashaError):
    """A chunk record stored in an index snapshot does not decode (the snapshot was damaged)."""


class LazyChunks(Mapping[str, Chunk]):
    """Chunks by id in a fixed order; stored ones are decoded at most once, when first asked for."""

    def __init__(self, order: list[str], records: bytes, ends: np.ndarray, rows: dict[str, int],
                 parsed: dict[str, Chunk]) -> None:
        self._order = order
        self._records = records
        self._ends = ends
        self._rows = rows  # id -> record number, for chunks that still match their stored record
        self._parsed = parsed  # id -> Chunk, decoded records and chunks that have no record

    @classmethod
    def from_records(cls, ids: list[str], records: bytes, ends: np.ndarray) -> LazyChunks:
        """The chunks ``ids`` whose records end at ``ends`` (byte offsets) inside ``records``."""
        if len(ids) != len(ends):
            raise ValueError(f"{len(ids)} chunk ids but {len(ends)} chunk records")
        rows = dict(zip(ids, range(len(ids)), strict=True))
        if len(rows) != len(ids):
            raise ValueError("the chunk ids of a snapshot repeat")
        return cls(ids, records, ends, rows, {})

    def derive(self, order: list[str], fresh: Mapping[str, Chunk]) -> LazyChunks:
        """A new table with ``order``: ids in ``fresh`` take those chunks, the others keep this table's
        (sharing its records: nothing is decoded or copied)."""
        rows = {cid: self._rows[cid] for cid in order if cid not in fresh and cid in self._rows}
        parsed = {cid: self._parsed[cid] for cid in order if cid not in fresh and cid in self._parsed}
        missing = [cid for cid in order if cid not in fresh and cid not in rows and cid not in parsed]
        if missing:
            raise KeyError(f"derive() was given ids that are neither fresh nor kept: {missing[:3]}")
        parsed.update(fresh)
        return LazyChunks(list(order), self._records, self._ends, rows, parsed)

    def raw_record(self, chunk_id: str) -> bytes | None:
        """The stored JSON record of a chunk nobody has decoded yet, else None (encode the Chunk instead)."""
        if chunk_id in self._parsed:
            return None
        row = self._rows.get(chunk_id)
        if row is None:
            return None
        start = int(self._ends[row - 1]) if row else 0
        return self._records[start : int(self._ends[row])]

    def __getitem__(self, chunk_id: str) -> Chunk:
        chunk = self._parsed.get(chunk_id)
        if chunk is None:
            record = self.raw_record(chunk_id)
            if record is None:
                raise KeyError(chunk_id)
            try:
                text, metadata = json.loads(record)
                if not isinstance(text, str) or not isinstance(metadata, dict):
                    raise ValueError("not a [text, metadata] pair")
            except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
                raise DamagedRecordError(
                    f"the stored record of chunk {chunk_id!r} is damaged ({type(exc).__name__}: {exc}); delete the "
                    "index cache's snapshots folder and sync again (nothing is re-embedded)"
                ) from None
            chunk = self._parsed[chunk_id] = Chunk(chunk_id, text, metadata)
        return chunk

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._rows or chunk_id in self._parsed

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)
