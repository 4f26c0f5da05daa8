"""Word tokenizer shared by BM25 and the hash embedder.

English (and other Latin-script) text is lowercased with accents folded;
Chinese and Japanese runs are cut with jieba when it is installed, else into
overlapping character bigrams, so a Chinese question matches Chinese text
either way. The choice is made once per process and recorded in ``TOKENIZER_ID``
so persisted term statistics are never mixed across tokenizers.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")


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
            return [t for t in jieba.lcut(run) if t.strip()]
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, *, use_jieba: bool = False) -> list[str]:
    """Split ``text`` into lowercase, accent-folded word tokens (CJK as bigrams or jieba words)."""
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(_fold(text)):
        piece = match.group()
        if _CJK_RE.match(piece):
            tokens.extend(_cjk_tokens(piece, use_jieba))
        else:
            tokens.append(piece)
    return tokens
