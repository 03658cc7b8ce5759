"""A throwaway PostgreSQL server on 127.0.0.1, started from the machine's own binaries.

The durable tests (and ``python -m bench.durable``) need a real Postgres: :func:`start_postgres`
runs ``initdb`` and ``pg_ctl`` in a fresh directory, on a free port, with local trust
authentication; :meth:`PostgresServer.stop` stops it and deletes the directory. Postgres refuses to
run as root, so as root the server runs as the ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg

PREFIX = "pi-core-postgres-"
OWNER_FILE = "owner.pid"
"""The id of the process whose server it is: a server whose owner died is a leftover."""
INSTALL_HINT = (
    "PostgreSQL's server binaries (initdb, pg_ctl) were not found on PATH or in "
    "/usr/lib/postgresql/*/bin; install them (Debian/Ubuntu: apt-get install -y postgresql) "
    "to run the Postgres tests"
)
FAST_BUT_UNSAFE = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
"""Settings for a throwaway server: nothing here must survive a power cut."""


class PostgresNotFoundError(RuntimeError):
    """The server binaries are not installed."""


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest version.

    Raises:
        PostgresNotFoundError: neither place has them.
    """
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    if candidates:
        return Path(candidates[-1]).parent
    raise PostgresNotFoundError(INSTALL_HINT)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_user() -> pwd.struct_passwd | None:
    """Whom to run the server as: ourselves, unless we are root (Postgres refuses root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresNotFoundError("running as root, and neither a postgres nor a nobody user exists")


class PostgresServer:
    """A running throwaway server; :meth:`stop` ends it and deletes its files."""

    def __init__(
        self,
        bindir: Path,
        root: Path,
        port: int,
        user: pwd.struct_passwd | None,
        *,
        fast: bool = True,
    ) -> None:
        self.bindir = bindir
        self.root = root
        self.port = port
        self.fast = fast
        """Whether it skips the flushes to disk that make commits durable."""
        self._user = user

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        """The ``postgresql://`` URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create the (empty) database ``name``; return its URL."""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of the server's programs as the server's user; raise on failure."""
        command = [str(self.bindir / tool), *args]
        user = self._user
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        return done

    def start(self) -> None:
        self.run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8")
        self.resume()

    def pause(self) -> None:
        """Stop the server, keeping its data: an outage, until :meth:`resume`."""
        self.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data))

    def resume(self) -> None:
        """Start the server on its data (again), on the same port."""
        settings = [
            "listen_addresses=127.0.0.1",
            f"port={self.port}",
            f"unix_socket_directories={self.root}",
            "max_connections=200",
            *(FAST_BUT_UNSAFE if self.fast else ()),
        ]
        options = " ".join(f"-c {setting}" for setting in settings)
        log = str(self.root / "server.log")
        self.run("pg_ctl", "start", "-w", "-D", str(self.data), "-l", log, "-o", options)

    def stop(self) -> None:
        """Stop the server at once (its data is thrown away) and delete its directory."""
        try:
            if (self.data / "postmaster.pid").exists():  # not when paused
                self.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", str(self.data))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_postgres(*, fast: bool = True) -> PostgresServer:
    """Initialise and start a server in a new temporary directory.

    Args:
        fast: skip the flushes to disk (tests); ``False`` keeps Postgres's defaults (benchmarks).

    Raises:
        PostgresNotFoundError: the binaries are not installed.
    """
    bindir = find_bindir()
    user = server_user()
    remove_leftovers(bindir, user)
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    (root / OWNER_FILE).write_text(str(os.getpid()))
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    server = PostgresServer(bindir, root, free_port(), user, fast=fast)
    try:
        server.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server


def remove_leftovers(bindir: Path, user: pwd.struct_passwd | None) -> None:
    """Stop and delete the servers of test processes that died without stopping them.

    The server runs detached (``pg_ctl start``), so a test run killed from outside (a timeout)
    leaves it running; the next run cleans up after it.
    """
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        if _alive(owner):
            continue
        leftover = PostgresServer(bindir, root, 0, user)
        if (leftover.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                leftover.run("pg_ctl", "stop", "-w", "-m", "immediate", "-D", str(leftover.data))
        shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def running_postgres(*, fast: bool = True) -> Iterator[PostgresServer]:
    """A server for the length of the block (``fast`` as for :func:`start_postgres`)."""
    server = start_postgres(fast=fast)
    try:
        yield server
    finally:
        server.stop()
