"""Real text with real embeddings, for recall measurements: ``python -m bench.real_vectors [--chunks 100000]``.

The synthetic corpus of ``bench.corpus`` with the sums-of-word-vectors of
``bench.server_index.PrecomputedEmbedder`` is a hard case for an approximate index: its
vectors crowd together (at 100k chunks the 10th and the 11th nearest neighbour of a
question differ by 0.001 in cosine on average), so an HNSW recall@10 measured on it counts
near-ties. This module makes the realistic case: paragraphs of 210-400 characters from the
text files of the installed Python packages (sources, READMEs, licences, docs), taken in a
fixed shuffled order, embedded once with akasha's packaged all-MiniLM-L6-v2 and cached
under ``bench/.data/real-<n>/``. Questions are eight consecutive words of 50 random
paragraphs. Embedding 100k paragraphs takes 20-60 minutes on a 2-core machine; later runs
read the cache.

:class:`LookupEmbedder` serves the cached vectors to akasha (``bench.server_worker
--vectors real``); texts it does not hold (akasha's identity probe texts, the benchmark's
needle) get ``PrecomputedEmbedder`` vectors.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.corpus import DATA, write_files
from bench.server_index import PrecomputedEmbedder

log = logging.getLogger(__name__)

#: Paragraph lengths: one paragraph and its separator fit a chunk of 420 characters, two never do.
MIN_CHARS, MAX_CHARS = 210, 400
N_QUESTIONS = 50


@dataclass
class RealCorpus:
    root: Path  #: the folder of text files (CHUNKS_PER_FILE paragraphs each) to index
    chunks: list[str]
    questions: list[str]
    vectors: np.ndarray  #: one unit row per chunk
    question_vectors: np.ndarray  #: one unit row per question


def _paragraphs(n: int) -> list[str]:
    """``n`` distinct whitespace-normalised paragraphs of MIN_CHARS..MAX_CHARS from the installed packages."""
    lib = Path(sys.prefix) / "lib"
    files = sorted(p for p in lib.rglob("*") if p.suffix in (".py", ".md", ".rst", ".txt") and p.is_file())
    random.Random(3).shuffle(files)
    seen: set[str] = set()
    chunks: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError):
            continue
        for para in text.split("\n\n"):
            para = " ".join(para.split())
            if len(para) < MIN_CHARS:
                continue
            para = para[:MAX_CHARS]
            if para not in seen:
                seen.add(para)
                chunks.append(para)
        if len(chunks) >= n:
            break
    if len(chunks) < n:
        raise SystemExit(f"only {len(chunks)} paragraphs of real text found under {lib}; ask for fewer --chunks")
    return chunks[:n]


def _questions(chunks: list[str]) -> list[str]:
    rng = random.Random(5)
    questions = []
    for i in rng.sample(range(len(chunks)), N_QUESTIONS):
        words = chunks[i].split()
        start = rng.randrange(max(1, len(words) - 8))
        questions.append(" ".join(words[start : start + 8]))
    return questions


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def load(n: int) -> RealCorpus:
    """The cached real corpus of ``n`` paragraphs, built (and embedded) on first use."""
    root = DATA / f"real-{n}"
    if not (root / "vectors.npy").exists():
        root.mkdir(parents=True, exist_ok=True)
        chunks = _paragraphs(n)
        questions = _questions(chunks)
        from akasha.embeddings import resolve_embedder

        embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
        started, parts = time.perf_counter(), []
        for start in range(0, n, 2000):
            parts.append(np.asarray(embedder.embed_documents(chunks[start : start + 2000]), dtype=np.float32))
            log.warning("embedded %d of %d paragraphs (%.0f s)", min(n, start + 2000), n, time.perf_counter() - started)
        question_vectors = np.stack([np.asarray(embedder.embed_query(q), dtype=np.float32) for q in questions])
        (root / "chunks.json").write_text(json.dumps(chunks), encoding="utf-8")
        (root / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
        np.save(root / "question_vectors.npy", question_vectors)
        np.save(root / "vectors.npy", np.concatenate(parts))  # last: its presence marks a complete cache
    chunks = json.loads((root / "chunks.json").read_text(encoding="utf-8"))
    docs = root / "docs"
    if not docs.exists():
        write_files(docs, chunks)
    return RealCorpus(docs, chunks, json.loads((root / "questions.json").read_text(encoding="utf-8")),
                      _unit(np.load(root / "vectors.npy")), _unit(np.load(root / "question_vectors.npy")))


class LookupEmbedder:
    """The cached MiniLM vectors of a :class:`RealCorpus`, looked up by text (other texts: synthetic vectors)."""

    def __init__(self, n: int) -> None:
        corpus = load(n)
        self.name = f"bench-real-minilm:{n}"
        self.dimension = corpus.vectors.shape[1]
        self.batch_size = 512
        self._rows = {text: row for text, row in zip(corpus.chunks, corpus.vectors, strict=True)}
        self._rows.update(zip(corpus.questions, corpus.question_vectors, strict=True))
        self._fallback = PrecomputedEmbedder(self.dimension)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self._rows.get(t) for t in texts]
        return np.stack([r if r is not None else self._fallback.embed_query(t) for r, t in zip(rows, texts, strict=True)]) \
            if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    corpus = load(args.chunks)
    sims = np.sort(corpus.question_vectors @ corpus.vectors.T, axis=1)[:, ::-1]
    log.warning("%d paragraphs in %s; mean cosine of the 1st / 10th / 11th / 50th nearest: %s", len(corpus.chunks),
                corpus.root, " / ".join(f"{np.mean(sims[:, i]):.3f}" for i in (0, 9, 10, 49)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
