"""Recursive character chunking: split on the coarsest separator that fits.

Separators work for English, Chinese and Japanese: paragraph and line breaks first, then
sentence ends (``。！？`` and ``. ! ?``), clause marks (``；，、`` and ``; ,``), then spaces
(including the full-width ``\u3000``). Marks stay at the *end* of the piece they close, so a
Chinese chunk ends with its ``。`` instead of the next chunk starting with it.

The splitting is :class:`~akasha.chunking.character_splitter.RecursiveSplitter`. A run with none of
the separators is cut into ``chunk_size`` windows in one pass (not a character-by-character ``""``
fallback), and texts over a million characters are split block by block. Chunks (so chunk ids and
cached chunks) are those of earlier versions; ``tests/test_chunking_cache_reuse.py`` holds their digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache

from akasha.chunking.character_splitter import RecursiveSplitter
from akasha.metadata import document_metadata, put_own
from akasha.types import Chunk, Document

#: Strategy name written to every chunk's metadata.
STRATEGY = "recursive"

#: Default separators, coarsest first. CJK punctuation comes before the
#: English forms because it needs no trailing space to be a boundary.
DEFAULT_SEPARATORS: tuple[str, ...] = (
    "\n\n", "\n",  # paragraphs, lines
    "。", "！", "？", "．", ". ", "! ", "? ",  # sentence ends
    "；", "; ", "：", "，", "、", ", ",  # clause marks
    "\u3000", " ", "",  # spaces
)


def validate_chunking(chunk_size: int, overlap: int) -> None:
    """Raise ``ValueError`` unless ``0 <= overlap < chunk_size`` (sizes in characters)."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive number of characters, got {chunk_size!r}")
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 0:
        raise ValueError(f"chunk_overlap must be 0 or more characters, got {overlap!r}")
    if overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({overlap}) must be smaller than chunk_size ({chunk_size}); "
            f"try chunk_overlap={default_overlap(chunk_size)}"
        )


def default_overlap(chunk_size: int) -> int:
    """The overlap used when none is given: a tenth of the chunk, at most 200 characters."""
    return max(0, min(200, chunk_size // 10))


#: The splitter for ``(separators, chunk_size, overlap)``, built once per process.
_splitter = lru_cache(maxsize=32)(RecursiveSplitter)


def _hard_windows(piece: str, chunk_size: int, overlap: int) -> list[str]:
    """Cut a separator-free run into windows of at most ``chunk_size`` characters, sharing at most ``overlap``;
    windows never start on whitespace and are right-stripped, so two never cover the same text."""
    out: list[str] = []
    n = len(piece)
    start = 0
    while True:
        while start < n and piece[start].isspace():
            start += 1
        if start >= n:
            return out
        end = min(start + chunk_size, n)
        out.append(piece[start:end].rstrip())
        if end >= n:
            return out
        start = max(start + 1, end - overlap)


#: Texts longer than this are split block by block (see :func:`_blocks`).
_BLOCK = 1_000_000


def _blocks(text: str, separators: tuple[str, ...]) -> list[str]:
    """Cut a very long text into blocks of at most ``_BLOCK`` characters, each ending just after the
    coarsest separator in its second half. Bounds the splitter's list of splits (a 50 MB line of
    words: ten million strings); chunks then do not overlap across blocks."""
    blocks: list[str] = []
    start = 0
    while len(text) - start > _BLOCK:
        end = start + _BLOCK
        cut = end
        for separator in separators:
            found = text.rfind(separator, start + _BLOCK // 2, end)
            if found >= 0:
                cut = found + len(separator)
                break
        blocks.append(text[start:cut])
        start = cut
    blocks.append(text[start:])
    return blocks


def split_text(
    text: str,
    chunk_size: int = 1000,
    overlap: int | None = None,
    separators: Sequence[str] | None = None,
) -> list[str]:
    """Split ``text`` into pieces of at most ``chunk_size`` characters.

    ``overlap`` (default :func:`default_overlap`) bounds how many characters consecutive pieces
    share (whole splits only, so often less). Pieces are stripped, whitespace-only ones dropped;
    a run with none of the ``separators`` is cut into windows.
    """
    if overlap is None:
        overlap = default_overlap(chunk_size)
    validate_chunking(chunk_size, overlap)
    if not text or text.isspace():
        return []
    seps = tuple(DEFAULT_SEPARATORS if separators is None else separators)
    # Drop the "" fallback: runs without separators are windowed below, in O(n).
    seps = tuple(s for s in seps if s != "") or ("\n",)
    splitter = _splitter(seps, chunk_size, overlap)
    pieces = [piece for block in _blocks(text, seps) for piece in splitter.split_text(block)]
    return _finish(pieces, chunk_size, overlap)


def _finish(pieces: Iterable[str], chunk_size: int, overlap: int) -> list[str]:
    """Strip the splitter's pieces, drop empty ones and cut those still over ``chunk_size`` into windows
    (a piece no separator could split comes back from the splitter as it is)."""
    out: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if len(piece) > chunk_size:
            out.extend(_hard_windows(piece, chunk_size, overlap))
        elif piece:
            out.append(piece)
    return out


def document_id(document: Document) -> str:
    """``Document.id`` when set, else ``sha256:`` + the first 16 hex digits of the text's hash."""
    if document.id:
        return document.id
    return "sha256:" + hashlib.sha256(document.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def make_chunks(document: Document, pieces: Sequence[str], strategy: str) -> list[Chunk]:
    """Chunks of one document: ids ``<doc_id>#<n>`` (from 0), metadata the document's plus ``chunk_index``,
    ``chunk_id``, ``content_hash`` (sha256 hex of the text) and ``strategy``."""
    doc_id = document_id(document)
    base = document_metadata(document.metadata)
    chunks = []
    for index, piece in enumerate(pieces):
        chunk_id = f"{doc_id}#{index}"
        metadata = dict(base)
        # a document's own key of the same name keeps its value (see akasha.metadata)
        put_own(metadata, "chunk_index", index)
        put_own(metadata, "chunk_id", chunk_id)
        put_own(metadata, "content_hash", hashlib.sha256(piece.encode("utf-8", "surrogatepass")).hexdigest())
        put_own(metadata, "strategy", strategy)
        chunks.append(Chunk(id=chunk_id, text=piece, metadata=metadata))
    return chunks


def chunk_documents(
    documents: Iterable[Document],
    chunk_size: int = 1000,
    overlap: int | None = None,
    separators: Sequence[str] | None = None,
) -> list[Chunk]:
    """Split each document with :func:`split_text` into chunks, ids and metadata as :func:`make_chunks` gives."""
    if overlap is None:
        overlap = default_overlap(chunk_size)
    validate_chunking(chunk_size, overlap)
    chunks: list[Chunk] = []
    for document in documents:
        chunks.extend(make_chunks(document, split_text(document.text, chunk_size, overlap, separators), STRATEGY))
    return chunks
