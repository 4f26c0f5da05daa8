"""Benchmarks (run as modules, e.g. ``python -m bench.index_speed``); not part of the package."""
