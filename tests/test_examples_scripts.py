"""Every script in examples/ runs, offline, and prints what its docstring promises.

Each script is run as a user would run it (``python examples/NAME.py`` from the
repository root) in a subprocess with the Hugging Face hub switched off and a fresh
cache folder, so an example that needs a key, the network or a stale cache fails here.
The scripts check their own claims with ``assert``; the expected lines below make sure
they got as far as printing the result.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: script -> text its output must contain (the scripts assert the details themselves).
EXPECTED = {
    "ask_folder_offline.py": "Sources:",
    "rerank_per_call.py": "instance unchanged",
    "custom_reranker.py": "reranked by",
    "selfask.py": "Follow-up questions",
    "streaming.py": "streamed",
    "yaml_pipeline.py": "hits for",
    "evaluate.py": "recall@",
}


def scripts() -> list[Path]:
    return sorted(EXAMPLES.glob("*.py"))


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        AKASHA_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        MPLBACKEND="Agg",
    )
    return env


def test_every_example_is_tested_and_documented():
    names = {p.name for p in scripts() if p.name != "make_example_docs.py"}  # loaders helper's
    assert names == set(EXPECTED), "add the new example to EXPECTED (and docs/examples.md)"
    page = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    for name in names:
        assert f"examples/{name}" in page, f"docs/examples.md does not mention {name}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_has_a_docstring_saying_how_to_run_it(name):
    tree = ast.parse((EXAMPLES / name).read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree)
    assert doc and f"python examples/{name}" in doc


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name, tmp_path):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=ROOT,
        env=offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert EXPECTED[name] in proc.stdout, proc.stdout
