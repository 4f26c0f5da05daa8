"""Shared pieces of the reliability tests: corpora, counting embedders, index comparisons.

Every input is generated here (no binary fixtures). The counting embedder
appends the sha256 of every text it embeds to a file, so embedding work done by
a process that was later killed can still be counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from akasha.embeddings.hash import HashEmbedder

WORDS = ("pump valve bearing seal grease motor shaft filter gasket rotor sensor boiler turbine flange nozzle "
         "piston spring clutch relay fuse cable switch meter gauge").split()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_text(rng: random.Random, tag: str, paragraphs: int = 6) -> str:
    """A few paragraphs of machine-manual prose; ``tag`` makes the file findable by BM25."""
    out = []
    for p in range(paragraphs):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
        out.append(f"{tag} paragraph {p}: {words}.")
    return "\n\n".join(out)


def write_text_corpus(folder: Path, n: int, seed: int = 0) -> dict[str, str]:
    """``n`` .md/.txt files (tag ``fileNNN``); returns name -> text."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for i in range(n):
        name = f"file{i:03d}.{'md' if i % 2 else 'txt'}"
        text = document_text(rng, f"file{i:03d}")
        (folder / name).write_text(text, encoding="utf-8")
        out[name] = text
    return out


class CountingEmbedder(HashEmbedder):
    """The hash embedder that logs every embedded text's sha256 to ``log`` (one per line).

    ``delay`` seconds of sleep per batch make a kill land in the middle of a run.
    """

    def __init__(self, log: str | os.PathLike[str] | None = None, *, delay: float = 0.0, batch_size: int = 4,
                 fail_on: str | None = None, fail_with: type[BaseException] = RuntimeError) -> None:
        super().__init__()
        self.log = None if log is None else Path(log)
        self.delay = delay
        self.batch_size = batch_size
        self.fail_on = fail_on
        self.fail_with = fail_with
        self.embedded: list[str] = []

    def embed_documents(self, texts):
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise self.fail_with(f"embedding provider failed on a batch containing {self.fail_on!r}")
        if self.delay:
            time.sleep(self.delay)
        vectors = super().embed_documents(texts)
        hashes = [sha(t) for t in texts]
        self.embedded.extend(hashes)
        if self.log is not None:
            with open(self.log, "a", encoding="ascii") as handle:
                handle.write("".join(h + "\n" for h in hashes))
                handle.flush()
        return vectors


def logged_hashes(log: Path) -> Counter[str]:
    """sha256 -> how many times it was embedded, from a CountingEmbedder log (a torn last line is ignored)."""
    if not log.exists():
        return Counter()
    return Counter(line for line in log.read_text(encoding="ascii").splitlines() if len(line) == 64)


def committed_vectors(cache: Path, model: str = "hash") -> set[str]:
    """The text hashes that have a committed vector in the cache's database (read-only look)."""
    db = cache / "index.sqlite3"
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return {r[0] for r in con.execute("SELECT text_hash FROM embeddings WHERE model=?", (model,))}
    finally:
        con.close()


def chunk_signature(index) -> list[tuple[str, int, str]]:
    """(file name relative to nothing: the full source path, chunk_index, text) of every chunk, sorted."""
    return sorted((c.metadata["source"], int(c.metadata["chunk_index"]), c.text) for c in index.chunks)


def assert_internally_consistent(index) -> None:
    """Chunk ids are unique and the BM25 and dense structures hold exactly the chunk ids."""
    ids = [c.id for c in index.chunks]
    assert len(ids) == len(set(ids)), "duplicate chunk ids"
    assert set(index._live.dense.ids) == set(ids), "dense index ids differ from the chunks"
    assert len(index._live.dense.ids) == len(ids), "duplicate ids in the dense index"
    assert len(index._live.bm25) == len(ids), "BM25 holds a different number of documents than the chunks"


def can_mount() -> bool:
    """True when this process may mount file systems (root with CAP_SYS_ADMIN, as in the dev container)."""
    if os.geteuid() != 0:
        return False
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"akasha-mount-probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], capture_output=True)
        return ok
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A size-limited tmpfs mounted at ``where`` for the duration (root only)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextlib.contextmanager
def read_only_view(source: Path, where: Path) -> Iterator[Path]:
    """``source`` bind-mounted read-only at ``where`` (root only): writes there fail with EROFS."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(source), str(where)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
