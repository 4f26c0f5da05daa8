"""A local HTTP server whose replies a test writes by hand: slow, dripping, endless or silent.

The provider tests in ``servers/`` speak each API's real wire format; the tests here need
the opposite, a server that misbehaves at the byte level (a body that drips for seconds,
never ends, or never starts), to show that akasha's caps and deadlines end the request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import BinaryIO


@contextmanager
def serving(reply: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[tuple[int, list[str]]]:
    """Run a server on 127.0.0.1 that answers every POST with ``reply(handler)``; yields its port and
    the paths it was asked for (one per request), and stops it afterwards.

    It speaks HTTP/1.0 and sends no Content-Length unless ``reply`` does: the body ends when the
    connection closes. A client that hangs up part way (a cap or a deadline ended the request) is
    not an error here.
    """
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                reply(self)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    with serving_handler(Handler) as port:
        yield port, seen


@contextmanager
def serving_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on 127.0.0.1 in a background thread; yields the port, then stops the server and closes it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def send_head(handler: BaseHTTPRequestHandler, status: int, content_type: str,
              headers: dict[str, str] | None = None) -> BinaryIO:
    """Send the status line and headers of a reply; returns the stream its body goes to."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    return handler.wfile


def drip(wfile: BinaryIO, pieces: list[bytes], every_s: float) -> None:
    """Write ``pieces`` one by one, each flushed and followed by a pause of ``every_s`` seconds."""
    for piece in pieces:
        wfile.write(piece)
        wfile.flush()
        time.sleep(every_s)
