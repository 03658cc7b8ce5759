"""``pi-core serve-proxy``: it never serves without a token; with one, clients reach the demo."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from _cli_process import LiveCli, run_cli

from backends import BACKENDS


@pytest.mark.parametrize(
    ("args", "env", "variable"),
    [
        ([], {}, "PI_CORE_PROXY_TOKEN"),
        ([], {"PI_CORE_PROXY_TOKEN": ""}, "PI_CORE_PROXY_TOKEN"),
        (["--token-env", "MY_PROXY_SECRET"], {"PI_CORE_PROXY_TOKEN": "unused"}, "MY_PROXY_SECRET"),
    ],
)
def test_serve_proxy_refuses_to_start_without_a_token(
    args: list[str], env: dict[str, str], variable: str
) -> None:
    done = run_cli("serve-proxy", "--port", "0", *args, env=env)
    assert done.returncode == 2
    assert f"refusing to serve without a token: set the environment variable {variable}" in (
        done.stderr
    )
    assert done.stdout == ""


def test_serve_proxy_rejects_a_bad_port() -> None:
    done = run_cli("serve-proxy", "--port", "eighty")
    assert done.returncode == 2
    assert "invalid int value" in done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_client_runs_the_demo_through_the_proxy(backend: str) -> None:
    token = {"PI_CORE_PROXY_TOKEN": "test-token"}
    with LiveCli(
        "serve-proxy", "--port", "0", "--backend", backend, env=token, merge_stderr=True
    ) as server:
        match = re.search(r"Running on (http://127\.0\.0\.1:\d+)", server.wait_for("Running on"))
        assert match is not None
        url = match.group(1)
        client = ("run", "--provider", "proxy", "--base-url", url, "2*21, sleep 0 s")
        done = run_cli(*client, env=token)
        refused = run_cli(*client, env={"PI_CORE_PROXY_TOKEN": "wrong"})
        server.interrupt()
        code = server.finish()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"pi-demo (pi-demo) via proxy {url}" in done.stdout
    assert "✓ calculate: 2*21 = 42" in done.stdout
    assert "done · 2 turns · 3 tool calls" in done.stdout
    assert refused.returncode == 1
    assert "error: Proxy error: " in refused.stdout
    assert code == 0
    assert "test-token" not in server.output


def listen_backlog(port: int) -> int:
    """The backlog of the socket listening on ``port`` (``ss`` shows it as its Send-Q)."""
    done = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    )
    [line] = done.stdout.strip().splitlines()
    return int(line.split()[2])


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
@pytest.mark.parametrize(("args", "backlog"), [([], 2048), (["--backlog", "300"], 300)])
def test_serve_proxy_listens_with_a_large_backlog(args: list[str], backlog: int) -> None:
    with LiveCli(
        "serve-proxy", "--port", "0", *args, env={"PI_CORE_PROXY_TOKEN": "t"}, merge_stderr=True
    ) as server:
        match = re.search(r"Running on http://127\.0\.0\.1:(\d+)", server.wait_for("Running on"))
        assert match is not None
        found = listen_backlog(int(match.group(1)))
        server.interrupt()
        assert server.finish() == 0, server.output
    assert found == backlog


@pytest.mark.parametrize("backend", BACKENDS)
def test_serve_proxy_stops_gracefully_on_a_ctrl_c_sent_while_it_binds(backend: str) -> None:
    """The first line announces Ctrl-C; from then on it stops the server cleanly, even before
    hypercorn has bound the port and waits for it."""
    with LiveCli(
        "serve-proxy",
        "--port",
        "0",
        "--backend",
        backend,
        env={"PI_CORE_PROXY_TOKEN": "t"},
        merge_stderr=True,
    ) as server:
        server.wait_for("Ctrl-C stops")
        server.interrupt()
        assert server.finish() == 0, server.output
    assert "Traceback" not in server.output


def test_serve_proxy_rejects_a_backlog_below_one() -> None:
    done = run_cli("serve-proxy", "--backlog", "0", env={"PI_CORE_PROXY_TOKEN": "t"})
    assert done.returncode == 2
    assert "must be at least 1, got 0" in done.stderr
