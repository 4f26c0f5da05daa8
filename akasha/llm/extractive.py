"""``model="extractive"``: a fully offline answerer that quotes the documents.

It reads the ``<document>`` blocks of the packed prompt (see :mod:`akasha.prompts`),
splits them into sentences, scores every sentence against the question with
BM25 (idf over the candidate sentences, stop words dropped, a small bonus for
sentences from higher-ranked documents), keeps the best few and prints them in
document order, each followed by its source ``(file, page N)``. Nothing is
invented: every sentence of the answer is a verbatim quote a reader can check.
``"extractive:<n>"`` sets how many sentences to quote (default 3).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from akasha.errors import ConfigError
from akasha.llm.base import GenerationOptions, Message
from akasha.prompts import parse_documents, parse_question
from akasha.retrieval.tokenize import tokenize

NO_ANSWER = "The retrieved documents do not appear to answer this question."

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my of on or our should so than that the their them then there these they this those to was we
    were what when where which who whom whose why will with would you your about any some please tell
    explain describe list give many much often""".split()
)
_SENTENCE_RE = re.compile(r"(?<=[A-Za-z0-9)\]\"'%][.!?])\s+(?=[A-Z0-9\"(\u3040-\u9fff])|(?<=[。！？])")
_BLOCK_START_RE = re.compile(r"^(#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||>|\S.{0,40}:$)")
_LIST_MARKER_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_MARKUP_RE = re.compile(r"\*\*|__|`")
_MAX_SENTENCE_CHARS = 400
_K1, _B = 1.2, 0.75


@dataclass
class _Sentence:
    text: str
    doc: int
    pos: int
    source: str
    page: int | None
    terms: list[str]


def _stem(token: str) -> str:
    """A light English stemmer (replaced/replace/replacing -> replac) so inflections still match."""
    if token.isascii() and token.isalpha():
        for _ in range(2):  # bearings -> bearing -> bear, like bearing -> bear
            for suffix in ("ing", "ed", "es", "s", "e"):
                if token.endswith(suffix) and len(token) - len(suffix) >= 3:
                    token = token[: -len(suffix)]
                    break
    return token


def _terms(text: str) -> list[str]:
    """Stemmed content words, plus whole numbers such as ``#7.1`` (a question's figures are strong cues)."""
    words = [_stem(t) for t in tokenize(text) if t not in _STOP and (len(t) > 1 or not t.isascii())]
    return words + ["#" + n for n in _NUMBER_RE.findall(text)]


def _lines_to_units(text: str) -> list[str]:
    """Re-join hard-wrapped lines: paragraphs, list items and table rows become one unit each."""
    units: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        starts_block = not line or _BLOCK_START_RE.match(line) is not None
        if starts_block or not current:
            if current:
                units.append(current)
            current = line
        else:
            current = f"{current} {line}"
        if not line:
            current = ""
    if current:
        units.append(current)
    return units


def _split(text: str) -> list[str]:
    out = []
    for unit in _lines_to_units(text):
        if unit.startswith("#"):
            continue  # headings make poor quotes
        unit = _MARKUP_RE.sub("", unit)
        unit = _LIST_MARKER_RE.sub("", unit)
        if unit.startswith("|"):
            unit = " | ".join(cell.strip() for cell in unit.strip("|").split("|") if cell.strip())
            if set(unit) <= set("-: |"):
                continue  # table rule
        for piece in _SENTENCE_RE.split(unit):
            piece = re.sub(r"\s+", " ", piece).strip(" -*•>\t")
            if len(piece) < 12:
                continue  # fragments make poor quotes
            if len(piece) > _MAX_SENTENCE_CHARS:
                piece = piece[:_MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
            out.append(piece)
    return out


def best_sentences(question: str, documents: list[dict], n: int = 3) -> list[_Sentence]:
    """The ``n`` sentences that best support ``question``, in document order."""
    sentences: list[_Sentence] = []
    seen: set[str] = set()
    for d, doc in enumerate(documents):
        for p, text in enumerate(_split(doc["text"])):
            key = text.lower()
            if key in seen:  # overlapping chunks repeat sentences
                continue
            seen.add(key)
            sentences.append(_Sentence(text, d, p, doc["source"], doc["page"], _terms(text)))
    query = set(_terms(question))
    if not sentences or not query:
        return []
    df = Counter(t for s in sentences for t in set(s.terms))
    total = len(sentences)
    avgdl = sum(len(s.terms) for s in sentences) / total or 1.0
    scored: list[tuple[float, _Sentence]] = []
    for s in sentences:
        tf = Counter(s.terms)
        score = 0.0
        for term in query:
            if term in tf:
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                f = tf[term]
                score += idf * f * (_K1 + 1) / (f + _K1 * (1 - _B + _B * len(s.terms) / avgdl))
        if score > 0:
            coverage = len(query & set(s.terms)) / len(query)
            scored.append((score * (0.5 + coverage) * (1.0 + 0.15 / (1 + s.doc)), s))
    scored.sort(key=lambda x: -x[0])
    if not scored:
        return []
    # Drop weak tail matches: keep sentences within 35% of the best score.
    top = scored[0][0]
    chosen = [s for score, s in scored[:n] if score >= 0.35 * top]
    return sorted(chosen, key=lambda s: (s.doc, s.pos))


def _cite(s: _Sentence) -> str:
    return f"({s.source}, page {s.page})" if s.page is not None else f"({s.source})"


class ExtractiveAnswerer:
    """Quotes the best-supporting sentences of the packed documents with their sources."""

    def __init__(self, rest: str = "", **_: object) -> None:
        rest = rest.strip()
        if rest and not rest.isdigit():
            raise ConfigError(f"extractive model takes an optional sentence count ('extractive:3'), got {rest!r}")
        self.sentences = int(rest) if rest else 3
        if self.sentences < 1:
            raise ConfigError("extractive sentence count must be at least 1")
        self.name = "extractive" if not rest else f"extractive:{rest}"

    def answer(self, messages: list[Message]) -> str:
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        documents = parse_documents(user)
        question = parse_question(user)
        chosen = best_sentences(question, documents, self.sentences)
        if not chosen:
            return NO_ANSWER
        return "\n".join(f"{s.text} {_cite(s)}" for s in chosen)

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        return self.answer(messages)

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        lines = self.answer(messages).split("\n")
        for i, line in enumerate(lines):
            yield line + ("\n" if i < len(lines) - 1 else "")
