"""``python -m akasha``: the same as the ``akasha`` command."""

import sys

from akasha.cli import main

sys.exit(main())
