"""Comma/semicolon/tab separated tables (.csv): one readable line per row.

The first row is taken as the header and each following row becomes
``"header: value; header: value"`` so a row retrieved on its own still says
what its numbers mean. The dialect (delimiter, quoting) is sniffed from the
start of the file; the encoding is detected like a text file's.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from akasha.errors import LoaderError
from akasha.loaders.base import read_bytes, require_text
from akasha.loaders.text import decode_bytes
from akasha.types import Document


def _dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def rows_to_text(rows: list[list[str]]) -> str:
    """Render rows (first one the header) as ``header: value`` lines."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    header = [cell.strip() for cell in rows[0]]
    if len(rows) == 1:
        return " | ".join(header)
    lines = []
    for row in rows[1:]:
        parts = []
        for i, cell in enumerate(row):
            value = cell.strip()
            if not value:
                continue
            name = header[i] if i < len(header) and header[i] else f"column {i + 1}"
            parts.append(f"{name}: {value}")
        lines.append("; ".join(parts))
    return "\n".join(lines)


def load_csv(path: Path, data: bytes | None = None) -> list[Document]:
    """Load a .csv as one Document with one line per data row."""
    text, _encoding = decode_bytes(path, read_bytes(path, data))
    require_text(path, text)
    try:
        reader = csv.reader(io.StringIO(text, newline=""), _dialect(text[:65536]))
        body = rows_to_text(list(reader))
    except csv.Error as exc:
        raise LoaderError(path, f"malformed CSV: {exc}") from None
    body = require_text(path, body, "table")
    return [Document(text=body, metadata={"source": str(path), "file_type": ".csv"}, id=str(path))]
