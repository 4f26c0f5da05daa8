"""issue 33: a password written into an endpoint URL appears in no log record (any level, httpx's and
httpcore's own included) and in no exception text, on every path that takes such a URL.

Each path runs end to end against a local server (127.0.0.1) started here, once answering well
and once failing, with a URL holding a unique secret; every record of every logger (root,
httpx, httpcore, akasha, qdrant_client, openai at DEBUG) is checked: its formatted message, its
arguments and its traceback, and so is every exception's text and repr (causes included).
"""

from __future__ import annotations

import base64
import json
import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.http_fixtures import serving_handler
from tests.spec_fixtures import CORPUS, body

SECRET = "Zq7-unique-p4ss"
API_KEY = "co-Zq7-key-9"
LOGGERS = ("", "httpx", "httpcore", "httpx2", "httpcore2", "akasha", "qdrant_client", "openai", "google_genai", "urllib3")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.formatter.format(record))
        self.texts.append(repr(record.args))
        self.texts.append(repr(record.msg))


@pytest.fixture
def records() -> Iterator[_Records]:
    handler = _Records()
    saved = {name: logging.getLogger(name).level for name in LOGGERS}
    root = logging.getLogger()
    root.addHandler(handler)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _exception_texts(exc: BaseException | None) -> list[str]:
    texts: list[str] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts += [str(exc), repr(exc), "".join(traceback.format_exception_only(type(exc), exc))]
        texts += [repr(a) for a in getattr(exc, "args", ())]
        exc = exc.__cause__ or exc.__context__
    return texts


def _secrets() -> tuple[str, ...]:
    basic = base64.b64encode(f"user:{SECRET}".encode()).decode()
    return (SECRET, basic, API_KEY)


def assert_no_secret(records: _Records, *extra: str) -> None:
    leaks = [t for t in [*records.texts, *extra] if any(s in t for s in _secrets())]
    assert not leaks, leaks[:5]


Route = Callable[[str, str, Any, dict[str, str]], tuple[int, Any]]


@contextmanager
def serve(route: Route) -> Iterator[tuple[str, list[tuple[str, str, dict[str, str]]]]]:
    """A local HTTP server answering GET/POST/PUT/DELETE with ``route(method, path, json, headers)``.

    Yields ``(http://user:SECRET@127.0.0.1:port, requests)``.
    """
    seen: list[tuple[str, str, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append((self.command, self.path, headers))
            status, answer = route(self.command, self.path.split("?")[0], payload, headers)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, *args: Any) -> None:
            pass

    with serving_handler(Handler) as port:
        yield f"http://user:{SECRET}@127.0.0.1:{port}", seen


def failing(method: str, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    return 500, {"error": {"message": "internal error", "code": 500}}


def run(action: Callable[[], Any]) -> list[str]:
    """Run ``action``; the texts of what it raised (nothing when it succeeded)."""
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - every failure's text is what is checked
        return _exception_texts(exc)
    return []


# ------------------------------------------------------------------ embeddings
def embeddings(method: str, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    return 200, [[1.0, 0.5, 0.25, 0.125] for _ in payload["inputs"]]


@pytest.mark.parametrize("route", [embeddings, failing], ids=["answers", "fails"])
def test_hf_inference_api_embeddings_endpoint(records, route):
    from akasha.embeddings import resolve_embedder

    with serve(route) as (url, seen):
        embedder = resolve_embedder(f"hf_api:m@{url}")
        texts = run(lambda: embedder.embed_documents(["pump seal"]))
    assert seen and seen[0][2]["authorization"].startswith("Basic ")
    assert bool(texts) == (route is failing)
    assert_no_secret(records, *texts, repr(embedder), embedder.name)


@pytest.mark.parametrize("route", [embeddings, failing], ids=["answers", "fails"])
def test_yaml_embeddings_endpoint(records, route):
    from akasha.spec import build, load_spec

    with serve(route) as (url, seen):
        texts = run(lambda: build(load_spec(body(embeddings={"provider": "hf", "endpoint": url, "dimension": 4})))
                    .ingest_sync(CORPUS))
    assert seen and bool(texts) == (route is failing)
    assert_no_secret(records, *texts)


def test_an_unreachable_endpoint_names_no_secret(records):
    from akasha.embeddings import resolve_embedder

    with serve(embeddings) as (url, _seen):
        pass  # closed again: nothing listens there any more
    embedder = resolve_embedder(f"hf_api:m@{url}")
    texts = run(lambda: embedder.embed_documents(["pump seal"]))
    assert texts
    assert_no_secret(records, *texts)


# -------------------------------------------------------------------- reranker
def rerank(method: str, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    results = [{"index": i, "relevance_score": 1.0 - i / 10} for i in range(len(payload["documents"]))]
    return 200, {"results": results}


@pytest.mark.parametrize("route", [rerank, failing], ids=["answers", "fails"])
def test_yaml_cohere_reranker_endpoint(records, route):
    from akasha.spec import build, load_spec

    with serve(route) as (url, seen):
        pipeline = build(load_spec(body(reranking={"enabled": True, "provider": "cohere", "api_key": API_KEY,
                                                   "endpoint": url})))
        pipeline.ingest_sync(CORPUS)
        texts = run(lambda: pipeline.query_sync("maintenance", k=2))
    assert seen[0][2]["authorization"] == f"Bearer {API_KEY}" and "proxy-authorization" in seen[0][2]
    assert bool(texts) == (route is failing)
    assert_no_secret(records, *texts, repr(pipeline.reranker))


# ---------------------------------------------------------------------- qdrant
def qdrant_denies(method: str, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    if path == "/":
        return 200, {"title": "qdrant - vector search engine", "version": "1.12.0"}
    return 401, {"status": {"error": "Must provide an API key or an Authorization bearer token"}}


@pytest.mark.parametrize("route", [qdrant_denies, failing], ids=["denies", "fails"])
def test_yaml_qdrant_url(records, route):
    pytest.importorskip("qdrant_client")
    from akasha.spec import build, load_spec

    with serve(route) as (url, seen):
        texts = run(lambda: build(load_spec(body(vector_store={"backend": "qdrant", "url": url,
                                                               "collection": "docs"}))).ingest_sync(CORPUS))
    assert texts and seen
    # the URL's credentials reached the server as a header, not in the address qdrant-client logs
    assert all(h.get("authorization", "").startswith("Basic ") for _m, _p, h in seen)
    assert_no_secret(records, *texts)


def test_a_qdrant_url_with_only_a_key_sends_it_as_qdrants_api_key(records):
    pytest.importorskip("qdrant_client")
    from akasha.spec import build, load_spec

    with serve(qdrant_denies) as (url, seen):
        keyed = url.replace("user:", ":")
        texts = run(lambda: build(load_spec(body(vector_store={"backend": "qdrant", "url": keyed,
                                                               "collection": "docs"}))).ingest_sync(CORPUS))
    assert texts and seen
    assert all(h.get("api-key") == SECRET for _m, _p, h in seen)
    assert_no_secret(records, *texts)


# ------------------------------------------------------------ openai connection
def llama_server(method: str, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
    if path == "/props":
        return 200, {"default_generation_settings": {"n_ctx": 4096}}
    if path == "/tokenize":
        return 200, {"tokens": list(range(len((payload or {}).get("content", "")) // 4 + 1))}
    if path.endswith("/models"):
        return 200, {"object": "list", "data": [{"id": "m", "object": "model", "meta": {"n_ctx": 4096}}]}
    if path.endswith("/chat/completions"):
        return 200, {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Every 12 months."}}]}
    return 404, {"error": "not found"}


@pytest.mark.parametrize("route", [llama_server, failing], ids=["answers", "fails"])
def test_openai_connection_context_probe_token_counter_and_chat(records, route):
    from akasha.llm import resolve_chat_model

    with serve(route) as (url, seen):
        chat = resolve_chat_model(f"openai:m@{url}/v1", max_retries=0)
        texts = run(lambda: chat.context_window)
        texts += run(lambda: chat.token_counter().count("how often is the air filter replaced?"))
        texts += run(lambda: chat.generate([{"role": "user", "content": "hi"}]))
    paths = {p for _m, p, _h in seen}
    assert "/props" in paths and "/tokenize" in paths and "/v1/chat/completions" in paths
    assert all(h["authorization"].startswith(("Basic ", "Bearer ")) for _m, _p, h in seen)
    assert bool(texts) == (route is failing)
    assert_no_secret(records, *texts, repr(chat), repr(chat.connection), chat.name)


@pytest.mark.parametrize("spec", ["ollama:m@{url}", "gemini:m@{url}", "openai:m@{url}/v1"])
def test_every_chat_provider_keeps_the_address_password_out_of_logs_and_errors(records, monkeypatch, spec):
    from akasha.llm import resolve_chat_model

    monkeypatch.setenv("GEMINI_API_KEY", API_KEY)
    with serve(failing) as (url, seen):
        chat = resolve_chat_model(spec.format(url=url), max_retries=1, retry_initial_delay=0.01)
        texts = run(lambda: chat.generate([{"role": "user", "content": "hi"}]))
    assert texts and seen
    assert all(h.get("authorization", "").startswith("Basic ") or h.get("proxy-authorization", "").startswith("Basic ")
               for _m, _p, h in seen)  # the credentials were sent, as a header
    assert_no_secret(records, *texts, repr(chat), chat.name)


def test_the_facade_end_to_end_with_a_password_in_the_model_address(records, tmp_path):
    """RAG(model="openai:m@http://user:pw@host/v1"): its repr, the context probe, token counting and the answer."""
    import akasha

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "filters.txt").write_text(CORPUS[0]["text"])
    with serve(llama_server) as (url, seen):
        rag = akasha.RAG(model=f"openai:m@{url}/v1", embeddings="hash", cache_dir=str(tmp_path / "cache"))
        rag.index(str(docs))
        answer = rag(str(docs), "How often is the air filter replaced?")
    assert "/v1/chat/completions" in {p for _m, p, _h in seen}
    assert_no_secret(records, repr(rag), str(answer), repr(answer))
