"""Word documents (.docx): paragraphs and tables in document order, via python-docx.

Table rows become one line each, cells joined by `` | `` (merged cells once). A ``.docx`` that is
not a Word package is refused with a :class:`~akasha.errors.LoaderError`.

A package whose parts expand past ``max_inflated_mb`` (a zip's declared sizes are also the most it
will inflate) or whose text is over ``max_chars`` is refused with a
:class:`~akasha.loaders.limits.LoaderLimitError`; :func:`akasha.loaders.load_file` runs this loader
in a child process with a time and memory limit.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from akasha.errors import LoaderError
from akasha.loaders.base import read_bytes, require_text
from akasha.loaders.limits import LoaderLimits
from akasha.types import Document


def _check_package(path: Path, data: bytes, limits: LoaderLimits) -> None:
    if not data:
        raise LoaderError(path, "empty file (0 bytes)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError) as exc:
        raise LoaderError(path, f"not a Word document: not a valid zip package ({exc})") from None
    if "word/document.xml" not in names or "[Content_Types].xml" not in names:
        raise LoaderError(path, "not a Word document: a zip without word/document.xml")
    limits.check(path, "max_inflated_mb", total, f"the package expands to {total} bytes")


def _table_lines(table: Any) -> list[str]:
    lines: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            # python-docx repeats a merged cell's object once per grid column it spans: identity says "seen"
            key = id(cell)
            if key in seen:
                continue
            seen.add(key)
            cells.append(" ".join(_block_lines(cell)).strip())
        if any(cells):
            lines.append(" | ".join(cells).rstrip())
    return lines


def _block_lines(container: Any) -> list[str]:
    """Text lines of a document body or table cell, paragraphs and tables in order."""
    from docx.table import Table

    lines: list[str] = []
    for block in container.iter_inner_content():
        if isinstance(block, Table):
            lines.extend(_table_lines(block))
        else:
            text = block.text.strip()
            if text:
                lines.append(text)
    return lines


def warm() -> None:
    """Import python-docx, as :func:`load_docx` will (a loader worker does it before its first file)."""
    import docx
    import docx.table  # noqa: F401


def load_docx(path: Path, data: bytes | None = None, *, limits: LoaderLimits | None = None) -> list[Document]:
    """Load a .docx as one Document (paragraphs and table rows, one per line), in this process."""
    limits = limits or LoaderLimits.from_env()
    data = read_bytes(path, data)
    _check_package(path, data, limits)
    try:
        import docx

        document = docx.Document(io.BytesIO(data))
        text = "\n".join(_block_lines(document))
    except (LoaderError, MemoryError):
        raise
    except Exception as exc:  # python-docx/lxml raise many types on damaged packages
        raise LoaderError(path, f"corrupt Word document ({type(exc).__name__}: {exc})") from None
    text = require_text(path, text, "document")
    limits.check(path, "max_chars", len(text), f"{len(text)} characters of text")
    return [Document(text=text, metadata={"source": str(path), "file_type": ".docx"}, id=str(path))]
