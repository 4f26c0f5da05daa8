"""The example documents in examples/docs/ load, and the committed PDF/DOCX match their generator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from akasha.chunking import chunk_documents
from akasha.loaders import discover, load_file

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "examples" / "docs"


def load_generator():
    spec = importlib.util.spec_from_file_location("make_example_docs", ROOT / "examples" / "make_example_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_document_loads_and_chunks():
    files = discover(DOCS)
    assert {p.suffix for p in files} >= {".md", ".txt", ".csv", ".pdf", ".docx"}
    assert sum(p.stat().st_size for p in files) < 200_000
    documents = [doc for path in files for doc in load_file(path)]
    assert len([d for d in documents if d.metadata["file_type"] == ".pdf"]) == 4  # one per page
    chunks = chunk_documents(documents, chunk_size=500, overlap=50)
    assert len(chunks) > len(documents)
    text = "\n".join(d.text for d in documents)
    for fact in ["every 500 operating hours", "7.1 mm/s", "suction valve V-102", "99.32", "85 分贝"]:
        assert fact in text, fact


def test_committed_pdf_and_docx_match_the_generator(tmp_path: Path):
    generator = load_generator()
    generator.make_report(tmp_path / "report.pdf")
    generator.make_checklist(tmp_path / "checklist.docx")
    for fresh, committed in [
        (tmp_path / "report.pdf", DOCS / "annual-maintenance-report-2024.pdf"),
        (tmp_path / "checklist.docx", DOCS / "monthly-inspection-checklist.docx"),
    ]:
        assert [d.text for d in load_file(fresh)] == [d.text for d in load_file(committed)], (
            f"{committed.name} is stale: run python examples/make_example_docs.py"
        )
