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
from typing import Any

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=1)
def _jieba():
    """jieba with its prefix dictionary loaded (from akasha's cache when possible), or None when not installed.

    Imported on the first Chinese or Japanese text only: ASCII text never imports it.
    """
    try:
        import jieba  # type: ignore[import-not-found]
    except ImportError:
        return None
    import logging

    jieba.setLogLevel(logging.WARNING)
    _load_prefix_dict(jieba)
    return jieba


#: Layout of akasha's copy of jieba's prefix dictionary (see :func:`_load_prefix_dict`).
_PREFIX_MAGIC = b"akasha-jieba-prefix-1\n"


def _prefix_dict(data: bytes) -> tuple[dict[str, int], int]:
    """jieba's prefix dictionary of a ``dict.txt`` (``word count tag`` per line), as ``Tokenizer.gen_pfdict`` builds it.

    Every word with its count, every prefix of a word that is not itself a word with 0,
    and the sum of the counts; the same dictionary in about three quarters of the time
    (one ``split`` of the whole file instead of a decode and split per line). Raises
    ValueError when a line does not have exactly three fields.
    """
    text = data.decode("utf-8")
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    fields = text.split()
    if len(fields) != 3 * lines:
        raise ValueError("not three fields per line")
    words = fields[0::3]
    counts = [int(n) for n in fields[1::3]]
    freq = dict(zip(words, counts))
    prefixes = {word[:end] for word in words for end in range(1, len(word))}
    prefixes.difference_update(freq)
    freq.update(dict.fromkeys(prefixes, 0))
    return freq, sum(counts)


def _load_prefix_dict(jieba: Any) -> None:
    """Give jieba's default tokenizer its prefix dictionary from akasha's cache folder.

    jieba builds a dictionary of ~500,000 words and word prefixes from its ``dict.txt``
    (about 1.5 s on a small machine) and caches it as a ``marshal`` file in the system's
    temp folder, which is barely faster to read (the same ~1.3 s: marshal decodes every
    string and int one by one). akasha keeps its own copy instead, in
    ``<cache folder>/jieba/`` (:func:`~akasha.index.paths.default_cache_dir`; built by
    :func:`_prefix_dict` the first time, about 0.7 s), as one
    newline-joined UTF-8 string plus an int32 array of the counts, which reads in about
    0.2 s, and never writes to the temp folder. The copy is keyed by jieba's version and
    its dictionary file's size and modification time. A tokenizer that already has a
    dictionary, or was given a custom one (``jieba.set_dictionary``), is left alone. When
    the cache folder is not writable the dictionary is built in memory (nothing written).
    """
    import array
    import os
    import struct
    import sys

    tokenizer = getattr(jieba, "dt", None)
    if tokenizer is None or tokenizer.initialized or getattr(tokenizer, "dictionary", None) is not None:
        return
    with tokenizer.lock:
        if tokenizer.initialized:
            return
        source = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
        try:
            stat = os.stat(source)
        except OSError:
            return  # an unusual jieba build: it finds its dictionary itself
        from akasha.fs import atomic_write
        from akasha.index.paths import default_cache_dir

        key = f"{getattr(jieba, '__version__', 'x')}-{stat.st_size}-{stat.st_mtime_ns}"
        path = default_cache_dir() / "jieba" / f"prefix-{key}.bin"
        try:
            data = path.read_bytes()
            if not data.startswith(_PREFIX_MAGIC):
                raise ValueError("not an akasha jieba prefix file")
            at = len(_PREFIX_MAGIC)
            count, total, words_size = struct.unpack_from("<QQQ", data, at)
            at += 24
            counts = array.array("i")
            counts.frombytes(data[at : at + 4 * count])
            if sys.byteorder != "little":
                counts.byteswap()
            at += 4 * count
            words = data[at : at + words_size].decode("utf-8").split("\n")
            if len(words) != count or len(counts) != count:
                raise ValueError("truncated akasha jieba prefix file")
            tokenizer.FREQ, tokenizer.total = dict(zip(words, counts.tolist())), total
            tokenizer.initialized = True
            return
        except (OSError, ValueError, struct.error, UnicodeDecodeError):
            pass  # absent or unreadable: build it below
        try:
            with open(source, "rb") as handle:
                freq, total = _prefix_dict(handle.read())
        except ValueError:  # not the "word count tag" layout this reader expects: jieba's own reader
            with open(source, "rb") as handle:
                freq, total = tokenizer.gen_pfdict(handle)
        tokenizer.FREQ, tokenizer.total = freq, total
        tokenizer.initialized = True
        counts = array.array("i", freq.values())
        if sys.byteorder != "little":
            counts.byteswap()
        words_bytes = "\n".join(freq).encode("utf-8")

        def write(handle: Any) -> None:
            handle.write(_PREFIX_MAGIC + struct.pack("<QQQ", len(freq), total, len(words_bytes)))
            handle.write(counts.tobytes())
            handle.write(words_bytes)

        try:
            atomic_write(path, write)
        except OSError as exc:  # a read-only cache folder: the next process builds it again
            import logging

            logging.getLogger(__name__).debug("could not keep jieba's prefix dictionary in %s: %s", path, exc)


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
