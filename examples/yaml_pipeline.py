"""Build a retrieval pipeline from a ``kind: RAGPipeline`` YAML file, ingest, query.

Run it from the repository root:

    python examples/yaml_pipeline.py

``load_spec_file`` checks the file's shape; ``build`` resolves every component
name (unknown names raise ``SpecError`` listing the known ones, before any query).
``ingest_sync`` chunks, embeds and indexes documents and returns the number of
chunks written; ``query_sync`` returns a ``QueryResult`` with ranked hits, the
joined ``context`` and a per-stage ``trace``. Inside async code use
``await pipeline.ingest(...)`` and ``await pipeline.query(...)``. The file,
examples/pipeline.rag.yaml, uses the packaged MiniLM embeddings, so it runs offline.

``akasha.RAG.from_spec(path, model=...)`` puts the same file behind the facade: the
YAML decides chunking, embeddings, store and retrieval; ``RAG`` options decide
packing and the answer model.
"""

from __future__ import annotations

from pathlib import Path

import akasha
from akasha.loaders import discover, load_file
from akasha.spec import build, load_spec_file

HERE = Path(__file__).resolve().parent
QUESTIONS = [
    "How often should the pump bearings be re-greased?",
    "What caused the mechanical seal failure on P-102?",
]


def main() -> None:
    spec = load_spec_file(HERE / "pipeline.rag.yaml")
    pipeline = build(spec)
    print(pipeline)

    documents = [doc for path in discover(HERE / "docs") for doc in load_file(path)]
    written = pipeline.ingest_sync(documents)
    print(f"ingested {len(documents)} documents as {written} chunks\n")
    assert written > 0

    for question in QUESTIONS:
        result = pipeline.query_sync(question)
        print(f"{len(result.hits)} hits for {question!r}:")
        for hit in result.hits:
            where = hit.chunk.metadata.get("source", hit.chunk.doc_id)
            print(f"  {hit.score:.4f} {hit.source:<11} {Path(where).name}: {hit.text[:70]!r}")
        print("  trace: " + ", ".join(f"{s['stage']}:{s['name']} {s['in']}->{s['out']}" for s in result.trace))
        assert 0 < len(result.hits) <= 3
        assert [s["stage"] for s in result.trace] == ["retrieve", "retrieve", "fuse", "context"]
        # The shape other tools consume:
        assert set(result.to_list()[0]) == {"doc_id", "content", "metadata", "score", "source"}

    # Re-ingesting the same documents replaces their chunks instead of duplicating them.
    assert pipeline.ingest_sync(documents) == written
    assert len(pipeline.query_sync(QUESTIONS[0], k=50).hits) <= written
    pipeline.close()

    # The same file behind the facade, with an answer model:
    rag = akasha.RAG.from_spec(HERE / "pipeline.rag.yaml", model="extractive")
    answer = rag(HERE / "docs", QUESTIONS[1])
    print(f"\nRAG.from_spec answer:\n{answer}")
    stages = [step["stage"] for step in rag.trace]
    assert stages[0] == "index" and "fuse" in stages and stages[-1] == "generate", stages
    assert rag.docs and answer.strip()


if __name__ == "__main__":
    main()
