"""Scriptable loopback HTTP server shared by the provider test servers.

``ProviderApp`` subclasses map a request to a :class:`Reply` (one JSON body) or a
:class:`StreamReply` (a list of already-framed events sent with chunked transfer
encoding). The base class applies scripted faults first, records requests, and
can cut a stream part way by closing the socket without the final chunk.

Model calls are recorded in ``requests`` and take the scripted faults; a client asking
the server about itself (any GET, e.g. llama.cpp's ``/props`` for its context size, and
``POST /tokenize`` for token counts) is recorded in ``probes`` only, so it neither
counts as a model call nor uses up a fault scripted for one.

``limit_output``: replies longer than the request's output limit (OpenAI
``max_tokens``/``max_completion_tokens``, Gemini ``maxOutputTokens``, Ollama
``num_predict``; one word counts as one token) are cut to that many words and end
with the provider's "output limit" finish reason (``length``, ``MAX_TOKENS``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


#: POST paths that ask a server about itself rather than call the model (see the module docstring).
PROBE_PATHS = frozenset({"/tokenize", "/detokenize", "/apply-template"})


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class StreamReply:
    events: list[bytes]
    content_type: str = "text/event-stream"
    status: int = 200


@dataclass
class ScriptedFault:
    status: int
    message: str
    retry_after: str | None = None
    delay: float = 0.0
    paths: tuple[str, ...] = ()  # only requests whose path contains one of these (empty = any)


def fake_vector(text: str, dim: int = 8) -> list[float]:
    """A deterministic vector per text, so tests can check order and identity."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [round(v / 255.0 - 0.5, 6) for v in digest[:dim]]


def float32_base64(values: list[float]) -> str:
    import base64

    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def split_pieces(text: str) -> list[str]:
    """Split a reply into stream pieces (word + following space)."""
    pieces, current = [], ""
    for ch in text:
        current += ch
        if ch == " ":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces or [""]


class ProviderApp:
    """Behaviour shared by the OpenAI, Gemini and Ollama loopback servers."""

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[Request] = []
        self.chat_reply: str | Callable[[Request], str] = "Hello from the loopback server."
        self.chat_replies: deque[str] = deque()  # consumed first, one per chat request
        self.embedding_dim = 8
        self.break_stream_after: int | None = None  # send N events, then drop the connection
        self.omit_stream_end = False  # finish the HTTP body cleanly but without the end marker
        self.error_event_after: int | None = None  # send N events, then an in-stream error event
        self.limit_output = False  # cut replies to the request's output limit (in words), finish reason "length"
        self.probes: list[Request] = []  # GET and /tokenize requests (not model calls)
        self._faults: deque[ScriptedFault] = deque()
        self._lock = threading.Lock()

    # -- scripting -------------------------------------------------------
    def fail_next(
        self,
        status: int,
        message: str = "scripted failure",
        *,
        times: int = 1,
        retry_after: str | None = None,
        paths: tuple[str, ...] = (),
    ) -> None:
        for _ in range(times):
            self._faults.append(ScriptedFault(status, message, retry_after, 0.0, paths))

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        """The next ``times`` requests sleep ``seconds`` before answering normally."""
        for _ in range(times):
            self._faults.append(ScriptedFault(0, "", None, seconds))

    def reply_text(self, request: Request) -> str:
        with self._lock:
            if self.chat_replies:
                return self.chat_replies.popleft()
        reply = self.chat_reply
        return reply(request) if callable(reply) else reply

    def limited(self, text: str, limit: object) -> tuple[str, bool]:
        """``(text, cut)``: with :attr:`limit_output` on, ``text`` cut to ``limit`` words when longer."""
        if not self.limit_output or not isinstance(limit, int) or limit <= 0:
            return text, False
        words = text.split(" ")
        if len(words) <= limit:
            return text, False
        return " ".join(words[:limit]), True

    def request_count(self, fragment: str = "") -> int:
        return sum(1 for r in self.requests if fragment in r.path)

    # -- per provider ----------------------------------------------------
    def authorised(self, request: Request) -> str | None:
        """Return the key the client sent when it does not match (None when fine)."""
        return None

    def error_reply(self, status: int, message: str) -> Reply:
        raise NotImplementedError

    def route(self, request: Request) -> Reply | StreamReply:
        raise NotImplementedError

    # -- plumbing ------------------------------------------------------------
    def take_fault(self, request: Request) -> ScriptedFault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if not fault.paths or any(p in request.path for p in fault.paths):
                    del self._faults[i]
                    return fault
        return None

    def handle(self, request: Request) -> Reply | StreamReply:
        probe = request.method == "GET" or request.path in PROBE_PATHS
        with self._lock:
            (self.probes if probe else self.requests).append(request)
        fault = None if probe else self.take_fault(request)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status:
                reply = self.error_reply(fault.status, fault.message)
                if fault.retry_after is not None:
                    reply.headers["Retry-After"] = fault.retry_after
                return reply
        wrong_key = self.authorised(request)
        if wrong_key is not None:
            return self.error_reply(401, f"Incorrect API key provided: {wrong_key}")
        return self.route(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    app: ProviderApp

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        result = self.app.handle(request)
        if isinstance(result, StreamReply):
            self._send_stream(result)
        else:
            data = json.dumps(result.json).encode("utf-8")
            self.send_response(result.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in result.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    def _send_stream(self, stream: StreamReply) -> None:
        self.send_response(stream.status)
        self.send_header("Content-Type", stream.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        limit = self.app.break_stream_after
        for n, event in enumerate(stream.events):
            if limit is not None and n >= limit:
                self.wfile.flush()
                time.sleep(0.05)
                self.close_connection = True
                with contextlib.suppress(OSError):
                    import socket

                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_POST = _serve
    do_GET = _serve


class LoopbackServer:
    """Runs a :class:`ProviderApp` on 127.0.0.1:<ephemeral port> in a daemon thread."""

    def __init__(self, app: ProviderApp) -> None:
        self.app = app
        handler = type("Handler", (_Handler,), {"app": app})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), name="loopback", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def serve(app: ProviderApp) -> Iterator[LoopbackServer]:
    with LoopbackServer(app) as server:
        yield server
