"""akasha uses no private names of Python or of third-party packages, and importing it sets no
environment variable (issue 34; DESIGN.md, "Less machinery").

The name check reads akasha/'s sources with ``ast``: every name bound by ``import x`` (a module)
must not be followed by ``._private`` (nor fetched with ``getattr(x, "_private")``), no
``from x import _private`` may name a module outside akasha, and no ``importlib.import_module``
may name a private module outside akasha.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "akasha"

#: Underscored names that Python documents as public API, with where.
DOCUMENTED = {
    # "os._exit(n): Exit the process with status n, without calling cleanup handlers" (os docs, Process
    # Management): the CLI's quick exit and the loader worker's child process.
    ("os", "_exit"),
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str, filename: str = "<source>") -> list[str]:
    """``module._name`` uses in ``source`` where ``module`` was bound by an import of a non-akasha module."""
    tree = ast.parse(source, filename)
    modules: dict[str, str] = {}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "akasha":
                    bound = alias.asname or alias.name.split(".")[0]
                    modules[bound] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            if root not in ("akasha", "__future__"):
                found += [(node.lineno, f"from {node.module} import {alias.name}")
                          for alias in node.names if _is_private(alias.name)]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args):
            parts = [part.value for part in ast.walk(node.args[0])
                     if isinstance(part, ast.Constant) and isinstance(part.value, str)]
            name = "".join(parts)
            if not name.startswith("akasha") and any(_is_private(piece) for piece in name.split(".")):
                found.append((node.lineno, f"import_module({name!r})"))
    for node in ast.walk(tree):
        target = attr = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target, attr = node.value.id, node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            target, attr = node.args[0].id, node.args[1].value
        if target in modules and attr is not None and _is_private(attr) and (modules[target], attr) not in DOCUMENTED:
            found.append((node.lineno, f"{modules[target]}.{attr}"))
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_what_it_looks_for():
    source = ("import threading, atexit\nimport os.path as p\nfrom jieba import _compat\nimport sys\n"
              "threading._shutdown()\ngetattr(atexit, '_run_exitfuncs')()\np._joinrealpath\nos_exit = 1\n"
              "import os\nos._exit(0)\nsys.modules['x'] = None\nimportlib.import_module(f'{openai.__name__}._base')\n"
              "importlib.import_module('akasha.loaders._worker')\n")
    assert [line.split(": ", 1)[1] for line in private_uses(source)] == [
        "from jieba import _compat", "threading._shutdown", "atexit._run_exitfuncs", "os.path._joinrealpath",
        "import_module('._base')"]


def test_akasha_uses_no_private_names_of_other_packages():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += private_uses(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert found == []


def test_importing_every_akasha_module_sets_no_environment_variable():
    code = (
        "import importlib, json, os, pkgutil\n"
        "before = dict(os.environ)\n"
        "import akasha\n"
        "for info in pkgutil.walk_packages(akasha.__path__, 'akasha.'):\n"
        "    if not info.name.endswith('__main__'):\n"
        "        importlib.import_module(info.name)\n"
        "after = dict(os.environ)\n"
        "print(json.dumps(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "KMP_DUPLICATE_LIB_OK",
                                                            "HF_HUB_DISABLE_PROGRESS_BARS")}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
