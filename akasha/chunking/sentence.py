"""Sentence chunking: pack whole sentences up to ``chunk_size``.

A sentence ends after ``.``, ``!`` or ``?`` followed by whitespace, and after every Chinese or
Japanese sentence mark (``。！？｡．`` with any closing quote or bracket), whitespace or not.
``overlap`` is ignored; a sentence longer than ``chunk_size`` is cut into ``chunk_size`` windows.
"""

from __future__ import annotations

import re
from typing import Any

from akasha.chunking.fixed import PieceSplitter, size_only, split_fixed

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A Chinese/Japanese sentence end: the mark(s), then any closing quotes or brackets.
_CJK_END = re.compile(r"[。！？｡．]+[」』）】〕〉》”’\"']*")
_CJK_CLOSERS = frozenset("。！？｡．」』）】〕〉》")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``.``, ``!`` or ``?`` followed by whitespace, and after every
    ``。``, ``！``, ``？`` (with its closing quotes or brackets)."""
    pieces: list[str] = []
    for part in _SENTENCE_END.split(text):
        start = 0
        for end in _CJK_END.finditer(part):
            pieces.append(part[start : end.end()])
            start = end.end()
        pieces.append(part[start:])
    return [p.strip() for p in pieces if p.strip()]


def joined(current: str, sentence: str) -> str:
    """Two neighbouring sentences as one text: a space between them, except after a CJK sentence end."""
    if not current:
        return sentence
    return current + sentence if current[-1] in _CJK_CLOSERS else f"{current} {sentence}"


def pack(sentences: list[str], chunk_size: int) -> list[str]:
    """Join consecutive sentences with a space while the result fits in ``chunk_size``."""
    pieces: list[str] = []
    current = ""
    for sentence in sentences:
        if len(sentence) > chunk_size:
            if current:
                pieces.append(current)
                current = ""
            pieces.extend(split_fixed(sentence, chunk_size, 0))
            continue
        candidate = joined(current, sentence)
        if len(candidate) <= chunk_size:
            current = candidate
        else:
            pieces.append(current)
            current = sentence
    if current:
        pieces.append(current)
    return pieces


def split_by_sentence(text: str, chunk_size: int) -> list[str]:
    """Sentences of ``text`` packed up to ``chunk_size`` characters."""
    return pack(split_sentences(text), chunk_size)


def make_sentence_splitter(config: dict[str, Any], context: Any = None) -> PieceSplitter:
    """Registry factory for ``strategy: sentence`` (``overlap`` ignored)."""
    chunk_size = size_only(config)
    return PieceSplitter("sentence", lambda text: split_by_sentence(text, chunk_size))


__all__ = ["split_sentences", "pack", "split_by_sentence", "make_sentence_splitter"]
