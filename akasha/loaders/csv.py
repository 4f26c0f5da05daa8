"""Comma/semicolon/tab separated tables (.csv): one readable line per row.

The first row is the header and each following row becomes ``"header: value; header: value"``,
so a row retrieved on its own still says what its numbers mean. The dialect is sniffed from the
start of the file; the encoding is detected like a text file's.

Hostile tables stay cheap: the (quadratic) sniffer sees at most :data:`SNIFF_CHARS` characters; a
row the csv module refuses is dropped with one warning. The text is read within ``max_chars`` and
the rendering counted a row at a time against it, so a long header repeated into every row cannot
multiply a small file into gigabytes of text.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from akasha.errors import LoaderError
from akasha.loaders.base import require_text
from akasha.loaders.limits import LoaderLimitError, LoaderLimits
from akasha.loaders.text import read_text
from akasha.types import Document

logger = logging.getLogger(__name__)

#: The most characters the dialect sniffer looks at (about 0.2 s in the worst case).
SNIFF_CHARS = 4096


def sniff_sample(text: str) -> str:
    """The start of ``text`` that the sniffer sees: at most :data:`SNIFF_CHARS`, whole lines when possible."""
    if len(text) <= SNIFF_CHARS:
        return text
    sample = text[:SNIFF_CHARS]
    end = sample.rfind("\n")
    return sample[: end + 1] if end > 0 else sample


def _rows(reader: Iterator[list[str]], bad: list[tuple[int, str]]) -> Iterator[list[str]]:
    """The rows ``reader`` can parse; for each one it refuses, ``(line, reason)`` goes to ``bad``."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            bad.append((getattr(reader, "line_num", 0), str(exc)))
            if len(bad) > 10_000:  # the parser is lost: stop rather than churn
                raise


def render_rows(rows: Iterable[list[str]]) -> Iterator[str]:
    """Rows (the first non-empty one the header) as ``header: value`` lines; a lone header ``" | "``-joined."""
    header: list[str] | None = None
    rendered = False
    for row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            continue
        parts = []
        for i, cell in enumerate(row):
            value = cell.strip()
            if not value:
                continue
            name = header[i] if i < len(header) and header[i] else f"column {i + 1}"
            parts.append(f"{name}: {value}")
        rendered = True
        yield "; ".join(parts)
    if header is not None and not rendered:
        yield " | ".join(header)


def _bounded_text(path: Path, lines: Iterator[str], limits: LoaderLimits) -> str:
    """Join ``lines`` with newlines, raising LoaderLimitError once the text passes ``max_chars``."""
    cap = limits.max_chars
    out: list[str] = []
    chars = 0
    for number, line in enumerate(lines, 1):
        chars += len(line) + (1 if out else 0)
        if cap and chars > cap:
            raise LoaderLimitError(path, "max_chars", cap, f"more than {cap:,} characters of text rendered from its "
                                   f"first {number:,} rows (each row repeats the header's names)")
        out.append(line)
    return "\n".join(out)


def load_csv(path: Path, data: bytes | None = None, *, limits: LoaderLimits | None = None) -> list[Document]:
    """Load a .csv as one Document with one line per data row (rows the parser refuses are dropped)."""
    limits = limits or LoaderLimits.from_env()
    text, _encoding = read_text(path, data, limits)
    require_text(path, text)
    dialect: type[csv.Dialect] | csv.Dialect
    try:
        dialect = csv.Sniffer().sniff(sniff_sample(text), delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    bad: list[tuple[int, str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""), dialect)
        body = _bounded_text(path, render_rows(_rows(reader, bad)), limits)
    except csv.Error as exc:
        raise LoaderError(path, f"malformed CSV: {exc}") from None
    if bad and not body:  # render_rows yields a line as soon as one row has a cell
        raise LoaderError(path, f"malformed CSV: no row could be read (line {bad[0][0]}: {bad[0][1]})")
    if bad:
        lines = ", ".join(str(line) for line, _reason in bad[:5]) + (" ..." if len(bad) > 5 else "")
        logger.warning("%s: %d CSV row(s) dropped (ending on line %s): %s; the other rows are indexed",
                       path, len(bad), lines, bad[0][1])
    body = require_text(path, body, "table")
    return [Document(text=body, metadata={"source": str(path), "file_type": ".csv"}, id=str(path))]
