"""akasha beside akasha-terminal, LangChain and LlamaIndex: same corpus, same questions, same embedder.

    python -m bench.compare                          # 2,000 / 20,000 / 100,000 chunks, all systems
    python -m bench.compare --sizes 2000 --systems akasha,langchain
    python -m bench.compare --sizes 100000 --systems akasha,akasha_terminal --seed 1 --max-minutes 120
    python -m bench.compare --report bench/results/a.json bench/results/b.json   # tables of earlier runs

Every system runs in its own interpreter (peers in bench/.venvs/<peer>, created
on first use) through the JSON protocol in bench/peers/protocol.py, three
phases each: build from nothing, re-run on the unchanged corpus (a new process,
then the query latencies), re-run after editing one file. The embedder is
bench/peers/shared_embed.py's hash embedder (384 dims) for all, so the
comparison is of the libraries, not the model. A phase estimated (from the
previous size, linearly) to take longer than --max-minutes is reported as
"skipped (est. X min)". Prints one table per size with ratios to akasha
(peer / akasha: above 1 means akasha is faster), the query-cost curve, and
writes everything to bench/results/compare.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.corpus import DATA, edit_one_file, make_corpus
from bench.peers.runner import SYSTEMS, run_phase

log = logging.getLogger("bench.compare")
RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def estimate(previous: dict[str, Any] | None, size: int) -> float | None:
    """Seconds the whole run of a system should take at ``size``, scaled linearly from the previous size."""
    if not previous or "total_s" not in previous:
        return None
    return previous["total_s"] * size / previous["size"]


def run_system(system: str, size: int, corpus, args, previous: dict[str, Any] | None) -> dict[str, Any]:
    """Build, re-run (with queries) and edit-re-run one system on one corpus."""
    row: dict[str, Any] = {"system": system, "size": size}
    guess = estimate(previous, size)
    if guess is not None and guess > args.max_minutes * 60 * 3:  # three phases, each limited to max_minutes
        row["skipped"] = f"skipped (est. {guess / 60:.0f} min)"
        return row
    work = DATA / "work" / (f"{system}-{size}" + (f"-seed{args.seed}" if args.seed else ""))
    shutil.rmtree(work, ignore_errors=True)
    job = {"corpus": str(corpus.root), "queries": corpus.queries[: args.queries], "k": args.k, "work": str(work),
           "embedding": {"kind": "hash", "dim": args.dim}, "query_budget_s": args.query_budget}
    limit = args.max_minutes * 60
    start = time.perf_counter()
    build = run_phase(system, dict(job, phase="build"), limit)
    if "error" in build:
        row["skipped"] = "failed: " + build["error"][:200]
        return row
    rerun = run_phase(system, dict(job, phase="rerun"), 2 * limit)  # opening plus the timed queries
    target = corpus.edit_target
    original = target.read_text(encoding="utf-8")
    try:
        edit_one_file(corpus)
        edit = run_phase(system, dict(job, phase="edit"), limit)
    finally:
        target.write_text(original, encoding="utf-8")
    row["total_s"] = time.perf_counter() - start
    row.update(
        chunks=build.get("chunks"),
        build_s=build.get("seconds"),
        build_embedded=build.get("embedded_texts"),
        rerun_s=rerun.get("seconds"),
        rerun_embedded=rerun.get("embedded_texts"),
        # chunks re-embedded by the unchanged re-run, from akasha's own sync report (the shared embedder's
        # count also holds the few fixed texts akasha embeds once per process to fingerprint an embedder,
        # akasha.embeddings.identity.PROBE_TEXTS); None for the peers
        rerun_chunks_embedded=(rerun.get("sync") or {}).get("embedded"),
        edit_s=edit.get("seconds"),
        edit_embedded=edit.get("embedded_texts"),
        peak_rss_mb=max(r.get("peak_rss_mb", 0) for r in (build, rerun, edit)),
        errors=[r["error"][:200] for r in (rerun, edit) if "error" in r],
    )
    latencies = rerun.get("latencies_ms") or []
    if latencies:
        row.update(p50_ms=percentile(latencies, 0.5), p95_ms=percentile(latencies, 0.95), queries_timed=len(latencies))
    for name, values in (rerun.get("other_latencies_ms") or {}).items():
        row[f"{name}_p50_ms"] = percentile(values, 0.5)
        row[f"{name}_p95_ms"] = percentile(values, 0.95)
    return row


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:
            return "-"
        return f"{value:.{digits}f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _ratio(peer: Any, ours: Any) -> str:
    if not isinstance(peer, (int, float)) or not isinstance(ours, (int, float)) or not ours:
        return "-"
    return f"{peer / ours:.1f}x"


def table(rows: list[dict[str, Any]]) -> str:
    """One markdown table for one size, with ratios to akasha (peer / akasha)."""
    ours = next((r for r in rows if r["system"] == "akasha" and "skipped" not in r), {})
    head = ["system", "chunks", "build s", "re-run s (embedded)", "edit-1-file s (embedded)", "p50 ms", "p95 ms",
            "peak RSS MB", "build ratio", "re-run ratio", "edit ratio", "p50 ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['system']} | {r['skipped']} |" + " |" * (len(head) - 2))
            continue
        p50 = _fmt(r.get("p50_ms"))
        if "warm_search_p50_ms" in r:
            p50 += f" (warm {_fmt(r['warm_search_p50_ms'])})"
        cells = [r["system"], _fmt(r.get("chunks")), _fmt(r.get("build_s")),
                 f"{_fmt(r.get('rerun_s'))} ({_fmt(r.get('rerun_embedded'))})",
                 f"{_fmt(r.get('edit_s'))} ({_fmt(r.get('edit_embedded'))})", p50, _fmt(r.get("p95_ms")),
                 _fmt(r.get("peak_rss_mb"), 0)]
        cells += [_ratio(r.get(f), ours.get(f)) for f in ("build_s", "rerun_s", "edit_s", "p50_ms")]
        if "warm_search_p50_ms" in r:
            cells[-1] += f" (warm {_ratio(r['warm_search_p50_ms'], ours.get('p50_ms'))})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def curve(results: list[dict[str, Any]]) -> str:
    """p50 latency per size for each system, and microseconds per 1,000 chunks."""
    sizes = sorted({r["size"] for r in results})
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in results)]
    head = ["system", *(f"p50 ms @ {s:,}" for s in sizes), "growth first->last size"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for system in systems:
        values = []
        for size in sizes:
            row = next((r for r in results if r["system"] == system and r["size"] == size), {})
            values.append(row.get("p50_ms"))
        known = [(s, v) for s, v in zip(sizes, values, strict=True) if isinstance(v, float)]
        growth = "-"
        if len(known) >= 2:
            (s0, v0), (s1, v1) = known[0], known[-1]
            growth = f"{v1 / v0:.1f}x latency for {s1 / s0:.0f}x chunks"
        lines.append("| " + " | ".join([system, *(_fmt(v) for v in values), growth]) + " |")
    return "\n".join(lines)


def targets(results: list[dict[str, Any]]) -> list[str]:
    """The issue's comparison targets, each marked met or missed with the measured numbers."""
    out = []
    by = {(r["system"], r["size"]): r for r in results if "skipped" not in r}
    for size in sorted({r["size"] for r in results}):
        ours = by.get(("akasha", size))
        if not ours or "p50_ms" not in ours:
            continue
        for system in SYSTEMS:
            peer = by.get((system, size))
            if system == "akasha" or not peer or "p50_ms" not in peer:
                continue
            ratio = peer["p50_ms"] / ours["p50_ms"]
            need = 100 if system == "akasha_terminal" and size == 2000 else 1
            out.append(f"{'MET ' if ratio >= need else 'MISS'} p50 @ {size:,}: {system} / akasha = {ratio:.1f}x (target >= {need}x)")
            if "warm_search_p50_ms" in peer:
                warm = peer["warm_search_p50_ms"] / ours["p50_ms"]
                out.append(f"     (its warm search alone, prebuilt retrievers: {warm:.1f}x)")
            if peer.get("rerun_s") and ours.get("rerun_s"):
                r = peer["rerun_s"] / ours["rerun_s"]
                out.append(f"{'MET ' if r >= 20 else 'MISS'} unchanged re-run @ {size:,}: {system} / akasha = {r:.1f}x (target >= 20x)")
        chunks = ours.get("rerun_chunks_embedded", ours.get("rerun_embedded"))
        probes = (ours.get("rerun_embedded") or 0) - (chunks or 0)
        note = f" (+{probes} identity probe texts)" if probes > 0 else ""
        out.append(f"{'MET ' if chunks == 0 else 'MISS'} unchanged re-run @ {size:,}: akasha re-embedded {chunks} chunks"
                   f"{note} (target 0)")
    return out


def report(paths: list[Path]) -> int:
    """Print the tables of saved result files, one per run and size, so every ratio stays within one run.

    The query-cost curve takes each (system, size) from the last file that measured it.
    """
    runs = [(path.stem, json.loads(path.read_text())) for path in paths]
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for name, rows in runs:
        for size in sorted({r["size"] for r in rows}):
            sized = [r for r in rows if r["size"] == size]
            print(f"\n### {size:,} chunks, run {name}\n")
            print(table(sized))
        for row in rows:
            if "skipped" not in row:
                latest[(row["system"], row["size"])] = row
    print("\n### Query cost by corpus size (p50 ms; each cell from the last run that measured it)\n")
    print(curve(list(latest.values())))
    print("\n### Targets (within each run)\n")
    for name, rows in runs:
        print("\n".join(f"{line}   [{name}]" for line in targets(rows)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000,100000", help="comma-separated corpus sizes in chunks")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {','.join(SYSTEMS)}")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384, help="hash embedding dimension (384 = MiniLM's)")
    parser.add_argument("--max-minutes", type=float, default=10.0, help="limit per phase; longer estimates are skipped")
    parser.add_argument("--query-budget", type=float, default=60.0, help="seconds of timed queries per system")
    parser.add_argument("--seed", type=int, default=0,
                        help="corpus variant; runs with different seeds use separate corpora and work folders, so they can run at once")
    parser.add_argument("--out", type=Path, default=RESULTS / "compare.json")
    parser.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                        help="run nothing: print the tables, curve and targets of earlier runs' result files "
                             "(rows keep the run they were measured in; ratios are taken within each size)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    if args.report:
        return report(args.report)
    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    results: list[dict[str, Any]] = []
    previous: dict[str, dict[str, Any]] = {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for size in sorted(int(s) for s in args.sizes.split(",")):
        corpus = make_corpus(size, seed=args.seed)
        rows = []
        for system in systems:
            log.info("%s @ %s chunks", system, f"{size:,}")
            row = run_system(system, size, corpus, args, previous.get(system))
            if "skipped" not in row:
                previous[system] = row
            rows.append(row)
            results.append(row)
            args.out.write_text(json.dumps(results, indent=2))
        print(f"\n### {size:,} chunks (hash embedder, {args.dim} dims; ratios = system / akasha)\n")
        print(table(rows), flush=True)
    print("\n### Query cost by corpus size (p50 ms)\n")
    print(curve(results))
    print("\n### Targets\n")
    print("\n".join(targets(results)))
    print(f"\n(raw results: {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
