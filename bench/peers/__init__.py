"""Python peers: pi_core's per-turn framework cost next to other Python agent frameworks.

``python -m bench.peers`` (or ``nox -s bench_peers``) times the *turns* scenario of ``bench`` in
pydantic-ai and in openai-agents, and pi_core itself as the reference, each case in its own
process: a run of T turns (200 unless ``--turns`` says otherwise) against a scripted instant model
whose replies stream three text deltas and one call to a no-op tool (the last reply is text only),
reported as wall time per turn. See ``bench/peers/README.md`` for what each peer runs and how far
the figures compare.

The peers are optional: they are pinned in ``bench/peers/requirements.txt`` and are not
dependencies of pi_core or of its other sessions.
"""
