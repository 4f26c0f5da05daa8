"""Web pages (.html, .htm): visible text only, via the standard library's html.parser.

Non-visible elements are dropped, block elements become line breaks, whitespace in a line collapses.

The encoding follows the HTML standard: a byte-order mark wins, then a ``<meta charset>`` naming an
ASCII-compatible encoding (UTF-16 declared in ASCII means UTF-8, Latin-1 and ASCII mean
windows-1252, EBCDIC, UTF-7 and UTF-32 are ignored). A declared decoding that yields mostly control
characters is dropped for detection, which refuses binary content.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from pathlib import Path

from akasha.errors import LoaderError
from akasha.loaders.base import read_bytes, require_text
from akasha.loaders.limits import LoaderLimits
from akasha.loaders.text import _BOMS, _MAX_BAD_RATIO, _bad_ratio, read_text
from akasha.types import Document

_SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
_BLOCK = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
                    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
                    "nav", "ol", "p", "pre", "section", "table", "tbody", "thead", "tfoot", "tr", "ul", "title"})
_CELL = frozenset({"td", "th"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip_depth += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append(" | ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document (the <title> included), one block per line."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = []
    for raw in "".join(parser.parts).split("\n"):
        line = _SPACES.sub(" ", raw).strip(" |")
        if line:
            lines.append(line.strip())
    return "\n".join(lines)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


#: Labels the HTML standard reads as UTF-8 (a UTF-16 declaration inside ASCII-compatible bytes) ...
_AS_UTF8 = frozenset({"utf-16", "utf-16le", "utf-16be", "utf16", "unicodefffe", "unicodefeff", "ucs-2",
                      "csunicode", "iso-10646-ucs-2", "unicode", "x-user-defined"})
#: ... and as windows-1252.
_AS_CP1252 = frozenset({"ascii", "us-ascii", "ansi_x3.4-1968", "cp819", "csisolatin1", "ibm819", "iso-8859-1",
                        "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1",
                        "windows-1252", "x-cp1252", "cp1252"})
_ASCII_PROBE = bytes(range(0x20, 0x7F)) + b"\t\n\r"


#: Python codecs that turn text into text, not bytes into characters: a page cannot be "written in" them
#: (``unicode_escape`` makes lone surrogates out of ``\\ud800``; ``punycode`` fails on ordinary text).
_NOT_CHARSETS = frozenset({"unicode_escape", "raw_unicode_escape", "punycode", "idna", "undefined", "unicode_internal"})


def html_encoding(label: str) -> str | None:
    """The Python codec for a ``<meta charset>`` label, or None when the label must be ignored."""
    label = label.strip().lower()
    if label in _AS_UTF8:
        return "utf-8"
    if label in _AS_CP1252:
        return "cp1252"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name.startswith(("utf-7", "utf-32", "utf-16")) or name.replace("-", "_") in _NOT_CHARSETS:
        return None
    try:  # an encoding that reads ASCII bytes as other characters (EBCDIC ...) cannot be declared in ASCII
        if _ASCII_PROBE.decode(name) != _ASCII_PROBE.decode("ascii"):
            return None
    except (UnicodeError, LookupError):  # punycode raises a bare UnicodeError
        return None
    return name


def _declared_decode(data: bytes) -> str | None:
    """Decode with the page's own ``<meta charset>`` when the standard lets it decide and it fits the bytes."""
    if any(data.startswith(bom) for bom, _encoding in _BOMS):
        return None  # a byte-order mark outranks the declaration: detection reads it
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    encoding = html_encoding(match.group(1).decode("ascii"))
    if encoding is None:
        return None  # a label the standard ignores: fall back to detection
    try:
        text = data.decode(encoding)
    except UnicodeError:
        return None  # wrong declaration: fall back to detection
    if "\x00" in text or _bad_ratio(text) > _MAX_BAD_RATIO:
        return None
    return text


def load_html(path: Path, data: bytes | None = None, *, limits: LoaderLimits | None = None) -> list[Document]:
    """Load an .html/.htm page as one Document of its visible text."""
    limits = limits or LoaderLimits.from_env()
    data = read_bytes(path, data)
    if data and limits.max_chars:
        limits.check(path, "max_chars", len(data) // 4, f"{len(data)} bytes of markup")
    markup = _declared_decode(data) if data else None
    if markup is None:
        markup, _encoding = read_text(path, data, limits)
    try:
        text = html_to_text(markup)
    except MemoryError:
        raise  # not the page's fault: the index retries it on the next run
    except Exception as exc:  # html.parser is lenient; this guards AssertionError on odd markup
        raise LoaderError(path, f"unreadable HTML ({type(exc).__name__}: {exc})") from None
    text = require_text(path, text, "page")
    limits.check(path, "max_chars", len(text), f"{len(text)} characters of text")
    return [Document(text=text, metadata={"source": str(path), "file_type": path.suffix.lower()}, id=str(path))]
