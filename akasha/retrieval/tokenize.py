"""Word tokenizer shared by BM25 and the hash embedder.

English (and other Latin-script) text is lowercased with accents folded;
Chinese and Japanese runs are cut with jieba when it is installed, else into
overlapping character bigrams, so a Chinese question matches Chinese text
either way. :func:`resolve_tokenizer` turns a tokenizer name (``"auto"``,
``"jieba"``, ``"bigram"``) into a function plus a stable id; indexes persist that
id so term statistics from different tokenizers are never mixed.

jieba runs in search mode (``lcut_for_search``): "北京大学" also yields "北京" and
"大学", so a short query still matches a longer compound word.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=1)
def _jieba():
    try:
        import jieba  # type: ignore[import-not-found]
    except ImportError:
        return None
    import logging

    jieba.setLogLevel(logging.WARNING)
    return jieba


def _fold(text: str) -> str:
    """Lowercase and strip accents (é -> e) without touching CJK characters."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _cjk_tokens(run: str, use_jieba: bool) -> list[str]:
    if use_jieba:
        jieba = _jieba()
        if jieba is not None:
            words = [t for t in jieba.lcut_for_search(run) if t.strip()]
            # jieba's dictionary is simplified Chinese; on traditional text it can cut
            # words apart (潤滑 -> 小時潤 / 滑軸承). Character pairs alongside the words
            # keep every exact substring of two or more characters matchable.
            pairs = [run[i : i + 2] for i in range(len(run) - 1)]
            return words + [p for p in pairs if p not in words]
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, *, use_jieba: bool = False) -> list[str]:
    """Split ``text`` into lowercase, accent-folded word tokens (CJK as bigrams or jieba words)."""
    if text.isascii():  # fast path: same tokens as below, without per-match Python work
        return _ASCII_WORD_RE.findall(text.lower())
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(_fold(text)):
        piece = match.group()
        if _CJK_RE.match(piece):
            tokens.extend(_cjk_tokens(piece, use_jieba))
        else:
            tokens.append(piece)
    return tokens


#: Version of the word rules above; bump it when tokens for the same text change.
_RULES_VERSION = "2"
TOKENIZER_NAMES = ("auto", "jieba", "bigram")


@functools.lru_cache(maxsize=1)
def jieba_available() -> bool:
    """True when jieba is installed (decides what ``"auto"`` means).

    Looks the package up without importing it: jieba's import costs ~20 ms and
    only text with Chinese or Japanese characters needs it.
    """
    import importlib.util

    return importlib.util.find_spec("jieba") is not None


def resolve_tokenizer(name: str = "auto") -> tuple[str, Callable[[str], list[str]]]:
    """Return ``(tokenizer_id, fn)`` for ``name``.

    ``"auto"`` means jieba when installed, else character bigrams; the returned
    id names what was actually chosen (``"words-v1+jieba"`` or ``"words-v1+bigram"``).
    """
    if name not in TOKENIZER_NAMES:
        raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZER_NAMES)}")
    use_jieba = name == "jieba" or (name == "auto" and jieba_available())
    if name == "jieba" and not jieba_available():
        from akasha.errors import MissingExtraError

        raise MissingExtraError("jieba", "full", "Chinese word segmentation")
    if use_jieba:
        return f"words-v{_RULES_VERSION}+jieba", functools.partial(tokenize, use_jieba=True)
    return f"words-v{_RULES_VERSION}+bigram", tokenize


def tokenizer_from_id(tokenizer_id: str) -> Callable[[str], list[str]] | None:
    """The function for a persisted tokenizer id, or None when this process cannot reproduce it."""
    if tokenizer_id == f"words-v{_RULES_VERSION}+bigram":
        return tokenize
    if tokenizer_id == f"words-v{_RULES_VERSION}+jieba" and jieba_available():
        return functools.partial(tokenize, use_jieba=True)
    return None
