"""Run one benchmark phase of one system in its own interpreter and read back its JSON result."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.peers.venvs import ensure_venv

log = logging.getLogger("bench.peers.runner")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SYSTEMS = {
    "akasha": "peer_akasha.py",
    # akasha at another revision, for before/after ratios in one run: a checkout named by
    # $AKASHA_BASELINE_SRC (e.g. `git worktree add /tmp/akasha-before <rev>`), same interpreter.
    "akasha_baseline": "peer_akasha.py",
    "akasha_terminal": "peer_akasha_terminal.py",
    "langchain": "peer_langchain.py",
    "llamaindex": "peer_llamaindex.py",
}


def python_for(system: str) -> Path:
    """akasha runs in the project's interpreter; every peer in its own venv (created on first use)."""
    return Path(sys.executable) if system in ("akasha", "akasha_baseline") else ensure_venv(system)


def run_phase(system: str, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run ``job`` (a dict with ``phase``) for ``system``; errors and timeouts come back as ``{"error": ...}``."""
    python = python_for(system)
    Path(job["work"]).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False",
               TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    if system == "akasha":  # only akasha sees the repo: akasha-terminal's package is also named "akasha"
        env["PYTHONPATH"] = str(REPO)
    elif system == "akasha_baseline":
        baseline = os.environ.get("AKASHA_BASELINE_SRC")
        if not baseline or not (Path(baseline) / "akasha" / "__init__.py").is_file():
            return {"error": "set AKASHA_BASELINE_SRC to a checkout of the baseline revision "
                             "(git worktree add /tmp/akasha-before <rev>)"}
        env["PYTHONPATH"] = str(Path(baseline).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job_file.write_text(json.dumps(job))
        log_file = Path(job["work"]) / f"{job['phase']}.log"
        try:
            with log_file.open("w") as out:
                code = subprocess.call([str(python), str(HERE / SYSTEMS[system]), str(job_file), str(result_file)],
                                       cwd=job["work"], env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout_s:.0f} s", "timeout": True}
        if not result_file.exists():
            tail = log_file.read_text(errors="replace")[-1500:]
            return {"error": f"exit {code} without a result; log {log_file}: {tail}"}
        result = json.loads(result_file.read_text())
        if "error" in result:
            log.warning("%s %s failed: %s", system, job["phase"], result["error"])
        return result
