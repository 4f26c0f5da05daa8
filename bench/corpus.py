"""Synthetic corpora of an exact number of chunks, shared by bench.compare and bench.scale.

Each chunk is one paragraph of 800-980 characters of Zipf-distributed pseudo-words
(a realistic spread of common and rare terms for BM25), paragraphs are separated
by blank lines and grouped 20 to a file, so every library's 1,000-character
splitter yields one chunk per paragraph. Queries are six consecutive words of a
random paragraph. The corpus is cached under bench/.data/ by its parameters.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / ".data"
CHUNKS_PER_FILE = 20
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ch", "st", "tr"]


@dataclass
class Corpus:
    root: Path
    chunks: int
    files: list[Path]
    queries: list[str]

    @property
    def edit_target(self) -> Path:
        """The file the "edit one file" step rewrites."""
        return self.files[len(self.files) // 2]


def vocabulary(size: int = 30000, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(2, 5))
        words.add("".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), n)))
    return sorted(words)


def paragraphs(n: int, seed: int = 0, vocab: list[str] | None = None) -> list[str]:
    """``n`` paragraphs of 800-980 characters each."""
    vocab = vocab or vocabulary()
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()
    ids = rng.choice(len(vocab), size=(n, 170), p=weights)
    out = []
    words = np.array(vocab, dtype=object)
    for row in ids:
        text = " ".join(words[row])
        cut = text.rfind(" ", 0, int(rng.integers(800, 980)))
        out.append(text[:cut].capitalize() + ".")
    return out


def write_files(docs: Path, texts: list[str]) -> list[Path]:
    """Write ``texts`` as paragraphs, :data:`CHUNKS_PER_FILE` a file, 1,000 files a folder; the files in order."""
    files = []
    for start in range(0, len(texts), CHUNKS_PER_FILE):
        group = start // CHUNKS_PER_FILE
        path = docs / f"d{group // 1000:03d}" / f"doc{group:06d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(texts[start : start + CHUNKS_PER_FILE]) + "\n", encoding="utf-8")
        files.append(path)
    return files


def make_corpus(n_chunks: int, seed: int = 0, n_queries: int = 50) -> Corpus:
    """Write (or reuse) ``bench/.data/synthetic-<n>-<seed>/`` and return it with its queries."""
    root = DATA / f"synthetic-{n_chunks}-{seed}"
    meta = root / "corpus.json"
    if meta.exists():
        info = json.loads(meta.read_text())
        return Corpus(root / "docs", n_chunks, [root / "docs" / f for f in info["files"]], info["queries"])
    if root.exists():
        shutil.rmtree(root)
    docs = root / "docs"
    texts = paragraphs(n_chunks, seed)
    files = write_files(docs, texts)
    rng = np.random.default_rng(seed + 1)
    queries = []
    for i in rng.integers(0, n_chunks, n_queries):
        words = texts[i].rstrip(".").split()
        at = int(rng.integers(0, max(1, len(words) - 6)))
        queries.append(" ".join(words[at : at + 6]).lower())
    meta.write_text(json.dumps({"files": [str(p.relative_to(docs)) for p in files], "queries": queries}))
    return Corpus(docs, n_chunks, files, queries)


def edit_one_file(corpus: Corpus, seed: int = 99) -> Path:
    """Replace the first paragraph of the edit target with a new one (one chunk changes)."""
    target = corpus.edit_target
    parts = target.read_text(encoding="utf-8").split("\n\n")
    parts[0] = paragraphs(1, seed)[0]
    target.write_text("\n\n".join(parts), encoding="utf-8")
    return target
