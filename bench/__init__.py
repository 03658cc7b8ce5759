"""pi_core benchmarks: the DESIGN scenarios, their floors and the Node original, side by side.

Run ``python -m bench --help`` (or ``nox -s bench``). Nothing here runs under pytest except the
tiny smoke test in ``tests/test_bench_smoke.py``.
"""
