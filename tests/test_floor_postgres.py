"""Nothing needs to be running before the tests (issue 26): where no database is given (``$FLOOR_TEST_DSN``
unset), the floor's tests run a PostgreSQL server of their own (tablebench/postgres.py), not the machine's
127.0.0.1:5432; it runs as an unprivileged account when the tests run as root, and it goes away with whoever
started it, stopped or killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tablebench.postgres import TEST_DSN_ENV, Postgres, shared_server
from tablebench.procs import running, stat_fields
from tests.support.floor import temp_database, wait_until


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


def test_the_test_database_lives_on_a_server_this_process_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEST_DSN_ENV, raising=False)
    with temp_database() as dsn:
        server = shared_server()
        with psycopg.connect(dsn) as conn:
            data_dir = conn.execute("SHOW data_directory").fetchone()[0]
            port = int(conn.execute("SHOW port").fetchone()[0])
            postmaster = conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]
        assert port == server.port != 5432
        assert Path(data_dir) == server.data_dir  # a private directory, not the machine's cluster
        pid_file = (server.data_dir / "postmaster.pid").read_text().splitlines()
        assert int(pid_file[0]) == server.pid  # the server is this process's child (setpriv execs it)
        assert stat_fields(server.pid)[1] == str(os.getpid())
        assert postmaster is not None
        if os.geteuid() == 0:
            assert _uid(server.pid) != 0  # initdb and postgres refuse root: it runs as the postgres account


def test_a_private_server_is_stopped_and_removed(tmp_path: Path) -> None:
    server = Postgres.start()
    pid, workdir = server.pid, server.workdir
    assert pid is not None and workdir.is_dir()
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE kept_nowhere")
    server.stop()
    assert not running(pid), "postgres still running after stop()"
    assert not workdir.exists(), "the private directory was left behind"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.dsn(), connect_timeout=3)


_ORPHAN = """
import sys, time
from tablebench.postgres import Postgres
s = Postgres.start()
print(s.pid, s.workdir, flush=True)
time.sleep(600)
"""


def test_the_server_goes_when_its_starter_is_killed() -> None:
    starter = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        line = starter.stdout.readline().split()
        assert line, "the starter did not start a server"
        pid, workdir = int(line[0]), Path(line[1])
        assert running(pid)
        starter.send_signal(signal.SIGKILL)  # no atexit, no stop(): only the parent-death signal is left
        starter.wait(30)
        wait_until(lambda: not running(pid), 60, "the orphaned postgres to shut down")
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
    shutil.rmtree(workdir, ignore_errors=True)  # removal was the killed starter's job


def test_a_server_started_from_another_thread_outlives_that_thread() -> None:
    """Linux's parent-death signal follows the thread that forked: a worker thread that starts the server and
    ends must not take it along (it stays until stop())."""
    started: list[Postgres] = []
    t = threading.Thread(target=lambda: started.append(Postgres.start()))
    t.start()
    t.join(120)
    assert started, "the server did not start"
    server = started[0]
    try:
        time.sleep(0.5)  # a signal from the thread's end would arrive at once; give it the chance to
        with psycopg.connect(server.dsn(), connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
