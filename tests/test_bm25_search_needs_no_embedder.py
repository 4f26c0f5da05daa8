"""A bm25 search embeds nothing and never builds the embedder: a base install (no openai package, no key)
answers ``rag.search(folder, q, search_type="bm25")`` with the default options; a later dense search on the
same RAG builds and uses the embedder then."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np

import akasha

ROOT = Path(__file__).resolve().parents[1]


class CountingCallable:
    """A user's embedding function that records every text it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts):
        self.texts.extend(texts)
        rows = np.zeros((len(texts), 32), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in text.lower().split():
                row[zlib.crc32(word.strip(".,?").encode()) % 32] += 1.0
            row[0] += 0.01
        return rows.tolist()


def folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text("The pump seal failed because the suction valve was closed.", encoding="utf-8")
    (docs / "bearings.md").write_text("Bearings are greased every 2000 hours of running.", encoding="utf-8")
    return docs


def test_bm25_search_embeds_nothing_and_a_later_knn_search_embeds_then(tmp_path):
    docs = folder(tmp_path)
    embed = CountingCallable()
    rag = akasha.RAG(embeddings=embed, cache_dir=tmp_path / "cache")
    hits = rag.search(docs, "suction valve", k=1, search_type="bm25")
    assert hits[0].chunk.metadata["source"] == "pump.md"
    assert embed.texts == []  # not a chunk, not a probe, not the question

    (docs / "motor.md").write_text("The motor overheated after the fan belt snapped.", encoding="utf-8")
    hits = rag.search(docs, "fan belt", k=1, search_type="bm25")  # an edit: still nothing embedded
    assert hits[0].chunk.metadata["source"] == "motor.md" and embed.texts == []

    hits = rag.search(docs, "why did the motor overheat", k=1, search_type="knn")  # vectors now, lazily
    assert hits[0].chunk.metadata["source"] == "motor.md"
    assert {"The motor overheated after the fan belt snapped."} <= set(embed.texts)
    embedded = len(embed.texts)
    assert rag.search(docs, "grease bearings", k=1)[0].chunk.metadata["source"] == "bearings.md"  # auto
    assert rag.search(docs, "suction valve", k=1, search_type="bm25")[0].chunk.metadata["source"] == "pump.md"
    assert len(embed.texts) == embedded + 1  # only the auto question; the chunks were embedded once


def test_a_restart_reuses_the_vectors_a_dense_search_cached(tmp_path):
    docs = folder(tmp_path)
    first = CountingCallable()
    akasha.RAG(embeddings=first, cache_dir=tmp_path / "cache").search(docs, "seal", k=1, search_type="knn")
    again = CountingCallable()
    rag = akasha.RAG(embeddings=again, cache_dir=tmp_path / "cache")
    assert rag.search(docs, "seal", k=1, search_type="bm25")[0].chunk.metadata["source"] == "pump.md"
    assert again.texts == []


SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["openai"] = None  # a base install: importing openai fails
    import akasha
    rag = akasha.RAG()  # the default options: openai embeddings, which a bm25 search must not need
    hits = rag.search(sys.argv[1], "suction valve", search_type="bm25")
    print(hits[0].chunk.metadata["source"])
    try:
        rag.search(sys.argv[1], "suction valve", search_type="knn")
    except Exception as exc:  # the dense search builds the embedder now, and says what is missing
        print(type(exc).__name__, exc)
""")


def test_a_base_install_answers_a_bm25_search_with_the_default_options(tmp_path):
    docs = folder(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(PYTHONPATH=str(ROOT), AKASHA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(docs)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "pump.md"
    assert lines[1].startswith("MissingExtraError") and "openai" in lines[1]
