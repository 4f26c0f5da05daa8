"""Section headings of a document, so each chunk can carry the titles it sits under (a study, not in the index).

A chunk cut from the middle of a manual often never names its subject ("Yes. Several
debuggers are described below ..."); the headings above it do ("Programming FAQ >
General Questions"). :func:`outline` finds the headings of a text, :func:`heading_paths`
gives each chunk the path of headings in force where it starts, and :func:`search_text`
is the text a study embeds or BM25-indexes for a chunk: that path, a blank line, the
chunk's own text (the chunk's text itself, what users see and what is packed, would not
change). bench/chunk_study.py measures it; docs/quality.md says why it is not in the
index yet: on the Python FAQ set the heading path in the embedded text lowered MiniLM's
recall@5 (0.683 -> 0.653), and in the BM25 text it lowered the Chinese set's.

Recognised headings, all cheap line-by-line checks:

* Markdown ``#`` .. ``######`` lines (outside ``` fences);
* underlined (and over-and-underlined) titles of reStructuredText and Markdown's setext
  form: a line followed by a line of one repeated punctuation character at least as long
  as the title; levels follow the order in which each style first appears, as in RST;
* numbered titles of plain text (Debian's manuals, text extracted from PDFs): "Chapter
  3. Choosing a distribution", "2.1.1. Package configuration", "第 3 章 ...", between
  blank lines, short, not ending like a sentence; the numbering gives the level.

A document's ``title`` metadata (PDF, HTML loaders may set it) comes first when present.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

#: Metadata key holding a chunk's heading path (" > "-joined), set by the chunker.
HEADINGS_KEY = "headings"
#: Joins the levels of a heading path.
SEPARATOR = " > "
#: Headings longer than this are not headings (a sentence that happens to be underlined).
MAX_HEADING_CHARS = 120
#: At most this many characters of heading path are carried into a chunk's search text.
MAX_PATH_CHARS = 300

_ATX = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ADORNMENT = re.compile(r"^([=\-~^\"'*+#<>_:.`])\1{2,}[ \t]*$")
_NUMBERED = re.compile(
    r"^(?:(?:Chapter|Appendix|Part|CHAPTER|APPENDIX|PART)\s+[0-9A-Z]+\.?"  # Chapter 3. / Appendix A.
    r"|第\s*[0-9０-９一二三四五六七八九十百]+\s*[章部節节篇]"  # 第 3 章
    r"|(?P<num>[0-9]+(?:\.[0-9]+)+)\.?"  # 2.1 / 2.1.1.
    r")\s+\S"
)
_SENTENCE_END = ("。", ".", "：", ":", ";", "；", ",", "，", "!", "！")
_RST_DIRECTIVE = re.compile(r"^\s*(\.\.|:[a-z]+:)")


def _clean(title: str) -> str:
    """A heading as it reads: markup emphasis and trailing ``#`` dropped, spaces collapsed."""
    title = re.sub(r"[*_`]{1,3}([^*_`]+)[*_`]{1,3}", r"\1", title)
    return " ".join(title.split())


def _numbered_level(line: str) -> int | None:
    """The level of a numbered plain-text title, or None when ``line`` is not one."""
    match = _NUMBERED.match(line)
    if match is None or len(line) > MAX_HEADING_CHARS or line.rstrip().endswith(_SENTENCE_END):
        return None
    number = match.group("num")
    return number.count(".") + 1 if number else 1


def outline(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset, heading path) for every heading of ``text``, in order.

    ``offset`` is where the heading's line starts; the path lists the titles from the
    outermost level down to this heading. Offsets before the first heading have no path.
    """
    lines = text.split("\n")
    starts: list[int] = []
    position = 0
    for line in lines:
        starts.append(position)
        position += len(line) + 1
    styles: list[tuple[str, bool]] = []  # RST/setext adornment styles in order of first use
    stack: list[tuple[int, str]] = []  # (level, title)
    found: list[tuple[int, tuple[str, ...]]] = []
    fenced = False
    skip_to = -1

    def push(level: int, title: str, offset: int) -> None:
        title = _clean(title)
        if not title or len(title) > MAX_HEADING_CHARS:
            return
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        found.append((offset, tuple(t for _, t in stack)))

    for i, line in enumerate(lines):
        if i <= skip_to:
            continue
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        stripped = line.strip()
        if not stripped:
            continue
        atx = _ATX.match(line)
        if atx:
            push(len(atx.group(1)), atx.group(2), starts[i])
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        under = _ADORNMENT.match(following)
        if (under and not line[:1].isspace() and not _ADORNMENT.match(line) and not _RST_DIRECTIVE.match(line)
                and len(following.rstrip()) >= len(line.rstrip()) and len(stripped) <= MAX_HEADING_CHARS):
            char = under.group(1)
            previous = lines[i - 1].rstrip() if i > 0 else ""
            over = bool(previous) and previous == following.rstrip() and _ADORNMENT.match(previous) is not None
            style = (char, over)
            if style not in styles:
                styles.append(style)
            push(styles.index(style) + 1, stripped, starts[i - 1] if over else starts[i])
            skip_to = i + 1
            continue
        level = _numbered_level(stripped)
        if level is not None and not line[:1].isspace():
            before_blank = i == 0 or not lines[i - 1].strip()
            after_blank = i + 1 >= len(lines) or not following.strip()
            if before_blank and after_blank:
                push(level, stripped, starts[i])
    return found


def heading_paths(text: str, offsets: Sequence[int], title: str | None = None) -> list[str]:
    """The heading path (" > "-joined) in force at each of ``offsets`` of ``text``.

    ``title`` (a document title from metadata) leads every path unless the path already
    starts with it. A chunk that starts before any heading gets the title alone (or "").
    """
    marks = outline(text)
    positions = [offset for offset, _ in marks]
    out: list[str] = []
    for offset in offsets:
        at = bisect_right(positions, offset) - 1
        path: tuple[str, ...] = marks[at][1] if at >= 0 else ()
        if title and (not path or path[0] != title):
            path = (title, *path)
        joined = SEPARATOR.join(path)
        if len(joined) > MAX_PATH_CHARS:  # keep the innermost levels: they name the chunk's subject
            joined = "…" + joined[-(MAX_PATH_CHARS - 1):]
        out.append(joined)
    return out


def piece_offsets(text: str, pieces: Sequence[str]) -> list[int]:
    """Where each of ``pieces`` (the splitter's stripped pieces, in order) starts in ``text``.

    Pieces may overlap, so each search starts just after the previous piece's start; a
    piece that cannot be found (never expected) takes the previous offset.
    """
    offsets: list[int] = []
    cursor = 0
    for piece in pieces:
        found = text.find(piece[:200], cursor)
        if found < 0:
            found = offsets[-1] if offsets else 0
        offsets.append(found)
        cursor = found + 1
    return offsets


def search_text(text: str, metadata: Mapping[str, Any] | None) -> str:
    """What the index embeds and BM25 indexes for a chunk: its heading path, a blank line, its text.

    A chunk without a heading path (made by another chunker, or by an earlier version)
    is indexed by its text alone, exactly as before.
    """
    headings = (metadata or {}).get(HEADINGS_KEY)
    if not headings or not isinstance(headings, str):
        return text
    return f"{headings}\n\n{text}"


__all__ = ["HEADINGS_KEY", "MAX_PATH_CHARS", "SEPARATOR", "heading_paths", "outline", "piece_offsets", "search_text"]
