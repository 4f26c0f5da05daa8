"""Word tokenizer shared by BM25 and the hash embedder.

Latin-script text is lowercased with accents folded; Chinese and Japanese runs are cut into jieba's
search-mode words when rjieba is installed, else into overlapping character bigrams.
:func:`resolve_tokenizer` turns a name into a function plus a stable id that indexes persist, so term
statistics from different tokenizers never mix. The lexical tokenizer also keeps compound words whole
beside their parts (:func:`with_compounds`).
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
#: Words joined by "_" or "." (an identifier, a dotted name, a file name, a version); possessive, so a
#: word with no joint is passed over in one step (the plain form backtracked: 4x the time of the words).
_COMPOUND_RE = re.compile(r"(?<![a-z0-9])[a-z0-9]++(?:[._][a-z0-9]++)+")
#: One whole compound token (:func:`is_compound`).
_WHOLE_COMPOUND_RE = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)+")
#: A text without a joint followed by a letter or digit holds no compound (checked first: a fast scan).
_JOINT_RE = re.compile(r"[._][a-z0-9]")


@functools.lru_cache(maxsize=1)
def _jieba() -> Callable[[str], list[str]] | None:
    """rjieba's ``cut_for_search`` (jieba 0.42's tokens, docs/results.md), imported on the first CJK text; or None."""
    try:
        import rjieba
    except ImportError:
        return None
    return rjieba.cut_for_search


def _fold(text: str) -> str:
    """Lowercase and strip accents (é -> e) without touching CJK characters."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _cjk_tokens(run: str, use_jieba: bool) -> list[str]:
    if use_jieba:
        cut = _jieba()
        if cut is not None:
            words = [t for t in cut(run) if t.strip()]
            # jieba's simplified-Chinese dictionary can cut traditional words apart (潤滑 -> 小時潤 / 滑軸承):
            # character pairs beside the words keep every exact substring of two or more characters matchable.
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


def with_compounds(text: str, *, use_jieba: bool = False) -> list[str]:
    """:func:`tokenize`'s tokens followed by the compound words of ``text`` kept whole (lowercased).

    A whole ``snake_case`` or dotted name is a rare term only the chunk holding it matches.
    """
    words = tokenize(text, use_jieba=use_jieba)
    tokens = Terms(words)
    tokens.words = len(words)
    lowered = text.lower() if text.isascii() else _fold(text)
    if _JOINT_RE.search(lowered):
        tokens.extend(_COMPOUND_RE.findall(lowered))
    return tokens


def is_compound(token: str) -> bool:
    """True for a compound word of :func:`with_compounds` (``list.sort``; a word never holds "." or "_")."""
    return ("." in token or "_" in token) and _WHOLE_COMPOUND_RE.fullmatch(token) is not None


def counts_in_query(token: str, document_frequency: float) -> bool:
    """Whether a question's ``token`` scores in BM25: a compound only where it singles out one chunk.

    A compound held by several chunks is already scored through its words; counting it again doubled the
    weight of one phrase of the question (python-faq's BM25 lost 0.006 MRR@10 to ``list.sort`` and
    ``www.python.org``), while a compound held by one chunk is the exact match an identifier lookup needs.
    """
    return document_frequency <= 1 or not is_compound(token)


class Terms(list):
    """Tokens whose first :attr:`words` are words (BM25's length), the rest compounds (:func:`with_compounds`)."""

    __slots__ = ("words",)
    words: int


#: Version of the word rules of the lexical tokenizer; bump it when tokens for the same text change.
#: 3: compound words kept whole beside their parts (:func:`with_compounds`).
_RULES_VERSION = "3"
#: 2: :func:`tokenize` alone; indexes and stores that recorded it keep being read with it.
_EARLIER_RULES_VERSION = "2"
TOKENIZER_NAMES = ("auto", "jieba", "bigram")


@functools.lru_cache(maxsize=1)
def jieba_available() -> bool:
    """True when rjieba (:func:`_jieba`) is installed; looked up without importing it (that loads a dictionary)."""
    import importlib.util

    return importlib.util.find_spec("rjieba") is not None


def resolve_tokenizer(name: str = "auto") -> tuple[str, Callable[[str], list[str]]]:
    """``(tokenizer_id, fn)`` for ``name``; ``"auto"``: jieba's words with rjieba, else bigrams (the id says which)."""
    if name not in TOKENIZER_NAMES:
        raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZER_NAMES)}")
    use_jieba = name == "jieba" or (name == "auto" and jieba_available())
    if name == "jieba" and not jieba_available():
        from akasha.errors import MissingExtraError

        raise MissingExtraError("rjieba", "full", "Chinese word segmentation")
    if use_jieba:
        return f"words-v{_RULES_VERSION}+jieba", functools.partial(with_compounds, use_jieba=True)
    return f"words-v{_RULES_VERSION}+bigram", with_compounds


def earlier_rules_id(tokenizer_id: str) -> str | None:
    """The id the same tokenizer had under the earlier word rules (``words-v3+jieba`` -> ``words-v2+jieba``), or None.

    (:meth:`akasha.index.manifest.Manifest.adopt_namespace` adopts such an index without reading its files.)
    """
    current = f"words-v{_RULES_VERSION}+"
    return f"words-v{_EARLIER_RULES_VERSION}+{tokenizer_id[len(current):]}" if tokenizer_id.startswith(current) \
        else None


def tokenizer_from_id(tokenizer_id: str) -> Callable[[str], list[str]] | None:
    """The function for a persisted tokenizer id, or None when this process cannot reproduce it."""
    for version, rules in ((_RULES_VERSION, with_compounds), (_EARLIER_RULES_VERSION, tokenize)):
        if tokenizer_id == f"words-v{version}+bigram":
            return rules
        if tokenizer_id == f"words-v{version}+jieba" and jieba_available():
            return functools.partial(rules, use_jieba=True)
    return None
