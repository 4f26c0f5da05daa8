"""Offline token counting: tiktoken encodings from the files akasha ships (akasha/tokenize_data/), picked
by model name, truncation, fallback estimate. bpe-openai (the dev extra) is a test-only reference."""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest

from akasha import tokens
from akasha.tokens import TokenCounter, count_tokens, encoding_name_for, estimate_tokens


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai:gpt-3.5-turbo", "cl100k_base"),
        ("openai:gpt-4", "cl100k_base"),
        ("openai:gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("openai:o3-mini", "o200k_base"),
        ("gemini:gemini-2.5-flash", "cl100k_base"),
        ("extractive", "cl100k_base"),
        (None, "cl100k_base"),
        (len, "cl100k_base"),
    ],
)
def test_encoding_is_chosen_by_model_name(model, encoding):
    assert encoding_name_for(model) == encoding


def test_counts_match_the_packaged_bpe():
    bpe_openai = pytest.importorskip("bpe_openai")
    text = "Retrieval-augmented generation packs documents into a prompt. 检索增强生成"
    for name in ("cl100k_base", "o200k_base"):
        expected = len(bpe_openai.get_encoding(name).encode(text))
        assert TokenCounter(name).count(text) == expected
    assert count_tokens(text, "openai:gpt-4o") == len(bpe_openai.get_encoding("o200k_base").encode(text))
    assert TokenCounter().exact


def test_special_token_lookalikes_are_plain_text():
    assert TokenCounter().count("<|endoftext|> hello") > 2


def test_empty_text_has_no_tokens():
    assert TokenCounter().count("") == 0
    assert estimate_tokens("") == 0


def test_truncate_returns_a_prefix_within_the_limit():
    counter = TokenCounter()
    text = "The air filter should be replaced every twelve months. " * 20
    cut = counter.truncate(text, 17)
    assert text.startswith(cut)
    assert 0 < counter.count(cut) <= 17
    assert counter.truncate(text, 10_000) == text
    assert counter.truncate(text, 0) == ""


def test_truncate_never_splits_a_multibyte_character():
    counter = TokenCounter()
    text = "維護風險" * 50
    for limit in range(1, 12):
        cut = counter.truncate(text, limit)
        assert "\ufffd" not in cut
        assert counter.count(cut) <= limit


SAMPLES = [
    "Retrieval-augmented generation packs documents into a prompt. 检索增强生成",
    "Don't stop: it's 3.14159 or 12345678 -- we'll see!\n\n\tIndented\r\nline   with   spaces   ",
    "ポンプの点検、バルブの交換。 Émile's café ☕ costs €4.50 🙂🙂",
    "def f(x):\n    return x ** 2  # comment\n" * 5,
    "<|endoftext|> and <|fim_prefix|> are plain text here",
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_same_tokens_as_the_reference_tokenizer(name):
    """bpe-openai's Rust tokenizer (a test-only reference here) and our tiktoken encoding agree token for token."""
    reference = pytest.importorskip("bpe_openai").get_encoding(name)
    encoding = tokens._encoding(name)
    for text in SAMPLES:
        assert encoding.encode_ordinary(text) == reference.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_definitions_are_tiktokens_own(monkeypatch, name):
    """Split pattern and special tokens equal tiktoken_ext.openai_public's (its download is replaced by the file)."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    path = tokens.encoding_file(name)

    def load(url, expected_hash=None):
        assert url.endswith(f"/{name}.tiktoken") and expected_hash == tokens.ENCODINGS[name].sha256
        return tokens.read_mergeable_ranks(path, expected_hash)

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load)
    theirs = getattr(openai_public, name)()
    ours = tokens.ENCODINGS[name]
    assert theirs["pat_str"] == ours.pat_str
    assert theirs["special_tokens"] == ours.special_tokens


def test_counting_neither_imports_bpe_openai_nor_builds_unused_encodings():
    code = ("import sys; from akasha.tokens import count_tokens, _encoding; print(count_tokens('hello world'), "
            "'bpe_openai' in sys.modules, _encoding.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2", "False", "1"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_verified_files_list_their_tokens_in_rank_order(name):
    path = tokens.encoding_file(name)
    assert tokens.read_mergeable_ranks(path, tokens.ENCODINGS[name].sha256) == tokens.read_mergeable_ranks(path)


def test_a_file_with_the_wrong_digest_is_refused(tmp_path, monkeypatch, caplog):
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    bad.write_bytes(gzip.compress(b"IQ== 0\nIg== 1\n"))
    with pytest.raises(ValueError, match="sha256"):
        tokens.read_mergeable_ranks(bad, tokens.ENCODINGS["cl100k_base"].sha256)
    assert tokens.read_mergeable_ranks(bad) == {b"!": 0, b'"': 1}
    monkeypatch.setattr(tokens, "encoding_file", lambda name: bad)
    tokens._encoding.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="akasha.tokens"):
            assert not TokenCounter("cl100k_base").exact
        assert "estimated" in caplog.text and str(bad) in caplog.text
        assert TokenCounter("cl100k_base").count("abcd" * 10) == 10
    finally:
        tokens._encoding.cache_clear()


def test_missing_data_files_fall_back_to_the_estimate(monkeypatch, caplog):
    name = "o200k_base"
    monkeypatch.setattr(tokens, "encoding_file", lambda name: None)
    tokens._encoding.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="akasha.tokens"):
            assert TokenCounter(name).count("a b c d e") == 5
        assert "reinstall" in caplog.text and f"{name}.tiktoken.gz" in caplog.text
    finally:
        tokens._encoding.cache_clear()


def test_fallback_estimate_when_tiktoken_cannot_count(monkeypatch):
    monkeypatch.setattr(tokens, "_encoding", lambda name: None)
    counter = TokenCounter()
    assert not counter.exact
    assert counter.count("abcd" * 10) == 10  # four characters per token
    assert counter.count("a b c d e") == 5  # never fewer tokens than words
    cut = counter.truncate("word " * 100, 10)
    assert counter.count(cut) <= 10


# -- the encoding files akasha ships: the ones tiktoken itself would download ------------------


def _tiktokens_own_encoding(monkeypatch, name):
    """tiktoken's own Encoding for ``name``, built by tiktoken_ext.openai_public with tiktoken.load's
    loader (hash check included); only the download is answered from akasha's gzipped file."""
    import tiktoken
    import tiktoken.load

    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    fetched: list[str] = []

    def read_file(blobpath):
        fetched.append(blobpath)
        assert blobpath.endswith(f"/{name}.tiktoken")
        return gzip.decompress((tokens.DATA_DIR / f"{name}.tiktoken.gz").read_bytes())

    monkeypatch.setattr(tiktoken.load, "read_file", read_file)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache: the file above is what tiktoken reads
    encoding = tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    assert fetched, "tiktoken did not read the encoding file"
    return encoding


def _mixed_corpus() -> list[str]:
    """The samples above, the example documents and a Chinese/Japanese/English/code mix."""
    from pathlib import Path

    from akasha.loaders import discover, load_file

    root = Path(__file__).resolve().parent.parent / "examples" / "docs"
    texts = [doc.text for path in discover(root) for doc in load_file(path)]
    assert texts
    mixed = ("维护计划：每月检查泵的轴承。ポンプの軸受けを毎月点検します。 Check the P-101 pump's bearings "
             "monthly; replace seals every 2,000 h.\n\n```python\nfor i in range(10):\n    print(i ** 2)\n```\n"
             "Ünïcödé — “quotes”, emoji 🚀🔧, tabs\tand\u3000full-width spaces, URLs https://example.org/a?b=c")
    return [*SAMPLES, *texts, mixed]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_shipped_files_count_exactly_as_tiktoken_itself(monkeypatch, name):
    """Same token ids as tiktoken's own cl100k_base/o200k_base on a mixed corpus (and the same counts)."""
    theirs = _tiktokens_own_encoding(monkeypatch, name)
    ours = tokens._encoding(name)
    assert ours is not None and ours.n_vocab == theirs.n_vocab
    for text in _mixed_corpus():
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert TokenCounter(name).count(text) == len(theirs.encode(text, disallowed_special=()))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_shipped_files_count_as_the_bpe_openai_package_did(name):
    """akasha read these files from bpe-openai before: same counts on the mixed corpus."""
    reference = pytest.importorskip("bpe_openai").get_encoding(name)
    for text in _mixed_corpus():
        assert TokenCounter(name).count(text) == len(reference.encode(text, disallowed_special=()))


def test_the_encoding_files_ship_inside_akasha_with_their_licence():
    from pathlib import Path

    import akasha

    folder = Path(akasha.__file__).parent / "tokenize_data"
    assert tokens.DATA_DIR == folder.resolve()
    for name in ("cl100k_base", "o200k_base"):
        assert tokens.encoding_file(name) == folder.resolve() / f"{name}.tiktoken.gz"
    assert "MIT License" in (folder / "LICENSE").read_text() and "OpenAI" in (folder / "LICENSE").read_text()
    assert sorted(p.name for p in folder.glob("*.gz")) == ["cl100k_base.tiktoken.gz", "o200k_base.tiktoken.gz"]
