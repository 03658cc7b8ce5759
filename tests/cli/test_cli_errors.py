"""``pi-core run -v`` against real servers on 127.0.0.1 that fail: the error says what failed and
where, and never shows the key, not even when the server quotes it back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from _cli_process import run_cli

SHAPED_KEY = "sk-proj-Zq8Rw2Lx7Vn4Tb6Hc1Jd9Kf3Mg5Ps0Yy"
OPAQUE_KEY = "gw7f3a9c21d4e5b6a8"
"""A gateway's key of no known shape: only the knowledge of what was sent can hide it."""


class _QuotingHandler(BaseHTTPRequestHandler):
    """Answers every POST with a 401 that quotes the bearer token, as OpenAI's does."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        error = {
            "message": f"Incorrect API key provided: {key}. Check it.",
            "code": "invalid_api_key",
        }
        body = json.dumps({"error": error}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # keep the test output clean
        pass


@pytest.fixture
def quoting_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _QuotingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("key", [SHAPED_KEY, OPAQUE_KEY], ids=["shaped", "opaque"])
def test_run_verbose_never_prints_a_key_the_server_quotes(quoting_server: str, key: str) -> None:
    args = ("run", "-v", "--provider", "openai", "--model", "m", "--base-url", quoting_server)
    done = run_cli(*args, "hi", env={"OPENAI_API_KEY": key})
    assert done.returncode == 1, done.stderr
    shown = "error: 401 Unauthorized: Incorrect API key provided: [redacted]. Check it."
    assert shown in done.stdout
    # --provider openai at a server of its own: the model is named after the server.
    assert "ERROR pi_core: Model call to 127.0.0.1/m failed: 401 Unauthorized" in done.stderr
    assert key not in done.stdout + done.stderr


def test_a_refused_connection_names_the_url_and_the_cause(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    args = ("run", "-v", "--provider", "openai", "--model", "m", "--base-url", base_url, "hi")
    done = run_cli(*args, env={"OPENAI_API_KEY": SHAPED_KEY})
    assert done.returncode == 1, done.stderr
    assert (
        f"error: Connection error ({base_url}/chat/completions): Connection refused" in done.stdout
    )
    assert SHAPED_KEY not in done.stdout + done.stderr
