"""No import cycles among akasha's modules, counting imports inside functions (the shared checker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT.parent / "shared" / "tools" / "import_cycles.py"


@pytest.mark.skipif(not TOOL.exists(), reason=f"the import-cycle checker is not at {TOOL}")
def test_no_import_cycles():
    out = subprocess.run([sys.executable, str(TOOL), "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "import cycles=0" in out.stdout, out.stdout + out.stderr
    assert out.returncode == 0 and "cycle:" not in out.stdout
