"""Word tokenizer shared by BM25 and the hash embedder.

English (and other Latin-script) text is lowercased with accents folded;
Chinese and Japanese runs are cut with jieba when it is installed, else into
overlapping character bigrams, so a Chinese question matches Chinese text
either way. :func:`resolve_tokenizer` turns a tokenizer name (``"auto"``,
``"jieba"``, ``"bigram"``) into a function plus a stable id; indexes persist that
id so term statistics from different tokenizers are never mixed.

jieba runs in search mode (``lcut_for_search``): "北京大学" also yields "北京" and
"大学", so a short query still matches a longer compound word.

The lexical tokenizer of BM25 and the stores (:func:`resolve_tokenizer`) also keeps every
compound word whole (:func:`with_compounds`): ``retry_max_delay``, ``rag.last_sync``,
``setup.md`` and ``3.11`` are terms of their own beside their parts, so
a question that is one identifier, file name or version finds the one chunk that holds it
exactly, rather than every chunk holding its common parts.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata
from collections.abc import Callable
from typing import Any

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")
#: Words joined by "_" or "." (an identifier, a dotted name, a file name, a version).
_COMPOUND_RE = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)+")


@functools.lru_cache(maxsize=1)
def _jieba() -> tuple[Any, Callable[[str], None]] | None:
    """``(tokenizer, prepare)`` for jieba, or None when it is not installed.

    ``prepare(text)`` must be called before ``tokenizer`` cuts ``text`` (see :class:`_JiebaWords`).
    Imported on the first Chinese or Japanese text only: ASCII text never imports it.
    When the program already set up jieba's default tokenizer (used it, or gave it its own
    dictionary with ``jieba.set_dictionary``), that one is used, as it is; otherwise akasha
    cuts with a tokenizer of its own over jieba's dictionary, so jieba's default tokenizer
    is left for the program and jieba never writes its cache into the temp folder.
    """
    try:
        import jieba  # type: ignore[import-not-found]
    except ImportError:
        return None
    import logging
    import os

    jieba.setLogLevel(logging.WARNING)
    default = getattr(jieba, "dt", None)
    if default is None or default.initialized or getattr(default, "dictionary", None) is not None:
        return jieba, _nothing_to_prepare
    source = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    tokenizer = jieba.Tokenizer()
    try:
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError:  # an unusual jieba build: it finds its dictionary itself
        return jieba, _nothing_to_prepare
    try:
        words = _JiebaWords(data)
    except ValueError:  # not the "word count tag" layout this reader expects: jieba's own reader
        with open(source, "rb") as handle:
            tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(handle)
        tokenizer.initialized = True
        return tokenizer, _nothing_to_prepare
    tokenizer.FREQ, tokenizer.total = words.freq, words.total
    tokenizer.initialized = True
    return tokenizer, words.cover


def _nothing_to_prepare(text: str) -> None:
    """``prepare`` of a jieba tokenizer whose prefix dictionary is complete."""


#: Bytes of ``dict.txt`` read per step (whole lines): each step's few calls into C (decode, split,
#: sum, sort) hold the GIL for about 2 ms, so the threads that embed meanwhile are never held up
#: for long (one ``split`` of the whole 5 MB file held it for 40 ms, and the encoder's threads,
#: which need it between batches, waited; a first ask had a core idle for 0.2 s).
_DICT_PIECE_BYTES = 1 << 18


class _JiebaWords:
    """jieba's prefix dictionary, filled in one first character at a time.

    jieba cuts text with a dictionary of every word of its ``dict.txt`` (``word count tag``
    per line, about 350,000) with its count, plus every prefix of a word that is not itself a
    word with count 0 (about 500,000 entries): about a second of pure Python to build on a
    small machine, most of a first run's tokenizing. jieba only ever looks up pieces of the
    text it cuts, so an entry is needed only once its first character occurs in some text.
    The file is read in pieces of :data:`_DICT_PIECE_BYTES`, each kept sorted by word (the
    words starting with one character are a contiguous range of each piece), and
    :meth:`cover` adds a character's words and prefixes to :attr:`freq` before a text that
    has it is cut: for every key jieba looks up, :attr:`freq` holds what jieba's own
    ``gen_pfdict`` would (a plain dict, so lookups cost what they always did), for about a
    fifth of the time on a first text. Raises ValueError when ``data`` is not that layout.
    """

    def __init__(self, data: bytes) -> None:
        import threading

        self.total = 0
        #: (words, counts) of each piece in file order, both sorted by word; the sort is stable, so
        #: of a word listed twice the later line comes later (and a later piece later): it wins, as in jieba.
        self._pieces: list[tuple[list[str], list[str]]] = []
        for piece in _line_pieces(data, _DICT_PIECE_BYTES):
            text = piece.decode("utf-8")
            fields = text.split()
            if len(fields) != 3 * (text.count("\n") + (0 if text.endswith("\n") else 1)):
                raise ValueError("not three fields per line")
            words, counts = fields[0::3], fields[1::3]
            self.total += sum(map(int, counts))
            if not all(map(operator.le, words, words[1:])):  # jieba's file is sorted but for a few places
                order = sorted(range(len(words)), key=words.__getitem__)
                words, counts = [words[i] for i in order], [counts[i] for i in order]
            self._pieces.append((words, counts))
        self.freq: dict[str, int] = {}
        self._covered: set[str] = set()
        self._lock = threading.Lock()

    def cover(self, text: str) -> None:
        """Put the words starting with each character of ``text`` (and their prefixes) into :attr:`freq`."""
        if self._covered.issuperset(text):
            return
        from bisect import bisect_left

        with self._lock:
            freq = self.freq
            for char in set(text).difference(self._covered):
                # The words starting with ``char`` sort from ``char`` up to (not including) the next code point.
                after = chr(ord(char) + 1) if ord(char) < 0x10FFFF else None
                found: list[str] = []
                for words, counts in self._pieces:
                    first = bisect_left(words, char)
                    last = bisect_left(words, after, first) if after is not None else len(words)
                    if first < last:
                        starting = words[first:last]
                        freq.update(zip(starting, map(int, counts[first:last])))
                        found.extend(starting)
                # Every word first, then the prefixes that are not words.
                prefixes = {word[:end] for word in found for end in range(1, len(word))}
                freq.update(dict.fromkeys([prefix for prefix in prefixes if prefix not in freq], 0))
                self._covered.add(char)


def _line_pieces(data: bytes, size: int) -> list[bytes]:
    """``data`` cut into pieces of about ``size`` bytes, each ending at a line break (the last at the end)."""
    pieces, start = [], 0
    while start < len(data):
        end = data.find(b"\n", min(start + size, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        pieces.append(data[start:end])
        start = end
    return pieces


def _fold(text: str) -> str:
    """Lowercase and strip accents (é -> e) without touching CJK characters."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _cjk_tokens(run: str, use_jieba: bool) -> list[str]:
    if use_jieba:
        segmenter = _jieba()
        if segmenter is not None:
            tokenizer, prepare = segmenter
            prepare(run)
            words = [t for t in tokenizer.lcut_for_search(run) if t.strip()]
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


def with_compounds(text: str, *, use_jieba: bool = False) -> list[str]:
    """:func:`tokenize`'s tokens followed by the compound words of ``text`` kept whole (lowercased).

    Measured on identifier lookups (bench/identifier_lookup.py): a question that is one
    ``snake_case`` or dotted name is split into common words by :func:`tokenize`, and BM25 then
    ranks every chunk holding those words about alike; the whole compound is a rare term that
    only the chunk holding it matches.
    """
    tokens = tokenize(text, use_jieba=use_jieba)
    tokens.extend(_COMPOUND_RE.findall(text.lower() if text.isascii() else _fold(text)))
    return tokens


#: Version of the word rules of the lexical tokenizer; bump it when tokens for the same text change.
#: 3: compound words kept whole beside their parts (:func:`with_compounds`).
_RULES_VERSION = "3"
#: 2: :func:`tokenize` alone; indexes and stores that recorded it keep being read with it.
_EARLIER_RULES_VERSION = "2"
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
        return f"words-v{_RULES_VERSION}+jieba", functools.partial(with_compounds, use_jieba=True)
    return f"words-v{_RULES_VERSION}+bigram", with_compounds


def tokenizer_from_id(tokenizer_id: str) -> Callable[[str], list[str]] | None:
    """The function for a persisted tokenizer id, or None when this process cannot reproduce it."""
    for version, rules in ((_RULES_VERSION, with_compounds), (_EARLIER_RULES_VERSION, tokenize)):
        if tokenizer_id == f"words-v{version}+bigram":
            return rules
        if tokenizer_id == f"words-v{version}+jieba" and jieba_available():
            return functools.partial(rules, use_jieba=True)
    return None
