"""WAL checkpoints off the card's path: a thread with its own connection copies the write-ahead log into the
database file, so that no card's COMMIT does it (issue 44).

SQLite's default (``wal_autocheckpoint=1000``) runs the checkpoint inside the COMMIT that takes the log past 1,000
pages: that commit then also writes the log's pages into the database file and waits for two more fsyncs. With
about 14 pages a card, one card in ~70 paid for it: the journal commit's p99 (docs/performance.md).

Here the writer's automatic checkpoint is moved out to ``LIMIT_PAGES``, a safety net that fires only if this thread
falls that far behind (it stopped, or the table commits faster than it can copy), and the thread runs a PASSIVE
checkpoint (it never waits for, nor blocks, the writer) right after every ``COMMITS``-th commit (the moment the next
card is furthest away), or once the journal has been quiet for ``IDLE_S`` with anything left in the log. When commits
came during a checkpoint it copies again at once: the writer starts the log again from its beginning only once a
checkpoint has copied all of it, and a log used again is overwritten in place (each commit's fsync then has no
new file size to record). Its connection runs with ``synchronous=FULL``.

Durability is SQLite's own and unchanged: every COMMIT is durable in the log when it returns (the writer's
``synchronous=FULL``); a checkpoint copies committed pages, fsyncs the database file, and only then marks them
copied; the writer rewinds the log only after every frame was copied and synced. A crash or power cut mid-checkpoint
leaves the log whole, and the next open replays it.

Not ``controller/journal/checkpointer.py``: that one writes the signed audit checkpoints into the chain; this one
only moves pages between SQLite's two files and writes no record."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

COMMITS = 64  # commits between checkpoints (~900 log pages at ~14 a card: about SQLite's default of 1,000)
IDLE_S = 5.0  # a journal quiet this long is checkpointed (a table at rest keeps an empty log)
POLL_S = 0.25  # how often the thread looks at the commit count
LIMIT_PAGES = 8000  # the writer's own autocheckpoint: only if this thread falls behind (~32 MiB of log)


@dataclass(frozen=True, slots=True)
class CheckpointResult:
    """One ``PRAGMA wal_checkpoint(PASSIVE)``: whether it was refused (another checkpoint ran), the log's frames,
    and how many of them are now in the database file."""

    busy: bool
    log_frames: int
    copied_frames: int


class WalCheckpoints:
    """The checkpoint thread of one journal file. The writer calls ``committed()`` after each COMMIT."""

    def __init__(
        self,
        path: Path,
        *,
        every_commits: int = COMMITS,
        idle_s: float = IDLE_S,
        poll_s: float = POLL_S,
    ) -> None:
        self.path = path
        self.commits = 0  # the writer's COMMITs since start (counted on its thread, read on this one)
        self._copied_at = 0  # ``commits`` when the last checkpoint began
        self.every_commits = every_commits
        self.idle_s = idle_s
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0  # times the thread looked at the commit count
        self.checkpoints = 0  # PASSIVE checkpoints run
        self.failures = 0  # checkpoints that raised (tried again at the next occasion)
        self.last_result: CheckpointResult | None = None
        self.last_error = ""

    def start(self) -> None:
        """Open the thread's connection and start it (again after ``stop``); nothing if it runs already."""
        if self._thread is not None:
            return
        self._stop.clear()
        ready = threading.Event()
        problem: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(ready, problem), name=f"wal-checkpoints:{self.path.name}", daemon=True
        )
        self._thread.start()
        ready.wait()
        if problem:  # the connection could not be opened: say so now, not in a thread nobody watches
            self._thread.join()
            self._thread = None
            raise problem[0]

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def committed(self) -> None:
        """Called by the writer after each COMMIT (cheap: a count, and a wake-up every ``every_commits``)."""
        self.commits += 1
        if self.commits - self._copied_at >= self.every_commits:
            self._wake.set()

    def checkpoint_soon(self) -> None:
        """Run a checkpoint at the thread's next pass, whatever the count (tests, an orderly quiet moment)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """End the thread after the checkpoint it is running (if any), its connection closed. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        thread.join(timeout)
        if thread.is_alive():  # a checkpoint stuck in the disk: the process exits without it (daemon)
            log.error("WAL checkpoint thread did not stop within %.0f s", timeout)

    def _run(self, ready: threading.Event, problem: list[BaseException]) -> None:
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA synchronous=FULL")  # the database file synced before the log may be rewound
        except BaseException as exc:  # handed to start(), which raises it
            problem.append(exc)
            ready.set()
            return
        ready.set()
        try:
            self._loop(conn)
        finally:
            conn.close()

    def _loop(self, conn: sqlite3.Connection) -> None:
        seen, changed_at = self.commits, time.monotonic()
        while not self._stop.is_set():
            woken = self._wake.wait(self.poll_s)
            # cleared only when seen: a wake-up set after a timed-out wait is taken at the next pass (one set
            # before this clear is covered by the checkpoint that follows)
            if woken:
                self._wake.clear()
            if self._stop.is_set():
                return
            self.passes += 1
            commits, now = self.commits, time.monotonic()
            if commits != seen:
                seen, changed_at = commits, now
            waiting = commits - self._copied_at
            quiet = waiting > 0 and now - changed_at >= self.idle_s
            if woken or waiting >= self.every_commits or quiet:
                self._copied_at = commits  # committed before the checkpoint began: in it (or it failed)
                if self._checkpoint(conn) and self.commits != commits:
                    self._wake.set()  # commits came meanwhile: copy them now, while they are few

    def _checkpoint(self, conn: sqlite3.Connection) -> bool:
        """One PASSIVE checkpoint; False if it failed."""
        try:
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # the commits are safe in the log; the writer's LIMIT_PAGES bounds it
            self.failures += 1
            if self.last_error != str(exc):
                log.warning("WAL checkpoint failed (tried again later): %s", exc)
            self.last_error = str(exc)
            return False
        if self.last_error:
            log.info("WAL checkpoint works again")
            self.last_error = ""
        self.last_result = CheckpointResult(bool(busy), int(frames), int(copied))
        self.checkpoints += 1
        return True
