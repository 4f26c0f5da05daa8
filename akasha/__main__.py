"""``python -m akasha``: the same as the ``akasha`` command."""

from akasha.cli import run

run()
