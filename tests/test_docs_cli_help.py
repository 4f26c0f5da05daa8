"""`akasha --help`, every subcommand's help and the docs' CLI page are complete and agree.

The CLI page (docs/cli.md) is generated from the same argparse parser at build time;
these tests check what a user actually sees (the installed ``akasha`` script's
output) and what the generated page lists.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import akasha
from akasha.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def load_hook():
    path = ROOT / "docs" / "_hooks" / "akasha_docs.py"
    spec = importlib.util.spec_from_file_location("akasha_docs_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()
PARSER = build_parser()
SUBCOMMANDS = hook.subcommands(PARSER)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user does: the installed script if on PATH, else ``python -m``."""
    script = shutil.which("akasha", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "akasha.cli"]
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def documented_arguments(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        yield action


def test_the_cli_has_the_subcommands_the_docs_describe():
    assert {"ask", "index", "eval"} <= set(SUBCOMMANDS)


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"akasha {akasha.__version__}"


def test_top_level_help_lists_every_subcommand_and_option():
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    for name, sub in SUBCOMMANDS.items():
        assert name in proc.stdout
    for action in documented_arguments(PARSER):
        for flag in action.option_strings:
            assert flag in proc.stdout


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_subcommand_help_mentions_each_option_with_an_explanation(name):
    proc = run_cli(name, "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    parser = SUBCOMMANDS[name]
    assert parser.description, f"akasha {name} has no description"
    for action in documented_arguments(parser):
        spelled = action.option_strings or [action.metavar or action.dest]
        for flag in spelled:
            assert flag in out, f"akasha {name} --help does not mention {flag}"
        assert action.help and action.help.strip(), f"akasha {name}: {spelled[0]} has no help text"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_docs_cli_page_lists_each_option(name):
    page = hook.cli_reference()
    section = page.split(f"## `akasha {name}`", 1)[1].split("\n## ", 1)[0]
    for action in documented_arguments(SUBCOMMANDS[name]):
        for flag in action.option_strings or [action.metavar or action.dest]:
            assert f"`{flag}`" in section, f"docs CLI page: akasha {name} lacks {flag}"


def test_docs_cli_page_has_the_generated_reference_slot():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert hook.CLI_MARK in text


def test_no_command_prints_help_and_fails():
    proc = run_cli()
    assert proc.returncode == 2
    assert "usage: akasha" in proc.stderr
