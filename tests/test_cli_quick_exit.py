"""``akasha`` and ``python -m akasha`` end before the interpreter's teardown, losing nothing (cli.run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_exit_joins_threads_runs_atexit_flushes_output_and_keeps_the_code(tmp_path):
    code = (
        "import atexit, sys, threading, time\n"
        "from pathlib import Path\n"
        "import akasha.cli\n"
        f"out = Path({str(tmp_path)!r})\n"
        "class Teardown:\n"
        "    def __del__(self):\n"
        "        (out / 'teardown').write_text('ran')\n"
        "kept = Teardown()\n"
        "def command(argv):\n"
        "    atexit.register(lambda: (out / 'atexit').write_text('ran'))\n"
        "    def late():\n"
        "        time.sleep(0.2)\n"
        "        (out / 'thread').write_text('done')\n"
        "    threading.Thread(target=late).start()\n"
        "    sys.stdout.write('answer without a newline')\n"
        "    return 3\n"
        "akasha.cli.main = command\n"
        "akasha.cli.run([])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert result.stdout == "answer without a newline"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "done"
    assert not (tmp_path / "teardown").exists()  # the interpreter's teardown was skipped


def test_a_command_that_fails_to_parse_exits_the_ordinary_way():
    result = subprocess.run([sys.executable, "-m", "akasha", "ask", "--no-such-option"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "error:" in result.stderr


def test_quick_exit_stops_an_idle_thread_pool_as_the_interpreter_would(tmp_path):
    """A library's ThreadPoolExecutor with an idle worker (OpenVINO's telemetry sender left one) does not hang the exit."""
    code = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "import akasha.cli\n"
        "def command(argv):\n"
        "    pool = ThreadPoolExecutor()\n"
        "    pool.submit(print, 'sent')\n"
        "    return 0\n"
        "akasha.cli.main = command\n"
        "akasha.cli.run([])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout == "sent\n"


def test_python_m_akasha_exits_with_the_commands_code():
    ok = subprocess.run([sys.executable, "-m", "akasha", "ask", "--help"], cwd=ROOT, capture_output=True, text=True,
                        timeout=60)
    assert ok.returncode == 0 and "usage" in ok.stdout
    missing = subprocess.run([sys.executable, "-m", "akasha", "ask", str(ROOT / "no-such-folder"), "Why?",
                              "--model", "extractive", "--embeddings", "hash"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 1 and "no-such-folder" in missing.stderr


def test_the_command_keeps_openblas_threads_from_spinning_unless_the_user_chose(tmp_path):
    code = ("import os, sys\n"
            "import akasha.cli\n"
            "akasha.cli.main = lambda argv: print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'), 'numpy' in sys.modules)"
            " or 0\n"
            "akasha.cli.run([])\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.stdout.split() == ["4", "False"]  # set before numpy (and OpenBLAS) loads
    chosen = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**env, "OPENBLAS_THREAD_TIMEOUT": "20"})
    assert chosen.stdout.split() == ["20", "False"]
