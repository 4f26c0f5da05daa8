"""Ingest cost per document stays flat as the index grows (memory backend, hybrid: BM25 + vectors)."""

from __future__ import annotations

import time

import pytest

from akasha.spec import build, load_spec
from bench.ingest_scaling import synthetic_documents
from tests.spec_fixtures import body


@pytest.mark.slow
def test_ingest_grows_linearly_not_quadratically():
    pipeline = build(load_spec(body(retrieval={"pattern": "hybrid"})))
    docs = synthetic_documents(6000)
    pipeline.ingest_sync(synthetic_documents(20, seed=3))  # warm-up (imports)
    blocks = []
    for block in range(6):
        start = time.perf_counter()
        for offset in range(block * 1000, (block + 1) * 1000, 10):
            pipeline.ingest_sync(docs[offset : offset + 10])
        blocks.append(time.perf_counter() - start)
    early, late = min(blocks[:2]), min(blocks[-2:])
    # A rebuild per ingest would make the last blocks ~10x the first; allow noise, not growth.
    assert late < 3 * early, blocks
    assert len(pipeline.query_sync("pump bearing", k=5).hits) == 5
