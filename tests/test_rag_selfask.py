"""selfask_RAG: decompose with the model, answer follow-ups with retrieval, answer from both."""

from __future__ import annotations

import json
import logging

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.selfask import parse_followups
from facade_fixtures import write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


class SelfAskModel:
    """Returns follow-up JSON for the decomposition prompt and short answers otherwise."""

    def __init__(self, decomposition: str) -> None:
        self.decomposition = decomposition
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if prompt.startswith("Break the user's question"):
            return self.decomposition
        if "Answers to follow-up questions" in prompt:
            return "Final: filter yearly, coolant every 5 years."
        if "coolant" in prompt.rsplit("Question:", 1)[-1].lower():
            return "Every 5 years."
        return "Every 12 months."


def make_rag(model, **kw):
    return akasha.RAG(model=model, embeddings=HashEmbedder(), cache_dir=":memory:", **kw)


def test_followups_are_answered_then_the_original_question(corpus):
    model = SelfAskModel(json.dumps({"questions": ["How often is the air filter replaced?", "How often is coolant changed?"]}))
    rag = make_rag(model)
    answer = rag.selfask_RAG(corpus, "Which maintenance is due yearly and which every five years?")
    assert answer.startswith("Final: filter yearly, coolant every 5 years.")
    assert [f["question"] for f in rag.followups] == ["How often is the air filter replaced?", "How often is coolant changed?"]
    assert [f["answer"] for f in rag.followups] == ["Every 12 months.", "Every 5 years."]
    final_prompt = model.prompts[-1]
    assert "How often is coolant changed? -> Every 5 years." in final_prompt
    # rag.docs: the union of the documents used, each chunk once, first occurrence first.
    ids = [h.id for h in rag.docs]
    assert len(ids) == len(set(ids))
    sources = {h.path.rsplit("/", 1)[-1] for h in rag.docs}
    assert {"filters.md", "coolant.md"} <= sources
    used = {h.id for f in rag.followups for h in f["docs"]}
    assert used <= set(ids)
    stages = [t["stage"] for t in rag.trace]
    assert stages[0] == "decompose" and stages.count("generate") == 3 and stages.count("index") == 1
    assert rag.prompt == "Which maintenance is due yearly and which every five years?"


@pytest.mark.parametrize("bad", ["not json", '{"followups": []}', '{"questions": "a, b"}', '{"questions": [1, 2]}', ""])
def test_malformed_decomposition_degrades_to_a_plain_call(corpus, caplog, bad):
    model = SelfAskModel(bad)
    rag = make_rag(model)
    with caplog.at_level(logging.WARNING, logger="akasha.selfask"):
        answer = rag.selfask_RAG(corpus, "How often should the air filter be replaced?")
    assert answer.startswith("Every 12 months.")
    assert "answering directly" in caplog.text
    assert rag.followups == []
    assert [t["stage"] for t in rag.trace][:3] == ["decompose", "index", "retrieve"]
    assert rag.trace[0]["out"] == "fallback"


def test_no_followups_answers_directly_from_retrieval(corpus):
    rag = make_rag(SelfAskModel('{"questions": []}'))
    answer = rag.selfask_RAG(corpus, "How often should the air filter be replaced?")
    assert answer.startswith("Every 12 months.") and rag.docs


def test_selfask_overrides_apply_to_that_call_only(corpus):
    model = SelfAskModel(json.dumps({"questions": ["How often is the air filter replaced?"]}))
    rag = make_rag(model)
    before = rag.options
    seen = []

    def spy(query, documents):
        seen.append(query)
        return documents

    rag.selfask_RAG(corpus, "air filter and coolant?", reranker=spy, rerank_top_k=1)
    assert seen == ["air filter and coolant?", "How often is the air filter replaced?"]
    assert rag.options is before and rag.options.reranker is None


def test_selfask_streams(corpus):
    model = SelfAskModel(json.dumps({"questions": ["How often is coolant changed?"]}))
    rag = make_rag(model)
    pieces = list(rag.selfask_RAG(corpus, "coolant?", stream=True))
    assert "".join(pieces) == rag.response and rag.response.startswith("Final:")


def test_extractive_model_with_selfask_falls_back_and_still_answers(corpus):
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), cache_dir=":memory:")
    answer = rag.selfask_RAG(corpus, "How often should the air filter be replaced?")
    assert "12 months" in answer and "filters.md" in answer


def test_parse_followups():
    assert parse_followups('```json\n{"questions": ["a?", "b?", "c?", "d?"]}\n```') == ["a?", "b?", "c?"]
    with pytest.raises(ValueError):
        parse_followups('{"questions": ["", "b"]}')
