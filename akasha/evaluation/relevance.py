"""Evaluation questions and the rule that decides which retrieved chunks are relevant.

A questions file is JSONL, one object per line::

    {"question": "How do I ...?", "relevant_sources": ["faq/library.txt"]}
    {"question": "Why is ...?", "answer": "reference answer text"}

Both keys may appear on one line. Relevance units (see :mod:`akasha.evaluation.metrics`):

- each entry of ``relevant_sources`` is one unit, satisfied by a chunk from that file: same
  resolved path, same path relative to the evaluated folder, or (for a bare name) same file name;
- ``answer`` is one unit, satisfied by a chunk that *overlaps* it: ``ANSWER_OVERLAP`` (half) of the
  word 3-grams (after akasha's tokenizer) of the shorter of the two occur in the longer (texts under
  three words: whole-word containment);
- when a line has both, an answer only counts in chunks from a relevant source.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from akasha.retrieval.tokenize import tokenize

ANSWER_OVERLAP = 0.5
_SHINGLE = 3


@dataclass
class Question:
    """One evaluation question and what counts as finding its answer."""

    question: str
    relevant_sources: list[str] = field(default_factory=list)
    answer: str | None = None
    line: int = 0

    @property
    def n_units(self) -> int:
        """How many relevance units the question has (answer counts as one)."""
        return 1 if self.answer else len(self.relevant_sources)


def load_questions(path: str | Path) -> list[Question]:
    """Read a questions JSONL file; errors name the file and line and say what is expected."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"questions file {path} does not exist; pass a JSONL file of questions")
    questions: list[Question] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not valid JSON ({error.msg})") from None
        question = record.get("question") if isinstance(record, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: each line needs a non-empty string 'question'")
        sources = record.get("relevant_sources") or []
        if isinstance(sources, str):
            sources = [sources]
        answer = record.get("answer")
        if not sources and not (isinstance(answer, str) and answer.strip()):
            raise ValueError(f"{where}: give 'relevant_sources' (list of files) and/or 'answer' (reference text)")
        if not all(isinstance(s, str) for s in sources):
            raise ValueError(f"{where}: 'relevant_sources' must be a list of file paths")
        questions.append(Question(record["question"], list(sources), answer or None, number))
    if not questions:
        raise ValueError(f"{path} holds no questions")
    return questions


def _shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + _SHINGLE]) for i in range(len(tokens) - _SHINGLE + 1)}


class AnswerMatcher:
    """Decides whether a chunk overlaps a reference answer (caches the answer's tokens)."""

    def __init__(self, answer: str, threshold: float = ANSWER_OVERLAP) -> None:
        self.tokens = tokenize(answer)
        self.shingles = _shingles(self.tokens)
        self.threshold = threshold

    def matches(self, text: str) -> bool:
        tokens = tokenize(text)
        if not tokens or not self.tokens:
            return False
        if len(tokens) < _SHINGLE or len(self.tokens) < _SHINGLE:
            short, long = sorted((tokens, self.tokens), key=len)
            joined = " " + " ".join(long) + " "
            return (" " + " ".join(short) + " ") in joined
        chunk = _shingles(tokens)
        smaller = min(len(chunk), len(self.shingles))
        return len(chunk & self.shingles) >= self.threshold * smaller


class SourceMatcher:
    """Maps a hit's source path to the relevant-source entries it satisfies."""

    def __init__(self, sources: Collection[str], folder: Path | None) -> None:
        self.folder = folder.resolve() if folder else None
        self.entries = list(sources)
        self.resolved = {}
        for entry in self.entries:
            candidate = Path(entry)
            if not candidate.is_absolute() and self.folder is not None:
                candidate = self.folder / candidate
            self.resolved[entry] = candidate.resolve()

    def units(self, path: str | None) -> set[str]:
        if not path:
            return set()
        hit = Path(path)
        if not hit.is_absolute() and self.folder is not None:  # a portable source: relative to the corpus folder
            hit = self.folder / hit
        hit = hit.resolve()
        relative = None
        if self.folder is not None and hit.is_relative_to(self.folder):
            relative = hit.relative_to(self.folder).as_posix()
        found = set()
        for entry in self.entries:
            if hit == self.resolved[entry] or entry == relative or ("/" not in entry and entry == hit.name):
                found.add(entry)
        return found


def matcher_for(question: Question, folder: Path | None) -> Callable[[str, str | None], set[str]]:
    """Return ``units(text, path) -> set[str]``: the units of ``question`` a chunk satisfies."""
    sources = SourceMatcher(question.relevant_sources, folder)
    if question.answer:
        answer = AnswerMatcher(question.answer)
        restrict = bool(question.relevant_sources)

        def units(text: str, path: str | None) -> set[str]:
            if restrict and not sources.units(path):
                return set()
            return {"answer"} if answer.matches(text) else set()

        return units
    return lambda text, path: sources.units(path)
