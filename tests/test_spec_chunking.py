"""RAGPipeline 'chunking' table: strategies, defaults, overlap rules, ids and metadata."""

from __future__ import annotations

import hashlib

import pytest

from akasha.chunking.fixed import SPEC_SEPARATORS, split_fixed
from akasha.chunking.sentence import split_by_sentence
from akasha.spec import build, load_spec
from akasha.types import Document
from tests.spec_fixtures import body


def splitter(**chunking):
    return build(load_spec(body(chunking=chunking))).splitter


def texts(chunks):
    return [c.text for c in chunks]


def test_defaults_are_recursive_500_50_with_reference_separators():
    s = splitter()
    assert s.strategy == "recursive"
    assert SPEC_SEPARATORS == ("\n\n", "\n", ". ", " ")
    words = " ".join(f"w{i:03d}" for i in range(300))  # 1199 characters, spaces only
    pieces = texts(s.split_documents([Document(words)]))
    assert all(len(p) <= 500 for p in pieces) and len(pieces) > 2
    explicit = splitter(strategy="recursive", chunk_size=500, overlap=50, separators=["\n\n", "\n", ". ", " "])
    assert texts(explicit.split_documents([Document(words)])) == pieces
    assert texts(splitter(chunk_size=500, overlap=0).split_documents([Document(words)])) != pieces
    # default overlap 50: consecutive pieces share text
    assert pieces[1].split()[0] in pieces[0].split()


def test_fixed_cuts_every_chunk_size_stepping_size_minus_overlap():
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    pieces = texts(splitter(strategy="fixed", chunk_size=30, overlap=10).split_documents([Document(text)]))
    assert pieces[0] == text[0:30] and pieces[1] == text[20:50] and pieces[2] == text[40:70]
    assert pieces[-1] == text[80:100] and len(pieces) == 5
    assert split_fixed(text, 50, 0) == [text[:50], text[50:]]


def test_recursive_prefers_the_coarsest_separator_that_fits():
    para1 = "First paragraph sentence one. Sentence two."
    para2 = "Second paragraph."
    pieces = texts(splitter(strategy="recursive", chunk_size=50, overlap=0).split_documents([Document(f"{para1}\n\n{para2}")]))
    assert pieces == [para1, para2]


def test_recursive_recurses_into_pieces_still_too_long():
    long_para = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."
    pieces = texts(splitter(strategy="recursive", chunk_size=20, overlap=0).split_documents([Document(long_para + "\n\nShort.")]))
    assert all(len(p) <= 20 for p in pieces)
    assert pieces[-1] == "Short."
    assert any(p.startswith("Delta") for p in pieces)  # split at ". " inside the long paragraph


def test_recursive_custom_separators():
    pieces = texts(splitter(strategy="recursive", chunk_size=10, overlap=0, separators=["|"]).split_documents(
        [Document("aaaa|bbbb|cccc|dddd")]))
    assert all(len(p) <= 10 for p in pieces) and "".join(pieces).replace("|", "") == "aaaabbbbccccdddd"


def test_recursive_overlap_is_honoured():
    words = " ".join(f"w{i:02d}" for i in range(60))
    no = texts(splitter(strategy="recursive", chunk_size=40, overlap=0).split_documents([Document(words)]))
    yes = texts(splitter(strategy="recursive", chunk_size=40, overlap=12).split_documents([Document(words)]))
    assert not set(no[0].split()) & set(no[1].split())
    assert set(yes[0].split()) & set(yes[1].split())
    assert len(yes) > len(no)


def test_sentence_packs_whole_sentences_and_ignores_overlap():
    text = "One is here. Two is here! Three is here? Four is here."
    a = texts(splitter(strategy="sentence", chunk_size=30, overlap=0).split_documents([Document(text)]))
    b = texts(splitter(strategy="sentence", chunk_size=30, overlap=25).split_documents([Document(text)]))
    assert a == b == ["One is here. Two is here!", "Three is here? Four is here."]
    assert split_by_sentence("x" * 25 + ". Short.", 10)[0] == "x" * 10  # an over-long sentence is cut


def test_semantic_embeds_each_sentence_and_splits_on_topic_shift():
    from akasha.testing import HashEmbedder

    pipeline = build(load_spec(body(chunking={"strategy": "semantic", "chunk_size": 500, "overlap": 499})))
    embedder = pipeline.embedder
    assert isinstance(embedder, HashEmbedder) and pipeline.splitter.embedder is embedder
    text = "Cats purr softly. Cats purr softly at night. Rockets launch into orbit."
    before = embedder.texts_embedded
    pieces = texts(pipeline.splitter.split_documents([Document(text)]))
    assert embedder.texts_embedded - before == 3  # one embedding per sentence
    assert pieces == ["Cats purr softly. Cats purr softly at night.", "Rockets launch into orbit."]


def test_semantic_threshold_is_its_own_key():
    text = "Cats purr softly. Cats purr softly at night. Rockets launch into orbit."
    together = build(load_spec(body(chunking={"strategy": "semantic", "similarity_threshold": -1.0},
                                    retrieval={"similarity_threshold": 0.99})))
    assert texts(together.splitter.split_documents([Document(text)])) == [text]
    apart = build(load_spec(body(chunking={"strategy": "semantic", "similarity_threshold": 1.0})))
    assert len(apart.splitter.split_documents([Document(text)])) == 3
    assert build(load_spec(body(chunking={"strategy": "semantic"}))).splitter.similarity_threshold == 0.5


def test_semantic_respects_chunk_size():
    text = "Cats purr. Cats purr. Cats purr. Cats purr."
    s = build(load_spec(body(chunking={"strategy": "semantic", "chunk_size": 22, "similarity_threshold": -1}))).splitter
    assert all(len(p) <= 22 for p in texts(s.split_documents([Document(text)])))


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "sentence", "semantic"])
def test_ids_and_metadata(strategy):
    s = splitter(strategy=strategy, chunk_size=20, overlap=0)
    with_id = s.split_documents([Document("Alpha beta. Gamma delta. Epsilon zeta.", {"source": "x.txt", "page": 2}, id="doc-1")])
    assert [c.id for c in with_id] == [f"doc-1#{n}" for n in range(len(with_id))]
    for n, c in enumerate(with_id):
        assert c.metadata["source"] == "x.txt" and c.metadata["page"] == 2
        assert c.metadata["chunk_index"] == n and c.metadata["strategy"] == strategy
    text = "No id here. Another sentence."
    anon = s.split_documents([Document(text)])
    expected = "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    assert anon[0].id == f"{expected}#0" and anon[0].doc_id == expected


def test_ingest_returns_chunks_written_and_uses_the_strategy():
    pipeline = build(load_spec(body(chunking={"strategy": "fixed", "chunk_size": 10, "overlap": 0})))
    assert pipeline.ingest_sync([Document("x" * 35, id="d")]) == 4
    hits = pipeline.query_sync("x", k=10).hits
    assert sorted(h.chunk.id for h in hits) == ["d#0", "d#1", "d#2", "d#3"]
    assert all(h.chunk.metadata["strategy"] == "fixed" for h in hits)


def test_registered_splitter_with_only_split_text():
    import akasha.registry as registry

    class Lines:
        def split_text(self, text):
            return [line for line in text.splitlines() if line]

    registry.register("splitter", "lines-test", lambda config, context: Lines())
    try:
        s = splitter(strategy="lines-test")
        chunks = s.split_documents([Document("a\nb\n\nc", id="d")])
        assert [(c.id, c.text, c.metadata["strategy"]) for c in chunks] == [
            ("d#0", "a", "lines-test"), ("d#1", "b", "lines-test"), ("d#2", "c", "lines-test")]
    finally:
        registry.unregister("splitter", "lines-test")


def test_chinese_and_japanese_sentences_end_at_every_full_stop():
    """No space follows 。！？ in Chinese or Japanese: each still ends a sentence (issue 32)."""
    from akasha.chunking.sentence import split_by_sentence, split_sentences

    chinese = "泵房每周检查一次。水泵密封为什么失效？因为干运行！他说：「换新的。」然后离开了。"
    assert split_sentences(chinese) == ["泵房每周检查一次。", "水泵密封为什么失效？", "因为干运行！",
                                        "他说：「换新的。」", "然后离开了。"]
    japanese = "ポンプを点検した。シールが壊れていた！交換しますか？"
    assert split_sentences(japanese) == ["ポンプを点検した。", "シールが壊れていた！", "交換しますか？"]
    chunks = split_by_sentence(chinese * 6, 40)
    assert all(len(c) <= 40 for c in chunks)
    assert all(c.endswith(("。", "？", "！", "」")) for c in chunks)  # no chunk ends mid-sentence
    assert "。 " not in "".join(chunks)  # Chinese sentences are joined without a space
    assert split_sentences("Dry running. The seal failed! Why?") == ["Dry running.", "The seal failed!", "Why?"]


CHINESE = "今天天气很好。我们去公园散步吧！你想一起去吗？他说：「好的。」然后我们出发了。"
CHINESE_SENTENCES = ["今天天气很好。", "我们去公园散步吧！", "你想一起去吗？", "他说：「好的。」", "然后我们出发了。"]


def test_yaml_sentence_chunker_splits_at_cjk_marks_without_whitespace():
    """Issue 32, through akasha.spec.build: 。！？．｡ end a sentence with no whitespace after them."""
    pieces = texts(splitter(strategy="sentence", chunk_size=10, overlap=0).split_documents([Document(CHINESE)]))
    assert pieces == CHINESE_SENTENCES
    packed = texts(splitter(strategy="sentence", chunk_size=20, overlap=0).split_documents([Document(CHINESE)]))
    assert "".join(packed) == CHINESE  # joined without inserted spaces
    japanese = "日本語の文です．次の文です｡最後！"
    assert texts(splitter(strategy="sentence", chunk_size=8, overlap=0).split_documents([Document(japanese)])) == [
        "日本語の文です．", "次の文です｡", "最後！"]


def test_yaml_semantic_chunker_splits_at_cjk_marks_without_whitespace():
    s = build(load_spec(body(chunking={"strategy": "semantic", "chunk_size": 10, "similarity_threshold": -1}))).splitter
    assert texts(s.split_documents([Document(CHINESE)])) == CHINESE_SENTENCES
