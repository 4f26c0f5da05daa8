"""The ``light`` extra installs Chroma's thin HTTP client (``chromadb-client``), not the full ``chromadb``.

A Chroma server works with it; a local store (a folder, ``use_chroma=True`` on a folder, or in memory)
raises MissingExtraError naming the ``chroma`` extra and how to replace the thin client.

chromadb-client ships chromadb's own Python sources plus one marker file,
``chromadb/is_thin_client.py`` (``is_thin_client = True``), and none of the Rust engine. The
integration test builds that package from the installed chromadb (same version, so the same
sources; the dev environment cannot hold both, they share the ``chromadb`` module) and runs
akasha against a Chroma server in a process where it is the ``chromadb`` found first and the
Rust engine cannot be imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

chromadb = pytest.importorskip("chromadb")

import akasha  # noqa: E402
from akasha.embeddings.hash import HashEmbedder  # noqa: E402
from akasha.errors import MissingExtraError  # noqa: E402
from akasha.stores.chroma import ChromaStore  # noqa: E402
from servers_fixtures import chroma_server  # noqa: E402, F401

ROOT = Path(__file__).resolve().parent.parent


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "brakes.md").write_text("Brake pads are replaced below 3 mm of lining.", encoding="utf-8")
    (docs / "tyres.md").write_text("Tyre pressure is checked monthly: 2.4 bar front.", encoding="utf-8")
    return docs


def _assert_names_the_chroma_extra(error: MissingExtraError) -> None:
    assert error.extra == "chroma"
    text = str(error)
    assert "chromadb-client" in text and "pip uninstall -y chromadb-client chromadb" in text
    assert "pip install 'akasha-rag[chroma]'" in text and "chroma://host:port/collection" in text


def test_a_local_chroma_store_on_the_thin_client_names_the_chroma_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(chromadb, "is_client", True, raising=False)
    docs = _docs(tmp_path)
    before = sorted(p.name for p in docs.iterdir())
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), use_chroma=True, cache_dir=":memory:")
    with pytest.raises(MissingExtraError) as searched:
        rag.search(docs, "brake pads", k=1)
    _assert_names_the_chroma_extra(searched.value)
    with pytest.raises(MissingExtraError) as missing_folder:  # said before "that folder does not exist"
        rag.search(tmp_path / "not-built-yet", "brake pads", k=1)
    _assert_names_the_chroma_extra(missing_folder.value)
    from akasha.index import CorpusIndex

    with pytest.raises(MissingExtraError) as mirrored:  # the index's Chroma copy beside its cache
        CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache", store="chroma")
    _assert_names_the_chroma_extra(mirrored.value)
    for store in ({"path": tmp_path / "store"}, {}):  # a folder store, an in-memory store
        with pytest.raises(MissingExtraError) as opened:
            ChromaStore("notes", **store)
        _assert_names_the_chroma_extra(opened.value)
    assert sorted(p.name for p in docs.iterdir()) == before and not (tmp_path / "store").exists()


def test_the_full_chromadb_still_opens_a_local_store(tmp_path):
    assert not getattr(chromadb, "is_client", False)
    store = ChromaStore("notes", path=tmp_path / "store")
    assert (tmp_path / "store" / "chroma.sqlite3").is_file() and store.collection_name == "notes"


def test_without_chromadb_a_server_names_light_and_a_folder_names_chroma(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "chromadb", None)  # neither chromadb nor chromadb-client installed
    with pytest.raises(MissingExtraError) as server:
        ChromaStore("notes", host="127.0.0.1", port=1)
    assert server.value.extra == "light" and "chromadb-client" in str(server.value)
    with pytest.raises(MissingExtraError) as folder:
        ChromaStore("notes", path=tmp_path / "store")
    assert folder.value.extra == "chroma" and "akasha-rag[chroma]" in str(folder.value)


def thin_client(folder: Path) -> Path:
    """A ``chromadb-client`` package built from the installed chromadb: its sources plus the marker file."""
    source = Path(chromadb.__file__).parent
    shutil.copytree(source, folder / "chromadb", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "chromadb" / "is_thin_client.py").write_text("is_thin_client = True\n", encoding="utf-8")
    return folder


#: Run in a fresh process with the thin client first on sys.path and Chroma's Rust engine unimportable.
THIN_CLIENT_RUN = r"""
import importlib.abc, json, sys
from pathlib import Path

class NoRustEngine(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "chromadb_rust_bindings":
            raise ImportError("chromadb-client has no Rust engine")

sys.meta_path.insert(0, NoRustEngine())
import chromadb
import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import MissingExtraError

port, docs = int(sys.argv[1]), Path(sys.argv[2])
url = f"chroma://127.0.0.1:{port}/thin-client-notes"
out = {"thin": chromadb.is_client, "module": chromadb.__file__}
rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), vector_store=url, cache_dir=":memory:")
out["indexed"] = rag.search(docs, "tyre pressure bar", k=1)[0].text
reader = akasha.RAG(model="extractive", embeddings=HashEmbedder(), use_chroma=True, cache_dir=":memory:")
out["server"] = reader.search(url, "brake pads lining", k=1)[0].text
try:
    reader.search(docs, "brake pads", k=1)
except MissingExtraError as exc:
    out["local"] = exc.extra
out["rust"] = "chromadb_rust_bindings" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.integration
def test_the_thin_client_indexes_and_searches_a_chroma_server(tmp_path, chroma_server):  # noqa: F811
    import json

    overlay = thin_client(tmp_path / "thin")
    docs = _docs(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(overlay), str(ROOT)]), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", THIN_CLIENT_RUN, str(chroma_server.port), str(docs)],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["thin"] is True and Path(out["module"]).is_relative_to(overlay)
    assert out["indexed"].startswith("Tyre pressure") and out["server"].startswith("Brake pads")
    assert out["local"] == "chroma" and out["rust"] is False
