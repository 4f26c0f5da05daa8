"""The ``.snap`` snapshot file: exact round trip, refusal of damaged or foreign files, older formats."""

from __future__ import annotations

import logging
import sqlite3

import numpy as np
import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.index.snapshot import read_snapshot, write_snapshot
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.dense import DenseIndex
from akasha.types import Chunk

TEXTS = {
    "a#0": "Mechanical seals fail when the pump runs dry.",
    "a#1": "Bearings are greased every 500 hours.",
    "b#0": "每五百小時潤滑軸承一次。",
}


def _structures() -> tuple[BM25Index, DenseIndex, dict[str, Chunk]]:
    bm25 = BM25Index(tokenizer="bigram")
    bm25.add(list(TEXTS), list(TEXTS.values()))
    dense = DenseIndex()
    dense.add(list(TEXTS), np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32))
    chunks = {cid: Chunk(cid, text, {"source": cid[0], "page": 2, "tags": ["x"]}) for cid, text in TEXTS.items()}
    return bm25, dense, chunks


def test_round_trip_gives_identical_search_results_and_chunks(tmp_path):
    bm25, dense, chunks = _structures()
    write_snapshot(tmp_path / "s.snap", "state-1", bm25, dense, chunks)
    loaded = read_snapshot(tmp_path / "s.snap", "state-1")
    assert loaded is not None
    bm25_again, dense_again, chunks_again = loaded
    assert bm25_again.search("pump dry seals", 3) == bm25.search("pump dry seals", 3)
    assert bm25_again.search("潤滑軸承", 3) == bm25.search("潤滑軸承", 3)
    query = np.ones(8, dtype=np.float32)
    assert dense_again.search(query, 3) == dense.search(query, 3)
    assert chunks_again == chunks
    # loaded structures stay updatable (the arrays are writable views, not read-only bytes)
    bm25_again.remove(["a#0"])
    dense_again.add(["c#0"], np.ones((1, 8), dtype=np.float32))
    assert "a#0" not in bm25_again and "c#0" in dense_again


def test_empty_index_round_trips(tmp_path):
    write_snapshot(tmp_path / "e.snap", "empty", BM25Index(tokenizer="bigram"), DenseIndex(), {})
    bm25, dense, chunks = read_snapshot(tmp_path / "e.snap", "empty")
    assert (len(bm25), len(dense), chunks) == (0, 0, {})


def test_snapshot_of_another_state_is_not_applied(tmp_path):
    bm25, dense, chunks = _structures()
    write_snapshot(tmp_path / "s.snap", "state-1", bm25, dense, chunks)
    assert read_snapshot(tmp_path / "s.snap", "state-2") is None


@pytest.mark.parametrize("damage", ["truncated", "foreign", "bad header"])
def test_damaged_snapshot_is_refused_with_a_warning(tmp_path, caplog, damage):
    bm25, dense, chunks = _structures()
    path = tmp_path / "s.snap"
    write_snapshot(path, "state-1", bm25, dense, chunks)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) - 100])
    elif damage == "foreign":
        path.write_bytes(b"PK\x03\x04" + data[4:])
    else:
        path.write_bytes(data[:16] + b"{not json" + data[25:])
    with caplog.at_level(logging.WARNING, logger="akasha.index.snapshot"):
        assert read_snapshot(path, "state-1") is None
    assert "ignoring unreadable index snapshot" in caplog.text and str(path) in caplog.text


def test_index_with_an_older_npz_snapshot_rebuilds_without_embedding(tmp_path):
    """A cache written by an earlier akasha names an .npz snapshot: rebuilt from the manifest, nothing re-embedded."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The hydraulic filter is replaced every 2000 hours.")
    cache = tmp_path / "cache"
    first = CorpusIndex(HashEmbedder(), cache_dir=cache)
    first.sync(docs)
    expected = [h.id for h in first.search("hydraulic filter", k=1)]
    first.close()
    (snap,) = (cache / "snapshots").glob("*.snap")
    legacy = snap.with_suffix(".npz")
    snap.rename(legacy)
    con = sqlite3.connect(cache / "index.sqlite3")
    with con:
        changed = con.execute("UPDATE corpora SET snapshot = ? WHERE snapshot = ?", (legacy.name, snap.name)).rowcount
    con.close()
    assert changed == 1

    embedder = HashEmbedder()
    again = CorpusIndex(embedder, cache_dir=cache)
    report = again.sync(docs)
    assert (report.unchanged, report.embedded, embedder.calls) == (1, 0, 0)
    assert [h.id for h in again.search("hydraulic filter", k=1)] == expected
    again.close()
    assert sorted(p.suffix for p in (cache / "snapshots").iterdir()) == [".snap"]  # the .npz was dropped


def test_lazy_chunks_decode_on_first_use_and_derive_shares_records():
    from akasha.index.lazy_chunks import LazyChunks

    records = [b'["alpha text", {"source": "a", "n": 1}]', b'["beta text", {"source": "b"}]']
    table = LazyChunks.from_records(["a#0", "b#0"], b"".join(records), np.cumsum([len(r) for r in records]))
    assert list(table) == ["a#0", "b#0"] and len(table) == 2 and "b#0" in table and "c#0" not in table
    assert table.raw_record("b#0") == records[1]
    assert table["b#0"] == Chunk("b#0", "beta text", {"source": "b"})
    assert table.raw_record("b#0") is None  # decoded now: a snapshot re-encodes the object, not the old bytes
    with pytest.raises(KeyError):
        table["c#0"]
    fresh = {"c#0": Chunk("c#0", "gamma", {"source": "c"})}
    derived = table.derive(["a#0", "c#0"], fresh)
    assert list(derived) == ["a#0", "c#0"] and "b#0" not in derived
    assert derived.raw_record("a#0") == records[0] and derived["c#0"] is fresh["c#0"]
    with pytest.raises(KeyError, match="neither fresh nor kept"):
        table.derive(["zz#0"], {})
    with pytest.raises(ValueError, match="repeat"):
        LazyChunks.from_records(["a#0", "a#0"], b"".join(records), np.cumsum([len(r) for r in records]))


def test_edit_in_a_new_process_decodes_only_the_edited_file(tmp_path):
    """Unchanged chunks go from the old snapshot's records to the new one as bytes, undecoded."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"f{i:02d}.txt").write_text(f"Pump P-{i} needs a new seal every {i + 1} months.\n\nValve V-{i} is fine.")
    cache = tmp_path / "cache"
    CorpusIndex(HashEmbedder(), chunk_size=40, chunk_overlap=0, cache_dir=cache).sync(docs)
    (docs / "f07.txt").write_text("Pump P-7 was replaced by a magnetic drive pump in May.")

    edited = CorpusIndex(HashEmbedder(), chunk_size=40, chunk_overlap=0, cache_dir=cache)
    report = edited.sync(docs)
    assert report.indexed == 1 and report.unchanged == 29
    decoded = [cid for cid in edited._live.chunks if edited._live.chunks.raw_record(cid) is None]  # type: ignore[attr-defined]
    assert decoded and all(cid.rsplit("#", 1)[0].endswith("f07.txt") for cid in decoded)
    hits = edited.search("magnetic drive pump", k=1)
    assert hits[0].path.endswith("f07.txt")

    again = CorpusIndex(HashEmbedder(), chunk_size=40, chunk_overlap=0, cache_dir=cache)
    again.sync(docs)
    assert {cid: again._live.chunks[cid] for cid in again._live.chunks} == {cid: edited._live.chunks[cid] for cid in edited._live.chunks}
