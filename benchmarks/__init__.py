"""Benchmark scripts: each prints side-by-side figures in one run (results in BENCHMARKS.md).

Run them as modules from the repository root, ``.venv/bin/python -m benchmarks.NAME --help``, so that
``benchmarks.lib`` (shared helpers, not scripts) imports without touching ``sys.path``.
"""
