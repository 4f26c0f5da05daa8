"""The hand-written docs pages stay in step with the code (fast checks, no mkdocs build).

The same checks run inside ``mkdocs build`` (docs/_hooks/akasha_docs.py); here they run
without a build so a missing section fails the fast suite too.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def load_hook():
    spec = importlib.util.spec_from_file_location("akasha_docs_hook", DOCS / "_hooks" / "akasha_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()


def read(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


def test_every_error_class_has_a_troubleshooting_section():
    hook.check_troubleshooting_page(read("troubleshooting.md"))


def test_troubleshooting_check_fails_when_a_class_is_missing():
    import akasha.errors

    page = read("troubleshooting.md")
    name = "IndexMismatchError"
    assert hasattr(akasha.errors, name)
    stripped = re.sub(rf"^### `?{name}`?\s*$", "### Something else", page, flags=re.M)
    with pytest.raises(hook.DocsCheckError, match=name):
        hook.check_troubleshooting_page(stripped)


def test_error_classes_are_read_from_errors_module():
    import akasha.errors

    names = {c.__name__ for c in hook.error_classes()}
    assert {"AkashaError", "ConfigError", "SpecError", "MissingExtraError", "StageError"} <= names
    assert all(issubclass(getattr(akasha.errors, n), BaseException) for n in names)


def test_raise_sites_find_real_raises():
    sites = hook.raise_sites()
    by_name = {s.exception for s in sites}
    # Raised by modules that exist from the first commit on.
    assert "ConfigError" in by_name
    for site in sites:
        path = ROOT / site.path
        line = path.read_text(encoding="utf-8").splitlines()[site.line - 1]
        assert "raise" in line or site.exception in line, site


def test_troubleshooting_page_renders_raise_sites():
    rendered = hook.render_troubleshooting_page(read("troubleshooting.md"))
    assert "Where akasha raises `ConfigError`" in rendered
    assert hook.RAISES_MARK not in rendered


def test_every_rag_option_has_a_section():
    hook.check_options_page(read("options.md"))


def test_options_check_fails_on_missing_and_stale_sections():
    page = read("options.md")
    first = hook.rag_options()[0].name
    without = page.replace(f"### `{first}`", "### `not_an_option_of_rag`")
    with pytest.raises(hook.DocsCheckError) as info:
        hook.check_options_page(without)
    assert first in str(info.value) and "not_an_option_of_rag" in str(info.value)


def test_options_page_shows_the_code_defaults():
    rendered = hook.render_options_page(read("options.md"))
    for p in hook.rag_options():
        assert f"| [`{p.name}`](#{p.name}) | `{hook.format_default(p.default)}` |" in rendered
        assert f"### `{p.name}`\n\n**Default:** `{hook.format_default(p.default)}`" in rendered


def nav_pages(nav) -> list[str]:
    found = []
    for item in nav:
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                found += nav_pages(value) if isinstance(value, list) else [value]
    return found


def test_every_page_is_in_the_nav_and_exists():
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may use !!python tags in the future; only plain data is needed here.
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    in_nav = set(nav_pages(config["nav"]))
    on_disk = {
        str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_hooks" not in p.parts
    }
    assert in_nav == on_disk


def test_relative_links_point_at_existing_pages():
    link = re.compile(r"\]\(([^)#\s]+\.md)(#[^)]*)?\)")
    for page in DOCS.rglob("*.md"):
        for target, _ in link.findall(page.read_text(encoding="utf-8")):
            assert (page.parent / target).resolve().is_file(), f"{page}: broken link {target}"


def test_error_subclasses_defined_elsewhere_need_a_section_too(tmp_path):
    (tmp_path / "mod.py").write_text(
        "from akasha.errors import ConfigError\n"
        "class FirstError(ConfigError):\n    pass\n"
        "class SecondError(FirstError):\n    pass\n"
        "class Unrelated(Exception):\n    pass\n",
        encoding="utf-8",
    )
    names = hook.error_class_names(tmp_path)
    assert {"FirstError", "SecondError"} <= set(names)
    assert "Unrelated" not in names
    assert {c.__name__ for c in hook.error_classes()} <= set(names)


def test_every_extra_named_by_missing_extra_error_exists():
    """The troubleshooting page promises the message names a `pip install 'akasha[X]'` that works."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    named = {}
    for site in hook.raise_sites():
        if site.exception == "MissingExtraError":
            if len(site.args) >= 2 and site.args[1][:1] in "'\"":
                extra = site.args[1].strip("'\"")
                named.setdefault(extra, []).append(f"{site.path}:{site.line}")
    assert named, "no MissingExtraError raise found"
    unknown = {extra: where for extra, where in named.items() if extra not in extras}
    assert not unknown, f"MissingExtraError names extras pyproject.toml does not define: {unknown}"


def load_griffe_extension():
    spec = importlib.util.spec_from_file_location("akasha_griffe_rst", DOCS / "_hooks" / "griffe_rst.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rst_docstrings_become_markdown_in_the_api_reference():
    convert = load_griffe_extension().convert
    text = (
        "Returns :class:`~akasha.types.Hit` objects (see :mod:`akasha.rerank`).\n\n"
        "Example::\n\n"
        "    rag = RAG()\n\n"
        ">>> rag = RAG()\n"
        ">>> rag(\n"
        "...     'docs', 'q')\n"
        "'answer'\n"
    )
    out = convert(text)
    assert "`Hit`" in out and "`akasha.rerank`" in out and ":class:" not in out
    assert "Example:\n" in out and "Example::" not in out
    assert "```pycon\n>>> rag = RAG()\n>>> rag(\n...     'docs', 'q')\n'answer'\n```" in out


def environment_variables_read_by_the_code() -> dict[str, str]:
    """Every environment variable name the package reads, with one place that reads it."""
    import ast

    readers = {"env_value", "env_lookup", "require_api_key", "get", "getenv", "MissingAPIKeyError"}
    found: dict[str, str] = {}
    name = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]+$")
    for path in sorted((ROOT / "akasha").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            strings: list[ast.AST] = []
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in readers:
                    strings = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                strings = [node.slice]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith(("_VARIABLES", "_ENV")) for t in node.targets
            ):
                strings = [node.value]
            for s in strings:
                for const in ast.walk(s):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str) and name.match(const.value):
                        found.setdefault(const.value, f"{path.relative_to(ROOT)}:{const.lineno}")
    return found


def test_every_environment_variable_the_code_reads_is_documented():
    found = environment_variables_read_by_the_code()
    assert {"OPENAI_API_KEY", "GEMINI_API_KEY", "AKASHA_CACHE_DIR"} <= set(found), found
    docs = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    missing = {var: where for var, where in found.items() if var not in docs}
    assert not missing, f"environment variables read by akasha but not in the docs: {missing}"


def test_getting_started_has_the_readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = read("getting-started.md")
    commands = [line for line in readme.splitlines() if line.startswith(("python3 -m venv", "bash .ci/run"))]
    assert len(commands) == 2, commands
    for command in commands:
        assert command in page, f"docs/getting-started.md should show the README command: {command}"
