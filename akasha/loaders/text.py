"""Plain text and Markdown (.txt, .md): bytes -> one Document.

A byte-order mark selects UTF-8-SIG / UTF-16 / UTF-32; else UTF-8 is tried, then charset-normalizer
detects the encoding. Binary content posing as text (NUL bytes, mostly control characters) is refused
with a :class:`~akasha.errors.LoaderError`. Memory stays bounded: the size is checked before any
byte is read, then the file is decoded a block at a time until the text passes ``max_chars``.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from pathlib import Path
from typing import BinaryIO

from akasha.errors import LoaderError
from akasha.loaders.base import file_size, open_bytes, require_text, unreadable
from akasha.loaders.limits import LoaderLimitError, LoaderLimits
from akasha.types import Document

logger = logging.getLogger(__name__)

#: How much of the input the binary and encoding checks look at.
_SAMPLE = 64 * 1024
#: Above this share of control/replacement characters the text is called binary.
_MAX_BAD_RATIO = 0.05

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")
#: Control characters (Unicode category Cc) other than the allowed ones, lone surrogates (Cs) and
#: U+FFFD, as one character class so the scan runs in C rather than per character in Python.
_BAD_CHARS = re.compile(
    "["
    + "".join(
        re.escape(chr(c)) for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in _ALLOWED_CONTROLS
    )
    + "\ud800-\udfff\ufffd]"
)


def _bad_ratio(text: str) -> float:
    """Share of characters in a sample that no human text contains (controls, U+FFFD)."""
    sample = text[:_SAMPLE]
    if not sample:
        return 0.0
    return len(_BAD_CHARS.findall(sample)) / len(sample)


def _bomless_utf16(sample: bytes) -> str | None:
    """Guess UTF-16 without a BOM: mostly-ASCII UTF-16 has NULs in every other byte."""
    if len(sample) < 4 or len(sample) % 2:
        return None
    even, odd = sample[0::2], sample[1::2]
    half = len(sample) // 2
    if odd.count(0) > 0.4 * half and even.count(0) < 0.05 * half:
        return "utf-16-le"
    if even.count(0) > 0.4 * half and odd.count(0) < 0.05 * half:
        return "utf-16-be"
    return None


def _detect(sample: bytes) -> str | None:
    """charset-normalizer's best guess, preferring cp1252 among nearly equal guesses.

    For short Western European text several single-byte code pages score the same (cp1250 would turn
    ``être`` into ``ętre``); cp1252 is by far the most common of them.
    """
    from charset_normalizer import from_bytes

    results = from_bytes(sample)
    best = results.best()
    if best is None:
        return None
    for match in results:
        if match.chaos <= best.chaos + 0.05 and match.coherence >= best.coherence - 0.05:
            if "cp1252" in match.could_be_from_charset:
                return "cp1252"
    return best.encoding


#: Bytes decoded at a time: the character limit is checked after each block.
_BLOCK = 1 << 20


def _choose(path: Path, head: bytes) -> tuple[str, str]:
    """``(encoding, errors)`` for a file starting with ``head``; ``"strict"``: a BOM's codec, or UTF-8 to try."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding, "strict"
    sample = head[:_SAMPLE]
    if b"\x00" in sample:  # text never has NUL bytes, except BOM-less UTF-16
        utf16 = _bomless_utf16(sample[: len(sample) - len(sample) % 2])
        if utf16 is None:
            raise LoaderError(path, "binary content (NUL bytes), not text")
        return utf16, "replace"
    return "utf-8", "strict"


def _decode_stream(path: Path, source: BinaryIO, encoding: str, errors: str, limits: LoaderLimits | None) -> str:
    """Decode ``source`` a block at a time, stopping once the text passes ``max_chars`` (holding one block more)."""
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors)
    except LookupError:  # pragma: no cover - charset-normalizer only names Python codecs
        raise LoaderError(path, f"unsupported text encoding {encoding!r}") from None
    cap = limits.max_chars if limits is not None else 0
    source.seek(0)
    parts: list[str] = []
    chars = read = 0
    while True:
        block = source.read(_BLOCK)
        piece = decoder.decode(block, final=not block)
        chars += len(piece)
        read += len(block)
        if cap and chars > cap:
            raise LoaderLimitError(path, "max_chars", cap,
                                   f"more than {cap:,} characters of text (stopped after reading {read:,} bytes)")
        parts.append(piece)
        if not block:
            return "".join(parts)


def _decode(path: Path, source: BinaryIO, limits: LoaderLimits | None) -> tuple[str, str]:
    """Choose the encoding from the start of ``source`` and decode it within ``limits``; ``(text, encoding)``."""
    head = source.read(4 * _SAMPLE)
    if not head:
        raise LoaderError(path, "empty file (0 bytes)")
    whole = len(head) < 4 * _SAMPLE or not source.read(1)
    encoding, errors = _choose(path, head)
    try:
        return _decode_stream(path, source, encoding, errors, limits), encoding
    except UnicodeDecodeError as exc:
        if encoding != "utf-8":
            raise LoaderError(
                path, f"starts with a {encoding} byte-order mark but is not valid {encoding} ({exc.reason})"
            ) from None
    detected = _detect(head if whole else head[:_SAMPLE])  # not UTF-8: decode again with the detected encoding
    if detected is None:
        raise LoaderError(path, "binary content or unknown text encoding")
    return _decode_stream(path, source, detected, "replace", limits), detected


def read_text(path: Path, data: bytes | None = None, limits: LoaderLimits | None = None) -> tuple[str, str]:
    """``(text, encoding)`` of ``data``, or of the file at ``path`` read a block at a time (never whole).

    The size is checked first, then the text against ``max_chars`` after every block. ``LoaderError``
    for empty or binary input and undetectable encodings; the text may still be whitespace only.
    """
    if limits is not None:
        limits.check_size(path, file_size(path) if data is None else len(data), text=True)
    with open_bytes(path) if data is None else io.BytesIO(data) as source:
        try:
            text, encoding = _decode(path, source, limits)
        except OSError as exc:
            raise unreadable(path, exc) from None
    if "\x00" in text[:_SAMPLE] or _bad_ratio(text) > _MAX_BAD_RATIO:
        raise LoaderError(path, "binary content (NUL or control characters), not text")
    logger.debug("%s: decoded as %s", path, encoding)
    return text, encoding


def load_text(path: Path, data: bytes | None = None, *, limits: LoaderLimits | None = None) -> list[Document]:
    """Load a .txt or .md file as one Document whose id is the path."""
    text, _encoding = read_text(path, data, limits or LoaderLimits.from_env())
    text = require_text(path, text)
    return [Document(text=text, metadata={"source": str(path), "file_type": path.suffix.lower()}, id=str(path))]
