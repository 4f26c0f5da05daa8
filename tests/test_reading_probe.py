"""The reading probe: auto keeps a dense list for a Chinese/Japanese/Korean question only when its embedder reads it."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np
import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from akasha.retrieval import fusion, reading
from akasha.types import Document


class CharacterBag:
    """Counts characters: what an embedder that sees CJK characters but not their meaning can match on."""

    dimension = 4096

    def __init__(self, name: str = "character-bag") -> None:
        self.name = name
        self.vector_identity = name  # a fixed function of the text: not probed (akasha.embeddings.identity)
        self.calls = 0

    def _one(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, dtype=np.float32)
        for char in re.findall(r"\w", text):
            vector[ord(char) % self.dimension] += 1.0
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class TopicReader:
    """Reads the probe: maps each probe question and its passage to the same topic vector (an ideal multilingual model)."""

    name = "topic-reader"
    vector_identity = "topic-reader"
    dimension = 16

    def __init__(self) -> None:
        self.topic = {}
        for pairs in reading.PROBES.values():
            for n, (question, passage) in enumerate(pairs):
                self.topic[question] = self.topic[passage] = n
        self.fallback = CharacterBag()

    def _one(self, text: str) -> np.ndarray:
        if text not in self.topic:
            return self.fallback._one(text)[: self.dimension] + 1e-3
        vector = np.zeros(self.dimension, dtype=np.float32)
        vector[self.topic[text]] = 1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class Broken:
    name = "broken-server"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise ConnectionError("connection refused")

    def embed_query(self, text: str) -> np.ndarray:
        raise ConnectionError("connection refused")


@pytest.fixture(autouse=True)
def fresh_verdicts(monkeypatch):
    monkeypatch.setattr(reading, "_verdicts", {})


def test_script_of():
    assert reading.script_of("如何安装软件包？") == "zh"
    assert reading.script_of("パッケージをインストールするには？") == "ja"
    assert reading.script_of("Debian を更新する方法") == "ja"
    assert reading.script_of("패키지를 설치하려면?") == "ko"
    assert reading.script_of("How do I install a package?") is None


@pytest.mark.parametrize("script", sorted(reading.PROBES))
def test_the_probe_cannot_be_passed_by_matching_characters(script):
    pairs = reading.PROBES[script]
    assert len(pairs) == 12 and len({q for q, _ in pairs}) == 12
    assert reading.probe_share(CharacterBag(), pairs) <= 2 / 12
    assert reading.reads_script(CharacterBag(), script) is False
    assert reading.reads_script(HashEmbedder(), script) is False


@pytest.mark.parametrize("script", sorted(reading.PROBES))
def test_an_embedder_that_understands_passes(script):
    assert reading.probe_share(TopicReader(), reading.PROBES[script]) == 1.0
    assert reading.reads_script(TopicReader(), script) is True


def test_the_verdict_is_measured_once_per_process_and_a_failed_probe_is_not_kept(caplog):
    bag = CharacterBag()
    assert reading.reads_question(bag, "如何安装软件包？", fusion.CJK_SHARE) is False
    assert reading.reads_question(bag, "为什么升级失败？", fusion.CJK_SHARE) is False
    assert bag.calls == 1
    assert reading.reads_question(bag, "How do I upgrade?", fusion.CJK_SHARE) is None
    with caplog.at_level(logging.WARNING, logger="akasha.retrieval.reading"):
        assert reading.reads_question(Broken(), "如何安装软件包？", fusion.CJK_SHARE) is None
    assert "broken-server" in caplog.text
    assert ("broken-server", "zh", reading.PROBE_VERSION) not in reading._verdicts


def test_fusion_follows_the_verdict_before_the_lists_agreement():
    lexical = [(f"d{i}", 1.0 - i / 100) for i in range(50)]
    unrelated = [(f"d{i}", 1.0 - i / 100) for i in range(500, 550)]
    assert fusion.adaptive_weights("如何安装？", unrelated, lexical, 1000, dense_reads=True) == pytest.approx((0.6, 0.4))
    assert fusion.adaptive_weights("如何安装？", lexical, lexical, 1000, dense_reads=False) == (0.0, 1.0)
    assert fusion.adaptive_weights("How?", unrelated, lexical, 1000, dense_reads=False) == pytest.approx((0.6, 0.4))
    assert fusion.adaptive_weights("如何安装？", unrelated, lexical, 1000, dense_reads=None) == (0.0, 1.0)


DOCS = [Document(id=f"d{i}", text=text) for i, text in enumerate(
    ["每晚固定时间上床，卧室保持黑暗安静，傍晚以后别喝咖啡或浓茶。",
     "宠物食欲下降可能是生病的信号，应尽快带它去看兽医。",
     "记得拿伞，穿防水的鞋子，以免衣服被淋湿。",
     "下雨天的路面很滑，开车要慢。出门前看看天气预报。"])]


@pytest.mark.parametrize(("embedder", "dense_counts"), [(TopicReader(), True), (CharacterBag(), False)])
def test_auto_keeps_the_dense_list_only_for_an_embedder_that_reads_the_question(tmp_path, embedder, dense_counts):
    # "下雨天出门要带什么？" is a probe question: only the topic reader maps it next to the umbrella passage,
    # which shares no word with it (BM25 ranks the rainy-road and pet passages, which share a word each).
    with CorpusIndex(embedder, chunk_size=200, cache_dir=tmp_path) as index:
        index.add_documents(DOCS)
        assert index.dense_reads("下雨天出门要带什么？") is dense_counts
        hits = index.search("下雨天出门要带什么？", k=4, search_type="auto")
    order = [h.chunk.text[:4] for h in hits]
    umbrella = hits[order.index("记得拿伞")]
    assert order[0] == "下雨天的" and "bm25" not in umbrella.details
    if dense_counts:  # the dense list's top chunk counts, above a chunk neither list ranks high
        assert umbrella.details["vector"] == pytest.approx(1.0) and umbrella.score > hits[order.index("每晚固定")].score
    else:  # the dense list counts for nothing: the chunks only it found score 0
        assert umbrella.score == 0.0 and hits[order.index("每晚固定")].score == 0.0


def test_a_yaml_adaptive_pattern_asks_its_index_the_same_question(monkeypatch):
    from akasha.spec import build, load_spec
    from tests.spec_fixtures import body

    pipeline = build(load_spec(body(retrieval={"pattern": "hybrid", "fusion": "adaptive", "candidates": 50, "top_k": 4},
                                    chunking={"chunk_size": 200, "overlap": 0})))
    pipeline.ingest_sync([{"id": d.id, "text": d.text} for d in DOCS])
    for verdict in (True, False):
        asked: list[str] = []
        # the in-process engine's verdict, which index.dense_reads (the pattern's question) delegates to
        monkeypatch.setattr(pipeline.index._local, "dense_reads", lambda q, v=verdict: asked.append(q) or v)
        hits = pipeline.query_sync("下雨天出门要带什么？", k=4).hits
        auto = pipeline.index.search("下雨天出门要带什么？", k=4, search_type="auto")
        assert asked == ["下雨天出门要带什么？"] * 2
        assert [(h.chunk.id, h.score) for h in hits] == [(h.chunk.id, h.score) for h in auto]
        if verdict:  # an embedder that reads the question: its list is fused by score, as hybrid fuses
            hybrid = pipeline.index.search("下雨天出门要带什么？", k=4, search_type="hybrid")
            assert [(h.chunk.id, h.score) for h in auto] == [(h.chunk.id, h.score) for h in hybrid]
        else:  # one that cannot: chunks only the dense side found score nothing
            assert any(h.score == 0.0 for h in hits)


def test_an_index_keeps_the_verdict_for_later_processes(tmp_path):
    bag = CharacterBag("character-bag-kept")
    with CorpusIndex(bag, chunk_size=200, cache_dir=tmp_path) as index:
        index.add_documents(DOCS)
        assert index.dense_reads("下雨天出门要带什么？") is False
    assert bag.calls == 2  # the documents, then the probe's passages
    reading._verdicts.clear()  # a new process
    with CorpusIndex(bag, chunk_size=200, cache_dir=tmp_path) as index:
        assert index.dense_reads("为什么升级失败？") is False
        assert index.dense_reads("パッケージをインストールするには？") is False  # another script: probed
    assert bag.calls == 3


def test_a_store_that_cannot_be_written_keeps_the_verdict_in_memory():
    class ReadOnly:
        def get_meta(self, key):
            return None

        def set_meta(self, key, value):
            raise OSError("read-only file system")

    assert reading.reads_script(CharacterBag(), "zh", ReadOnly()) is False
    assert reading.reads_script(TopicReader(), "ja", ReadOnly()) is True


def test_search_settings_can_say_what_the_user_knows(tmp_path):
    bag = CharacterBag("character-bag-told")
    with CorpusIndex(bag, chunk_size=200, cache_dir=tmp_path) as index:
        index.add_documents(DOCS)
        index.search_settings.embedder_reads_cjk = True
        assert index.dense_reads("下雨天出门要带什么？") is True
        assert index.dense_reads("What do I take when it rains?") is None
        hits = index.search("下雨天出门要带什么？", k=4, search_type="auto")
        hybrid = index.search("下雨天出门要带什么？", k=4, search_type="hybrid")
    assert bag.calls == 1  # never probed
    # the dense list counts: a question the embedder reads is fused by score, as hybrid fuses
    assert [(h.chunk.id, h.score) for h in hits] == [(h.chunk.id, h.score) for h in hybrid]
