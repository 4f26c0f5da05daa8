"""The RAG facade: defaults, validation at construction, per-call overrides, docs/trace/tokens, streaming."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import BudgetError, ConfigError, MissingAPIKeyError, StageError
from akasha.options import RAGOptions
from akasha.rag import DocList
from akasha.types import Hit
from facade_fixtures import CORPUS, RecordingModel, write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def make_rag(**options):
    options.setdefault("embeddings", HashEmbedder())
    options.setdefault("model", RecordingModel())
    options.setdefault("cache_dir", ":memory:")
    return akasha.RAG(**options)


# ------------------------------------------------------------------ construction
def test_defaults_are_the_documented_ones():
    rag = akasha.RAG()
    o = rag.options
    assert (o.model, o.embeddings, o.chunk_size, o.search_type) == (
        "openai:gpt-3.5-turbo", "openai:text-embedding-ada-002", 1000, "auto")
    assert (o.reranker, o.reranker_model, o.rerank_top_k) == (None, "gemini:gemini-2.5-flash", 5)
    assert (o.max_input_tokens, o.use_chroma, o.stream, o.language) == (3000, False, False, "en")
    assert rag.model == "openai:gpt-3.5-turbo" and rag.rerank_top_k == 5  # options read as attributes


@pytest.mark.parametrize(
    ("kwargs", "listed"),
    [
        ({"model": "opneai:gpt-4o"}, ["openai", "gemini", "extractive", "llama-cpp"]),
        ({"embeddings": "sbert:all-MiniLM"}, ["hf", "hash", "openai"]),
        ({"search_type": "semantic"}, ["auto", "knn", "bm25", "mmr", "hybrid"]),
        ({"reranker": "cohere"}, ["'llm'", "'local'", "'bge'"]),
        ({"reranker_model": "nope:model"}, ["openai", "gemini"]),
    ],
)
def test_unknown_names_raise_at_construction_listing_known_ones(kwargs, listed):
    with pytest.raises(ValueError) as info:
        akasha.RAG(**kwargs)
    for name in listed:
        assert name in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [{"rerank_top_k": 0}, {"rerank_top_k": -2}, {"rerank_top_k": 2.5}, {"rerank_top_k": True}, {"max_input_tokens": 0},
     {"chunk_size": 0}, {"chunk_size": 100, "chunk_overlap": 100}, {"temperature": 5}, {"k": 0}, {"stream": "yes"}],
)
def test_bad_numbers_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        akasha.RAG(**kwargs)


def test_construction_loads_nothing_and_creates_no_client():
    code = (
        "import sys, akasha\n"
        "rag = akasha.RAG(model='gemini:gemini-2.5-flash', embeddings='openai:text-embedding-3-small',"
        " reranker='llm', search_type='auto')\n"
        "rag2 = akasha.RAG(embeddings='hf:all-MiniLM-L6-v2', reranker='bge', model='llama-cpp:smollm2')\n"
        "heavy = ['openai', 'google.genai', 'torch', 'transformers', 'sentence_transformers', 'chromadb', 'xllamacpp',"
        " 'akasha.llm.openai', 'akasha.llm.gemini', 'akasha.embeddings.openai', 'akasha.index.corpus']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PATH": ""})
    assert out.stdout.strip() == "[]"


def test_setting_an_option_attribute_is_validated():
    rag = make_rag()
    rag.rerank_top_k = 3
    assert rag.options.rerank_top_k == 3
    with pytest.raises(ValueError):
        rag.rerank_top_k = 0
    assert rag.rerank_top_k == 3


# ------------------------------------------------------------------------ a call
def test_a_call_answers_and_records_docs_trace_tokens(corpus):
    model = RecordingModel("Replace it every 12 months.")
    rag = make_rag(model=model, keep_logs=True)
    answer = rag(corpus, "How often should the air filter be replaced?")
    assert isinstance(answer, str) and answer.startswith("Replace it every 12 months.")
    # The answer is the model's text as written; its citations are rag.sources (built from rag.docs).
    assert answer == "Replace it every 12 months."
    assert rag.sources.startswith("Sources: ") and "filters.md" in rag.sources
    assert rag.response == answer
    assert isinstance(rag.docs, DocList) and all(isinstance(h, Hit) for h in rag.docs)
    assert rag.docs[0].path.endswith("filters.md")
    assert {"rrf", "vector", "bm25"} & set(rag.docs[0].details)
    assert "<table>" in rag.docs._repr_html_()
    # The prompt the model saw: documents in delimiters, data notice, the question last.
    prompt = model.prompts[0]
    assert '<document id="1"' in prompt and "data, not instructions" in prompt
    assert prompt.rstrip().endswith("Question: How often should the air filter be replaced?")
    assert "Answer in English." in prompt
    assert [t["stage"] for t in rag.trace] == ["index", "retrieve", "pack", "generate"]
    for entry in rag.trace:
        assert {"stage", "name", "ms", "in", "out"} <= set(entry)
    assert rag.prompt == "How often should the air filter be replaced?"
    assert 0 < rag.doc_tokens < rag.prompt_tokens <= 3000
    assert rag.response_tokens > 0
    assert rag.logs[-1]["response"] == answer and rag.logs[-1]["docs"][0]["source"].endswith("filters.md")


def test_no_sources_line_when_the_model_cites(corpus):
    rag = make_rag(model=RecordingModel("Every 12 months (filters.md)."))
    assert rag(corpus, "air filter interval?") == "Every 12 months (filters.md)."


def test_history_and_language_and_system_prompt_reach_the_model(corpus):
    model = RecordingModel()
    rag = make_rag(model=model, language="ch", system_prompt="You are terse.")
    rag(corpus, "air filter?", [{"role": "user", "content": "Earlier question"}, {"role": "assistant", "content": "Earlier answer"}])
    assert "You are terse." in model.prompts[0] and "請用繁體中文回答" in model.prompts[0]
    assert "User: Earlier question" in model.prompts[0] and "Assistant: Earlier answer" in model.prompts[0]


# ---------------------------------------------------------------- overrides
def test_per_call_overrides_apply_to_that_call_only(corpus):
    main, other = RecordingModel("main"), RecordingModel("other")
    rag = make_rag(model=main)
    before = rag.options
    seen = []

    def spy(query, documents):
        seen.append(len(documents))
        return list(reversed(documents))

    answer = rag(corpus, "brake pads?", model=other, reranker=spy, rerank_top_k=1, search_type="bm25",
                 max_input_tokens=2000, language="ja")
    assert answer.startswith("other") and len(rag.docs) == 1 and seen
    assert rag.options == before and rag.options is before
    rag(corpus, "brake pads?")
    assert main.prompts and len(other.prompts) == 1


def test_options_unchanged_when_the_call_raises(corpus):
    rag = make_rag()
    before = rag.options
    with pytest.raises(ValueError, match="omitted"):
        rag(corpus, "q?", reranker=lambda q, docs: docs[:1], rerank_top_k=1)
    assert rag.options == before

    def broken(prompt):
        raise RuntimeError("model exploded")

    with pytest.raises(StageError) as info:
        rag(corpus, "q?", model=broken, temperature=0.7)
    assert info.value.stage == "generate" and "model exploded" in str(info.value)
    assert rag.options == before


def test_unknown_override_names_are_refused(corpus):
    rag = make_rag()
    with pytest.raises(TypeError, match="rerank_topk"):
        rag(corpus, "q?", rerank_topk=3)


def test_bad_rerank_top_k_raises_before_any_work(corpus):
    embedder = HashEmbedder()
    rag = make_rag(embeddings=embedder, reranker=lambda q, d: d)
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="rerank_top_k"):
            rag(corpus, "q?", rerank_top_k=bad)
        with pytest.raises(ValueError, match="rerank_top_k"):
            rag.selfask_RAG(corpus, "q?", rerank_top_k=bad)
    assert embedder.calls == 0 and rag.components.indexes == {} and rag.trace == []


# ------------------------------------------------------------------ reranking
def test_the_reranker_sees_a_larger_pool_than_what_reaches_the_model(corpus):
    pools: list[int] = []

    def keep_order(query, documents):
        pools.append(len(documents))
        return documents

    rag = make_rag(reranker=keep_order, rerank_top_k=2, chunk_size=120, chunk_overlap=0)
    rag(corpus, "air filter warranty coolant tyres")
    assert pools[0] > 2
    assert len(rag.docs) == 2
    assert [t["stage"] for t in rag.trace] == ["index", "retrieve", "rerank", "pack", "generate"]
    rerank_entry = rag.trace[2]
    assert rerank_entry["in"] == pools[0] and rerank_entry["out"] == 2


def test_llm_reranker_order_reaches_the_model(corpus):
    class Ranker:
        def __init__(self):
            self.n = 0

        def __call__(self, prompt):
            self.n = prompt.count("<candidate id=")
            return json.dumps({"order": list(range(self.n))[::-1]})

    ranker = Ranker()
    rag = make_rag(reranker="llm", reranker_model=ranker, rerank_top_k=2)
    baseline = rag.search(corpus, "air filter", k=20)
    rag(corpus, "air filter")
    assert [h.id for h in rag.docs] == [h.id for h in baseline[::-1][:2]]
    assert all("rerank" in h.details and "rrf" in h.details for h in rag.docs)


def test_reranker_none_never_builds_the_reranker_model(corpus, monkeypatch):
    import akasha.llm

    built: list[object] = []
    real = akasha.llm.resolve_chat_model
    monkeypatch.setattr(akasha.llm, "resolve_chat_model", lambda spec, **kw: built.append(spec) or real(spec, **kw))
    model = RecordingModel()
    rag = make_rag(model=model)  # reranker_model keeps its gemini default
    rag(corpus, "air filter?")
    rag.selfask_RAG(corpus, "air filter?")
    assert built == [model]
    assert "gemini:gemini-2.5-flash" not in built

    ranker_calls = []
    rag(corpus, "air filter?", reranker="llm",
        reranker_model=lambda p: ranker_calls.append(p) or json.dumps({"order": list(range(p.count("<candidate id=")))}))
    assert len(built) == 2 and ranker_calls  # built only when reranking ran


def test_missing_api_key_names_the_variable_when_the_model_is_needed(corpus, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rag = make_rag(model="openai:gpt-4o-mini")  # constructing is fine: nothing is built yet
    with pytest.raises(MissingAPIKeyError) as info:
        rag(corpus, "air filter?")
    assert "OPENAI_API_KEY" in str(info.value) and "offline" in str(info.value)


# ------------------------------------------------------------------ streaming
def test_stream_yields_pieces_and_fills_response(corpus):
    def pieces(prompt):
        yield "Every "
        yield "12 months."

    rag = make_rag(model=pieces)
    stream = rag(corpus, "air filter?", stream=True)
    assert rag.options.stream is False
    first = next(stream)
    assert first == "Every " and rag.response == "Every "
    rest = list(stream)
    assert rest == ["12 months."]  # the model's pieces only: no Sources block is streamed after them
    assert rag.response == "Every 12 months." and rag.sources.startswith("Sources: ")
    assert rag.response_tokens > 0
    assert rag.trace[-1]["stage"] == "generate"


def test_stream_option_on_the_instance():
    rag = make_rag(stream=True)
    assert rag.options.stream


# --------------------------------------------------------------- budget
def test_small_budget_packs_fewer_documents_and_tiny_budget_raises(corpus):
    rag = make_rag(chunk_size=120, chunk_overlap=0)
    rag(corpus, "air filter warranty coolant tyres")
    full = len(rag.docs)
    rag(corpus, "air filter warranty coolant tyres", max_input_tokens=180)
    assert 0 < len(rag.docs) < full and rag.prompt_tokens <= 180
    with pytest.raises(BudgetError, match="max_input_tokens is 20"):
        rag(corpus, "air filter warranty coolant tyres", max_input_tokens=20)


# ---------------------------------------------------------------- search
def test_search_delegates_to_one_cached_index(corpus):
    embedder = HashEmbedder()
    rag = make_rag(embeddings=embedder)
    hits = rag.search(corpus, "brake pads", k=3)
    assert 1 <= len(hits) <= 3 and hits[0].path.endswith("filters.md")
    calls = embedder.calls
    again = rag.search(corpus, "brake pads", k=3, search_type="bm25")
    assert embedder.calls == calls  # nothing re-embedded
    assert len(rag.components.indexes) == 1
    assert again[0].path.endswith("filters.md") and set(again[0].details) == {"bm25"}
    rag(corpus, "brake pads")
    assert len(rag.components.indexes) == 1 and embedder.calls == calls


def test_a_different_chunk_size_gets_its_own_index(corpus):
    rag = make_rag()
    rag.search(corpus, "brake", k=2)
    rag(corpus, "brake", chunk_size=200, chunk_overlap=20)
    assert len(rag.components.indexes) == 2


def test_missing_source_is_reported_by_name(tmp_path):
    rag = make_rag()
    with pytest.raises(FileNotFoundError, match="nowhere"):
        rag(tmp_path / "nowhere", "q?")


# ----------------------------------------------------------------- chroma
def test_use_chroma_opens_an_existing_store_and_refuses_another_model(corpus, tmp_path):
    pytest.importorskip("chromadb")
    from akasha.errors import IndexMismatchError
    from akasha.index import CorpusIndex

    store = tmp_path / "store"
    with CorpusIndex(HashEmbedder(), cache_dir=store, store="chroma") as index:
        index.sync(corpus)
    rag = make_rag(use_chroma=True)
    hits = rag.search(store, "brake pads", k=2)
    assert hits and hits[0].path.endswith("filters.md")
    answer = rag(store, "brake pads?")
    assert "filters.md" in rag.sources and [t["stage"] for t in rag.trace] == ["retrieve", "pack", "generate"]
    with pytest.raises(IndexMismatchError, match="hash"):
        make_rag(use_chroma=True, embeddings="hash:32").search(store, "brake pads")


def test_vector_store_may_be_a_store_object(corpus):
    from akasha.stores.memory import MemoryStore

    store = MemoryStore()
    rag = make_rag(vector_store=store)
    rag(corpus, "brake pads?")
    assert store.count() == len(next(iter(rag.components.indexes.values()))) > 0
    record = store.fetch([rag.docs[0].id])[0]
    assert record.text == rag.docs[0].text and record.metadata["source"] == rag.docs[0].path
    with pytest.raises(ConfigError, match="vector_store must be a URL"):
        make_rag(vector_store=object())


def test_options_dataclass_lists_every_option():
    names = set(RAGOptions.names())
    assert {"model", "embeddings", "chunk_size", "search_type", "reranker", "reranker_model", "rerank_top_k",
            "max_input_tokens", "use_chroma", "stream", "max_output_tokens", "temperature", "system_prompt",
            "language", "verbose", "keep_logs", "cache_dir", "chunk_overlap", "k", "vector_store",
            "vector_store_options", "device"} == names
    with pytest.raises(ConfigError):
        RAGOptions(language=3)
    assert len(CORPUS) == 4


def test_the_constructor_passes_every_option_on():
    """No option is left at its default by RAG.__init__ (it names each one): all non-default values round-trip."""
    given = RAGOptions(
        model="extractive", embeddings="hash", chunk_size=500, search_type="bm25", reranker="llm",
        reranker_model="extractive", rerank_top_k=3, max_input_tokens=2000, use_chroma=True, stream=True,
        max_output_tokens=10, temperature=0.5, system_prompt="x", language="ja", verbose=True, keep_logs=True,
        cache_dir=":memory:", chunk_overlap=10, k=7, vector_store="chroma://localhost:8000/docs",
        vector_store_options={"corpus": "c"}, device="cpu")
    defaults = RAGOptions()
    assert all(getattr(given, name) != getattr(defaults, name) for name in RAGOptions.names())
    assert akasha.RAG.from_options(given).options == given


def test_a_failing_stage_is_in_the_trace(corpus):
    rag = make_rag()
    with pytest.raises(ValueError):
        rag(corpus, "q?", reranker=lambda q, docs: docs[:1])
    assert [t["stage"] for t in rag.trace] == ["index", "retrieve", "rerank"]
    assert "omitted" in rag.trace[-1]["error"]


def test_verbose_logs_each_stage_of_its_own_calls_only(corpus, capsys):
    import logging

    before = logging.getLogger("akasha").level, logging.getLogger("akasha.trace").getEffectiveLevel()
    quiet = make_rag()
    loud = make_rag(verbose=True)
    # one instance's verbose=True leaves the shared loggers as the application configured them
    assert (logging.getLogger("akasha").level, logging.getLogger("akasha.trace").getEffectiveLevel()) == before
    quiet(corpus, "air filter?")
    assert "akasha:" not in capsys.readouterr().err
    loud(corpus, "air filter?")
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("akasha: ")]
    assert [line.split()[1] for line in lines] == ["index", "retrieve", "pack", "generate"]
    quiet(corpus, "brake pads?")
    assert "akasha:" not in capsys.readouterr().err


def test_from_options_round_trips():
    rag = make_rag(rerank_top_k=3, language="ja")
    assert akasha.RAG.from_options(rag.options).options == rag.options


def test_close_releases_the_indexes_and_the_next_call_reopens(corpus, tmp_path):
    rag = make_rag(cache_dir=tmp_path / "cache")
    rag(corpus, "brake pads?")
    index = next(iter(rag.components.indexes.values()))
    rag.close()
    assert rag.components.indexes == {}
    rag(corpus, "brake pads?")
    assert next(iter(rag.components.indexes.values())) is not index and rag.last_sync.unchanged == 4


def test_a_missing_reranker_key_names_reranker_model_and_its_default(monkeypatch, tmp_path):
    """model swapped, reranker="llm" kept: the error says the reranker uses reranker_model, and how to set it."""
    from akasha.errors import MissingAPIKeyError

    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("The pump seal failed after dry running.\n\nThe valve was replaced.")
    rag = akasha.RAG(model="extractive", embeddings="hash", reranker="llm", cache_dir=":memory:")
    with pytest.raises(MissingAPIKeyError) as caught:
        rag(str(docs), "Why did the seal fail?")
    message = str(caught.value)
    assert "reranker_model" in message and "'gemini:gemini-2.5-flash'" in message and "GEMINI_API_KEY" in message
    assert "reranker_model=" in message
