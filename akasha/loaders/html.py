"""Web pages (.html, .htm): visible text only, via the standard library's html.parser.

Scripts, styles and other non-visible elements are dropped; block elements
(paragraphs, headings, list items, table rows, ``<br>``) become line breaks
and whitespace inside a line is collapsed.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from akasha.errors import LoaderError
from akasha.loaders.base import read_bytes, require_text
from akasha.loaders.text import decode_bytes
from akasha.types import Document

_SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table",
        "tbody", "thead", "tfoot", "tr", "ul", "title",
    }
)
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


def _declared_decode(data: bytes) -> str | None:
    """Decode with the page's own ``<meta charset>`` when it names a codec that fits the bytes."""
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    try:
        return data.decode(match.group(1).decode("ascii"))
    except (LookupError, UnicodeDecodeError):
        return None  # wrong or unknown declaration: fall back to detection


def load_html(path: Path, data: bytes | None = None) -> list[Document]:
    """Load an .html/.htm page as one Document of its visible text."""
    data = read_bytes(path, data)
    markup = _declared_decode(data) if data else None
    if markup is None or "\x00" in markup:
        markup, _encoding = decode_bytes(path, data)
    try:
        text = html_to_text(markup)
    except Exception as exc:  # html.parser is lenient; this guards AssertionError on odd markup
        raise LoaderError(path, f"unreadable HTML ({type(exc).__name__}: {exc})") from None
    text = require_text(path, text, "page")
    return [Document(text=text, metadata={"source": str(path), "file_type": path.suffix.lower()}, id=str(path))]
