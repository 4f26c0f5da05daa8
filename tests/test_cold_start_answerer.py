"""Cold start (issue 16): the extractive answerer shares the index's MiniLM, keeps sentence vectors on disk,
so a re-ask in a new process embeds only the question; jieba's words (rjieba) load only for CJK text
(tests/test_tokenize_rjieba.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.llm.extractive import VECTORS_FILE, ExtractiveAnswerer, SentenceVectors

REPO = Path(__file__).resolve().parent.parent

DOCS = {
    "pump.md": "The pump must be serviced every 500 operating hours. Wear gloves when opening the casing. "
               "The seal failed on P-102 because the pump ran dry after the suction valve was left closed.",
    "office.md": "The office is closed on Sundays. Lunch is served at noon in the canteen on the ground floor.",
}


class CountingEmbedder:
    """A hash embedder that counts what it embeds; ``location`` poses as the packaged MiniLM's folder."""

    def __init__(self, location: str) -> None:
        self._inner = HashEmbedder()
        self.name = "hf:all-MiniLM-L6-v2"
        self.dimension = self._inner.dimension
        self.batch_size = 64
        self.location = location
        self.identity_hint = f"{location}|hash"  # as the real packaged model: its identity is remembered per cache
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts):
        self.documents.extend(texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text):
        self.queries.append(text)
        return self._inner.embed_query(text)


@pytest.fixture
def packaged(tmp_path, monkeypatch):
    """A stand-in packaged MiniLM folder (the answerer recognises the index's embedder by its location)."""
    folder = tmp_path / "minilm"
    folder.mkdir()
    import akasha.embeddings.local as local

    monkeypatch.setattr(local, "packaged_model_dir", lambda: folder)
    return folder


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def _answerer(rag) -> ExtractiveAnswerer:
    return next(m for m in rag.components.models.values() if isinstance(m, ExtractiveAnswerer))


def test_the_answerer_ranks_sentences_with_the_index_embedder(tmp_path, packaged):
    docs = _docs(tmp_path)
    embedder = CountingEmbedder(str(packaged))
    rag = akasha.RAG(model="extractive", embeddings=embedder, cache_dir=tmp_path / "cache")
    answer = rag(docs, "Why did the seal fail on P-102?")
    assert "suction valve" in answer
    assert _answerer(rag).embedder is embedder  # no second model in the process
    sentences = [t for t in embedder.documents if t.startswith("The seal failed on P-102")]
    assert sentences, "the answerer embedded its candidate sentences with the index's embedder"


def test_another_embedder_keeps_the_answerers_own_minilm(tmp_path, packaged, monkeypatch):
    docs = _docs(tmp_path)
    own = CountingEmbedder(str(packaged))
    import akasha.embeddings as embeddings

    real = embeddings.resolve_embedder
    monkeypatch.setattr(embeddings, "resolve_embedder",
                        lambda spec, **kw: own if spec == "hf:all-MiniLM-L6-v2" else real(spec, **kw))
    hashed = HashEmbedder()
    rag = akasha.RAG(model="extractive", embeddings=hashed, cache_dir=":memory:")
    rag(docs, "Why did the seal fail on P-102?")
    answerer = _answerer(rag)
    assert answerer.embedder is own and answerer.vectors.path is None  # ":memory:" writes no vector file
    assert any(t.startswith("The seal failed") for t in own.documents)


def test_a_re_ask_in_a_new_process_embeds_only_the_question(tmp_path, packaged):
    docs = _docs(tmp_path)
    cache = tmp_path / "cache"
    question = "Why did the seal fail on P-102?"
    first = CountingEmbedder(str(packaged))
    before = akasha.RAG(model="extractive", embeddings=first, cache_dir=cache)(docs, question)
    assert (cache / VECTORS_FILE).is_file()
    assert first.documents  # chunks and sentences were embedded the first time

    again = CountingEmbedder(str(packaged))  # a new RAG: nothing shared in memory with the first
    after = akasha.RAG(model="extractive", embeddings=again, cache_dir=cache)(docs, question)
    assert after == before
    assert again.documents == []  # no chunk, no sentence
    assert set(again.queries) == {question}


def test_sentence_vectors_survive_a_new_store_and_a_broken_folder(tmp_path):
    path = tmp_path / "cache" / VECTORS_FILE
    vectors = SentenceVectors(path)
    unit = np.ones(4, dtype=np.float32) / 2
    vectors.put("m", {"a sentence": unit})
    vectors.close()
    again = SentenceVectors(path)
    assert np.array_equal(again.get("m", ["a sentence", "unknown"])["a sentence"], unit)
    assert again.get("other model", ["a sentence"]) == {}  # vectors are per embedder
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    broken = SentenceVectors(blocked / VECTORS_FILE)  # a file where the folder should be
    broken.put("m", {"x": unit})  # never fails an answer: kept in memory
    assert np.array_equal(broken.get("m", ["x"])["x"], unit)


def test_the_disk_cache_drops_its_oldest_rows(tmp_path):
    vectors = SentenceVectors(tmp_path / VECTORS_FILE, disk_limit=3)
    for n in range(5):
        vectors.put("m", {f"sentence {n}": np.full(2, n, dtype=np.float32)})
    fresh = SentenceVectors(tmp_path / VECTORS_FILE)
    assert sorted(fresh.get("m", [f"sentence {n}" for n in range(5)])) == ["sentence 2", "sentence 3", "sentence 4"]


def _run(code: str, env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["AKASHA_CACHE_DIR"] = str(tmp_path / "cache")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp_path / "tmp")
    return env


def test_ascii_text_never_imports_jieba(tmp_path):
    out = _run("""
        import sys
        from akasha.retrieval.tokenize import resolve_tokenizer
        from akasha.retrieval.bm25 import BM25Index
        _, tokenize = resolve_tokenizer("auto")
        print(tokenize("Pump P-102: the seal failed, café"))
        print("rjieba" in sys.modules or "jieba" in sys.modules)
    """, _env(tmp_path))
    tokens, imported = out.splitlines()
    assert tokens == "['pump', 'p', '102', 'the', 'seal', 'failed', 'cafe']"
    assert imported == "False"


def test_a_yaml_pipeline_answering_extractively_builds_no_hosted_embedder(tmp_path, packaged, monkeypatch):
    """RAG.from_spec's default facade embeddings are a hosted model: the answerer must not build it."""
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    docs = _docs(tmp_path)
    spec = tmp_path / "pipeline.rag.yaml"
    spec.write_text("kind: RAGPipeline\nmetadata: {name: p}\nspec:\n  embeddings: {provider: hash}\n"
                    "  vector_store: {backend: memory}\n", encoding="utf-8")
    own = CountingEmbedder(str(packaged))
    import akasha.embeddings as embeddings

    real = embeddings.resolve_embedder
    monkeypatch.setattr(embeddings, "resolve_embedder",
                        lambda spec, **kw: own if spec == "hf:all-MiniLM-L6-v2" else real(spec, **kw))
    rag = akasha.RAG.from_spec(spec, model="extractive", cache_dir=tmp_path / "cache")
    assert "suction valve" in rag(docs, "Why did the seal fail on P-102?")
    assert list(rag.components.embedders.values()) == [own]  # only the answerer's MiniLM was built
    assert _answerer(rag).vectors.path == tmp_path / "cache" / VECTORS_FILE


def test_closing_the_rag_closes_the_vector_file_and_a_later_call_reopens_it(tmp_path, packaged):
    docs = _docs(tmp_path)
    rag = akasha.RAG(model="extractive", embeddings=CountingEmbedder(str(packaged)), cache_dir=tmp_path / "cache")
    first = rag(docs, "Why did the seal fail on P-102?")
    answerer = _answerer(rag)
    assert answerer.vectors._connection is not None
    rag.close()
    assert answerer.vectors._connection is None
    assert rag(docs, "Why did the seal fail on P-102?") == first


def test_an_offline_re_ask_never_imports_tiktoken(tmp_path):
    """The extractive answerer counts prompt tokens by the character estimate: no tokenizer is built."""
    _docs(tmp_path)
    out = _run(f"""
        import sys
        import akasha
        rag = akasha.RAG(model="extractive", embeddings="hash", cache_dir={str(tmp_path / "cache")!r})
        print("suction valve" in rag({str(tmp_path / "docs")!r}, "Why did the seal fail on P-102?"))
        print(rag.prompt_tokens > 0, "tiktoken" in sys.modules)
        from akasha.llm.extractive import ExtractiveAnswerer
        from akasha.tokens import counter_for
        print(counter_for(ExtractiveAnswerer(embedder=False)).source, counter_for("extractive:2").source)
    """, _env(tmp_path))
    assert out.splitlines() == ["True", "True False", "estimate estimate"]
