"""``pi-core serve``: with no arguments the demo agent's page on 127.0.0.1, optionally behind a
bearer token read from the environment."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest

from backends import BACKENDS
from ui.browser import served_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from _cli_process import LiveCli, run_cli

from pi_core.cli._serve import GRACEFUL_TIMEOUT

RUN_INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "what is 6*7? sleep 0"}],
}


def test_serve_without_arguments_chats_with_the_demo_agent() -> None:
    with served_page() as (_, url):
        assert url.startswith("http://127.0.0.1:")  # bound to the loopback by default
        page = httpx.get(url + "/")
        answer = httpx.post(url + "/api/agui", json=RUN_INPUT, timeout=30)
    assert page.status_code == 200 and "<title>pi-core</title>" in page.text
    events = [
        json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")
    ]
    assert events[-1]["type"] == "RUN_FINISHED"
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert "6*7 = 42" in results


def test_serve_with_a_token_answers_nothing_without_it() -> None:
    with served_page("--token-env", "UI_TOKEN", env={"UI_TOKEN": "tok-123"}) as (server, url):
        refused = httpx.get(url + "/api/info")
        served = httpx.get(url + "/api/info", headers={"Authorization": "Bearer tok-123"})
        page = httpx.get(url + "/")  # the page, which holds no data, asks for the token
    assert refused.status_code == 401
    assert served.status_code == 200
    assert page.status_code == 200 and "tok-123" not in page.text
    assert "tok-123" not in server.output


def test_serve_refuses_an_unset_token_variable() -> None:
    done = run_cli("serve", "--port", "0", "--token-env", "UI_TOKEN_UNSET")
    assert done.returncode == 2
    assert "UI_TOKEN_UNSET" in done.stderr


def test_serve_stops_gracefully_on_a_ctrl_c_sent_while_it_binds() -> None:
    with LiveCli("serve", "--port", "0", merge_stderr=True) as server:
        server.wait_for("Ctrl-C stops")
        server.interrupt()
        assert server.finish() == 0, server.output
    assert "Traceback" not in server.output


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_after_a_streamed_run_does_not_wait_for_the_clients_idle_connection(
    backend: str,
) -> None:
    # A browser keeps its connection after a run's stream; hypercorn on trio would wait the
    # whole graceful timeout (10 s) for it at Ctrl-C. A streamed run closes its connection.
    with httpx.Client() as client:  # kept open, as a browser keeps it, until the server is gone
        with served_page("--backend", backend) as (_, url):  # its exit: Ctrl-C, then exit 0
            with client.stream("POST", url + "/api/agui", json=RUN_INPUT) as answer:
                lines = list(answer.iter_lines())
                assert answer.headers["connection"] == "close"
            assert any('"RUN_FINISHED"' in line for line in lines)
            info = client.get(url + "/api/info")  # a short answer keeps its connection
            assert "connection" not in info.headers
            started = time.monotonic()
        assert time.monotonic() - started < GRACEFUL_TIMEOUT / 2
