"""The ``pi-core`` command line in a subprocess, for the end-to-end tests.

:class:`LiveCli` reads the child's stdout in a thread, so that a test can wait for a marker line
(with a timeout) before it acts: ordering by output, never by sleeping.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping

TIMEOUT = 60.0
"""Seconds any single wait may take before the test fails (a hang guard, not a pace)."""


def cli_env(
    extra: Mapping[str, str] | None = None, *, drop: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment of a child: no provider keys, no colors, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    for name in drop:
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra or {})
    return env


def run_cli(
    *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pi_core ARGS`` to completion."""
    return subprocess.run(
        [sys.executable, "-m", "pi_core", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=cli_env(env),
        timeout=TIMEOUT,
        check=False,
    )


class LiveCli:
    """A running ``python -m pi_core ARGS`` with piped stdin and stdout."""

    def __init__(
        self, *args: str, env: Mapping[str, str] | None = None, merge_stderr: bool = False
    ) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pi_core", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=cli_env(env),
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, marker: str) -> str:
        """Read output lines until one contains ``marker``; return that line."""
        while True:
            line = self._queue.get(timeout=TIMEOUT)
            if line is None:
                raise AssertionError(f"output ended before {marker!r}:\n{self.output}")
            self.lines.append(line)
            if marker in line:
                return line

    def send_line(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def interrupt(self) -> None:
        """Ctrl-C, as the terminal sends it."""
        self.process.send_signal(signal.SIGINT)

    def finish(self) -> int:
        """Wait for the exit; read the rest of the output; return the exit status."""
        code = self.process.wait(timeout=TIMEOUT)
        while (line := self._queue.get(timeout=TIMEOUT)) is not None:
            self.lines.append(line)
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stderr(self) -> str:
        """The child's stderr; only after :meth:`finish`."""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def __enter__(self) -> LiveCli:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Kill the child if it still runs, and close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:  # stdin of a dead child: the buffered flush has nowhere to go
                    pass
