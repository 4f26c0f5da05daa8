"""Loaders: files in, :class:`~akasha.types.Document` objects out.

:func:`discover` lists the files of a data_source; :func:`load_file` picks the
loader for a file's extension (one module per file type). Every loader either
returns Documents with ``metadata["source"]`` (the path) and ``["file_type"]``
(PDF pages also ``["page"]``, 1-based) or raises
:class:`~akasha.errors.LoaderError` naming the file and the reason, so the
indexer can report the file and carry on with the others.

Document ids are stable and path-based: ``"<source>"`` for a whole file and
``"<source>:p<page>"`` for a PDF page. Chunk ids append ``#<n>``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from akasha.errors import LoaderError
from akasha.loaders.discover import SUPPORTED_EXTENSIONS, discover
from akasha.types import Document

#: Extension -> "module:function" of its loader; modules are imported on first use.
LOADERS: dict[str, str] = {
    ".txt": "akasha.loaders.text:load_text",
    ".md": "akasha.loaders.text:load_text",
    ".pdf": "akasha.loaders.pdf:load_pdf",
    ".docx": "akasha.loaders.docx:load_docx",
    ".csv": "akasha.loaders.csv:load_csv",
    ".html": "akasha.loaders.html:load_html",
    ".htm": "akasha.loaders.html:load_html",
}


def _loader(suffix: str) -> Callable[[Path, bytes | None], list[Document]]:
    module, _, function = LOADERS[suffix].partition(":")
    return getattr(importlib.import_module(module), function)


def load_file(path: str | Path, data: bytes | None = None) -> list[Document]:
    """Load one file into Documents (one per file, one per page for PDFs).

    ``data`` is the file's bytes when the caller already read them (the index
    reads each file once to hash it); otherwise the file is read here.
    Raises :class:`~akasha.errors.LoaderError` for any file that cannot be
    turned into text: unsupported, corrupt, encrypted, binary, empty or unreadable.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in LOADERS:
        raise LoaderError(path, f"unsupported file type {suffix or '(none)'!r}; supported: {', '.join(sorted(LOADERS))}")
    return _loader(suffix)(path, data)


__all__ = ["LOADERS", "SUPPORTED_EXTENSIONS", "discover", "load_file"]
