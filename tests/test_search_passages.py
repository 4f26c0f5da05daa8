"""Passage vectors: windows of the encoder's hidden states that ``auto`` re-scores its dense candidates with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from akasha.embeddings.base import normalize_rows
from akasha.index import CorpusIndex
from akasha.retrieval.passages import PassageTable, pack, rescore, unpack, window_vectors
from akasha.retrieval.search import SearchSettings
from akasha.spec import build, load_spec
from akasha.testing import HashEmbedder
from tests.spec_fixtures import body


class PassageHashEmbedder(HashEmbedder):
    """The hash embedder, plus one passage vector per three-word window (step 2) of each text."""

    def embed_documents_with_passages(self, texts: Sequence[str]) -> tuple[np.ndarray, list[bytes | None]]:
        packed = []
        for text in texts:
            words = text.split()
            windows = [" ".join(words[i : i + 3]) for i in range(0, max(len(words) - 2, 1), 2)]
            packed.append(pack(normalize_rows(np.stack([self._embed_one(w) for w in windows]))))
        return self.embed_documents(texts), packed


# ------------------------------------------------------------------ the parts


def test_windows_are_unit_means_of_every_stretch_and_cover_the_last_token():
    states = np.random.default_rng(0).normal(size=(37, 8)).astype(np.float32)
    windows = window_vectors(states, tokens=16, stride=8)
    starts = [0, 8, 16, 21]  # the last window ends at the last token
    assert windows.shape == (len(starts), 8)
    expected = normalize_rows(np.stack([states[s : s + 16].mean(axis=0) for s in starts]))
    np.testing.assert_allclose(windows, expected, atol=1e-5)


def test_a_text_shorter_than_a_window_gets_the_mean_of_all_its_tokens():
    states = np.random.default_rng(1).normal(size=(5, 8)).astype(np.float32)
    np.testing.assert_allclose(window_vectors(states, tokens=16, stride=8), normalize_rows(states.mean(axis=0)[None]), atol=1e-5)
    assert window_vectors(np.zeros((0, 8), dtype=np.float32)).shape == (0, 8)


def test_packed_vectors_keep_their_direction():
    vectors = normalize_rows(np.random.default_rng(2).normal(size=(30, 384)).astype(np.float32))
    codes, scales = unpack(pack(vectors), 384)
    restored = codes.astype(np.float32) * scales[:, None]
    cosines = (normalize_rows(restored) * vectors).sum(axis=1)
    assert cosines.min() > 0.999
    with pytest.raises(ValueError, match="not passage vectors"):
        unpack(pack(vectors)[:-1], 384)


def test_the_table_gives_each_chunk_its_best_passage_and_none_for_a_chunk_without():
    rng = np.random.default_rng(3)
    passages = {f"c{i}": normalize_rows(rng.normal(size=(i + 1, 16)).astype(np.float32)) for i in range(6)}
    table = PassageTable(16)
    table.add(list(passages), [pack(v) for v in passages.values()])
    query = normalize_rows(rng.normal(size=(1, 16)).astype(np.float32))[0]
    best = table.best(["c4", "c0", "c2"], query)
    assert best is not None
    np.testing.assert_allclose(best, [float((passages[i] @ query).max()) for i in ("c4", "c0", "c2")], atol=0.01)
    assert table.best(["c1", "unknown"], query) is None
    table.remove(["c1"])
    assert table.best(["c1"], query) is None and len(table) == 5


def test_a_table_survives_its_flat_state_and_refuses_a_state_that_does_not_fit():
    rng = np.random.default_rng(4)
    table = PassageTable(8)
    table.add(["a", "b"], [pack(normalize_rows(rng.normal(size=(n, 8)).astype(np.float32))) for n in (2, 3)])
    codes, scales, counts = table.state(["b", "a"])
    again = PassageTable.from_state(["b", "a"], codes, scales, counts)
    query = normalize_rows(rng.normal(size=(1, 8)).astype(np.float32))[0]
    np.testing.assert_allclose(again.best(["a", "b"], query), table.best(["a", "b"], query))
    assert PassageTable.from_state(["b"], codes, scales, counts) is None
    assert PassageTable.from_state(["b", "a"], codes[:-1], scales, counts) is None
    assert table.state(["a", "missing"]) is None


def test_a_table_from_read_only_arrays_takes_edits_and_compacts_what_was_removed():
    rng = np.random.default_rng(5)
    vectors = {f"c{i}": normalize_rows(rng.normal(size=(1 + i % 4, 8)).astype(np.float32)) for i in range(40)}
    source = PassageTable(8)
    source.add(list(vectors), [pack(v) for v in vectors.values()])
    codes, scales, counts = source.state(list(vectors))
    codes.flags.writeable = False  # as a memory-mapped snapshot gives them
    table = PassageTable.from_state(list(vectors), codes, scales, counts)
    table.add(["c3", "new"], [pack(vectors["c0"]), pack(vectors["c1"])])  # replaced and added
    table.remove([f"c{i}" for i in range(10, 40)])
    table.add([f"more{i}" for i in range(600)], [pack(vectors["c2"])] * 600)
    table.remove([f"more{i}" for i in range(600)])  # most rows dead now: compacted
    assert table._used < 1100 and len(table) == 11
    query = normalize_rows(rng.normal(size=(1, 8)).astype(np.float32))[0]
    expected = {i: float((vectors[i] @ query).max()) for i in ("c0", "c1", "c5", "c9")}
    expected.update({"c3": expected["c0"], "new": expected["c1"]})
    got = table.best(list(expected), query)
    np.testing.assert_allclose(got, list(expected.values()), atol=0.02)
    assert table.best(["c10"], query) is None


def test_rescore_ranks_by_the_better_of_chunk_and_passage_and_keeps_ties_in_order():
    ranked = [("a", 0.6), ("b", 0.5), ("c", 0.4), ("d", 0.4)]
    best = {"a": 0.3, "b": 0.9, "c": 0.1, "d": 0.2}
    out = rescore(ranked, np.zeros(2), lambda ids, _q: np.asarray([best[i] for i in ids]))
    assert out is not None
    assert out[0] == [("b", 0.9), ("a", 0.6), ("c", 0.4), ("d", 0.4)]
    assert out[1] == best
    assert rescore(ranked, np.zeros(2), lambda ids, _q: None) is None


# ------------------------------------------------------------- the packaged MiniLM


@pytest.mark.slow
def test_minilm_passages_come_from_the_same_forward_pass():
    from akasha.embeddings import resolve_embedder

    embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
    short = "Replace the pump seal."
    long = " ".join(f"Sentence {i} says the pump seal on unit {i} was replaced after a leak." for i in range(20))
    vectors, passages = embedder.embed_documents_with_passages([short, long])
    np.testing.assert_allclose(vectors, embedder.embed_documents([short, long]), atol=1e-5)
    codes, scales = unpack(passages[0], 384)
    assert len(scales) == 1  # fewer tokens than a window: one passage, the mean of every token
    assert float(normalize_rows(codes.astype(np.float32) * scales[:, None])[0] @ vectors[0]) > 0.999
    tokens = embedder._folder.token_count([long])
    assert tokens == 256  # truncated: windows cover the tokens the model read
    assert len(unpack(passages[1], 384)[1]) == len(range(0, tokens - 16 + 1, 8))


# -------------------------------------------------------------------- the index

DOCS = {
    "pumps.txt": "Pumps and valves are inspected every month by the plant crew in the north hall. "
                 "Seal failure on P-102 was caused by dry running after the suction valve stayed closed.",
    "general.txt": "The plant crew inspects pumps and valves and seals in the north hall every month "
                   "and writes every inspection of the pumps and valves into the plant log.",
    "other.txt": "Coolant must be changed every five years; never open the radiator cap while hot.",
}


def _folder(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_an_index_keeps_passages_and_auto_reports_them(tmp_path):
    index = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "cache")
    index.sync(_folder(tmp_path))
    assert index._live.dense.has_passages()
    hits = index.search("what caused the seal failure", k=3, search_type="auto")
    assert all("passage" in h.details for h in hits if "vector" in h.details)
    assert all(h.details["passage"] >= -1.0 for h in hits if "passage" in h.details)
    knn = index.search("what caused the seal failure", k=3, search_type="knn")
    assert all("passage" not in h.details for h in knn)
    index.close()
    again = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "cache")
    again.sync(tmp_path / "docs")  # from the snapshot: passages restored, nothing embedded
    assert again._live.dense.has_passages() and again.embedder.calls == 0
    assert [h.chunk.id for h in again.search("what caused the seal failure", k=3)] == [h.chunk.id for h in hits]


def test_a_passage_match_lifts_a_chunk_whose_whole_vector_is_diluted(tmp_path):
    folder = _folder(tmp_path)
    question = "seal failure caused dry running"
    plain = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "plain")
    plain.sync(folder)
    with_passages = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "passages")
    with_passages.sync(folder)
    vector = with_passages.embedder.embed_query(question)
    chunk_cosines = dict((c.id, s) for c, s in plain.vector_search(vector, 3))
    rescored = dict((c.id, s) for c, s in with_passages.vector_search(vector, 3, passages=True))
    pumps = next(i for i in chunk_cosines if i.endswith("pumps.txt#0"))
    assert rescored[pumps] > chunk_cosines[pumps]  # its best passage beats its whole-chunk cosine
    assert with_passages.passage_scores([pumps], vector) is not None


def test_passages_off_stores_none_and_ranks_by_chunk_vectors(tmp_path):
    settings = SearchSettings(passage_fetch=0)
    index = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "cache", search_settings=settings)
    index.sync(_folder(tmp_path))
    assert not index._live.dense.has_passages()
    assert index._manifest.load_passages("hash", [c.metadata["content_hash"] for c in index.chunks]) == {}
    plain = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "plain")
    plain.sync(_folder(tmp_path))
    question = "what caused the seal failure"
    assert [h.chunk.id for h in index.search(question, k=3)] == [h.chunk.id for h in plain.search(question, k=3)]


def test_passages_turned_off_on_a_built_index_are_not_embedded(tmp_path):
    index = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "cache")
    index.search_settings = replace(index.search_settings, passage_fetch=0)  # as bench.ablation swaps them
    index.sync(_folder(tmp_path))
    assert not index._live.dense.has_passages()


def test_an_index_where_some_chunks_lack_passages_ranks_by_chunk_vectors(tmp_path, caplog):
    folder = _folder(tmp_path)
    old = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache")  # a cache written without passages
    old.sync(folder)
    old.close()
    (folder / "new.txt").write_text("A new note about seal failure and dry running.", encoding="utf-8")
    index = CorpusIndex(PassageHashEmbedder(), cache_dir=tmp_path / "cache")
    with caplog.at_level("INFO", logger="akasha.index.corpus"):
        index.sync(folder)
    assert not index._live.dense.has_passages()  # the cached chunks were not embedded again for them
    assert "3 of 4 chunks in this index have no passage vectors" in caplog.text
    assert index.embedder.calls == 1
    question = "what caused the seal failure"
    vector = index.embedder.embed_query(question)
    assert index.passage_scores([h.chunk.id for h in index.search(question, k=3, search_type="knn")], vector) is None
    hits = index.search(question, k=3)
    assert all("passage" not in h.details for h in hits)


def test_a_yaml_adaptive_pattern_ranks_like_auto_with_passages():
    docs = [{"id": f"d{i:02d}", "text": f"common words in document {i} about topic{i % 3} " * (1 + i % 4)
             + ("and the pump seal failed after dry running" if i in (4, 17) else "")} for i in range(30)]
    spec = body(retrieval={"pattern": "hybrid", "fusion": "adaptive", "candidates": 50, "top_k": 10},
                chunking={"chunk_size": 80, "overlap": 0})
    pipeline = build(load_spec(spec))
    pipeline.index.embedder = PassageHashEmbedder()
    pipeline.ingest_sync(docs)
    assert pipeline.index._live.dense.has_passages()
    for question in ("why did the pump seal fail?", "topic2 document"):
        result = pipeline.query_sync(question, k=10)
        auto = pipeline.index.search(question, k=10, search_type="auto")
        assert [h.chunk.id for h in result.hits] == [h.chunk.id for h in auto]
        assert [h.score for h in result.hits] == pytest.approx([h.score for h in auto])


@pytest.mark.slow
def test_sentence_transformers_gives_the_passages_the_torch_free_encoder_gives():
    from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir

    texts = ["Replace the pump seal.",
             " ".join(f"Unit {i} had its seal replaced after a leak at the gland." for i in range(30))]
    torch_free = SentenceTransformerEmbedder(str(packaged_model_dir()), device="cpu")
    # any model keyword sends the model through sentence-transformers (and torch)
    through_torch = SentenceTransformerEmbedder(str(packaged_model_dir()), device="cpu", trust_remote_code=False)
    vectors, passages = torch_free.embed_documents_with_passages(texts)
    torch_vectors, torch_passages = through_torch.embed_documents_with_passages(texts)
    assert through_torch._model is not None and torch_free._model is None
    np.testing.assert_allclose(torch_vectors, vectors, atol=1e-4)
    for ours, theirs in zip(passages, torch_passages, strict=True):
        a, b = (normalize_rows(c.astype(np.float32) * s[:, None]) for c, s in (unpack(ours, 384), unpack(theirs, 384)))
        assert a.shape == b.shape and (a * b).sum(axis=1).min() > 0.999


def test_only_mean_pooled_models_give_passages():
    from types import SimpleNamespace

    from akasha.embeddings.local import _mean_pooled

    transformer = SimpleNamespace()
    assert _mean_pooled([transformer, SimpleNamespace(pooling_mode="mean")])
    assert not _mean_pooled([transformer, SimpleNamespace(pooling_mode="cls")])
    assert not _mean_pooled([transformer, SimpleNamespace(pooling_mode="lasttoken")])
    assert not _mean_pooled([transformer, SimpleNamespace(pooling_mode=("mean", "max"))])
    assert _mean_pooled([transformer, SimpleNamespace(pooling_mode_mean_tokens=True, pooling_mode_cls_token=False)])
    assert not _mean_pooled([transformer, SimpleNamespace(pooling_mode_mean_tokens=True, pooling_mode_max_tokens=True)])
    assert not _mean_pooled([transformer])
