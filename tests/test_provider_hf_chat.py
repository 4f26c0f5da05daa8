"""hf:<folder> local transformers chat with a tiny randomly initialised GPT-2 saved to a temp folder."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from akasha.errors import StreamInterruptedError  # noqa: E402
from akasha.llm import resolve_chat_model  # noqa: E402
from akasha.llm.base import GenerationOptions  # noqa: E402
from akasha.llm.hf import TransformersChat, plain_transcript  # noqa: E402

WORDS = "the cat sat on a mat dog ran far away hello world answer question yes no".split()
TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello cat"}]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<eos>", "<system>", "<user>", "<assistant>"]
    vocab = {tok: i for i, tok in enumerate(specials + WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>",
        additional_special_tokens=["<system>", "<user>", "<assistant>"],
    )
    tokenizer.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=2, n_head=2,
                        eos_token_id=vocab["<eos>"], bos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
    model = GPT2LMHeadModel(config)
    folder = tmp_path_factory.mktemp("tiny-chat")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    try:  # huggingface_hub reads the variable once at import; make sure it holds in-process too
        import huggingface_hub.constants as hub_constants
    except ImportError:
        return
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)


def test_loads_lazily_from_folder_and_generates(tiny_model_dir):
    model = resolve_chat_model(f"hf:{tiny_model_dir}")
    assert isinstance(model, TransformersChat) and model._model is None
    assert model.name == f"hf:{tiny_model_dir}"
    text = model.generate(MESSAGES, GenerationOptions(max_output_tokens=6))
    assert isinstance(text, str)
    assert len(text.split()) <= 6
    assert all(word in WORDS for word in text.split())
    # greedy decoding is deterministic
    assert model.generate(MESSAGES, GenerationOptions(max_output_tokens=6)) == text


def test_stream_matches_whole_answer(tiny_model_dir):
    model = TransformersChat(str(tiny_model_dir))
    whole = model.generate(MESSAGES, GenerationOptions(max_output_tokens=8))
    pieces = list(model.stream(MESSAGES, GenerationOptions(max_output_tokens=8)))
    assert "".join(pieces).split() == whole.split()


def test_generation_error_in_thread_ends_stream(tiny_model_dir):
    model = TransformersChat(str(tiny_model_dir), generation_kwargs={"num_beams": 2})  # beams + streamer: invalid
    with pytest.raises(StreamInterruptedError) as info:
        list(model.stream(MESSAGES, GenerationOptions(max_output_tokens=4)))
    assert info.value.partial == ""


def test_async(tiny_model_dir):
    model = TransformersChat(str(tiny_model_dir))

    async def main():
        whole = await model.agenerate(MESSAGES, GenerationOptions(max_output_tokens=5))
        pieces = [p async for p in model.astream(MESSAGES, GenerationOptions(max_output_tokens=5))]
        return whole, pieces

    whole, pieces = asyncio.run(main())
    assert "".join(pieces).split() == whole.split()


def test_unknown_model_offline_raises_config_error_naming_it(tmp_path):
    from akasha.errors import ConfigError

    model = resolve_chat_model("hf:no-such-org/no-such-model-akasha-test")
    with pytest.raises(ConfigError) as info:
        model.generate(MESSAGES)
    assert "no-such-org/no-such-model-akasha-test" in str(info.value) and "local folder" in str(info.value)


def test_plain_transcript_fallback():
    assert plain_transcript(MESSAGES) == "System: be brief\nUser: hello cat\nAssistant:"


# ------------------------------------------------- context size and cut answers (issue 17 item 3)
def _eos_id(folder) -> int:
    return TransformersChat(str(folder))._load()[1].eos_token_id


def test_context_window_comes_from_the_folder_config_without_loading(tiny_model_dir):
    model = TransformersChat(str(tiny_model_dir))
    assert model.context_window == 64  # GPT2Config(n_positions=64)
    assert model._model is None  # read from config.json, nothing loaded
    model.generate(MESSAGES, GenerationOptions(max_output_tokens=2))
    assert model.context_window == 64  # and from the loaded model's config


def test_a_hub_name_not_yet_loaded_has_no_known_context():
    assert TransformersChat("no-such-org/no-such-model-akasha-test").context_window is None


@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_an_answer_cut_at_max_output_tokens_is_reported(tiny_model_dir, mode, caplog):
    from akasha.llm.base import GenerationReport

    specials = list(range(6))  # <pad> <unk> <eos> <system> <user> <assistant>: only words, never the end
    assert _eos_id(tiny_model_dir) in specials
    model = TransformersChat(str(tiny_model_dir), generation_kwargs={"suppress_tokens": specials})
    options = GenerationOptions(max_output_tokens=3, report=GenerationReport())
    caplog.set_level("WARNING")
    text = model.generate(MESSAGES, options) if mode == "plain" else "".join(model.stream(MESSAGES, options))
    assert len(text.split()) == 3
    assert (options.report.finish_reason, options.report.truncated) == ("length", True)
    assert any("output limit" in r.getMessage() and "max_output_tokens=3" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_an_answer_that_ends_itself_is_not_reported_as_cut(tiny_model_dir, mode, caplog):
    from akasha.llm.base import GenerationReport

    eos = _eos_id(tiny_model_dir)
    everything_else = [i for i in range(len(WORDS) + 6) if i != eos]
    model = TransformersChat(str(tiny_model_dir), generation_kwargs={"suppress_tokens": everything_else})
    options = GenerationOptions(max_output_tokens=5, report=GenerationReport())
    caplog.set_level("WARNING")
    if mode == "plain":
        model.generate(MESSAGES, options)
    else:
        list(model.stream(MESSAGES, options))
    assert (options.report.finish_reason, options.report.truncated) == ("stop", False)
    assert not [r for r in caplog.records if "output limit" in r.getMessage()]


def test_rag_reserves_the_reply_inside_the_models_context(tiny_model_dir, tmp_path):
    """The 64-token model cannot hold akasha's system prompt plus an 8-token reply: the call says so before
    generating (instead of overflowing the context), and the trace shows the budget it computed."""
    import akasha
    from akasha.errors import BudgetError

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cat.txt").write_text("the cat sat on a mat. " * 40, encoding="utf-8")
    rag = akasha.RAG(model=f"hf:{tiny_model_dir}", embeddings="hash", max_output_tokens=8, max_input_tokens=3000,
                     cache_dir=str(tmp_path / "cache"))
    with pytest.raises(BudgetError) as info:
        rag(str(docs), "where did the cat sit?")
    assert "64-token context" in str(info.value) and "max_output_tokens=8" in str(info.value)
    pack = next(entry for entry in rag.trace if entry["stage"] == "pack")
    assert (pack["context"], pack["budget"]) == (64, 64 - 8 - 16)
    assert not [entry for entry in rag.trace if entry["stage"] == "generate"]
