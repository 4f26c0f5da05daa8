"""Create one virtual environment per peer under ``bench/.venvs/`` and install it.

Each peer gets its own venv so its dependencies never enter akasha's. torch is
installed first (pinned to the CPU build) wherever a peer would pull it, or pip
would fetch a multi-GB CUDA build. A marker file records the requirement list,
so a second call with the same list returns at once.

Run ``python -m bench.peers.venvs [peer ...]`` to build them ahead of a benchmark
(log lines go to stderr); ``bench.compare`` calls :func:`ensure_venv` itself.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import venv
from pathlib import Path

log = logging.getLogger("bench.peers.venvs")

VENV_ROOT = Path(__file__).resolve().parent.parent / ".venvs"
TORCH = "torch==2.13.0"

#: peer name -> (install torch first?, requirements)
PEERS: dict[str, tuple[bool, list[str]]] = {
    "akasha_terminal": (True, ["akasha-terminal==1.8.4"]),
    "langchain": (
        False,
        ["langchain-classic", "langchain-community", "langchain-chroma", "chromadb", "rank-bm25", "sqlalchemy[asyncio]", "numpy", "psutil"],
    ),
    "llamaindex": (False, ["llama-index-core", "llama-index-retrievers-bm25", "numpy", "psutil"]),
}


def venv_python(peer: str) -> Path:
    """Path of the peer venv's interpreter (it may not exist yet)."""
    return VENV_ROOT / peer / "bin" / "python"


def ensure_venv(peer: str, *, log_file: Path | None = None) -> Path:
    """Create and populate the peer's venv if needed; return its python.

    Raises ``RuntimeError`` naming the log file when pip fails (for example a
    package that does not install offline), so the caller can report the peer
    as unavailable instead of crashing the whole benchmark.
    """
    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}; known peers: {', '.join(sorted(PEERS))}")
    torch_first, requirements = PEERS[peer]
    target = VENV_ROOT / peer
    marker = target / ".bench-installed.json"
    wanted = {"torch_first": torch_first, "requirements": requirements}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return venv_python(peer)
    log.info("creating venv for %s at %s (slow the first time)", peer, target)
    venv.EnvBuilder(with_pip=True, clear=False).create(target)
    python = venv_python(peer)
    log_file = log_file or Path(f"/tmp/bench-venv-{peer}.log")
    steps = ([[TORCH]] if torch_first else []) + [requirements]
    for step in steps:
        with log_file.open("a") as out:
            code = subprocess.call(
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", *step],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if code != 0:
            raise RuntimeError(f"pip install {' '.join(step)} failed in {target} (exit {code}); see {log_file}")
    marker.write_text(json.dumps(wanted))
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peers", nargs="*", default=sorted(PEERS), help="peers to install (default: all)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    failed = 0
    for peer in args.peers:
        try:
            log.info("%s ready: %s", peer, ensure_venv(peer))
        except RuntimeError as error:
            log.error("%s", error)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
