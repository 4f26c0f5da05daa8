"""The JSON job/result protocol every system's benchmark script speaks (stdlib + numpy only).

A script is run as ``python peer_x.py JOB.json RESULT.json`` inside its venv with
the working folder as cwd. The job names a phase:

- ``build``:  open the system on the corpus from nothing; time until it can answer.
- ``rerun``:  open it again on the unchanged corpus (a new process, as a user's
  second run would be), time until ready, then time each query.
- ``edit``:   open it again after the driver edited one file; time until ready.

Each result carries ``seconds``, ``embedded_texts`` (texts the system asked the
shared embedder for while opening), ``chunks``, ``peak_rss_mb`` and, for
``rerun``, ``latencies_ms`` (plus ``top_texts`` of the first query for a sanity check).
"""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shared_embed  # noqa: E402


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_queries(search: Callable[[str, int], list[str]], queries: list[str], k: int, budget_s: float) -> tuple[list[float], list[str]]:
    """Latency of each query in ms after one warm-up query; stops once past ``budget_s`` with at least 3 timed."""
    top = search(queries[0], k)
    latencies = []
    start = time.perf_counter()
    for query in queries[1:] + queries[:1]:
        t0 = time.perf_counter()
        search(query, k)
        latencies.append(1000 * (time.perf_counter() - t0))
        if time.perf_counter() - start > budget_s and len(latencies) >= 3:
            break
    return latencies, [str(t)[:80] for t in top]


def run(open_system: Callable[[dict, Any], tuple[Callable[[str, int], list[str]], int, dict]]) -> None:
    """Drive one phase: ``open_system(job, embedder) -> (search(q, k) -> texts, n_chunks, extra)``."""
    job_path, result_path = sys.argv[1], sys.argv[2]
    job = json.loads(Path(job_path).read_text())
    result: dict[str, Any] = {"phase": job["phase"]}
    try:
        embedder = shared_embed.make(job["embedding"])
        start = time.perf_counter()
        search, chunks, extra = open_system(job, embedder)
        result["seconds"] = time.perf_counter() - start
        result["embedded_texts"] = embedder.texts
        result["embed_calls"] = embedder.calls
        result["chunks"] = chunks
        result.update(extra)
        if job["phase"] == "rerun":
            latencies, top = time_queries(search, job["queries"], job["k"], job.get("query_budget_s", 60))
            result["latencies_ms"] = latencies
            result["top_texts"] = top
            extra_paths = extra.get("other_paths", {})
            for name, fn in getattr(search, "other_paths", {}).items():
                lat, _ = time_queries(fn, job["queries"], job["k"], job.get("query_budget_s", 60) / 2)
                extra_paths[name] = lat
            if extra_paths:
                result["other_latencies_ms"] = extra_paths
    except Exception as error:  # reported to the driver, which marks the peer as failed
        result["error"] = f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()[-3000:]
    result["peak_rss_mb"] = peak_rss_mb()
    Path(result_path).write_text(json.dumps(result))
