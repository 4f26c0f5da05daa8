"""`import akasha` and `akasha.RAG(...)` construction load no heavy library and touch no network.

Each check runs in a fresh interpreter (so modules imported by other tests
don't count) with every socket entry point replaced by one that raises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ["torch", "transformers", "sentence_transformers", "chromadb", "openai", "google.genai", "jieba", "rjieba",
         "xllamacpp", "llama_cpp", "pypdf", "docx", "langchain_text_splitters", "cohere", "faiss", "qdrant_client"]

GUARD = textwrap.dedent(
    """
    import json, socket, sys
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args)[:120])
        raise OSError("network access during a no-network check")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    """
)


def _run(body: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OPENAI_API_KEY="sk-test-not-used", GEMINI_API_KEY="test-not-used", GOOGLE_API_KEY="test-not-used",
               COHERE_API_KEY="test-not-used")
    script = GUARD + textwrap.dedent(body) + textwrap.dedent(
        f"""
        heavy = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps({{"heavy": heavy, "attempts": attempts}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_akasha_loads_nothing_heavy():
    result = _run("import akasha\nakasha.__version__\n")
    assert result == {"heavy": [], "attempts": []}


def test_rag_construction_with_every_option_touches_no_network_and_loads_no_model(tmp_path):
    body = f"""
    import itertools
    import akasha
    models = ["openai:gpt-4o-mini", "gemini:gemini-2.5-flash", "ollama:llama3", "hf:Qwen/Qwen2.5-0.5B-Instruct",
              "llama-cpp:/nonexistent/model.gguf", "extractive", lambda messages: "ok"]
    embeddings = ["openai:text-embedding-3-small", "gemini:text-embedding-004", "hf:all-MiniLM-L6-v2",
                  "hash", lambda texts: [[1.0, 0.0] for _ in texts]]
    rerankers = [None, "llm", "local", "bge", "bge:BAAI/bge-reranker-base", lambda query, docs: docs]
    search_types = ["auto", "knn", "bm25", "mmr", "hybrid"]
    built = 0
    for model, emb, reranker in itertools.product(models, embeddings, rerankers):
        akasha.RAG(model=model, embeddings=emb, reranker=reranker, search_type=search_types[built % 5],
                   reranker_model="openai:gpt-4o-mini", chunk_size=500, chunk_overlap=50, rerank_top_k=3,
                   max_input_tokens=2000, use_chroma=built % 2 == 0, stream=built % 3 == 0, max_output_tokens=256,
                   temperature=0.2, system_prompt="be brief", language="ch" if built % 2 else "en",
                   verbose=False, keep_logs=True, cache_dir={str(tmp_path / "cache")!r}, k=10)
        built += 1
    assert built == len(models) * len(embeddings) * len(rerankers)
    """
    result = _run(body)
    assert result["attempts"] == [], f"construction tried to connect: {result['attempts']}"
    assert result["heavy"] == [], f"construction imported {result['heavy']}"


def test_the_guard_itself_catches_a_connection():
    body = """
    import socket
    try:
        socket.create_connection(("127.0.0.1", 9))
    except OSError:
        pass
    import json as _j  # stands in for a heavy import the check must see
    sys.modules["torch"] = _j
    """
    result = _run(body)
    assert result["heavy"] == ["torch"] and len(result["attempts"]) == 1
