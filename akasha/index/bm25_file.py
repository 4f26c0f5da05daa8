"""The BM25 index as one JSON file (a RAGPipeline's ``retrieval.bm25_path``): written after every
ingestion, read when the pipeline is built, so keyword search survives a restart without re-ingesting.
It holds the chunks' texts, never their vectors. Layout, version 1::

    {"format": "akasha-bm25", "version": 1,
     "source": "documents",              # the corpus: "documents" (ingest) or a folder's key
     "chunking": "<chunk settings key>", # chunks of other settings are not loaded
     "documents": {"<doc id>": "<content key>", ...},
     "chunks": [{"id": "<doc id>#<n>", "text": "...", "metadata": {...}}, ...]}

Written atomically (a crash leaves the previous file whole). Reading refuses a file over
:data:`MAX_BYTES`, of another format or version, with a ConfigError naming the file and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from akasha.errors import ConfigError
from akasha.fs import atomic_write
from akasha.types import Chunk

FORMAT = "akasha-bm25"
VERSION = 1
#: The largest file read back (bytes): about a million chunks of 1,000 characters.
MAX_BYTES = 2 * 1024**3


@dataclass
class BM25File:
    """The contents of a BM25 file: its corpus key, chunk settings, documents and chunks."""

    source: str
    chunking: str
    documents: dict[str, str]
    chunks: list[Chunk]


def write_bm25_file(path: Path, *, source: str, chunking: str, documents: Mapping[str, str],
                    chunks: Iterable[Chunk]) -> None:
    """Write the BM25 file atomically (a temporary file in the same folder, then ``os.replace``)."""
    body = {"format": FORMAT, "version": VERSION, "source": source, "chunking": chunking,
            "documents": dict(documents),
            "chunks": [{"id": c.id, "text": c.text, "metadata": dict(c.metadata)} for c in chunks]}
    atomic_write(path, lambda out: out.write(json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")))


def _bad(path: Path, why: str) -> ConfigError:
    return ConfigError(f"retrieval.bm25_path {str(path)!r} is not a BM25 index akasha can read ({why}); move it "
                       "away or delete it, then ingest the documents again (akasha rewrites it)")


def read_bm25_file(path: Path) -> BM25File | None:
    """The BM25 file at ``path``, or None when there is none. ConfigError for one that is too large,
    not JSON, of another format or version, or whose entries are malformed."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size > MAX_BYTES:
        raise _bad(path, f"{size:,} bytes, over the {MAX_BYTES:,} bytes akasha reads back")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"not JSON: {exc}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise _bad(path, f"no \"format\": \"{FORMAT}\"")
    if body.get("version") != VERSION:
        raise _bad(path, f"version {body.get('version')!r}; this akasha reads version {VERSION}")
    source, chunking, documents, entries = (body.get(k) for k in ("source", "chunking", "documents", "chunks"))
    if not isinstance(source, str) or not isinstance(chunking, str):
        raise _bad(path, "\"source\" and \"chunking\" must be strings")
    if not isinstance(documents, dict) or not all(isinstance(v, str) for v in documents.values()):
        raise _bad(path, "\"documents\" must map document ids to content keys")
    if not isinstance(entries, list):
        raise _bad(path, "\"chunks\" must be a list")
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for n, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("text"), str)
                and isinstance(entry.get("metadata", {}), dict)):
            raise _bad(path, f"chunk {n} needs a string \"id\" and \"text\" and a \"metadata\" object")
        chunk_id = entry["id"]
        doc, _, seq = chunk_id.rpartition("#")
        if doc not in documents or not seq.isdigit() or chunk_id in seen:
            raise _bad(path, f"chunk {n} has the id {chunk_id!r}: not '<a listed document>#<n>', or a repeat")
        seen.add(chunk_id)
        chunks.append(Chunk(chunk_id, entry["text"], dict(entry.get("metadata") or {})))
    return BM25File(source, chunking, dict(documents), chunks)


__all__ = ["BM25File", "FORMAT", "MAX_BYTES", "VERSION", "read_bm25_file", "write_bm25_file"]
