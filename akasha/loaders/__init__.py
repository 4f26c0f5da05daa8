"""Loaders: files in, :class:`~akasha.types.Document` objects out.

:func:`discover` lists the files of a data_source; :func:`load_file` picks the loader by extension.
Documents carry ``metadata["source"]`` (the path), ``["file_type"]`` and, for PDF pages, ``["page"]``
(1-based), ids ``"<source>"`` (``"<source>:p<page>"``); a failure is a :class:`~akasha.errors.LoaderError`.

Documents are untrusted input: every load runs inside :class:`~akasha.loaders.limits.LoaderLimits`,
and PDF and .docx files (native parsers) are read in a child process (:mod:`akasha.loaders.guard`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from akasha.errors import LoaderError
from akasha.loaders.base import file_size, read_bytes
from akasha.loaders.discover import SUPPORTED_EXTENSIONS, discover
from akasha.loaders.limits import LoaderLimitError, LoaderLimits, TransientLoaderError
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

#: Formats whose parsers are native code fed untrusted bytes: read in a child process (``isolate``).
ISOLATED: frozenset[str] = frozenset({".pdf", ".docx"})


def load_file(path: str | Path, data: bytes | None = None, *, limits: LoaderLimits | None = None,
              **options: Any) -> list[Document]:
    """Load one file into Documents (one per file, one per page for PDFs).

    ``data``: the file's bytes if already read; ``limits`` (default :meth:`LoaderLimits.from_env`) bound
    what it may cost; ``options`` go to the format's loader (``engine=`` for PDFs). Raises
    :class:`~akasha.errors.LoaderError` for a file that cannot be turned into text, its subclass
    :class:`~akasha.loaders.limits.LoaderLimitError` for one over a limit, and
    :class:`~akasha.loaders.limits.TransientLoaderError` when the reader was killed from outside;
    ``MemoryError`` in this process propagates (not the file's fault).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in LOADERS:
        raise LoaderError(path, f"unsupported file type {suffix or '(none)'!r}; "
                                f"supported: {', '.join(sorted(LOADERS))}")
    limits = limits or LoaderLimits.from_env()
    # the size decides before a byte is read: a 4 GB sparse file is refused from its size, naming it
    limits.check_size(path, file_size(path) if data is None else len(data), text=suffix not in ISOLATED)
    if suffix in ISOLATED and limits.isolate:
        from akasha.loaders import guard

        data = read_bytes(path, data)
        try:
            return valid_text(guard.guarded_load(path, suffix, data, limits, options))
        except guard.WorkerStartError as exc:
            guard.warn_in_process_once(str(exc))
    module, _, function = LOADERS[suffix].partition(":")
    try:
        return valid_text(getattr(importlib.import_module(module), function)(path, data, limits=limits, **options))
    except UnicodeError as exc:  # a decoder's failure is the file's: a LoaderError naming it
        raise LoaderError(path, f"its text cannot be decoded ({type(exc).__name__}: {exc})") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(documents: list[Document]) -> list[Document]:
    """``documents`` with lone surrogates (a decoder's artefact) as U+FFFD: always valid UTF-8, always storable."""
    for document in documents:
        if _SURROGATE.search(document.text):
            document.text = _SURROGATE.sub("\ufffd", document.text)
    return documents


def prepare_loaders(suffixes: Iterable[str], limits: LoaderLimits | None = None) -> None:
    """Hint: files with these suffixes are about to be loaded (with ``limits``): a PDF/.docx worker starts now."""
    limits = limits or LoaderLimits.from_env()
    isolated = sorted({s.lower() for s in suffixes} & ISOLATED)
    if isolated and limits.isolate:
        from akasha.loaders import guard

        guard.warm_up(isolated, limits.max_memory_mb)


def warm_loader(suffix: str) -> None:
    """Import the loader of ``suffix`` and what it needs to parse (its ``warm()``), before a file needs it."""
    module, _, _function = LOADERS[suffix].partition(":")
    warm = getattr(importlib.import_module(module), "warm", None)
    if warm is not None:
        warm()


__all__ = ["ISOLATED", "LOADERS", "SUPPORTED_EXTENSIONS", "LoaderLimitError", "LoaderLimits",
           "TransientLoaderError", "discover", "load_file", "prepare_loaders", "warm_loader"]
