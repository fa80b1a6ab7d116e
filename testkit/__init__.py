"""Test and benchmark support: parts the tests and the benchmarks both use (the stand-in model server).

Not shipped: the package build includes only `symphony_mcp`. Importable from the repository root, where
pytest and the benchmarks run.
"""
