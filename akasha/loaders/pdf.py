"""PDF (.pdf): one Document per page that has text, id ``"<source>:p<page>"`` (1-based).

Encrypted PDFs are opened when the password is empty ("print-protected" files); a real password is
reported, never guessed. A PDF with no text layer (a scan) is reported as such: OCR is out of scope.

Two engines: pypdfium2 (PDFium, faster, recovers more truncated files) when installed, else pypdf.
PDFium is not thread-safe: its calls are serialised with a lock.

Hostile files (:class:`~akasha.loaders.limits.LoaderLimits`): before an engine sees the bytes, the
Flate streams are inflated into a counter and a file past ``max_inflated_mb`` refused; a page count
over ``max_pages`` is refused before any page is read; text over ``max_chars`` stops the extraction.
:func:`akasha.loaders.load_file` runs this loader in a child process (:mod:`akasha.loaders.guard`).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import logging
import re
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akasha.errors import LoaderError
from akasha.loaders.base import read_bytes
from akasha.loaders.limits import LoaderLimits
from akasha.types import Document

if TYPE_CHECKING:
    import pypdf

logger = logging.getLogger(__name__)

#: Extractors in order of preference; the first installed one is used by default.
PDF_ENGINES: tuple[str, ...] = ("pypdfium2", "pypdf")

_PDFIUM_LOCK = threading.Lock()
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
#: ``stream`` keyword followed by its end of line: where a stream's bytes start.
_STREAM = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")
_OBJ = re.compile(rb"\bobj\b")
#: Output taken from the inflater at a time while counting (nothing is kept), and input given to it.
_INFLATE_STEP = 1 << 20
_INPUT_STEP = 1 << 16


@functools.cache
def available_engines() -> tuple[str, ...]:
    """The installed PDF engines, best first (pypdf is always there)."""
    return tuple(name for name in PDF_ENGINES if importlib.util.find_spec(name) is not None)


def warm() -> None:
    """Import the engine :func:`load_pdf` uses by default (a loader worker does it before its first file)."""
    importlib.import_module(available_engines()[0])


def inflated_size(data: bytes, stop_after: int | None = None) -> int:
    """Bytes that the Flate streams of a PDF inflate to (image streams not counted).

    Each ``stream`` is fed through a zlib decompressor whose output is counted and dropped (gigabytes
    cost no memory), stopping past ``stop_after``; other encodings count 0, image streams are skipped.
    """
    total = 0
    view = memoryview(data)
    for match in _STREAM.finditer(data):
        start = match.end()
        head = data[max(0, match.start() - 4096) : match.start()]
        dictionary = head[head.rfind(b"obj") :] if _OBJ.search(head) else head
        if _IMAGE.search(dictionary):
            continue
        inflater = zlib.decompressobj()
        pending: bytes | memoryview = view[start : start + _INPUT_STEP]
        position = start + len(pending)
        try:
            while pending and not inflater.eof:
                total += len(inflater.decompress(pending, _INFLATE_STEP))
                if stop_after is not None and total > stop_after:
                    return total
                pending = inflater.unconsumed_tail
                if not pending and not inflater.eof and position < len(data):
                    pending = view[position : position + _INPUT_STEP]
                    position += len(pending)
        except zlib.error:
            pass  # not (or no longer) Flate data: what was inflated so far still counts
    return total


class _Text:
    """Page texts with a running character count checked against ``max_chars``."""

    def __init__(self, path: Path, limits: LoaderLimits) -> None:
        self.path = path
        self.limits = limits
        self.pages: list[str] = []
        self.chars = 0

    def append(self, text: str) -> None:
        self.chars += len(text)
        self.limits.check(self.path, "max_chars", self.chars,
                          f"more than {self.chars} characters of text after {len(self.pages) + 1} page(s)")
        self.pages.append(text)


def _pages_pdfium(path: Path, data: bytes, limits: LoaderLimits) -> list[str]:
    import pypdfium2

    with _PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(data)
        except MemoryError:
            raise  # not the file's fault: the index retries it on the next run
        except pypdfium2.PdfiumError as exc:
            if "password" in str(exc).lower():
                raise LoaderError(
                    path, "encrypted PDF (password protected); save an unprotected copy to index it"
                ) from None
            raise LoaderError(path, f"corrupt or truncated PDF ({exc})") from None
        except Exception as exc:  # untrusted input: any failure to open means "corrupt"
            raise LoaderError(path, f"corrupt or truncated PDF ({type(exc).__name__}: {exc})") from None
        try:
            texts = _Text(path, limits)
            count = len(document)
            limits.check(path, "max_pages", count, f"the PDF has {count} pages")
            for index in range(count):
                texts.append(_pdfium_page_text(document, index, path))
            return texts.pages
        finally:
            document.close()


def _pdfium_page_text(document: Any, index: int, path: Path) -> str:
    """The text of page ``index``; a broken page logs a warning and reads as "" (the others are kept)."""
    page = None
    try:
        page = document[index]
        textpage = page.get_textpage()
        try:
            return str(textpage.get_text_range())
        finally:
            textpage.close()
    except MemoryError:
        raise
    except Exception as exc:
        logger.warning("%s: page %d skipped: %s", path, index + 1, exc)
        return ""
    finally:
        if page is not None:
            page.close()


def _open_reader(path: Path, data: bytes) -> pypdf.PdfReader:  # decrypted
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = bool(reader.decrypt(""))
            except DependencyError as exc:
                raise LoaderError(path, f"encrypted PDF needs a crypto library to open: {exc}") from None
            except FileNotDecryptedError:
                ok = False
            if not ok:
                raise LoaderError(
                    path, "encrypted PDF (password protected); save an unprotected copy to index it"
                )
        return reader
    except (LoaderError, MemoryError):
        raise
    except Exception as exc:  # pypdf raises many types on damaged input; all mean "corrupt"
        raise LoaderError(path, f"corrupt or truncated PDF ({type(exc).__name__}: {exc})") from None


def _pages_pypdf(path: Path, data: bytes, limits: LoaderLimits) -> list[str]:
    reader = _open_reader(path, data)
    texts = _Text(path, limits)
    try:
        pages = reader.root_object["/Pages"].get_object()
        if not isinstance(pages, dict):  # caught below: a corrupt PDF
            raise TypeError(f"/Pages is a {type(pages).__name__}, not a dictionary")
        declared = pages.get("/Count")
        if isinstance(declared, int):  # checked before pypdf walks (and materialises) the whole tree
            limits.check(path, "max_pages", declared, f"the PDF has {declared} pages")
        count = len(reader.pages)
        limits.check(path, "max_pages", count, f"the PDF has {count} pages")
        for number, page in enumerate(reader.pages, 1):
            try:
                text = page.extract_text() or ""
            except MemoryError:
                raise
            except Exception as exc:  # one broken page must not lose the others
                logger.warning("%s: page %d skipped: %s: %s", path, number, type(exc).__name__, exc)
                text = ""
            texts.append(text)
            if number >= count:  # the tree may hold more leaves than its /Count says
                break
    except (LoaderError, MemoryError):
        raise
    except Exception as exc:  # the page tree itself is broken
        raise LoaderError(path, f"corrupt or truncated PDF ({type(exc).__name__}: {exc})") from None
    return texts.pages


def load_pdf(path: Path, data: bytes | None = None, *, engine: str | None = None,
             limits: LoaderLimits | None = None) -> list[Document]:
    """One Document per page with text, in this process; ``engine``: "pypdfium2", "pypdf" or None (first installed).

    ``limits`` (default :meth:`LoaderLimits.from_env`): a :class:`LoaderLimitError` names the one exceeded.
    """
    if engine is None:
        engine = available_engines()[0]
    elif engine not in PDF_ENGINES:
        raise ValueError(f"unknown PDF engine {engine!r}; known: {', '.join(PDF_ENGINES)}")
    limits = limits or LoaderLimits.from_env()
    data = read_bytes(path, data)
    if not data:
        raise LoaderError(path, "empty file (0 bytes)")
    if b"%PDF" not in data[:1024]:
        raise LoaderError(path, "not a PDF (no %PDF header); the file may be corrupt or misnamed")
    ceiling = limits.max_inflated_bytes
    if ceiling:  # refused before an engine opens it
        limits.check(path, "max_inflated_mb", inflated_size(data, stop_after=ceiling),
                     f"its compressed streams inflate to more than {ceiling // 2**20} MB")
    texts = _pages_pdfium(path, data, limits) if engine == "pypdfium2" else _pages_pypdf(path, data, limits)
    # PDFium ends lines with \r\n; both engines can emit stray control characters.
    texts = [_CONTROL.sub("", t.replace("\r\n", "\n").replace("\r", "\n")) for t in texts]
    source = str(path)
    documents = [
        Document(
            text=text,
            metadata={"source": source, "file_type": ".pdf", "page": number},
            id=f"{source}:p{number}",
        )
        for number, text in enumerate(texts, 1)
        if text.strip()
    ]
    if not documents:
        if not texts:
            raise LoaderError(path, "PDF has no pages (corrupt or truncated?)")
        raise LoaderError(path, f"no extractable text (scanned?) in {len(texts)} page(s); OCR it first")
    return documents
