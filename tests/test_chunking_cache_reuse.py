"""Chunks are the same as before the chunker moved to langchain-text-splitters, so existing caches are reused.

The digests below were taken with akasha's own recursive chunker (the one langchain replaced) on
texts that do not depend on any loader: the raw .md/.txt/.csv files of examples/docs and seeded
synthetic English/Chinese/Japanese text with long separator-free runs. The index keys parsed chunks
by ``recursive-v1:<size>:<overlap>`` and chunk ids by position, so equal digests mean a cache built
by an earlier version is read as is: nothing is parsed or embedded again.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from akasha.chunking import chunk_documents
from akasha.types import Document

ROOT = Path(__file__).resolve().parents[1]

#: sha256 of [[chunk id, content hash], ...] per corpus and chunk size, from the earlier chunker.
GOLDEN = {
    "examples:40": "e84fec990a70e48a699618e729a5df44ba4ff037b380c0871675860d5381791e",
    "synthetic:40": "2316670ddc64bd46f53a731498b877c7c7ced365fa5cb2c829486d3e31bee599",
    "examples:200": "a3cdce4b0ec9703b5fdeb42b6475fec21fe8ffd9a14b616044d5ff8c91c53b9e",
    "synthetic:200": "0bc84f6461b46dec9496bf6cd2a478f5c990fdedd9729446192da3539ddd7880",
    "examples:1000": "028dfffbef25d03abfadc3e533715d07c92d0e3e93254a9c5d74e85943b25e1f",
    "synthetic:1000": "30b856ab63f9c4d1083a7e852b6da939cc8484591715241b48ccc1992bfed08c",
}


def example_documents() -> list[Document]:
    files = sorted(p for p in (ROOT / "examples" / "docs").iterdir() if p.suffix in (".md", ".txt", ".csv"))
    return [Document(p.read_text(encoding="utf-8"), id=p.name) for p in files]


def synthetic_documents() -> list[Document]:
    rng = random.Random(7)
    words = ["pump", "P-101", "bearing.", "grease", "500", "hours;", "seal", "水泵", "润滑脂。", "！", "、",
             "\n", "\n\n", "x" * 40, "ポンプ"]
    glue = [" ", "", "  ", "\u3000", ". "]
    texts = ["".join(rng.choice(words) + rng.choice(glue) for _ in range(rng.randint(0, 600))) for _ in range(40)]
    return [Document(text, id=f"synthetic{i}") for i, text in enumerate(texts)]


def digests() -> dict[str, str]:
    out = {}
    for size in (40, 200, 1000):
        for name, documents in (("examples", example_documents()), ("synthetic", synthetic_documents())):
            chunks = chunk_documents(documents, size)
            pairs = [[c.id, c.metadata["content_hash"]] for c in chunks]
            out[f"{name}:{size}"] = hashlib.sha256(json.dumps(pairs).encode()).hexdigest()
    return out


def test_chunk_ids_and_texts_are_those_of_the_earlier_chunker():
    assert digests() == GOLDEN


def test_an_unchanged_rerun_reads_the_cache_and_neither_run_imports_langchain(tmp_path):
    """A second process over the same folder parses nothing and embeds nothing; neither run loads langchain
    (akasha's recursive splitter is its own, chunking/character_splitter.py)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for document in example_documents():
        (docs / document.id).write_text(document.text, encoding="utf-8")
    code = (
        "import sys, json\n"
        "from akasha.embeddings.hash import HashEmbedder\n"
        "from akasha.index import CorpusIndex\n"
        f"index = CorpusIndex(HashEmbedder(), cache_dir={str(tmp_path / 'cache')!r})\n"
        f"report = index.sync({str(docs)!r})\n"
        "print(json.dumps([report.indexed, report.embedded, any(m.startswith('langchain') for m in sys.modules)]))\n"
    )
    import os

    # Old enough that the stat cache trusts the files (it re-hashes files touched in the last seconds).
    for path in docs.iterdir():
        os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    first = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      cwd=ROOT).stdout)
    second = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=ROOT).stdout)
    assert first[0] > 0 and first[1] > 0 and first[2] is False
    assert second == [0, 0, False]


@pytest.mark.parametrize("size", [200, 1000])
def test_the_index_settings_key_is_unchanged(size):
    """Parsed chunks are stored under this key; a new key would re-parse every file of an existing cache."""
    from akasha.embeddings.hash import HashEmbedder
    from akasha.index import CorpusIndex

    index = CorpusIndex(HashEmbedder(), chunk_size=size, cache_dir=":memory:")
    assert index.settings_key == f"recursive-v1:{size}:{size // 10}"
