"""Disk size of a fresh install of akasha, per extra (targets: base <= 150 MB, light <= 300 MB).

    python -m bench.install_size [--extras base,light] [--top 8]

Each extra is installed from this checkout into a new virtual environment in a temporary
folder (``pip install '<repo>[extra]'`` from PyPI, no cache), the environment's
site-packages is measured and its largest distributions listed (sizes from each one's
RECORD), then the folder is deleted. pip, setuptools and wheel, which every venv carries,
are left out of the total. The table prints as markdown (docs: README "Install size").
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS_MB = {"base": 150.0, "light": 300.0}
VENV_OWN = {"pip", "setuptools", "wheel"}


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def distribution_sizes(site: Path) -> dict[str, int]:
    """Bytes per installed distribution, summed over the files its RECORD lists."""
    sizes: dict[str, int] = {}
    for record in site.glob("*.dist-info/RECORD"):
        name = record.parent.name.split("-")[0].lower().replace("_", "-")
        total = 0
        with record.open(newline="") as handle:
            for row in csv.reader(handle):
                if not row:
                    continue
                path = (site / row[0]).resolve()
                if path.is_file():
                    total += path.stat().st_size
        sizes[name] = total
    return sizes


def measure(extra: str) -> dict[str, int]:
    """Install akasha (``extra`` 'base' means none) into a fresh venv and return its distributions' sizes."""
    with tempfile.TemporaryDirectory(prefix=f"akasha-install-{extra}-") as folder:
        venv = Path(folder) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        target = str(REPO) if extra == "base" else f"{REPO}[{extra}]"
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-cache-dir", target],
            check=True,
        )
        sizes = distribution_sizes(_site_packages(venv))
    return {name: size for name, size in sizes.items() if name not in VENV_OWN}


def report(extra: str, sizes: dict[str, int], top: int) -> str:
    """One markdown line: the total against its target, and the ``top`` largest distributions."""
    total = sum(sizes.values()) / 1e6
    target = TARGETS_MB.get(extra)
    verdict = "" if target is None else (f" (target <= {target:.0f} MB: {'met' if total <= target else 'MISSED'})")
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:top]
    parts = ", ".join(f"{name} {size / 1e6:.0f}" for name, size in largest)
    return f"| {extra} | {total:.0f} MB{verdict} | {len(sizes)} | {parts} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="base,light")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    print("| install | size | distributions | largest (MB) |\n|---|---|---|---|")
    for extra in args.extras.split(","):
        print(report(extra, measure(extra), args.top), flush=True)


if __name__ == "__main__":
    main()
