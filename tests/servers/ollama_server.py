"""Ollama native API wire format, as Ollama itself serves it.

- ``POST /api/chat`` with ``"stream": false`` -> ``{"model", "created_at", "message": {"role": "assistant",
  "content"}, "done": true, "done_reason": "stop", ...}``; with ``"stream": true`` (Ollama's default) ->
  ``application/x-ndjson`` lines ``{"message": {"content": piece}, "done": false}`` and a final
  ``{"done": true, "done_reason": "stop"}``.
- ``POST /api/embed`` ``{"model", "input": [..]}`` -> ``{"model", "embeddings": [[...], ...]}``.
- ``GET /api/tags`` -> the model list.
Errors are ``{"error": "message"}`` with the HTTP status (404 for an unknown model); a failure during a
stream is an ``{"error": ...}`` line. Optional Bearer auth for proxies.
"""

from __future__ import annotations

import json

from servers.base import ProviderApp, Reply, Request, StreamReply, fake_vector, split_pieces

STAMP = "2026-01-01T00:00:00.000000Z"


class OllamaApp(ProviderApp):
    def __init__(self, api_key: str | None = None, models: tuple[str, ...] = ("llama3.2", "nomic-embed-text")) -> None:
        super().__init__(api_key)
        self.models = set(models)

    def authorised(self, request: Request) -> str | None:
        if self.api_key is None:
            return None
        auth = request.headers.get("authorization", "")
        sent = auth[7:] if auth.lower().startswith("bearer ") else auth
        return None if sent == self.api_key else sent

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": message})

    def route(self, request: Request) -> Reply | StreamReply:
        if request.path == "/api/tags":
            return Reply(200, {"models": [{"name": f"{m}:latest", "model": f"{m}:latest"} for m in sorted(self.models)]})
        body = request.body or {}
        model = str(body.get("model", "")).removesuffix(":latest")
        if request.path in ("/api/chat", "/api/embed") and model not in self.models:
            return self.error_reply(404, f"model \"{model}\" not found, try pulling it first")
        if request.path == "/api/chat":
            return self.chat(request, body)
        if request.path == "/api/embed":
            return self.embed(body)
        return self.error_reply(404, "404 page not found")

    def chat(self, request: Request, body: dict) -> Reply | StreamReply:
        if not isinstance(body.get("messages"), list):
            return self.error_reply(400, "messages must be a list")
        text, cut = self.limited(self.reply_text(request), (body.get("options") or {}).get("num_predict"))
        done_reason = "length" if cut else "stop"
        model = body["model"]
        if body.get("stream") is False:
            return Reply(200, {"model": model, "created_at": STAMP,
                               "message": {"role": "assistant", "content": text},
                               "done_reason": done_reason, "done": True, "total_duration": 1, "eval_count": 3})
        lines = [json.dumps({"model": model, "created_at": STAMP,
                             "message": {"role": "assistant", "content": piece}, "done": False}).encode() + b"\n"
                 for piece in split_pieces(text)]
        if self.error_event_after is not None:
            lines = lines[: self.error_event_after] + [b'{"error":"an error was encountered while running the model"}\n']
        elif not self.omit_stream_end:
            lines.append(json.dumps({"model": model, "created_at": STAMP,
                                     "message": {"role": "assistant", "content": ""}, "done_reason": done_reason,
                                     "done": True, "eval_count": len(lines)}).encode() + b"\n")
        return StreamReply(lines, content_type="application/x-ndjson")

    def embed(self, body: dict) -> Reply:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not inputs:
            return self.error_reply(400, "input is required")
        return Reply(200, {"model": body["model"], "embeddings": [fake_vector(t, self.embedding_dim) for t in inputs],
                           "total_duration": 1, "prompt_eval_count": len(inputs)})
