"""The akasha CLI: ask, index, --version, --help and the offline stack choice."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from akasha import __version__, cli
from facade_fixtures import write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"akasha {__version__}"


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("ask", ["--model", "--embeddings", "--search-type", "--reranker", "--top-k", "--stream", "--cache-dir", "--offline"]),
        ("index", ["--embeddings", "--cache-dir", "--chunk-size", "--no-progress"]),
    ],
)
def test_each_subcommand_has_complete_help(capsys, command, flags):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = capsys.readouterr().out
    for flag in flags:
        assert flag in text
    assert "example:" in text


def test_top_level_help_lists_the_registered_subcommands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "ask" in out and "index" in out and "eval" in out


def test_no_subcommand_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


def test_choose_stack(no_keys, monkeypatch):
    model, embeddings, why = cli.choose_stack(None, None)
    assert model == "extractive" and embeddings in ("hf:all-MiniLM-L6-v2", "hash") and "offline" in why
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model, embeddings, why = cli.choose_stack(None, None)
    assert model.startswith("openai:") and embeddings.startswith("openai:") and "OPENAI_API_KEY" in why
    model, embeddings, _ = cli.choose_stack(None, None, offline=True)
    assert model == "extractive"
    assert cli.choose_stack("llama-cpp:smollm2", "hash")[:2] == ("llama-cpp:smollm2", "hash")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    assert cli.choose_stack(None, "hash")[:2] == ("gemini:gemini-2.5-flash", "hash")


def test_ask_answers_offline_and_says_which_models(no_keys, corpus, tmp_path, capsys):
    code = cli.main(["ask", str(corpus), "How often should the air filter be replaced?",
                     "--embeddings", "hash", "--cache-dir", str(tmp_path / "cache"), "--show-docs"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "The air filter should be replaced every 12 months" in out and "filters.md" in out
    assert "answer=extractive" in err and "embeddings=hash" in err and "offline" in err
    assert "[1]" in err and "filters.md" in err


def test_ask_with_reranker_top_k_and_stream(no_keys, corpus, capsys):
    code = cli.main(["ask", str(corpus), "How long are batteries covered?", "--embeddings", "hash",
                     "--cache-dir", ":memory:", "--reranker", "bge:/no/such/folder", "--top-k", "1"])
    assert code == 1 and "could not load reranker model" in capsys.readouterr().err
    code = cli.main(["ask", str(corpus), "How long are batteries covered?", "--embeddings", "hash",
                     "--cache-dir", ":memory:", "--stream", "--top-k", "2", "--search-type", "bm25"])
    out, err = capsys.readouterr()
    assert code == 0 and "Batteries are covered for two years only." in out
    assert "2 documents" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reranker", "cohere"], "unknown reranker"),
        (["--search-type", "semantic"], "unknown search_type"),
        (["--model", "gpt4"], "unknown model"),
    ],
)
def test_bad_names_exit_1_with_the_known_names(no_keys, corpus, capsys, args, message):
    code = cli.main(["ask", str(corpus), "q?", "--embeddings", "hash", "--cache-dir", ":memory:", *args])
    assert code == 1
    err = capsys.readouterr().err
    assert f"akasha: error: {message}" in err


def test_missing_path_exits_1_naming_it(no_keys, tmp_path, capsys):
    code = cli.main(["ask", str(tmp_path / "missing"), "q?", "--embeddings", "hash", "--cache-dir", ":memory:"])
    assert code == 1 and "missing" in capsys.readouterr().err


def test_index_prints_counts_and_reuses_the_cache(no_keys, corpus, tmp_path, capsys):
    cache = str(tmp_path / "cache")
    assert cli.main(["index", str(corpus), "--embeddings", "hash", "--cache-dir", cache, "--no-progress"]) == 0
    first = capsys.readouterr().out
    assert "indexed 4 files" in first and "chunks in the index" in first
    assert cli.main(["index", str(corpus), "--embeddings", "hash", "--cache-dir", cache]) == 0
    second = capsys.readouterr().out
    assert "indexed 0 files, 4 unchanged" in second and "embedded 0 chunks" in second


def test_the_console_script_runs(corpus, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")}
    out = subprocess.run(
        [sys.executable, "-m", "akasha", "ask", str(corpus), "What is the recommended tyre pressure?",
         "--embeddings", "hash", "--cache-dir", str(tmp_path / "c")],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "2.4 bar front" in out.stdout and "tyres.txt" in out.stdout
    assert "answer=extractive" in out.stderr


def test_ask_and_index_with_a_spec_use_the_yaml_pipeline(no_keys, corpus, tmp_path, capsys):
    spec = tmp_path / "p.rag.yaml"
    spec.write_text("kind: RAGPipeline\nmetadata: {name: cli}\nspec:\n  chunking: {chunk_size: 300, overlap: 30}\n"
                    "  embeddings: {provider: hash}\n  vector_store: {backend: memory}\n"
                    "  retrieval: {pattern: hybrid, top_k: 2}\n", encoding="utf-8")
    cache = str(tmp_path / "cache")
    assert cli.main(["index", str(corpus), "--spec", str(spec), "--cache-dir", cache, "--no-progress"]) == 0
    assert "indexed 4 files" in capsys.readouterr().out
    assert cli.main(["ask", str(corpus), "What is the recommended tyre pressure?", "--spec", str(spec),
                     "--cache-dir", cache, "--show-docs"]) == 0
    out, err = capsys.readouterr()
    assert "2.4 bar front" in out and "tyres.txt" in out and "spec " in err
    assert "2 documents" in err  # the spec's top_k, not the facade's k
    code = cli.main(["ask", str(corpus), "tyres?", "--spec", str(spec), "--chunk-size", "1000"])
    assert code == 1 and "chunking.chunk_size: 300" in capsys.readouterr().err
