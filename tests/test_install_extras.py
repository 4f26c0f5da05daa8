"""What each extra installs (README "Install size"): the light base, the thin Chroma client in ``light``,
the full chromadb only in ``chroma`` and ``full``, and never both Chroma packages in one extra."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

PROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]


def names(extra: str | None) -> set[str]:
    """Distribution names an extra installs (``None``: the base), its ``akasha-rag[...]`` references followed."""
    requirements = list(PROJECT["dependencies"])
    pending = [extra] if extra else []
    seen: set[str] = set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for requirement in PROJECT["optional-dependencies"][current]:
            nested = re.fullmatch(r"akasha-rag\[([\w,-]+)\]", requirement)
            if nested:
                pending.extend(nested.group(1).split(","))
            else:
                requirements.append(requirement)
    return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_base_has_neither_bpe_openai_nor_langchain():
    base = names(None)
    assert "tiktoken" in base
    assert not base & {"bpe-openai", "langchain-text-splitters", "langchain-core", "chromadb", "chromadb-client"}


def test_light_has_the_thin_chroma_client_and_full_the_full_chromadb():
    assert "chromadb-client" in names("light") and "chromadb" not in names("light")
    assert names("chroma") - names(None) == {"chromadb"}
    assert "chromadb" in names("full")
    assert names("light") - {"chromadb-client"} <= names("full"), "full must install everything light does"


@pytest.mark.parametrize("extra", sorted(PROJECT["optional-dependencies"]))
def test_no_extra_installs_both_chroma_packages(extra):
    """Both provide the chromadb module; the thin client's marker file would make the full one HTTP-only."""
    assert not {"chromadb", "chromadb-client"} <= names(extra)


def test_ci_installs_full_and_dev_which_hold_the_test_references():
    """.ci/run installs '.[full,dev]': the splitter's and the token counts' references are there."""
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "'.[full,dev]'" in ci
    assert {"langchain-text-splitters", "bpe-openai", "chromadb"} <= names("full") | names("dev")
    assert "chromadb-client" not in names("full") | names("dev")
