"""issue 33: reading one file is bounded in memory while it is read, not after.

A file's size is checked before a byte is read (``AKASHA_LOADER_MAX_FILE_MB`` for every
format, ``AKASHA_LOADER_MAX_CHARS`` for text formats); text is decoded a block at a time and
the character limit applies to what the loader *returns*, so a single huge line stops at
the limit, and a CSV whose long header is repeated into every row cannot multiply a small
file past it. Each case runs in a child process whose address space is capped a little
above what it has after its imports (``RLIMIT_AS``): reading the file whole would raise
MemoryError there, and the parent only reads the child's verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")

#: The child runs this first: import akasha's loaders (and index), then cap its address space.
_PRELUDE = """
import json, logging, resource, sys
from pathlib import Path
import akasha
from akasha.loaders import LoaderLimitError, load_file

def vm_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024

def cap(headroom_mb):
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + headroom_mb * 2**20, resource.RLIM_INFINITY))

def verdict(**fields):
    print("VERDICT " + json.dumps(fields))
"""


def _run(script: str, env: dict[str, str], timeout: float = 120) -> dict:
    """Run ``script`` after the prelude in a child; return what it printed with ``verdict``."""
    import os

    child_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                 "TOKENIZERS_PARALLELISM": "false", **env}
    result = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(script)], capture_output=True, check=False,
                            text=True, timeout=timeout, env=child_env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("VERDICT ")]
    assert result.returncode == 0 and lines, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    found = json.loads(lines[-1][len("VERDICT "):])
    found["stderr"] = result.stderr
    return found


def _one_line(path: Path, megabytes: int) -> Path:
    block = b"a" * 2**20
    with open(path, "wb") as handle:
        handle.writelines(block for _ in range(megabytes))
    return path


_LOAD = """
try:
    load_file(Path(sys.argv[-1] if False else {path!r}))
    verdict(outcome="loaded")
except LoaderLimitError as exc:
    verdict(outcome="limit", limit=exc.limit, variable=exc.variable, message=str(exc))
except MemoryError:
    verdict(outcome="MemoryError")
"""


@pytest.mark.parametrize("suffix", [".txt", ".pdf", ".docx"])
def test_load_file_refuses_a_4_gb_sparse_file_by_its_size(tmp_path, suffix):
    """4 GB on paper, nothing on disk: refused from its size, naming it, the limit and the variable."""
    path = tmp_path / f"huge{suffix}"
    with open(path, "wb") as handle:
        handle.truncate(4 * 2**30)
    found = _run(f"cap(512)\n{_LOAD.format(path=str(path))}", {})
    assert found["outcome"] == "limit", found
    assert "4,294,967,296 bytes" in found["message"] and path.name in found["message"]
    assert found["variable"] in found["message"]
    assert "MEMORY" not in found["message"], found["message"]  # the file's size is to blame, not the reader's memory


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv"])
def test_a_single_huge_line_is_not_read_whole(tmp_path, suffix):
    """200 MB in one line, under the bytes pre-check (4 bytes a character) but over 60M characters:
    decoding stops at the limit, within 250 MB more address space (reading it whole needs 400 MB)."""
    path = _one_line(tmp_path / f"line{suffix}", 200)
    found = _run(f"cap(250)\n{_LOAD.format(path=str(path))}", {"AKASHA_LOADER_MAX_CHARS": "60000000"})
    assert found["outcome"] == "limit", found
    assert found["limit"] == "max_chars" and "AKASHA_LOADER_MAX_CHARS" in found["message"]


def test_a_csv_header_repeated_into_every_row_stops_at_the_character_limit(tmp_path):
    """A 100,000-character header and 5,000 short rows would render 500 million characters; the output stops
    at max_chars (1,000,000) although the file itself (about 0.2 MB) is well under it."""
    columns = 20
    header = ",".join(f"{i}{'h' * 5000}" for i in range(columns))
    row = ",".join(str(i) for i in range(columns))
    path = tmp_path / "wide.csv"
    path.write_text(header + "\n" + "\n".join([row] * 5000) + "\n")
    assert path.stat().st_size < 400_000
    found = _run(f"cap(300)\n{_LOAD.format(path=str(path))}", {"AKASHA_LOADER_MAX_CHARS": "1000000"}, timeout=60)
    assert found["outcome"] == "limit", found
    assert found["limit"] == "max_chars" and "wide.csv" in found["message"]


def test_the_index_warns_that_a_huge_pdf_is_too_big_naming_its_size_not_memory(tmp_path):
    """A sparse 4 GB PDF in a folder: skipped from its size with a warning that names the file, its size, the
    limit and the variable (AKASHA_LOADER_MAX_FILE_MB), never the reader's memory; the other file is indexed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.txt").write_text("pump seal")
    with open(docs / "huge.pdf", "wb") as handle:
        handle.truncate(4 * 2**30)
    script = f"""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s")
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir={str(tmp_path / "cache")!r})
    cap(1024)
    report = rag.index({str(docs)!r})
    verdict(skipped=report.skipped_files, chunks=report.chunks if hasattr(report, "chunks") else None)
    """
    found = _run(script, {})
    [(path, reason)] = found["skipped"]
    assert path.endswith("huge.pdf")
    assert "4,294,967,296 bytes" in reason and "AKASHA_LOADER_MAX_FILE_MB" in reason and "MEMORY" not in reason
    warnings = [line for line in found["stderr"].splitlines() if line.startswith("WARNING") and "huge.pdf" in line]
    assert warnings and all("4,294,967,296 bytes" in w and "AKASHA_LOADER_MAX_FILE_MB" in w for w in warnings)
    assert not any("MEMORY" in w for w in warnings)


def test_a_raised_file_size_limit_reaches_the_worker_process(tmp_path, monkeypatch):
    """The PDF/.docx worker checks the size with the caller's max_file_mb, not its own default (1024)."""
    from akasha.errors import LoaderError
    from akasha.loaders import LoaderLimitError, LoaderLimits, guard, load_file

    path = tmp_path / "big.docx"
    path.write_bytes(b"PK" + b"\0" * (2 * 2**20))  # 2 MB of not-a-zip
    with pytest.raises(LoaderLimitError, match="AKASHA_LOADER_MAX_FILE_MB"):
        load_file(path, limits=LoaderLimits(max_file_mb=1))
    sent = []
    real = guard._exchange

    def spy(worker, path, suffix, header, data, limits):
        sent.append(header["limits"])
        return real(worker, path, suffix, header, data, limits)

    monkeypatch.setattr(guard, "_exchange", spy)
    with pytest.raises(LoaderError) as caught:  # read by the worker: refused for its format, not its size
        load_file(path, limits=LoaderLimits(max_file_mb=3000))
    assert not isinstance(caught.value, LoaderLimitError), caught.value
    assert sent and sent[0]["max_file_mb"] == 3000


def test_the_index_does_not_hold_a_huge_text_file_whole(tmp_path):
    """Indexing a folder with a 200 MB single-line .txt (under the size pre-check, over 60M characters): the file
    is hashed and decoded a block at a time, skipped for max_chars, and the other file is indexed, within 250 MB
    more address space (holding its bytes and its text needs 260 MB and more)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.txt").write_text("pump seal")
    _one_line(docs / "line.txt", 200)
    script = f"""
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir={str(tmp_path / "cache")!r})
    cap(250)
    report = rag.index({str(docs)!r})
    verdict(skipped=report.skipped_files)
    """
    found = _run(script, {"AKASHA_LOADER_MAX_CHARS": "60000000"})
    [(path, reason)] = found["skipped"]
    assert path.endswith("line.txt") and "AKASHA_LOADER_MAX_CHARS" in reason


def test_a_large_text_file_that_changes_while_it_is_read_is_read_again_next_time(tmp_path, monkeypatch):
    """A text file over STREAM_BYTES is hashed, then loaded from disk: if it changed in between, nothing is
    stored under the old version's key and the next sync reads it again."""
    import akasha
    from akasha import loaders
    from akasha.index.sources import STREAM_BYTES

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.txt").write_text("grease the bearing")
    big = docs / "big.txt"
    big.write_text(("pump seal inspection every 500 hours. " * 1000 + "\n") * (STREAM_BYTES // 38_000 + 10))
    real = loaders.load_file

    def editing(path, data=None, **kwargs):  # someone saves the file mid-read
        with open(path, "a") as handle:
            handle.write("valve V-7 replaced.\n")
        return real(path, data, **kwargs)

    monkeypatch.setattr(loaders, "load_file", editing)
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir=str(tmp_path / "cache"))
    first = rag.index(str(docs))
    assert [reason for _p, reason in first.skipped_files] == [
        "the file changed while it was read; it is read again on the next sync"]
    monkeypatch.setattr(loaders, "load_file", real)
    second = rag.index(str(docs))
    assert not second.skipped_files
    assert any("V-7" in hit.chunk.text for hit in rag.search(str(docs), "valve V-7 replaced", k=3))
