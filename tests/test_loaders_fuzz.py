"""Bounded fuzzing of the loaders: any bytes under any supported name either load or
raise LoaderError; nothing else escapes (no crash, no hang, no other exception type).

Two kinds of input: raw random bytes, and valid PDF/DOCX/HTML/CSV/text files with
random byte edits and truncations (these reach much deeper into the parsers).
The default run takes about 10 s; the ``slow`` one runs about 20x as many cases (a few minutes).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akasha.errors import LoaderError
from akasha.loaders import SUPPORTED_EXTENSIONS, load_file
from akasha.loaders.pdf import available_engines, load_pdf
from akasha.types import Document
from loaders_fixtures import docx_bytes, pdf_bytes

EXTENSIONS = sorted(SUPPORTED_EXTENSIONS)


@functools.cache
def seeds() -> dict[str, bytes]:
    """One valid file per type: the starting points that edits damage."""
    return {
        ".pdf": pdf_bytes(["Pump P-101 grease 500 h.", "Valve V-7 seal 2000 h."]),
        ".docx": docx_bytes(["Checklist", [["Item", "Status"], ["Seal", "ok"]], "End."]),
        ".html": "<html><head><title>t</title><script>x</script></head><body><p>Grease 500 h</p><table><tr><td>a</td></tr></table></body></html>".encode(),
        ".csv": "part;hours\nP-101;500\n\"V-7; seal\";2000\n".encode(),
        ".txt": "水泵每运行五百小时加注润滑脂。Grease every 500 hours.\n".encode("gb18030"),
        ".md": "# Pumps\n\nGrease every **500** hours.\n".encode("utf-16"),
        ".htm": "<p>caf\xe9</p>".encode("latin-1"),
    }


def check(suffix: str, data: bytes) -> None:
    path = Path("/nonexistent/fuzz") / f"case{suffix}"  # data= is used, the path is never opened
    loaders = [load_file]
    if suffix == ".pdf":  # every installed PDF engine gets the same input
        loaders = [functools.partial(load_pdf, engine=engine) for engine in available_engines()]
    for load in loaders:
        try:
            documents = load(path, data=data)
        except LoaderError as error:
            assert error.path == str(path) and error.reason
            continue
        assert documents and all(isinstance(d, Document) and d.text.strip() for d in documents)
        assert all(d.metadata["source"] == str(path) for d in documents)


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    suffix = draw(st.sampled_from(EXTENSIONS))
    data = bytearray(seeds()[suffix])
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            del data[at:]
    return suffix, bytes(data)


FAST = settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=15000, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(suffix=st.sampled_from(EXTENSIONS), data=st.binary(max_size=2048))
def test_fuzz_random_bytes(suffix: str, data: bytes) -> None:
    check(suffix, data)


@FAST
@given(case=mutated())
def test_fuzz_mutated_valid_files(case: tuple[str, bytes]) -> None:
    check(*case)


@pytest.mark.slow
@LONG
@given(suffix=st.sampled_from(EXTENSIONS), data=st.binary(max_size=8192))
def test_fuzz_random_bytes_long(suffix: str, data: bytes) -> None:
    check(suffix, data)


@pytest.mark.slow
@LONG
@given(case=mutated())
def test_fuzz_mutated_valid_files_long(case: tuple[str, bytes]) -> None:
    check(*case)


def test_fuzz_seeds_are_valid() -> None:
    # The mutation fuzzer only means something if its starting points load.
    for suffix, data in seeds().items():
        assert load_file(Path(f"seed{suffix}"), data=data), suffix
