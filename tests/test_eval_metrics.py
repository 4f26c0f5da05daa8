"""Hand-computed cases for recall@k, reciprocal rank, nDCG@k and the relevance rules."""

from __future__ import annotations

import json
import math

import pytest

from akasha.evaluation.metrics import dcg, mean, ndcg_at_k, recall_at_k, reciprocal_rank
from akasha.evaluation.relevance import AnswerMatcher, Question, SourceMatcher, load_questions, matcher_for

A, B, C = {"a"}, {"b"}, {"c"}
NONE: set[str] = set()


def test_recall_counts_distinct_units_in_top_k():
    matches = [NONE, A, A, B, NONE, C]
    assert recall_at_k(matches, 3, 1) == 0.0
    assert recall_at_k(matches, 3, 2) == pytest.approx(1 / 3)
    assert recall_at_k(matches, 3, 4) == pytest.approx(2 / 3)  # the second A adds nothing
    assert recall_at_k(matches, 3, 6) == 1.0
    assert recall_at_k(matches, 0, 5) == 0.0


def test_reciprocal_rank_first_relevant_within_k():
    assert reciprocal_rank([NONE, NONE, B], 10) == pytest.approx(1 / 3)
    assert reciprocal_rank([A], 10) == 1.0
    assert reciprocal_rank([NONE] * 10 + [A], 10) == 0.0  # rank 11 is outside MRR@10
    assert reciprocal_rank([], 10) == 0.0


def test_ndcg_hand_computed():
    # One unit found at rank 3: DCG = 1/log2(4) = 0.5, ideal = 1/log2(2) = 1.
    assert ndcg_at_k([NONE, NONE, A], 1, 10) == pytest.approx(0.5)
    # Two units at ranks 1 and 3, ideal ranks 1 and 2.
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k([A, NONE, B], 2, 10) == pytest.approx(expected)
    # A repeated unit gains nothing, so duplicates cannot inflate the score.
    assert ndcg_at_k([A, A, A], 2, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k([A, B], 2, 10) == pytest.approx(1.0)
    assert ndcg_at_k([NONE, NONE], 1, 10) == 0.0


def test_dcg_and_mean():
    assert dcg([1, 0, 1], 3) == pytest.approx(1 + 0.5)
    assert dcg([1, 1, 1], 1) == 1.0
    assert mean([]) == 0.0 and mean([1, 0]) == 0.5


def test_bad_k_raises():
    with pytest.raises(ValueError, match="k must be positive"):
        recall_at_k([A], 1, 0)


def test_answer_overlap_rule():
    answer = "Use the copy module: copy.deepcopy makes a deep copy of nested objects."
    matcher = AnswerMatcher(answer)
    assert matcher.matches("Intro text. " + answer.upper() + " Trailing words follow here.")  # contains it
    assert matcher.matches("copy.deepcopy makes a deep copy of nested")  # mostly a piece of the answer
    assert not matcher.matches("The copy module exists; objects can be nested in lists.")  # shares words only
    assert not matcher.matches("")
    assert AnswerMatcher("GIL").matches("what is the gil anyway")  # short answers: whole-word containment


def test_source_rule(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    target = folder / "sub" / "a.txt"
    target.write_text("x")
    assert SourceMatcher(["sub/a.txt"], folder).units(str(target)) == {"sub/a.txt"}
    assert SourceMatcher(["a.txt"], folder).units(str(target)) == {"a.txt"}
    assert SourceMatcher([str(target)], None).units(str(target)) == {str(target)}
    assert SourceMatcher(["b.txt", "other/a.txt"], folder).units(str(target)) == set()
    assert SourceMatcher(["a.txt"], folder).units(None) == set()


def test_answer_with_sources_counts_only_in_those_sources(tmp_path):
    question = Question("q", relevant_sources=["good.txt"], answer="alpha beta gamma delta")
    units = matcher_for(question, tmp_path)
    assert units("alpha beta gamma delta", str(tmp_path / "good.txt")) == {"answer"}
    assert units("alpha beta gamma delta", str(tmp_path / "bad.txt")) == set()


def test_load_questions_validates_lines(tmp_path):
    good = tmp_path / "q.jsonl"
    good.write_text(
        json.dumps({"question": "a?", "relevant_sources": "x.txt"}) + "\n\n" + json.dumps({"question": "b?", "answer": "y"}) + "\n"
    )
    loaded = load_questions(good)
    assert [q.question for q in loaded] == ["a?", "b?"]
    assert loaded[0].relevant_sources == ["x.txt"] and loaded[1].n_units == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "a?"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: give 'relevant_sources'"):
        load_questions(bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_questions(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_questions(tmp_path / "missing.jsonl")
