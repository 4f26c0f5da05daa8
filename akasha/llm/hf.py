"""``hf:<name-or-path>``: a local transformers chat model (on the accelerator when there is one).

A local folder (``hf:./models/my-chat``) loads from disk with no network; any other name is
resolved by transformers (the hub, or its cache when ``HF_HUB_OFFLINE=1``), on the first request,
onto ``device`` (:mod:`akasha.device`). The tokenizer's chat template formats the messages (a plain
``Role: text`` transcript without one). Streaming generates on a worker thread; an error there
ends the stream with StreamInterruptedError (never a hang).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from akasha.device import resolve_device, validate_device
from akasha.errors import ConfigError, MissingExtraError, StreamInterruptedError
from akasha.llm.base import GenerationOptions, Message, note_finish

logger = logging.getLogger(__name__)

_DONE = object()
#: Config keys that hold a transformers model's context size, in the order they are trusted.
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


def plain_transcript(messages: list[Message]) -> str:
    """Fallback prompt for tokenizers without a chat template."""
    lines = [f"{m.get('role', 'user').capitalize()}: {m.get('content', '')}" for m in messages]
    return "\n".join(lines) + "\nAssistant:"


class TransformersChat:
    """Chat with ``AutoModelForCausalLM`` + the tokenizer's chat template.

    Options: ``device``, ``dtype`` (e.g. "bfloat16"), ``max_new_tokens`` (when a call sets no
    max_output_tokens), ``trust_remote_code``, ``generation_kwargs`` (extra ``model.generate``
    arguments), ``stream_timeout`` (seconds to wait for the next streamed piece).
    """

    def __init__(self, rest: str, *, device: str = "auto", dtype: str | None = None, max_new_tokens: int = 512,
                 trust_remote_code: bool = False, generation_kwargs: dict[str, Any] | None = None,
                 stream_timeout: float = 300.0, **options: Any) -> None:
        self.model_name = rest.strip()
        if not self.model_name:
            raise ConfigError("hf: needs a model name or a local folder, e.g. 'hf:./my-model'")
        self.name = f"hf:{self.model_name}"
        path = Path(self.model_name).expanduser()
        self.location = str(path.resolve()) if path.is_dir() else self.model_name
        self.local = path.is_dir()
        self.device = validate_device(device)
        self.dtype = dtype
        self.max_new_tokens = int(max_new_tokens)
        self.trust_remote_code = trust_remote_code
        self.generation_kwargs = dict(generation_kwargs or {})
        self.stream_timeout = float(stream_timeout)
        if options:
            logger.debug("%s ignores unknown options %s", self.name, sorted(options))
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersChat(name={self.name!r}, device={self.device!r})"

    @property
    def context_window(self) -> int | None:
        """The model's context in tokens (``max_position_embeddings`` or the like in its config) when it can be
        read without a download (the loaded model, a local folder's ``config.json``), else None."""
        if self._model is not None:
            config = getattr(self._model, "config", None)
            values = {key: getattr(config, key, None) for key in _CONTEXT_KEYS}
        elif self.local:  # its config.json (the text config of a multimodal model)
            try:
                values = json.loads((Path(self.location) / "config.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            if not isinstance(values, dict):
                return None
            if isinstance(values.get("text_config"), dict):
                values = {**values, **values["text_config"]}
        else:
            return None
        for key in _CONTEXT_KEYS:
            value = values.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def _load(self) -> tuple[Any, Any]:
        """The model and tokenizer, loaded once from ``self.location`` onto ``self.device`` (eval mode)."""
        with self._lock:
            if self._model is None:
                self._tokenizer, self._model = self._read_model()
        return self._model, self._tokenizer

    def _read_model(self) -> tuple[Any, Any]:
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise MissingExtraError("transformers", "full", "hf: chat models") from exc
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        if self.local:
            kwargs["local_files_only"] = True
        logger.info("loading transformers chat model %s", self.name)
        model_kwargs = dict(kwargs)
        if self.dtype:
            model_kwargs["dtype"] = self.dtype
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.location, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(self.location, **model_kwargs)
        except OSError as exc:
            raise ConfigError(f"model {self.name!r}: cannot load {self.location!r} ({exc}). Pass a local folder "
                              "(hf:/path/to/model), use an offline model such as 'llama-cpp:smollm2' or "
                              "'extractive', or allow Hugging Face hub downloads (unset HF_HUB_OFFLINE).") from exc
        device = resolve_device(self.device)
        logger.info("%s runs on %s", self.name, device)
        model.to(device)  # type: ignore[arg-type]  # transformers wraps .to with functools.wraps: mypy loses self
        model.eval()
        return tokenizer, model

    def _inputs(self, messages: list[Message]) -> Any:
        model, tokenizer = self._load()
        if getattr(tokenizer, "chat_template", None):
            encoded = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, return_tensors="pt",
                                                    return_dict=True)
        else:
            encoded = tokenizer(plain_transcript(messages), return_tensors="pt")
        return {k: v.to(model.device) for k, v in encoded.items()}

    def _generate_kwargs(self, options: GenerationOptions | None) -> dict[str, Any]:
        options = options or GenerationOptions()
        _, tokenizer = self._load()
        kwargs: dict[str, Any] = {"max_new_tokens": options.max_output_tokens or self.max_new_tokens}
        if options.temperature and options.temperature > 0:
            kwargs.update(do_sample=True, temperature=options.temperature)
        else:
            kwargs["do_sample"] = False
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is not None:
            kwargs["pad_token_id"] = pad
        kwargs.update(self.generation_kwargs)
        return kwargs

    def _finish_reason(self, new_tokens: Any, limit: int) -> str:
        """``"length"`` when generation stopped at ``limit`` new tokens without an end-of-sequence token,
        else ``"stop"`` (transformers reports no finish reason of its own)."""
        model, tokenizer = self._load()
        ends = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ends = set(ends if isinstance(ends, (list, tuple)) else [ends]) | {tokenizer.eos_token_id}
        ids = [int(token) for token in new_tokens]
        return "length" if len(ids) >= limit and not (ids and ids[-1] in ends) else "stop"

    def generate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        import torch

        model, tokenizer = self._load()
        inputs = self._inputs(messages)
        kwargs = self._generate_kwargs(options)
        with torch.no_grad():
            output = model.generate(**inputs, **kwargs)
        new_tokens = output[0, inputs["input_ids"].shape[1]:]
        note_finish(self.name, options, self._finish_reason(new_tokens, kwargs["max_new_tokens"]))
        return tokenizer.decode(new_tokens, skip_special_tokens=True)

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[str]:
        import torch
        from transformers import TextIteratorStreamer

        model, tokenizer = self._load()
        inputs = self._inputs(messages)
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True,
                                        timeout=self.stream_timeout)
        failure: list[BaseException] = []
        finished: list[str] = []
        kwargs = self._generate_kwargs(options)

        def run() -> None:
            try:
                with torch.no_grad():
                    output = model.generate(**inputs, **kwargs, streamer=streamer)
                finished.append(self._finish_reason(output[0, inputs["input_ids"].shape[1]:], kwargs["max_new_tokens"]))
            except BaseException as exc:  # reported to the consumer below
                failure.append(exc)
                streamer.end()

        worker = threading.Thread(target=run, name="akasha-hf-generate", daemon=True)
        worker.start()
        received: list[str] = []
        try:
            for text in streamer:
                if text:
                    received.append(text)
                    yield text
        except Exception as exc:  # e.g. queue.Empty after stream_timeout
            raise StreamInterruptedError(self.name, f"{type(exc).__name__}: {exc}", "".join(received)) from exc
        worker.join(timeout=self.stream_timeout)
        if failure:
            error = failure[0]
            raise StreamInterruptedError(self.name, f"{type(error).__name__}: {error}", "".join(received)) from error
        if finished:
            note_finish(self.name, options, finished[0])

    async def agenerate(self, messages: list[Message], options: GenerationOptions | None = None) -> str:
        return await asyncio.to_thread(self.generate, messages, options)

    async def astream(self, messages: list[Message], options: GenerationOptions | None = None) -> AsyncIterator[str]:
        pieces = self.stream(messages, options)
        while isinstance(piece := await asyncio.to_thread(next, pieces, _DONE), str):  # _DONE: the stream ended
            yield piece


__all__ = ["TransformersChat", "plain_transcript"]
