"""How long ``import akasha`` takes, in fresh interpreters (target: <= 150 ms).

    python -m bench.import_time [--runs 11]

Each run starts a new ``python -c`` that times ``import akasha`` with
perf_counter around the import itself (interpreter start-up excluded); the
median of the runs is reported, with ``python -X importtime``'s five slowest
modules of one extra run so a regression shows where the time went.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0
SNIPPET = "import time; t = time.perf_counter(); import akasha; print((time.perf_counter() - t) * 1000)"


def measure(runs: int = 11) -> list[float]:
    """Milliseconds of ``import akasha`` in ``runs`` fresh interpreters."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, env=env, check=True)
        times.append(float(out.stdout.strip()))
    return times


def slowest_modules(count: int = 5) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the slowest imports under ``-X importtime``."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import akasha"], capture_output=True, text=True, env=env)
    rows = []
    for line in out.stderr.splitlines()[1:]:
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[1].isdigit():
            rows.append((int(parts[1]), parts[2]))
    return sorted(rows, reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args(argv)
    times = measure(args.runs)
    median = statistics.median(times)
    print(f"import akasha: median {median:.1f} ms over {len(times)} fresh interpreters "
          f"(min {min(times):.1f}, max {max(times):.1f}); target <= {TARGET_MS:.0f} ms: "
          f"{'MET' if median <= TARGET_MS else 'MISSED'}")
    for micros, module in slowest_modules():
        print(f"  {micros / 1000:7.1f} ms cumulative  {module}")
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
