"""Disk size of a fresh install of akasha, per extra (targets: base <= 150 MB, light <= 300 MB).

    python -m bench.install_size [--extras base,light,chroma] [--top 8]
    python -m bench.install_size --extras light --without pypdfium2 \
        --replace chromadb-client=chromadb      # what a changed requirement list would weigh (a what-if)

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


def requirements(extra: str, without: set[str], replace: dict[str, str]) -> list[str]:
    """pyproject's requirements of ``extra`` (base first), less ``without``, with ``replace`` applied (a what-if)."""
    import re
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"])
    if extra != "base":
        names += [r for r in project["optional-dependencies"][extra] if not r.startswith("akasha-rag")]
    out = []
    for requirement in names:
        name = re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower()
        if name in without:
            continue
        out.append(replace.get(name, requirement))
    return out


def measure(extra: str, without: set[str] | None = None, replace: dict[str, str] | None = None) -> dict[str, int]:
    """Install akasha (``extra`` 'base' means none) into a fresh venv and return its distributions' sizes.

    With ``without`` or ``replace`` the requirement list itself is installed (a what-if, without akasha)."""
    with tempfile.TemporaryDirectory(prefix=f"akasha-install-{extra}-") as folder:
        venv = Path(folder) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        if without or replace:
            targets = requirements(extra, without or set(), replace or {})
        else:
            targets = [str(REPO) if extra == "base" else f"{REPO}[{extra}]"]
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-cache-dir", *targets],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        sizes = distribution_sizes(_site_packages(venv))
    return {name: size for name, size in sizes.items() if name not in VENV_OWN}


def report(extra: str, sizes: dict[str, int], top: int) -> str:
    """One markdown line: the total against its target, and the ``top`` largest distributions."""
    total = sum(sizes.values()) / 1e6
    target = TARGETS_MB.get(extra.split(" ")[0])
    verdict = "" if target is None else (f" (target <= {target:.0f} MB: {'met' if total <= target else 'MISSED'})")
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:top]
    parts = ", ".join(f"{name} {size / 1e6:.0f}" for name, size in largest)
    return f"| {extra} | {total:.0f} MB{verdict} | {len(sizes)} | {parts} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="base,light")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--without", default="", help="comma-separated requirements to leave out (what-if)")
    parser.add_argument("--replace", default="", help="comma-separated old=new requirement swaps (what-if)")
    args = parser.parse_args()
    without = {name.strip().lower() for name in args.without.split(",") if name.strip()}
    replace = dict(pair.split("=", 1) for pair in args.replace.split(",") if "=" in pair)
    print("| install | size | distributions | largest (MB) |\n|---|---|---|---|")
    for extra in args.extras.split(","):
        label = extra if not (without or replace) else f"{extra} (what-if)"
        print(report(label, measure(extra, without, replace), args.top).replace(f"| {label} |", f"| {label} |"),
              flush=True)


if __name__ == "__main__":
    main()
