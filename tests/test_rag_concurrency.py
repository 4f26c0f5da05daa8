"""One RAG shared by threads and asyncio tasks: each call answers from its own data_source and
publishes its own docs; failed calls clear what they publish; streams that break report it."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import StageError, StreamInterruptedError
from facade_fixtures import RecordingModel, write_corpus

ALPHA = {f"alpha{i}.txt": f"Alpha pumps need grease every {i + 2} weeks. The alpha valve is red." for i in range(4)}
BETA = {f"beta{i}.md": f"Beta pumps need grease every {i + 20} days. The beta valve is blue." for i in range(4)}


@pytest.fixture
def folders(tmp_path):
    return write_corpus(tmp_path / "alpha", ALPHA), write_corpus(tmp_path / "beta", BETA)


def names(hits):
    return {h.path.rsplit("/", 1)[-1] for h in hits}


def echo_sources(prompt: str) -> str:
    """Answers with the source attributes of the documents it was given, so a test sees which corpus it got."""
    return " ".join(sorted({part.split('"')[1].rsplit("/", 1)[-1] for part in prompt.split("source=")[1:]}))


def test_threads_on_different_folders_get_their_own_docs(folders):
    alpha, beta = folders
    rag = akasha.RAG(model=echo_sources, embeddings=HashEmbedder(), cache_dir=":memory:")
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def ask(folder, expected_prefix: str) -> None:
        barrier.wait()
        for _ in range(6):
            answer = rag(folder, "How often do the pumps need grease?")
            mine = names(rag.docs)  # this thread's last call, whatever the other threads did since
            if not mine or not all(n.startswith(expected_prefix) for n in mine):
                errors.append(AssertionError(f"{expected_prefix}: got docs {mine}"))
            if not all(w.startswith(expected_prefix) for w in answer.split()[:1]):
                errors.append(AssertionError(f"{expected_prefix}: got answer {answer!r}"))
            if rag.last_sync is None or rag.last_sync.chunks != 4:
                errors.append(AssertionError(f"{expected_prefix}: sync {rag.last_sync}"))

    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(ask, folder, prefix) for folder, prefix in [(alpha, "alpha"), (beta, "beta")] * 3]
        for future in futures:
            future.result()
    assert errors == []


def test_asyncio_tasks_on_different_folders_get_their_own_docs(folders):
    alpha, beta = folders
    rag = akasha.RAG(model=echo_sources, embeddings=HashEmbedder(), cache_dir=":memory:")

    async def ask(folder, prefix):
        answer = await rag.acall(folder, "How often do the pumps need grease?")
        await asyncio.sleep(0.01)  # other tasks publish meanwhile
        return prefix, answer, names(rag.docs), rag.last_result

    async def main():
        return await asyncio.gather(*(ask(f, p) for _ in range(4) for f, p in [(alpha, "alpha"), (beta, "beta")]))

    for prefix, answer, docs, result in asyncio.run(main()):
        assert docs and all(n.startswith(prefix) for n in docs)
        assert answer.split()[0].startswith(prefix)
        assert result.response == answer


def test_the_calling_thread_sees_the_most_recent_call_after_asyncio_run(folders):
    alpha, beta = folders
    rag = akasha.RAG(model=echo_sources, embeddings=HashEmbedder(), cache_dir=":memory:")
    rag(alpha, "grease?")
    asyncio.run(rag.acall(beta, "grease?"))
    assert all(n.startswith("beta") for n in names(rag.docs))


def test_a_failed_call_does_not_keep_the_previous_calls_values(folders):
    alpha, _ = folders
    rag = akasha.RAG(model=RecordingModel("Every 2 weeks."), embeddings=HashEmbedder(), cache_dir=":memory:")
    rag(alpha, "How often do the pumps need grease?")
    assert rag.docs and rag.response and rag.prompt

    def broken(prompt):
        raise RuntimeError("model exploded")

    with pytest.raises(StageError):
        rag(alpha, "Which valve is red?", model=broken)
    assert rag.docs == [] and rag.response == "" and rag.prompt == "Which valve is red?"
    assert rag.trace[-1]["stage"] == "generate" and "model exploded" in rag.trace[-1]["error"]
    assert rag.last_result.error is not None

    with pytest.raises(FileNotFoundError):
        rag(alpha / "missing", "Which valve is red?")
    assert rag.docs == [] and rag.response == "" and rag.prompt == "Which valve is red?"

    with pytest.raises(ValueError):
        rag(alpha, "", reranker=None)
    assert rag.docs == [] and rag.response == "" and rag.trace == []


@pytest.mark.parametrize("spelling", ["LLM", "llm", " Llm "])
def test_llm_reranker_in_any_case_honours_a_per_call_reranker_model(folders, spelling):
    alpha, _ = folders

    def ranker(name):
        calls = []

        def rank(prompt):
            calls.append(name)
            n = prompt.count("<candidate id=")
            return json.dumps({"order": list(range(n))[::-1]})

        return rank, calls

    first, first_calls = ranker("first")
    second, second_calls = ranker("second")
    rag = akasha.RAG(model=RecordingModel("ok"), embeddings=HashEmbedder(), cache_dir=":memory:",
                     reranker=spelling, reranker_model=first, rerank_top_k=2)
    rag(alpha, "grease?")
    rag(alpha, "grease?", reranker_model=second)
    rag(alpha, "grease?")
    assert first_calls == ["first", "first"] and second_calls == ["second"]


def test_selfask_fallback_is_logged_and_in_the_trace(folders, caplog):
    alpha, _ = folders
    rag = akasha.RAG(model=RecordingModel("not json at all"), embeddings=HashEmbedder(), cache_dir=":memory:")
    with caplog.at_level(logging.WARNING, logger="akasha.selfask"):
        rag.selfask_RAG(alpha, "How often do the pumps need grease?")
    assert any(r.levelno == logging.WARNING and "answering directly" in r.getMessage() for r in caplog.records)
    first = rag.trace[0]
    assert first["stage"] == "decompose" and first["out"] == "fallback" and "plain call" in first["fallback"]
    assert [e["stage"] for e in rag.trace][-1] == "generate"


class BreaksMidStream:
    """A custom model whose stream fails after two pieces."""

    name = "breaks-mid-stream"

    def generate(self, messages, options=None):
        return "unused"

    def stream(self, messages, options=None):
        yield "Every "
        yield "two "
        raise ConnectionResetError("socket closed by peer")


def test_a_custom_model_failing_mid_stream_raises_stream_interrupted(folders):
    alpha, _ = folders
    rag = akasha.RAG(model=BreaksMidStream(), embeddings=HashEmbedder(), cache_dir=":memory:", stream=True)
    pieces = []
    with pytest.raises(StreamInterruptedError) as info:
        for piece in rag(alpha, "grease?"):
            pieces.append(piece)
    assert pieces == ["Every ", "two "] and info.value.partial == "Every two "
    assert isinstance(info.value.__cause__, ConnectionResetError)
    entry = rag.trace[-1]
    assert entry["stage"] == "generate" and "socket closed by peer" in entry["error"]
    assert rag.response == "Every two "


def test_a_custom_model_failing_mid_astream_raises_stream_interrupted(folders):
    alpha, _ = folders
    rag = akasha.RAG(model=BreaksMidStream(), embeddings=HashEmbedder(), cache_dir=":memory:")

    async def consume():
        got = []
        async for piece in rag.astream(alpha, "grease?"):
            got.append(piece)
        return got

    with pytest.raises(StreamInterruptedError) as info:
        asyncio.run(consume())
    assert info.value.partial == "Every two "
    assert "socket closed by peer" in rag.trace[-1]["error"]
