"""Adaptive fusion (the auto search type): a dense list that cannot read the question counts for nothing."""

from __future__ import annotations

import pytest

from akasha.retrieval import fusion


def ranked(ids: list[str]) -> list[tuple[str, float]]:
    return [(item, 1.0 - i / 100) for i, item in enumerate(ids)]


CORPUS = 1000
LEXICAL = ranked([f"d{i}" for i in range(50)])
AGREEING = ranked([f"d{i}" for i in range(0, 100, 2)])  # shares 25 of its top 50 with LEXICAL (chance: 2.5)
RANDOM = ranked([f"d{i}" for i in range(500, 550)])  # shares nothing


def test_cjk_share_and_agreement_lift():
    assert fusion.cjk_share("什么是 Debian？") == pytest.approx(3 / 9)
    assert fusion.cjk_share("What is Debian?") == 0.0
    assert fusion.agreement_lift(AGREEING, LEXICAL, CORPUS) == pytest.approx(10.0)
    assert fusion.agreement_lift(RANDOM, LEXICAL, CORPUS) == 0.0


def test_a_chinese_question_with_a_blind_dense_list_rests_on_bm25():
    w_vec, w_lex = fusion.adaptive_weights("如何安装软件包？", RANDOM, LEXICAL, CORPUS)
    assert (w_vec, w_lex) == (0.0, 1.0)
    fused = [item for item, _ in fusion.adaptive("如何安装软件包？", RANDOM, LEXICAL, CORPUS)]
    assert fused[:50] == [item for item, _ in LEXICAL]


def test_an_embedder_that_reads_the_language_keeps_its_weight():
    assert fusion.adaptive_weights("如何安装软件包？", AGREEING, LEXICAL, CORPUS) == pytest.approx((0.6, 0.4))


def test_english_questions_always_fuse_both_lists():
    assert fusion.adaptive_weights("How do I install a package?", RANDOM, LEXICAL, CORPUS) == pytest.approx((0.6, 0.4))
    fused = [item for item, _ in fusion.adaptive("How do I install a package?", RANDOM, LEXICAL, CORPUS)]
    assert fused[0] == "d500" and "d0" in fused[:10]  # the dense list leads (0.6 against 0.4); both count


def test_an_embedder_known_to_read_keeps_its_weight_and_empty_lists_hand_over():
    assert fusion.adaptive_weights("如何安装？", RANDOM, LEXICAL, CORPUS, dense_reads=True) == pytest.approx((0.6, 0.4))
    assert fusion.adaptive_weights("q", [], LEXICAL, CORPUS) == (0.0, 1.0)
    assert fusion.adaptive_weights("q", LEXICAL, [], CORPUS) == (1.0, 0.0)


def test_a_cjk_question_the_embedder_reads_is_fused_by_score_as_hybrid_fuses():
    """Rank fusion drops the score gaps; on Chinese and Japanese with a reading embedder they carry the answer."""
    from akasha.retrieval.search import SearchSettings, fuse_adaptive

    dense = [("a", 0.95), ("b", 0.60), ("c", 0.59), ("d", 0.58)]  # "a" far ahead on the dense side
    lexical = [("b", 9.0), ("c", 8.9), ("a", 1.0), ("e", 0.9)]
    settings = SearchSettings(neighbour_weight=0.0)
    by_score = fuse_adaptive("如何安装软件包？", dense, lexical, 100, settings, dense_reads=True)
    assert by_score == fusion.weighted([dense, lexical], [0.5, 0.5])
    assert [item for item, _ in by_score][:3] == ["b", "c", "a"]  # min-max: b 0.53, c 0.51, a 0.51
    blind = fuse_adaptive("如何安装软件包？", dense, lexical, 100, settings, dense_reads=False)
    assert [item for item, _ in blind] == ["b", "c", "a", "e", "d"]  # BM25's order; "d" only dense
    english = fuse_adaptive("How do I install a package?", dense, lexical, 100, settings, dense_reads=None)
    assert english == fusion.adaptive("How do I install a package?", dense, lexical, 100)  # rank fusion


def test_a_short_question_names_one_thing_in_any_script():
    assert fusion.names_one_thing("retry_max_delay") and fusion.names_one_thing("E4711 error code")
    assert not fusion.names_one_thing("How do I solve the missing dll error?")
    assert fusion.names_one_thing("免責事項") and fusion.names_one_thing("SSH の基本")  # two characters a word
    assert not fusion.names_one_thing("如何安装软件包？")


def test_a_sentence_keeps_its_identifier_shaped_terms_for_the_exact_match_rule():
    sentence = "What does retry_max_delay change for error e4711 in os.path.join on python 3.11?"
    terms = ["what", "does", "retry_max_delay", "change", "error", "e4711", "os.path.join", "python", "3.11"]
    assert fusion.exact_terms(sentence, terms) == ["retry_max_delay", "e4711", "os.path.join", "3.11"]
    assert fusion.exact_terms("How do I solve the missing dll error?", ["how", "solve", "missing", "dll", "error"]) == []
    assert fusion.exact_terms("retry delay", ["retry", "delay"]) == ["retry", "delay"]  # short: every term
    # a short code is a word of the sentence ("the L1 cache"); a dotted fragment is still a joint
    assert fusion.exact_terms("How do I solve the missing api-ms-win-crt-runtime-l1-1-0.dll error?",
                              ["how", "solve", "missing", "api", "ms", "l1", "0.dll", "error"]) == ["0.dll"]
