"""Shared helpers for the RAGPipeline tests: spec bodies, a loopback JSON server, counting parts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from akasha.testing import HashEmbedder

CORPUS = [
    {"id": "filters", "text": "The air filter should be replaced every 12 months. Dusty roads shorten the interval.",
     "metadata": {"topic": "maintenance"}},
    {"id": "warranty", "text": "The warranty covers manufacturing defects for three years from purchase.",
     "metadata": {"topic": "legal"}},
    {"id": "coolant", "text": "Coolant must be changed every 5 years. Never open the radiator cap while hot.",
     "metadata": {"topic": "maintenance"}},
    {"id": "tyres", "text": "Tyre pressure should be checked monthly. Rotate the tyres every 8000 km.",
     "metadata": {"topic": "maintenance"}},
]


def body(**sections: Any) -> dict[str, Any]:
    """A RAGPipeline document; hash embeddings and the memory backend unless overridden."""
    spec = {"embeddings": {"provider": "hash"}, "vector_store": {"backend": "memory"}}
    spec.update(sections)
    return {"apiVersion": "astromesh/v1", "kind": "RAGPipeline", "metadata": {"name": "test"}, "spec": spec}


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that also counts query embeddings."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.query_calls = 0

    def embed_query(self, text):
        self.query_calls += 1
        return super().embed_query(text)


@contextmanager
def json_server(handler: Callable[[str, dict[str, Any], dict[str, str]], tuple[int, Any]]):
    """Serve POST requests on 127.0.0.1: ``handler(path, json_body, headers) -> (status, json)``.

    Yields ``(base_url, requests)`` where ``requests`` records ``(path, body, headers)``.
    """
    requests: list[tuple[str, Any, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"null")
            headers = {k.lower(): v for k, v in self.headers.items()}
            requests.append((self.path, payload, headers))
            status, answer = handler(self.path, payload, headers)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
