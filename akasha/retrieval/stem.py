"""A light English stemmer for BM25: plural, ``-ing``, ``-ed`` and ``-ly`` endings folded.

"How do I install modules?" should match "installing a module". Porter conflates too much for code
("generic"/"generate"); this folds only inflections, leaving short words and anything but plain ASCII
letters alone. Stems are only compared with stems of the same function.
"""

from __future__ import annotations

from functools import lru_cache

#: Bumped whenever a rule changes: it is part of the BM25 tokenizer id persisted with an index.
STEM_VERSION = 1
_VOWELS = frozenset("aeiouy")
_DOUBLE_OK = frozenset("lsz")  # "install", "process", "buzz": doubled at the end of the stem itself


def _has_vowel(stem: str) -> bool:
    return any(ch in _VOWELS for ch in stem)


def _undouble(stem: str) -> str:
    """"running" -> "runn" -> "run"; "installing" keeps "install"."""
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS and stem[-1] not in _DOUBLE_OK:
        return stem[:-1]
    return stem


@lru_cache(maxsize=200_000)
def stem_english(token: str) -> str:
    """The stem of one lowercase token (unchanged unless it is ASCII letters, 4 characters or more)."""
    if len(token) < 4 or not token.isascii() or not token.isalpha():
        return token
    word = token
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("es") and word[-3:-2] in ("x", "z") or word.endswith(("ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 7 and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 6 and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    elif word.endswith("ly") and len(word) >= 6:
        word = word[:-2]
    if word.endswith("e") and len(word) >= 5:
        word = word[:-1]
    return word


__all__ = ["STEM_VERSION", "stem_english"]
