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


def test_the_signal_can_be_switched_off_and_empty_lists_hand_over():
    assert fusion.adaptive_weights("如何安装？", RANDOM, LEXICAL, CORPUS, disable=("coverage",)) == pytest.approx((0.6, 0.4))
    assert fusion.adaptive_weights("q", [], LEXICAL, CORPUS) == (0.0, 1.0)
    assert fusion.adaptive_weights("q", LEXICAL, [], CORPUS) == (1.0, 0.0)
    with pytest.raises(ValueError, match="unknown adaptive fusion signal"):
        fusion.adaptive_weights("q", LEXICAL, LEXICAL, CORPUS, disable=("colour",))
