"""Property-based fuzzing of every tool the server lists, through the real MCP client.

`sandbox.py` runs the server under test in a throw-away tree with a group id of its own (so every file it
creates anywhere can be found), `values.py` draws arguments from each tool's own input schema (valid ones and
hostile ones), `desktop_state.py` reads what the X server holds down, `harness.py` makes the calls and checks
the invariants after each, and `raw_stdio.py` sends what the MCP client cannot serialise (NaN, Infinity, lone
surrogates) as raw JSON-RPC lines. The CI test (tests/test_fuzz_tools.py) and the long benchmark
(benchmarks/robustness/fuzz_tools.py) share all of it.
"""
