"""An embedder's identity: what its vectors are, not where it was reached or what its function is called.

Cached vectors are keyed by the embedder's identity: its model name (without any ``@endpoint``)
and a fingerprint of its vectors for a few fixed probe texts, so the same model behind another host
reuses every vector, and another model sharing a name never does. Fingerprints are compared by
cosine, not bytes (machines whose arithmetic differs in the last bits resolve to the identity the
first registered). Every identity seen is kept with its probe vectors in a *registry* (the local
cache's ``meta`` table, the shared store's state) for later processes.

Caches written before identities keyed vectors by the plain name; that name is adopted when the
embedder reproduces up to :data:`VERIFY_TEXTS` of those cached vectors. An embedder whose vectors are
a fixed function of the text (``hash``) declares a ``vector_identity`` attribute and is not probed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Texts every embedder embeds once per process to fingerprint its vectors (mixed scripts and shapes).
PROBE_TEXTS: tuple[str, ...] = (
    "The mechanical seal of pump P-102 failed after it ran dry for two hours.",
    "泵房的通风系统每周检查一次，记录温度和湿度。",
    "def parse_config(path): return yaml.safe_load(open(path, encoding='utf-8'))",
)
#: Two embedders are the same when every probe vector of one has at least this cosine with the other's.
SAME_COSINE = 0.9999
#: Cached texts re-embedded to check that vectors under a plain (pre-identity) name are this embedder's.
VERIFY_TEXTS = 3
#: The registry's key in the local cache's meta table and in a shared store's state.
REGISTRY_KEY = "akasha-embedder-identities"

#: Registry: identity -> {"base": model name, "dimension": width, "probes": [[float, ...], ...]}
Registry = dict[str, dict[str, Any]]

_PROBED: dict[int, tuple[Any, np.ndarray]] = {}  # id(embedder) -> (embedder, unit probe vectors)
_LOCK = threading.Lock()


def base_name(name: str) -> str:
    """The model part of an embedder name: without the ``@endpoint`` a remote model was reached at."""
    return name.split("@", 1)[0]


def probe_vectors(embedder: Any) -> np.ndarray:
    """The embedder's unit vectors of :data:`PROBE_TEXTS` (one small call, remembered for the process)."""
    with _LOCK:
        found = _PROBED.get(id(embedder))
        if found is not None and found[0] is embedder:
            return found[1]
    matrix = _unit_vectors(embedder, PROBE_TEXTS)
    with _LOCK:
        _PROBED[id(embedder)] = (embedder, matrix)
    return matrix


def _unit_vectors(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """``embedder``'s checked, unit-length vectors of ``texts``."""
    from akasha.embeddings.base import as_matrix, normalize_rows

    vectors = embedder.embed_documents(list(texts))
    return normalize_rows(as_matrix(vectors, len(texts), str(getattr(embedder, "name", "embedder"))))


def fingerprint(probes: np.ndarray) -> str:
    """A short hex name for a set of probe vectors (rounded, so it reads the same on most machines)."""
    rounded = np.round(np.asarray(probes, dtype=np.float64), 2) + 0.0  # + 0.0: no negative zeros
    return hashlib.sha256(rounded.astype("<f8").tobytes()).hexdigest()[:10]


def same_vectors(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two probe sets (or any two row-aligned unit matrices) are the same vectors."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.shape != b.shape or a.size == 0:
        return False
    return bool(np.min(np.sum(a * b, axis=1)) >= SAME_COSINE)


def parse_registry(raw: str | Mapping[str, Any] | None) -> Registry:
    """A registry from its JSON form (a damaged or foreign value reads as empty)."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    found = data.get("identities") if isinstance(data, Mapping) else None
    if not isinstance(found, Mapping):
        return {}
    return {str(k): dict(v) for k, v in found.items() if isinstance(v, Mapping)}


def registry_state(registry: Registry) -> dict[str, Any]:
    """The JSON form of a registry (what :func:`parse_registry` reads)."""
    return {"identities": registry}


def entry_for(name: str, probes: np.ndarray) -> dict[str, Any]:
    """The registry entry of an identity: its model name, width and probe vectors."""
    return {"base": base_name(name), "dimension": int(probes.shape[1]),
            "probes": [[round(float(x), 7) for x in row] for row in probes]}


def match(registry: Registry, name: str, probes: np.ndarray) -> str | None:
    """The identity in ``registry`` with this model name and these vectors, or None."""
    for identity, entry in registry.items():
        if entry.get("base") != base_name(name) or entry.get("dimension") != probes.shape[1]:
            continue
        try:
            stored = np.asarray(entry.get("probes"), dtype=np.float32)
        except (TypeError, ValueError):
            continue
        if same_vectors(stored, probes):
            return identity
    return None


def reproduces(embedder: Any, texts: Sequence[str], vectors: np.ndarray) -> bool:
    """True when ``embedder`` embeds ``texts`` to ``vectors`` (row for row): a legacy cache is its own."""
    if not len(texts):
        return False
    from akasha.embeddings.base import normalize_rows

    return same_vectors(_unit_vectors(embedder, texts), normalize_rows(np.asarray(vectors, dtype=np.float32)))


def resolve_identity(embedder: Any, registries: Sequence[Registry],
                     legacy_samples: Sequence[Callable[[], tuple[list[str], np.ndarray]]] = ()
                     ) -> tuple[str, dict[str, Any] | None]:
    """``(identity, registry entry)`` of ``embedder`` (no entry for a declared ``vector_identity``).

    An identity in one of ``registries`` with the same model name and vectors wins; else the
    plain name when a legacy sample (texts and the vectors cached for them under that name)
    is reproduced by the embedder; else a new identity ``<model>#<fingerprint>``.
    """
    declared = getattr(embedder, "vector_identity", None)
    if isinstance(declared, str) and declared:
        return declared, None
    name = str(embedder.name)
    probes = probe_vectors(embedder)
    entry = entry_for(name, probes)
    for registry in registries:
        found = match(registry, name, probes)
        if found is not None:
            return found, entry
    for sample in legacy_samples:
        texts, vectors = sample()
        if texts and reproduces(embedder, texts, vectors):
            log.info("vectors cached under %r are this embedder's: kept under that name", name)
            return name, entry
    return f"{base_name(name)}#{fingerprint(probes)}", entry


__all__ = ["PROBE_TEXTS", "REGISTRY_KEY", "SAME_COSINE", "base_name", "entry_for", "fingerprint", "match",
           "parse_registry", "probe_vectors", "registry_state", "reproduces", "resolve_identity", "same_vectors"]
