"""``kind: RAGPipeline`` documents: load, validate, build.

:func:`load_spec` (or :func:`load_spec_file`) checks the shape and nothing else; :func:`build`
resolves every name and returns the :class:`akasha.pipeline.Pipeline` that :mod:`akasha.assemble`
builds (as for ``akasha.RAG``). Both raise :class:`~akasha.errors.SpecError` for the problems the
reference lists. Unknown keys are ignored on purpose (provider sections carry their own keys).

>>> spec = load_spec({"kind": "RAGPipeline", "metadata": {"name": "demo"},
...                   "spec": {"embeddings": {"provider": "hash"}, "vector_store": {"backend": "memory"}}})
>>> pipeline = build(spec)
>>> pipeline.ingest_sync(["Akasha answers questions over your documents."])
1
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akasha.assemble import BuildContext
from akasha.errors import SpecError
from akasha.pipeline import Pipeline

SECTIONS = ("chunking", "embeddings", "vector_store", "reranking", "retrieval")
#: A RAGPipeline document has a few hundred values; more than this after YAML aliases are expanded
#: (a "billion laughs" alias bomb: 1 KB of nested anchors that expands to gigabytes) is refused.
MAX_SPEC_VALUES = 20_000
#: Characters of text in the expanded document, for the same reason.
MAX_SPEC_CHARS = 2_000_000


@dataclass(frozen=True)
class PipelineSpec:
    """A shape-checked RAGPipeline document; each section is a plain dict (empty when absent)."""

    name: str
    chunking: dict[str, Any] = field(default_factory=dict)
    embeddings: dict[str, Any] = field(default_factory=dict)
    vector_store: dict[str, Any] = field(default_factory=dict)
    reranking: dict[str, Any] = field(default_factory=dict)
    retrieval: dict[str, Any] = field(default_factory=dict)
    api_version: str | None = None
    source: str | None = None  # the file it came from, for messages
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def _short(value: Any) -> str:
    """A repr cut short: error messages never print a whole (possibly enormous) value."""
    import reprlib

    shortener = reprlib.Repr()
    shortener.maxstring, shortener.maxother, shortener.maxlevel = 40, 40, 3
    shortener.maxlist = shortener.maxtuple = shortener.maxdict = shortener.maxset = 4
    return shortener.repr(value)


def _check_expansion(body: Any, at: str) -> None:
    """Refuse a document that is huge once its YAML aliases are expanded, or that contains itself (shared values
    count every time they are reached, so an alias bomb is refused in milliseconds, not expanded)."""
    values = chars = 0
    stack: list[tuple[Any, tuple[int, ...]]] = [(body, ())]
    while stack:
        value, parents = stack.pop()
        values += 1
        if isinstance(value, str):
            chars += len(value)
        if values > MAX_SPEC_VALUES or chars > MAX_SPEC_CHARS:
            raise SpecError(
                f"{at}the document expands to more than {MAX_SPEC_VALUES} values or {MAX_SPEC_CHARS} characters "
                "once its YAML anchors and aliases are expanded (an alias bomb?); a RAGPipeline needs a few hundred"
            )
        if isinstance(value, (Mapping, list, tuple)):
            if id(value) in parents:
                raise SpecError(f"{at}a YAML alias makes the document contain itself (a cycle); remove that alias")
            if len(parents) >= 64:
                raise SpecError(f"{at}the document is nested more than 64 levels deep; a RAGPipeline needs a few")
            inner = (*parents, id(value))
            items = [*value.keys(), *value.values()] if isinstance(value, Mapping) else list(value)
            stack.extend((item, inner) for item in items)


def load_spec(body: Any, *, source: str | None = None) -> PipelineSpec:
    """Check the shape of an already-parsed RAGPipeline body (no names are resolved here); SpecError if wrong."""
    if isinstance(body, PipelineSpec):
        return body
    at = f"{source}: " if source else ""
    _check_expansion(body, at)
    if not isinstance(body, Mapping):
        raise SpecError(f"{at}a RAGPipeline document must be a mapping, got {type(body).__name__}")
    kind = body.get("kind")
    if kind != "RAGPipeline":
        raise SpecError(f"{at}kind must be 'RAGPipeline', got {_short(kind)}")
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        raise SpecError(f"{at}metadata must be a mapping with a name, got {type(metadata).__name__}")
    name = metadata.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{at}metadata.name is missing: every RAGPipeline needs a name")
    spec = body.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise SpecError(f"{at}spec must be a mapping, got {type(spec).__name__}")
    sections: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        value = spec.get(section)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise SpecError(f"{at}spec.{section} must be a mapping, got {type(value).__name__}")
        sections[section] = copy.deepcopy(dict(value))
    api_version = body.get("apiVersion")  # recorded, deliberately not checked
    return PipelineSpec(name=name, api_version=None if api_version is None else str(api_version), source=source,
                        raw=copy.deepcopy(dict(body)), **sections)


def load_spec_file(path: str | Path) -> PipelineSpec:
    """Read a YAML (or JSON) RAGPipeline file and check its shape with :func:`load_spec`."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such RAGPipeline file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the file: {exc}") from None
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise SpecError(f"{path}: nested too deeply to be a RAGPipeline document") from None
    return load_spec(body, source=str(path))


# -------------------------------------------------------------------- build
def build(spec: Any, llm: Any = None, *, cache_dir: str | Path | None = None) -> Pipeline:
    """Resolve every component named in ``spec`` (a :func:`load_spec` result, mapping or path) into a Pipeline.

    ``llm`` (a chat model, model string or callable) is required by the ``multi_query`` and ``hyde``
    patterns; ``cache_dir`` is where the index keeps its chunks and vectors (default: in memory).
    Raises SpecError for unknown names, bad chunking windows, a bad pgvector table name, or a missing
    ``llm``; MissingExtraError for a missing package.
    """
    from akasha.assemble import from_spec

    if isinstance(spec, (str, Path)):
        spec = load_spec_file(spec)
    return from_spec(load_spec(spec), llm=llm, cache_dir=cache_dir)


__all__ = ["PipelineSpec", "BuildContext", "load_spec", "load_spec_file", "build"]
