"""Real index servers for the shared-index tests: Chroma (``chroma run``) and PostgreSQL + pgvector (pgserver).

Each server runs on 127.0.0.1 on a free port with its data in a temporary
folder, and can be stopped and restarted on the same port and data (to test
outages). ``ChromaAuthProxy`` puts token auth in front of a Chroma server, the
way Chroma 1.x deployments do it (the 1.x server has no built-in token auth).
Pytest fixtures at the bottom; import them into a test module with
``from servers_fixtures import chroma_server, pg_server  # noqa: F401``.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

PG_PASSWORD = "akasha-test-pw"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, timeout: float, check=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if check is None:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            if check():
                return
        time.sleep(0.05)
    raise RuntimeError(f"server on 127.0.0.1:{port} did not come up within {timeout} s")


class ChromaServer:
    """``chroma run --path <tmp> --host 127.0.0.1 --port <free>`` as a stoppable subprocess."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def url(self, collection: str) -> str:
        return f"chroma://127.0.0.1:{self.port}/{collection}"

    def start(self) -> ChromaServer:
        chroma = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
        log = open(self.path.parent / f"chroma-{self.port}.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen([chroma, "run", "--path", str(self.path), "--host", "127.0.0.1", "--port",
                                      str(self.port)], stdout=log, stderr=subprocess.STDOUT)

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.proc.returncode}; see {log.name}")
            url = f"http://127.0.0.1:{self.port}/api/v2/heartbeat"
            return urllib.request.urlopen(url, timeout=1).status == 200

        _wait_port(self.port, 30, ready)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


class ChromaAuthProxy:
    """A loopback reverse proxy that lets through only requests bearing ``token``."""

    def __init__(self, upstream_port: int, token: str) -> None:
        self.token = token
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: object) -> None:
                pass

            def _relay(self) -> None:
                auth = self.headers.get("Authorization", "")
                given = self.headers.get("X-Chroma-Token") or (auth[7:] if auth.startswith("Bearer ") else "")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if given != proxy.token:
                    data = b'{"error":"AuthError","message":"Unauthorized"}'
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay  # noqa: N815

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, collection: str) -> str:
        return f"chroma://127.0.0.1:{self.port}/{collection}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PostgresServer:
    """PostgreSQL 16 + pgvector from the ``pgserver`` wheel, on 127.0.0.1:<free> with password auth."""

    def __init__(self, pgdata: Path, port: int | None = None) -> None:
        self.pgdata = pgdata
        self.port = port or free_port()
        self.user: str | None = None
        self.running = False

    def dsn(self, table: str = "akasha", password: str = PG_PASSWORD) -> str:
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/postgres?table={table}"

    def init(self) -> PostgresServer:
        if not os.environ.get("XDG_RUNTIME_DIR"):  # pgserver keeps its lock file there (mkdtemp: mode 0700)
            os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="xdg-")
        import pgserver
        import psycopg

        srv = pgserver.get_server(self.pgdata, cleanup_mode=None)  # initdb (as user pgserver when root) + start
        self.user = srv.system_user
        with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
            conn.execute(f"ALTER USER postgres PASSWORD '{PG_PASSWORD}'")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # the wheel ships pgvector
        hba = self.pgdata / "pg_hba.conf"
        hba.write_text("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
        self._ctl(["-w", "-m", "fast", "stop"])
        return self

    def _ctl(self, args: list[str]) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(args, pgdata=self.pgdata, user=self.user, timeout=60)

    def start(self) -> PostgresServer:
        sockets = Path(tempfile.mkdtemp(prefix="pgs", dir="/tmp"))
        sockets.chmod(0o777)
        self._ctl(["-w", "-o", f"-h 127.0.0.1 -p {self.port} -k {sockets}", "-l", str(self.pgdata / "log"),
                   "start"])
        _wait_port(self.port, 30)
        self.running = True
        return self

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(Exception):
            self._ctl(["-w", "-m", mode, "stop"])
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()


def _scratch(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    return folder


@pytest.fixture(scope="session")
def chroma_server():
    """A Chroma server for the whole session (tests use distinct collections)."""
    folder = _scratch("akchroma")
    server = ChromaServer(folder / "data").start()
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def own_chroma_server():
    """A Chroma server of the test's own (free to stop and restart)."""
    folder = _scratch("akchroma")
    server = ChromaServer(folder / "data").start()
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    """PostgreSQL + pgvector for the whole session (tests use distinct table prefixes).

    The same server is stopped and restarted by the outage tests, which restart it before they end.
    """
    folder = _scratch("akpg")
    server = PostgresServer(folder / "pgdata").init().start()
    yield server
    server.stop("immediate")
    shutil.rmtree(folder, ignore_errors=True)
