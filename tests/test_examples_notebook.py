"""examples/notebook.ipynb executes top to bottom, offline, and shows what it promises.

The notebook is run with nbclient in a real Jupyter kernel (as CI and a user would),
then its outputs are checked: an HTML table of ``rag.docs``, an HTML table of a
search's QueryResult, a chart of the trace (a PNG from matplotlib) and an answer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def test_notebook_is_valid_and_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, "store the notebook without outputs (clear them before saving)"


@pytest.mark.integration
def test_notebook_executes_offline(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("AKASHA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()

    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    # rag.docs and a QueryResult render as tables with source, page, scores and snippet.
    tables = [h for h in html if "<table" in h]
    assert len(tables) >= 2, html
    assert any(".pdf" in t for t in tables), "the docs table should show the PDF source"
    # the trace chart
    assert pngs, "the trace chart (matplotlib) is missing"
    assert "Answer:" in text
