"""WAL checkpoints off the card's path (controller/journal/wal_checkpoints.py, issue 44): no COMMIT copies the log
into the database file while the thread runs, the thread does, it stops cleanly, and a process killed in the middle
of one loses nothing it committed."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.journal import Journal, JournalError
from controller.journal.wal_checkpoints import LIMIT_PAGES

PAGE = 4096
FRAME = 24 + PAGE  # a WAL frame: its header and one page
SQLITE_DEFAULT_AUTOCHECKPOINT = 1000  # pages: where SQLite checkpoints inside a COMMIT by default
NEVER = {"every_commits": 10**9, "idle_s": 3600.0}  # a thread that copies only when asked


def _card(j: Journal, i: int, size: int = 3000) -> None:
    """One card's transaction: its record and its event (each ~``size`` bytes: a couple of pages a commit)."""
    with j.transaction() as tx:
        tx.append("card", {"i": i, "pad": "x" * size})
        tx.publish("events/card", "card", {"i": i, "pad": "y" * size})


def _db_file(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def _wait(cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


def _wal_frames(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return (wal.stat().st_size - 32) // FRAME if wal.exists() else 0


def _commits_until_log_passes(j: Journal, pages: int, on_commit: Callable[[], None]) -> int:
    i = 0
    while _wal_frames(j.path) <= pages:
        _card(j, i)
        on_commit()
        i += 1
    return i


def test_no_commit_writes_the_database_file_while_the_thread_checkpoints(tmp_path: Path) -> None:
    """Past SQLite's default 1,000 pages of log, the commits still write only the log: the database file (which only a
    checkpoint writes in WAL mode) does not change during any of them."""
    j = Journal(tmp_path / "j.db")
    j.start_wal_checkpoints(**NEVER)
    _card(j, -1)
    db = _db_file(j.path)
    changed: list[int] = []

    def check() -> None:
        if _db_file(j.path) != db:
            changed.append(j.last_seq)

    n = _commits_until_log_passes(j, SQLITE_DEFAULT_AUTOCHECKPOINT + 50, check)
    assert changed == [], f"the database file was written by the commit of record {changed[0]}"
    assert _wal_frames(j.path) < LIMIT_PAGES  # the writer's own safety net was not reached either
    assert n > 10 and j.verify().ok
    j.close()


def test_without_the_thread_sqlite_checkpoints_inside_a_commit(tmp_path: Path) -> None:
    """The contrast that makes the test above mean something: SQLite's default copies the log inside a COMMIT."""
    j = Journal(tmp_path / "j.db")
    _card(j, -1)
    db = _db_file(j.path)
    changed: list[int] = []

    def check() -> None:
        if _db_file(j.path) != db:
            changed.append(j.last_seq)

    for i in range(2 * SQLITE_DEFAULT_AUTOCHECKPOINT):
        _card(j, i)
        check()
        if changed:
            break
    assert changed, "SQLite never checkpointed inside a commit: the test above proves nothing on this build"
    j.close()


def test_the_thread_copies_the_log_into_the_database_file_and_the_log_is_reused(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    wal = j.start_wal_checkpoints(**NEVER, poll_s=0.01)
    sizes = []
    for burst in range(12):
        for i in range(20):
            _card(j, burst * 100 + i)
        done = wal.checkpoints
        wal.checkpoint_soon()
        _wait(lambda d=done: wal.checkpoints > d, "a checkpoint")  # type: ignore[misc]
        result = wal.last_result
        assert result is not None and not result.busy and result.copied_frames == result.log_frames
        sizes.append(j.path.with_name("j.db-wal").stat().st_size)
    # each burst's commits start the log again from its beginning once the thread has copied all of it: the file
    # stays the size of about one burst (without the thread it grows with every burst: 12 times that)
    assert max(sizes) < 3 * sizes[0], sizes
    last = j.last_seq
    wal.stop()
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(j.path, copy / "j.db")  # the database file alone, without the log
    alone = sqlite3.connect(copy / "j.db")
    assert alone.execute("SELECT MAX(seq) FROM records").fetchone()[0] == last
    alone.close()
    j.close()


def test_the_thread_checkpoints_a_journal_gone_quiet(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    wal = j.start_wal_checkpoints(every_commits=10**9, idle_s=0.05, poll_s=0.01)
    for i in range(5):
        _card(j, i)
    _wait(lambda: wal.checkpoints >= 1, "the idle checkpoint")
    result = wal.last_result
    assert result is not None and result.log_frames > 0 and result.copied_frames == result.log_frames
    checkpoints, passes = wal.checkpoints, wal.passes
    _wait(lambda: wal.passes >= passes + 20, "twenty more passes of the thread")
    assert wal.checkpoints == checkpoints  # nothing committed since: a journal already copied is left alone
    j.close()


def _wal_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("wal-checkpoints:")]


def test_the_thread_stops_cleanly_and_the_journal_goes_on_writing(tmp_path: Path) -> None:
    before = set(_wal_threads())
    j = Journal(tmp_path / "j.db")
    wal = j.start_wal_checkpoints(every_commits=1, poll_s=0.001)
    assert j.start_wal_checkpoints() is wal  # one thread per journal
    assert wal.running and len(set(_wal_threads()) - before) == 1
    for i in range(30):
        _card(j, i)
    _wait(lambda: wal.checkpoints >= 1, "a checkpoint")
    wal.stop()
    assert not wal.running and set(_wal_threads()) - before == set()
    wal.stop()  # again: nothing to do
    count = wal.checkpoints
    for i in range(30, 60):
        _card(j, i)
    assert wal.checkpoints == count and wal.failures == 0
    assert j.start_wal_checkpoints() is wal and wal.running  # started again, on a connection of its own again
    _card(j, 60)
    _wait(lambda: wal.checkpoints > count, "a checkpoint after the restart")
    assert j.verify().ok and j.last_seq == 122
    j.close()
    assert not wal.running


def test_close_stops_the_thread_and_closes_its_connection(tmp_path: Path) -> None:
    """The journal's close ends the thread first: its own connection closed, the writer's is the last one, and its
    close copies the whole log and removes it (it would stay while another connection was open)."""
    before = set(_wal_threads())
    j = Journal(tmp_path / "j.db")
    wal = j.start_wal_checkpoints(**NEVER)
    for i in range(10):
        _card(j, i)
    assert (tmp_path / "j.db-wal").exists()
    j.close()
    assert not wal.running and set(_wal_threads()) - before == set()
    assert not (tmp_path / "j.db-wal").exists()
    again = Journal(tmp_path / "j.db")
    assert again.last_seq == 20 and again.verify().ok
    again.close()


def test_a_journal_opened_exclusively_gets_no_thread(tmp_path: Path) -> None:
    Journal(tmp_path / "j.db").close()
    j = Journal(tmp_path / "j.db", exclusive=True)
    with pytest.raises(JournalError, match="exclusively"):
        j.start_wal_checkpoints()
    assert j.wal_checkpoints is None
    j.close()


CRASH_WRITER = """
import sys
from controller.journal import Journal
from controller.journal.wal_checkpoints import WalCheckpoints

run = WalCheckpoints._checkpoint

def say(line):  # one write: lines of the two threads never mix
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()

def announced(self, conn):
    say("checkpoint")
    run(self, conn)

WalCheckpoints._checkpoint = announced
j = Journal(sys.argv[1])
j.start_wal_checkpoints(every_commits=8, poll_s=0.0005)
i = j.last_seq
while True:
    with j.transaction() as tx:
        tx.append("card", {"i": i, "pad": "x" * 6000})
        tx.publish("events/card", "card", {"i": i, "pad": "y" * 6000})
    say(str(j.last_seq))
    i += 1
"""


@pytest.mark.parametrize("checkpoints_before_kill", [1, 3, 7, 12, 20])
def test_a_process_killed_in_the_middle_of_a_checkpoint_loses_nothing_it_committed(
    tmp_path: Path, checkpoints_before_kill: int
) -> None:
    """The writer and its checkpoint thread run flat out; SIGKILL lands as the thread announces a checkpoint (the
    thread is then inside it, copying the log). Every record whose COMMIT had returned is there after the restart,
    the chain and the database are whole; five times on the same file, each kill during a later checkpoint."""
    db = tmp_path / "j.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acknowledged = 0
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CRASH_WRITER), str(db)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        seen = 0
        for line in proc.stdout:
            if line.startswith("checkpoint"):
                seen += 1
                if seen >= checkpoints_before_kill:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            else:
                acknowledged = int(line)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL and seen >= checkpoints_before_kill
        j = Journal(db)
        assert j.last_seq >= acknowledged  # every committed (printed) record is there
        assert j.verify().ok
        assert j._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [r.seq for r in j.records()] == list(range(1, j.last_seq + 1))
        j.close()
    assert acknowledged > 0
