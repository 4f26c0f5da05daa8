"""One contract for the content-keyed index on every store: the local default, memory, faiss, a Chroma
folder, Qdrant in-process, and (integration) a Chroma server and PostgreSQL + pgvector started by the tests.

Unchanged files embed nothing (also in a new process); touch, rename and copy embed nothing; an edit
re-embeds only its changed chunks; a delete vanishes from results and from the store; a failing
embedder or kill -9 part way leaves the last state usable and the next run resumes without
re-embedding what was committed; two processes at once stay consistent.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from engine_targets import DOORS, CountingEmbedder, build_store, open_door
from servers_fixtures import chroma_server, pg_server  # noqa: F401

from akasha.stores.urls import open_store

HERE = Path(__file__).parent

LOCAL = ["local", "memory", "faiss", "chroma-folder", "qdrant-folder"]
SERVERS = ["chroma-server", "pgvector"]
#: Stores whose records outlive the process (memory and faiss start empty in a new process).
PERSISTENT = {"chroma-folder", "qdrant-folder", "chroma-server", "pgvector"}
#: Targets whose store object lives across the door instances of one test (see Target).
SHARED_OBJECT = {"memory", "faiss", "qdrant-folder"}
#: What a RAGPipeline file cannot name: the local default store, and qdrant's folder mode.
NOT_IN_YAML = {"local", "qdrant-folder"}


def cases(kinds=None) -> list:
    """(target kind, door) pairs: every store through every door that can reach it; servers are integration."""
    out = []
    for kind in [*LOCAL, *SERVERS]:
        for door in DOORS:
            if (kinds is not None and kind not in kinds) or (door == "yaml" and kind in NOT_IN_YAML):
                continue
            marks = [pytest.mark.integration] if kind in SERVERS else []
            out.append(pytest.param((kind, door), marks=marks, id=f"{kind}-{door}"))
    return out


NOTES = {
    "filters.md": ["The air filter is replaced every 12 months.", "Dusty roads shorten the filter's life."],
    "warranty.txt": ["The warranty covers defects for three years.", "Batteries are covered for two years."],
    "coolant.md": ["Coolant is changed every 5 years.", "Use the blue long-life coolant only."],
    "tyres.txt": ["Check tyre pressure monthly.", "Front tyres take 2.4 bar, rear tyres 2.6 bar."],
    "spare.txt": ["The spare wheel is kept in the boot.", "The jack sits beside the spare wheel."],
}


def write_notes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, paragraphs in NOTES.items():
        (folder / name).write_text("\n\n".join(paragraphs), encoding="utf-8")
    return folder


def write_extra(folder: Path, n: int) -> None:
    for i in range(n):
        (folder / f"extra{i}.txt").write_text(f"Extra note {i}: bolt size {i} mm.\n\nTorque {i} newton metres.")


class Target:
    """One store behind one door. In-process stores (memory, faiss) and qdrant's folder (one client at a
    time) are kept as one object across the test's door instances, as within one process (a YAML file
    builds its own store each time, as a restarted pipeline would); the others are opened anew each
    time, as a new process or machine would."""

    def __init__(self, recipe: dict, door: str) -> None:
        self.recipe = recipe
        self.kind = recipe["label"]
        self.door = door
        self._shared = None
        self._last = None

    @contextlib.contextmanager
    def open(self, cache: Path, embedder=None):
        store = None
        if self.kind in SHARED_OBJECT and self.door != "yaml":
            if self._shared is None:
                self._shared = build_store(self.recipe)
            store = self._shared
        with open_door(self.door, self.recipe, cache, embedder, store) as handle:
            self._last = handle
            yield handle

    def release(self) -> None:
        """Close the kept store object (before a child process opens the same folder)."""
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    def count(self) -> int | None:
        """Records in the store, through a new client where one can read it (None: the local store, or an
        in-process store a YAML file built inside its pipeline)."""
        if self.kind == "local":
            return None
        if self.kind in SHARED_OBJECT:
            if self.door == "yaml":
                link = self._last.engine.index._link if self._last is not None else None
                return link.store.count() if link is not None else None
            return self._shared.count() if self._shared is not None else None
        store = open_store(self.recipe["url"]) if self.kind in SERVERS else build_store(self.recipe)
        try:
            return store.count()
        finally:
            store.close()


@pytest.fixture(params=cases())
def target(request, tmp_path) -> Target:
    kind, door = request.param
    name = f"t{uuid.uuid4().hex[:10]}"
    if kind == "chroma-server":
        recipe = {"kind": "url", "url": request.getfixturevalue("chroma_server").url(name)}
    elif kind == "pgvector":
        recipe = {"kind": "url", "url": request.getfixturevalue("pg_server").dsn(table=name)}
    else:
        recipe = {"kind": kind}
        if kind in ("chroma-folder", "qdrant-folder"):
            recipe.update(path=str(tmp_path / kind), collection=name)
    target = Target({**recipe, "label": kind}, door)
    yield target
    target.release()


def run_child(target: Target, cache: Path, folder: Path, *flags: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)])}
    return subprocess.Popen([sys.executable, str(HERE / "engine_targets.py"), json.dumps(target.recipe), target.door,
                             str(cache), str(folder), *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)


def child_report(proc: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def top_path(handle, folder: Path, question: str) -> str:
    return Path(handle.search(folder, question, k=1)[0].path).name


# ----------------------------------------------------------------------------- the contract
def test_unchanged_touched_renamed_and_copied_files_embed_nothing(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "cache") as door:
        first = door.sync(docs)
        assert first.embedded == first.chunks == 10 == door.embedder.embedded
        assert target.count() in (None, 10)
        assert door.sync(docs).embedded == 0
        os.utime(docs / "tyres.txt", (time.time() + 5, time.time() + 5))
        (docs / "spare.txt").rename(docs / "boot.txt")
        shutil.copy(docs / "coolant.md", docs / "coolant-copy.md")
        report = door.sync(docs)
        assert report.embedded == 0 and door.embedder.embedded == 10 and report.chunks == 12
        assert top_path(door, docs, "spare wheel boot") == "boot.txt"
        assert target.count() in (None, 12)
    with target.open(tmp_path / "cache") as again:  # a new instance in the same process
        assert again.sync(docs).embedded == 0 and again.embedder.embedded == 0


def test_a_new_process_embeds_nothing(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "cache") as door:
        door.sync(docs)
    target.release()
    report = child_report(run_child(target, tmp_path / "cache", docs))
    assert report["embedded"] == 0 and report["unchanged"] == 5 and report["chunks"] == 10
    assert Path(report["top"]).name == "spare.txt"


@pytest.mark.parametrize("target", cases(PERSISTENT), indirect=True)
def test_a_second_machine_with_an_empty_cache_embeds_nothing(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "machine-a") as door:
        door.sync(docs)
    with target.open(tmp_path / "machine-b") as door:
        report = door.sync(docs)
        assert door.embedder.embedded == 0 and report.unchanged == 5
        assert target.count() == 10


def test_an_edit_re_embeds_only_its_changed_chunks(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "cache") as door:
        door.sync(docs)
        (docs / "tyres.txt").write_text("Check tyre pressure monthly.\n\nFront and rear tyres take 2.5 bar now.")
        report = door.sync(docs)
        assert report.embedded == 1 and door.embedder.embedded == 11
        hit = door.search(docs, "front rear tyres bar", k=1)[0]
        assert hit.text == "Front and rear tyres take 2.5 bar now."
        assert target.count() in (None, 10)


def test_a_deleted_file_vanishes_from_results_and_store(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "cache") as door:
        door.sync(docs)
        (docs / "spare.txt").unlink()
        assert door.sync(docs).removed == 1
        hits = door.search(docs, "spare wheel boot jack", k=10, search_type="auto")
        assert hits and all(not h.path.endswith("spare.txt") for h in hits)
        assert target.count() in (None, 8)


def test_a_failing_embedder_keeps_the_last_state_and_the_retry_resumes(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    with target.open(tmp_path / "cache") as door:
        door.sync(docs)
    write_extra(docs, 6)
    failing = CountingEmbedder(fail_after=4)
    with target.open(tmp_path / "cache", failing) as door:
        with pytest.raises(Exception, match="failed part way"):
            door.sync(docs)
        if not (target.door == "yaml" and target.kind in SHARED_OBJECT):  # (that pipeline built a new, empty one)
            assert target.count() in (None, 10)
    with target.open(tmp_path / "cache") as door:
        report = door.sync(docs)
        assert failing.embedded == 4 and door.embedder.embedded == 8  # the committed batch is not embedded again
        assert report.chunks == 22 and target.count() in (None, 22)
        assert top_path(door, docs, "bolt size 5 mm") == "extra5.txt"


@pytest.mark.slow
def test_kill_9_part_way_then_the_next_run_resumes(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    write_extra(docs, 30)
    progress = tmp_path / "progress.txt"
    proc = run_child(target, tmp_path / "cache", docs, "--slow", f"--progress={progress}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if progress.exists() and len(progress.read_text().splitlines()) >= 4:
            break  # four batches embedded: at least three of them committed
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    report = child_report(run_child(target, tmp_path / "cache", docs))
    assert report["chunks"] == 70
    assert 0 < report["embedded"] < 70  # what the killed run committed was not embedded again
    assert child_report(run_child(target, tmp_path / "cache", docs))["embedded"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("target", cases({"local", "chroma-server", "pgvector"}), indirect=True)
def test_two_processes_at_once_stay_consistent(tmp_path, target):
    docs = write_notes(tmp_path / "docs")
    write_extra(docs, 12)
    first = run_child(target, tmp_path / "cache", docs, "--slow")
    second = run_child(target, tmp_path / "cache", docs, "--slow")
    reports = [child_report(first, 300), child_report(second, 300)]
    assert all(r["chunks"] == 34 for r in reports)
    assert sum(r["embedded"] for r in reports) == 34  # the lock serialised them: nothing embedded twice
    with target.open(tmp_path / "cache") as door:
        assert door.sync(docs).embedded == 0
        assert target.count() in (None, 34)
