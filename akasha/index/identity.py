"""Whose vectors an index holds: the embedder's identity, checked against the cache and the store.

The identity (:mod:`akasha.embeddings.identity`: model name + a fingerprint of its vectors)
keys every cached vector, so a moved server reuses them and a different function never does.
It is registered in the manifest and, with the store's first commit, in the store.
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any

import numpy as np

from akasha.embeddings.base import Embedder
from akasha.errors import IndexMismatchError
from akasha.index.manifest import Manifest


def resolve_identity(embedder: Embedder, manifest: Manifest, store: Any) -> tuple[str, dict[str, Any] | None]:
    """The embedder's identity, and the registry to save into ``store`` at its next commit (None: it has it);
    IndexMismatchError when ``store`` holds another embedder's vectors."""
    from akasha.embeddings import identity as ids

    name = str(embedder.name)
    hint = getattr(embedder, "identity_hint", None)
    hint_key = f"identity-hint|{name}|{hint}" if isinstance(hint, str) and hint else None
    if hint_key is not None and store is None:
        remembered = manifest.get_meta(hint_key)
        if remembered:
            return remembered, None
    local = ids.parse_registry(manifest.get_meta(ids.REGISTRY_KEY))
    shared: ids.Registry = {}
    if store is not None:
        with contextlib.suppress(AttributeError, TypeError):
            shared = ids.parse_registry(store.load_state(ids.REGISTRY_KEY))
    samples = [functools.partial(manifest.sample_vectors, name, ids.VERIFY_TEXTS)]
    if store is not None and getattr(store, "embedder", None) == name:
        samples.append(functools.partial(_store_sample, store, ids.VERIFY_TEXTS))
    identity, entry = ids.resolve_identity(embedder, [shared, local], samples)
    if entry is not None and local.get(identity) is None:
        local[identity] = entry
        manifest.set_meta(ids.REGISTRY_KEY, json.dumps(ids.registry_state(local)))
    if hint_key is not None:
        manifest.set_meta(hint_key, identity)
    held = getattr(store, "embedder", None)
    if held and held != identity:
        raise IndexMismatchError(
            f"{getattr(store, 'name', 'the store')} holds vectors of {held!r}; the embeddings "
            f"{name!r} make other vectors ({identity!r}): use the embeddings it was built with, "
            "or another collection/table for these")
    if store is not None and hasattr(store, "_expected"):
        store._expected = identity  # every later write is checked against it
    return identity, ({**shared, identity: entry} if entry is not None and shared.get(identity) is None else None)


def _store_sample(store: Any, count: int) -> tuple[list[str], np.ndarray]:
    """Up to ``count`` stored texts with their vectors (to check whose vectors a store written before
    identities holds)."""
    for chunks, matrix in store.scan(count):
        return [c.text for c in chunks[:count]], np.asarray(matrix, dtype=np.float32)[:count]
    return [], np.zeros((0, 0), dtype=np.float32)
