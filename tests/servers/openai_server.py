"""OpenAI wire format: /v1/chat/completions (JSON and SSE), /v1/embeddings, Azure deployment paths,
and (when switched on) llama.cpp's ``GET /props`` and ``POST /tokenize``.

Implements what the ``openai`` client sends: Bearer (or Azure ``api-key``) auth,
``{"error": {"message", "type", "code"}}`` error bodies, SSE chunks
``data: {chat.completion.chunk}`` ending with a ``finish_reason`` chunk and
``data: [DONE]``, float or base64 embeddings, and the 2048-inputs-per-request limit.
"""

from __future__ import annotations

import json

from servers.base import ProviderApp, Reply, Request, StreamReply, fake_vector, float32_base64, split_pieces

MAX_EMBEDDING_INPUTS = 2048
_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "not_found_error",
                429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


class OpenAIApp(ProviderApp):
    #: behave like o-series / gpt-5 models, which refuse any temperature but the default
    reasoning_model = False
    #: what GET /v1/models lists (llama.cpp and vLLM list the model they serve)
    models: tuple[str, ...] = ("gpt-4o-mini", "text-embedding-3-small")
    #: behave like llama.cpp's server: ``GET /props`` reports this per-slot context (None: 404)
    n_ctx: int | None = None
    #: serve llama.cpp's ``POST /tokenize`` (one token per whitespace-separated word)
    tokenize = False

    def authorised(self, request: Request) -> str | None:
        if self.api_key is None:
            return None
        sent = request.headers.get("api-key")
        if sent is None:
            auth = request.headers.get("authorization", "")
            sent = auth[7:] if auth.lower().startswith("bearer ") else auth
        return None if sent == self.api_key else sent

    def error_reply(self, status: int, message: str) -> Reply:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def route(self, request: Request) -> Reply | StreamReply:
        if request.path == "/props" and self.n_ctx is not None:
            return Reply(200, {"default_generation_settings": {"n_ctx": self.n_ctx}, "total_slots": 1})
        if request.path == "/tokenize" and self.tokenize:
            content = str((request.body or {}).get("content", ""))
            return Reply(200, {"tokens": list(range(len(content.split())))})
        if request.path.endswith("/chat/completions"):
            return self.chat(request)
        if request.path.endswith("/embeddings"):
            return self.embeddings(request)
        if request.method == "GET" and request.path.endswith("/models"):
            return Reply(200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": 1700000000, "owned_by": "loopback"} for name in self.models]})
        return self.error_reply(404, f"Invalid URL (POST {request.path})")

    def chat(self, request: Request) -> Reply | StreamReply:
        body = request.body or {}
        model = body.get("model") or request.path.split("/deployments/")[-1].split("/")[0]
        if not body.get("messages"):
            return self.error_reply(400, "'messages' is a required property")
        if self.reasoning_model and "temperature" in body and body["temperature"] != 1:
            return self.error_reply(400, f"Unsupported value: 'temperature' does not support {body['temperature']} "
                                         "with this model. Only the default (1) value is supported.")
        text, cut = self.limited(self.reply_text(request), body.get("max_tokens") or body.get("max_completion_tokens"))
        finish = "length" if cut else "stop"
        if not body.get("stream"):
            return Reply(200, {
                "id": "chatcmpl-loopback", "object": "chat.completion", "created": 1700000000, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                             "logprobs": None}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
            })

        def chunk(delta: dict, finish: str | None) -> bytes:
            data = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "created": 1700000000,
                    "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data)}\n\n".encode()

        events = [chunk({"role": "assistant", "content": ""}, None)]
        events += [chunk({"content": piece}, None) for piece in split_pieces(text)]
        if self.error_event_after is not None:
            events = events[: self.error_event_after]
            events.append(b'data: {"error": {"message": "The server had an error while processing your request.", '
                          b'"type": "server_error"}}\n\n')
        elif not self.omit_stream_end:
            events.append(chunk({}, finish))
            events.append(b"data: [DONE]\n\n")
        return StreamReply(events)

    def embeddings(self, request: Request) -> Reply:
        body = request.body or {}
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not inputs:
            return self.error_reply(400, "'input' is a required property")
        if len(inputs) > MAX_EMBEDDING_INPUTS:
            return self.error_reply(400, f"'input' must have at most {MAX_EMBEDDING_INPUTS} items")
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(inputs):
            vector = fake_vector(text, self.embedding_dim)
            data.append({"object": "embedding", "index": i, "embedding": float32_base64(vector) if b64 else vector})
        return Reply(200, {"object": "list", "data": data, "model": body.get("model"),
                           "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
