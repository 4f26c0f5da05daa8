"""The shared index on real servers (Chroma via ``chroma run``, PostgreSQL + pgvector via pgserver).

Every behaviour runs against both backends: content-keyed incremental sync,
a second machine (another local cache folder) that embeds nothing, two
indexers at once, and outages (server down, restarted mid-run).
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from maintenance_topics import TOPICS as BASE_TOPICS
from servers_fixtures import chroma_server, pg_server  # noqa: F401

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ServerUnavailableError
from akasha.index import CorpusIndex
from akasha.retry import Retry

pytestmark = pytest.mark.integration

TOPICS = {
    **BASE_TOPICS,
    "brakes.txt": "Brake pads wear faster in city driving. Replace the pads below 3 mm of lining thickness.",
}
FAST = Retry(attempts=3, base=0.05, max_delay=0.2)


def write_corpus(folder: Path, extra: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in TOPICS.items():
        body = "\n\n".join(f"{text} Section {i} of {name}." for i in range(3))
        (folder / name).write_text(body, encoding="utf-8")
    for i in range(extra):
        (folder / f"extra{i}.txt").write_text(f"Extra note {i}: the spare wheel number {i} is kept in the boot.")
    return folder


def open_index(url: str, cache: Path, embedder=None, retry: Retry | None = None, **kw) -> CorpusIndex:
    return CorpusIndex(embedder or HashEmbedder(), cache_dir=cache, chunk_size=120, chunk_overlap=0,
                       vector_store=url, vector_store_options={"retry": retry or FAST, **kw})


class Target:
    """One backend under test: a fresh shared-index URL per test, and outage controls."""

    def __init__(self, kind: str, server) -> None:
        self.kind = kind
        self.server = server
        self.name = f"t{uuid.uuid4().hex[:10]}"

    @property
    def url(self) -> str:
        return self.server.url(self.name) if self.kind == "chroma" else self.server.dsn(table=self.name)

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        self.server.start()


@pytest.fixture(params=["chroma", "postgresql"])
def target(request):
    server = request.getfixturevalue("chroma_server" if request.param == "chroma" else "pg_server")
    yield Target(request.param, server)
    if not server.running:
        server.start()  # an outage test that failed half way must not take the server down for the rest


def top_source(index: CorpusIndex, question: str, search_type: str = "auto") -> str:
    return Path(index.search(question, k=1, search_type=search_type)[0].path).name


def test_sync_and_hybrid_search(tmp_path, target):
    docs = write_corpus(tmp_path / "docs")
    with open_index(target.url, tmp_path / "cache") as index:
        report = index.sync(docs)
        assert report.indexed == len(TOPICS) and report.embedded == report.chunks > 0
        assert top_source(index, "coolant radiator blue") == "coolant.md"
        assert top_source(index, "tyre pressure bar", "bm25") == "tyres.txt"
        hit = index.search("warranty manufacturing defects", k=3)[0]
        assert Path(hit.path).name == "warranty.txt"
        assert hit.source == "bm25+vector" and {"bm25", "vector", "rrf"} <= set(hit.details)
        assert top_source(index, "warranty manufacturing defects purchase", "knn") == "warranty.txt"


def test_second_machine_sees_the_index_and_embeds_nothing(tmp_path, target):
    docs = write_corpus(tmp_path / "docs")
    first = HashEmbedder()
    with open_index(target.url, tmp_path / "machine-a", first) as a:
        total = a.sync(docs).chunks
        expected = [h.chunk.id for h in a.search("battery winter storage", k=3)]
    assert first.texts_embedded == total
    second = HashEmbedder()
    with open_index(target.url, tmp_path / "machine-b", second) as b:
        report = b.sync(docs)
        assert (report.embedded, report.unchanged, report.indexed, report.chunks) == (0, len(TOPICS), 0, total)
        assert [h.chunk.id for h in b.search("battery winter storage", k=3)] == expected
    assert second.calls == 0


def test_edit_and_delete_touch_only_their_own_chunks(tmp_path, target):
    docs = write_corpus(tmp_path / "docs")
    embedder = HashEmbedder()
    with open_index(target.url, tmp_path / "cache", embedder) as index:
        index.sync(docs)
        before = embedder.texts_embedded
        (docs / "coolant.md").write_text("Coolant is now green and lasts ten years in the radiator.")
        (docs / "brakes.txt").unlink()
        report = index.sync(docs)
        assert report.embedded == 1 == embedder.texts_embedded - before
        assert report.removed == 1
        texts = [h.chunk.text for h in index.search("coolant radiator", k=20, search_type="knn")]
        assert any("green" in t for t in texts) and not any("blue long-life" in t for t in texts)
        assert all("brakes.txt" not in h.path for h in index.search("brake pads lining", k=20))
    with open_index(target.url, tmp_path / "other-machine", HashEmbedder()) as other:
        assert other.sync(docs).embedded == 0
        # The second machine serves the edited chunk (ranked among the top hits: with auto's neighbour
        # smoothing, a file of three near-identical "years" chunks can edge past a one-chunk file in RRF).
        hits = other.search("coolant green ten years", k=3)
        assert any(Path(h.path).name == "coolant.md" and "green" in h.chunk.text for h in hits)
        assert top_source(other, "coolant green ten years", "bm25") == "coolant.md"
        assert not any("blue long-life" in h.chunk.text for h in other.search("coolant radiator", k=20))


def test_two_indexers_at_once_stay_consistent(tmp_path, target):
    docs = write_corpus(tmp_path / "docs", extra=20)
    embedders = [HashEmbedder(), HashEmbedder()]
    barrier = threading.Barrier(2)
    reports, errors = [], []

    def run(i: int) -> None:
        try:
            with open_index(target.url, tmp_path / f"m{i}", embedders[i]) as index:
                barrier.wait()
                reports.append(index.sync(docs))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert not any(r.skipped for r in reports), reports  # a file skipped by one indexer alone changes its count
    chunks = reports[0].chunks
    assert reports[1].chunks == chunks, reports
    embedded = sum(e.texts_embedded for e in embedders)
    if target.kind == "postgresql":  # writers are serialised by the advisory lock: the second embeds nothing
        assert embedded == chunks
    else:  # Chroma has no lock: both may embed, but the upserts are idempotent
        assert chunks <= embedded <= 2 * chunks
    third = HashEmbedder()
    with open_index(target.url, tmp_path / "m3", third) as index:
        assert index.sync(docs).embedded == 0 and third.calls == 0
        assert top_source(index, "spare wheel number 7 boot", "bm25") == "extra7.txt"


def test_server_down_is_a_clear_error_and_recovers(tmp_path, target):
    docs = write_corpus(tmp_path / "docs")
    with open_index(target.url, tmp_path / "cache") as index:
        index.sync(docs)
    target.stop()
    try:
        with pytest.raises(ServerUnavailableError) as info:  # bounded: "after 3 attempts" below
            open_index(target.url, tmp_path / "cache2")
        message = str(info.value)
        assert target.name in message and "Start the server" in message and "after 3 attempts" in message
    finally:
        target.start()
    embedder = HashEmbedder()
    with open_index(target.url, tmp_path / "cache2", embedder) as index:
        assert index.sync(docs).embedded == 0
        assert top_source(index, "tyre pressure bar") == "tyres.txt"


class StopsServer(HashEmbedder):
    """A hash embedder that takes the server down on its ``at``-th batch (and optionally brings it back)."""

    def __init__(self, target: Target, at: int, restart_after: float | None) -> None:
        super().__init__()
        self.batch_size = 4
        self.target, self.at, self.restart_after = target, at, restart_after
        self.restarter: threading.Thread | None = None

    def embed_documents(self, texts):
        out = super().embed_documents(texts)
        if self.calls == self.at:
            self.target.stop()
            if self.restart_after is not None:
                def later() -> None:
                    time.sleep(self.restart_after)
                    self.target.start()

                self.restarter = threading.Thread(target=later)
                self.restarter.start()
        return out


def test_server_restarted_mid_run_is_retried(tmp_path, target):
    docs = write_corpus(tmp_path / "docs", extra=10)
    embedder = StopsServer(target, at=2, restart_after=0.5)
    patient = Retry(attempts=40, base=0.2, max_delay=1.0)  # up to ~37 s: a restart under CI load is slow
    with open_index(target.url, tmp_path / "cache", embedder, retry=patient) as index:
        try:
            report = index.sync(docs)
        finally:
            if embedder.restarter is not None:
                embedder.restarter.join()
        assert report.embedded == report.chunks == embedder.texts_embedded
        assert top_source(index, "spare wheel number 3 boot", "bm25") == "extra3.txt"
    with open_index(target.url, tmp_path / "fresh", HashEmbedder()) as fresh:
        assert fresh.sync(docs).embedded == 0


def test_server_lost_mid_run_fails_clearly_then_resumes(tmp_path, target):
    docs = write_corpus(tmp_path / "docs", extra=10)
    embedder = StopsServer(target, at=2, restart_after=None)
    try:
        with open_index(target.url, tmp_path / "cache", embedder) as index:
            with pytest.raises(ServerUnavailableError, match="run the same call again"):
                index.sync(docs)
    finally:
        target.start()
    done_before = embedder.texts_embedded
    resumed = HashEmbedder()
    with open_index(target.url, tmp_path / "cache", resumed) as index:
        report = index.sync(docs)
        # vectors are committed to the local cache batch by batch, before the corpus is written to the
        # server: the outage cost no embedding, and the resumed run embeds nothing again
        assert done_before == report.chunks and report.embedded == 0
        assert top_source(index, "spare wheel number 9 boot", "bm25") == "extra9.txt"
        vectors = index._manifest.load_vectors("hash", [c.metadata["content_hash"] for c in index.chunks])
        assert len(vectors) == len({c.metadata["content_hash"] for c in index.chunks})
        assert all(np.isfinite(v).all() for v in vectors.values())


def test_other_corpora_on_the_same_server_never_leak_into_results(tmp_path, target):
    """Two folders share one store under two corpus names; each searches only its own records."""
    docs_a = write_corpus(tmp_path / "a")
    docs_b = tmp_path / "b"
    docs_b.mkdir()
    for i in range(40):  # 40 near-duplicates of the question: they fill the server's first candidates
        (docs_b / f"coolant{i}.md").write_text(f"Coolant radiator blue long-life coolant radiator, copy {i}.")
    with open_index(target.url, tmp_path / "machine-b", corpus="b") as b:
        b.sync(docs_b)
    with open_index(target.url, tmp_path / "machine-a", corpus="a") as a:
        a.sync(docs_a)
        for search_type in ("knn", "auto", "bm25"):
            hits = a.search("coolant radiator blue long-life", k=5, search_type=search_type)
            assert len(hits) == (3 if search_type == "bm25" else 5)  # three chunks of "a" hold those words
            assert all(h.path.startswith("a/") for h in hits), [h.path for h in hits]
        assert a.search("coolant radiator blue long-life", k=1, search_type="knn")[0].path == "a/coolant.md"