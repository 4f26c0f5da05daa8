"""The quotable sentences of a document's text, for the extractive answerer.

Documents arrive hard-wrapped and full of reStructuredText or Markdown markup:
:func:`quotable_sentences` re-joins wrapped lines, drops the scaffolding a reader would not
quote, keeps code apart from prose and cuts prose into sentences, in English and in Chinese
or Japanese (``。！？``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: Longest quotable sentence or code unit (longer ones are cut at a word and end with "…").
MAX_SENTENCE_CHARS = 400
#: A piece shorter than this ("Yes.", "No.") is no quote by itself (see :func:`quotable_sentences`).
MIN_SENTENCE_CHARS = 12

# A sentence ends at ". " before a capital (English) or after 。！？ (Chinese, Japanese), but not
# inside brackets or quotes: "（以及解答！）。" and "「本当？」と" stay whole.
_SENTENCE_RE = re.compile(
    r"(?<=[A-Za-z0-9)\]\"'%][.!?])\s+(?=[A-Z0-9\"(\u3040-\u9fff])|(?<=[。！？])(?![）」』”’】〕)\]」])")
# A line that starts a new unit: a heading, a list item, a table row, a quote, a short "label:" line.
_BLOCK_START_RE = re.compile(r"^(#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||>|\S.{0,40}[^:]:$)")
_RULE_RE = re.compile(r"^([=\-~^\"'`#*+:.])\1{3,}$")  # a reStructuredText title's under/overline
_DIRECTIVE_RE = re.compile(r"^\.\.(?:\s|$)")  # ".. note::", ".. _label:", ".. XXX comment"
_DIRECTIVE_NAME_RE = re.compile(r"\.\.\s+([\w-]+)::")
_OPTION_RE = re.compile(r"^:[\w-]+:")
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "doctest", "testcode", "testoutput"})
_LIST_MARKER_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_INLINE_MARKUP_RE = re.compile(r"\*\*|__|`")
_SPACE_RE = re.compile(r"\s+")


class Sentence(NamedTuple):
    """One quotable piece of a document: a sentence, or a whole code unit (``code``)."""

    text: str
    code: bool = False


def _units(text: str) -> list[Sentence]:
    """Paragraphs, list items, table rows and code blocks of ``text``, hard-wrapped lines re-joined.

    Dropped: a reStructuredText title with its rule lines, and directive, label and comment lines
    with their indented arguments. Code units: the indented block after a line ending in ``::`` or
    after a code directive, a fenced Markdown block, and ``>>>`` doctest lines.
    """
    units: list[Sentence] = []
    current = ""
    lines_in_current = 0
    in_directive = literal = in_fence = False
    code: list[str] = []

    def close() -> None:
        nonlocal current, lines_in_current
        if current:
            units.append(Sentence(current))
        current, lines_in_current = "", 0

    def close_code() -> None:
        if code:
            units.append(Sentence(" ".join(code), code=True))
            code.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            close()
            if in_fence:
                close_code()
            in_fence = not in_fence
            continue
        if in_fence:
            if line:
                code.append(line)
            continue
        indented = raw[:1].isspace()
        if in_directive and line and indented and (not literal or _OPTION_RE.match(line)):
            continue  # a directive's indented arguments and options
        in_directive = False
        if code and line and not indented and not line.startswith(">>>"):
            close_code()
            literal = False
        if line and ((literal and indented) or line.startswith(">>>")):
            close()
            code.append(line)
            continue
        if not line:
            close()
            continue
        literal = False
        if _RULE_RE.match(line):
            if current and lines_in_current == 1:
                current, lines_in_current = "", 0  # the title above its underline
            continue
        if _DIRECTIVE_RE.match(line):
            close()
            in_directive = True
            name = _DIRECTIVE_NAME_RE.match(line)
            literal = name is not None and name.group(1) in _CODE_DIRECTIVES
            continue
        if line.endswith("::"):
            literal = True
        if _BLOCK_START_RE.match(line) or not current:
            close()
            current, lines_in_current = line, 1
        else:
            current = f"{current} {line}"
            lines_in_current += 1
    close()
    close_code()
    return units


def _cut(piece: str) -> str:
    """``piece`` cut to :data:`MAX_SENTENCE_CHARS` at a word boundary."""
    if len(piece) > MAX_SENTENCE_CHARS:
        return piece[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return piece


def quotable_sentences(text: str) -> list[Sentence]:
    """The quotable sentences and code units of ``text``, in order.

    A piece under :data:`MIN_SENTENCE_CHARS` characters opens the next sentence of its paragraph
    ("Yes. It is ..."), or is left out at a paragraph's end. Headings and table rules are left out;
    inline markup and list markers are removed, table cells are joined with `` | ``.
    """
    out: list[Sentence] = []
    for unit in _units(text):
        if unit.code:
            piece = _cut(_SPACE_RE.sub(" ", unit.text).strip())
            if len(piece) >= MIN_SENTENCE_CHARS:
                out.append(Sentence(piece, code=True))
            continue
        body = unit.text
        if body.startswith("#"):
            continue  # headings make poor quotes
        body = _LIST_MARKER_RE.sub("", _INLINE_MARKUP_RE.sub("", body))
        if body.startswith("|"):
            body = " | ".join(cell.strip() for cell in body.strip("|").split("|") if cell.strip())
            if set(body) <= set("-: |"):
                continue  # a table rule
        pending = ""  # a fragment waiting for the next sentence of its paragraph
        for piece in _SENTENCE_RE.split(body):
            piece = _SPACE_RE.sub(" ", piece).strip(" -*•>\t")
            if pending:
                piece, pending = f"{pending} {piece}".strip(), ""
            if len(piece) < MIN_SENTENCE_CHARS:
                pending = piece
                continue
            out.append(Sentence(_cut(piece)))
    return out
