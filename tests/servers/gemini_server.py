"""Gemini Developer API wire format, as the ``google-genai`` client speaks it.

Routes (``{model}`` is e.g. ``gemini-2.5-flash``; the client sends ``models/{model}``):
- ``POST /v1beta/models/{model}:generateContent`` -> ``{"candidates": [{"content": {"role": "model",
  "parts": [{"text": ...}]}, "finishReason": "STOP"}], "usageMetadata": {...}}``
- ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` -> SSE ``data: {GenerateContentResponse}``
  events, the last carrying ``finishReason``
- ``POST /v1beta/models/{model}:batchEmbedContents`` -> ``{"embeddings": [{"values": [...]}]}`` (at most 100
  requests per batch, as the real API enforces)
Auth is the ``x-goog-api-key`` header; errors are ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import json

from servers.base import ProviderApp, Reply, Request, StreamReply, fake_vector, split_pieces

MAX_BATCH = 100
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class GeminiApp(ProviderApp):
    def authorised(self, request: Request) -> str | None:
        if self.api_key is None:
            return None
        sent = request.headers.get("x-goog-api-key") or (request.query.get("key") or [""])[0]
        return None if sent == self.api_key else sent

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": {"code": status, "message": message,
                                        "status": _STATUS.get(status, "UNKNOWN")}})

    def route(self, request: Request) -> Reply | StreamReply:
        path = request.path
        if ":" not in path or "/models/" not in path:
            return self.error_reply(404, f"Not found: {path}")
        model, _, method = path.split("/models/", 1)[1].partition(":")
        if method == "generateContent":
            return self.generate(request, model)
        if method == "streamGenerateContent":
            if request.query.get("alt") != ["sse"]:
                return self.error_reply(400, "only alt=sse is served")
            return self.stream(request, model)
        if method == "batchEmbedContents":
            return self.embed(request, model)
        return self.error_reply(404, f"Method {method} not found for models/{model}")

    @staticmethod
    def _response(model: str, text: str, finish: str | None) -> dict:
        candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": model,
                "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 4, "totalTokenCount": 8}}

    def generate(self, request: Request, model: str) -> Reply:
        if not (request.body or {}).get("contents"):
            return self.error_reply(400, "* GenerateContentRequest.contents: contents is not specified")
        text, cut = self.limited(self.reply_text(request), self._limit(request))
        return Reply(200, self._response(model, text, "MAX_TOKENS" if cut else "STOP"))

    @staticmethod
    def _limit(request: Request) -> object:
        return ((request.body or {}).get("generationConfig") or {}).get("maxOutputTokens")

    def stream(self, request: Request, model: str) -> StreamReply:
        if not (request.body or {}).get("contents"):
            return StreamReply([], status=400)
        text, cut = self.limited(self.reply_text(request), self._limit(request))
        pieces = split_pieces(text)
        finish = "MAX_TOKENS" if cut else "STOP"
        events = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1 and not self.omit_stream_end
            events.append(f"data: {json.dumps(self._response(model, piece, finish if last else None))}\r\n\r\n".encode())
        if self.error_event_after is not None:
            events = events[: self.error_event_after]
            events.append(b'data: {"error": {"code": 500, "message": "An internal error has occurred.", '
                          b'"status": "INTERNAL"}}\r\n\r\n')
        return StreamReply(events)

    def embed(self, request: Request, model: str) -> Reply:
        requests = (request.body or {}).get("requests") or []
        if not requests:
            return self.error_reply(400, "* BatchEmbedContentsRequest.requests: at least one request is required")
        if len(requests) > MAX_BATCH:
            return self.error_reply(400, f"* BatchEmbedContentsRequest.requests: at most {MAX_BATCH} requests "
                                         "can be in one batch")
        out = []
        for item in requests:
            if item.get("model") != f"models/{model}":
                return self.error_reply(400, f"request model {item.get('model')} does not match models/{model}")
            text = "".join(part.get("text", "") for part in item["content"]["parts"])
            dim = item.get("outputDimensionality") or self.embedding_dim
            out.append({"values": fake_vector(text, dim)})
        return Reply(200, {"embeddings": out})
