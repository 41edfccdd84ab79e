"""What a running archive worker says about itself (``tablectl floor archive``, docs/floor.md "Watching it").

At start one line: what it consumes (from which floor broker, as whom) and where it stores (the database,
without its password). Then every ``interval`` seconds (default a minute) one line with the figures: events
stored (in all and in the interval), duplicates, rejected messages, batch retries, the lag, the gaps being
repaired, re-fetches asked and answered, events given up on; and the same figures as a JSON document
(``--status-file``, like ``tablectl status --json``) and as a node_exporter textfile (``--metrics-file``), both
written atomically. The lag is this worker's over the interval: from each live event's ``ts`` (stamped by the
table) to the commit that stored it, the figure of docs/performance.md (PostgreSQL ``received_at`` minus ``ts``).

The worker's figures come through ``ArchiveWorker.counters()`` and ``ArchiveWorker.take_lags()`` only.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from controller import __version__
from controller.ops.textfile import prometheus_label, prometheus_number, write_atomic
from floor.archive.worker import ArchiveConfig, ArchiveCounters, ArchiveWorker
from floor.common.messages import CHECKPOINT_TOPIC, SOFTWARE_TOPIC, TableRef

log = logging.getLogger("floor.archive")
FORMAT = "tablectl-floor-archive/1"
DEFAULT_INTERVAL_S = 60.0


@dataclass(frozen=True, slots=True)
class Lag:
    """Seconds from a live event's ``ts`` (stamped by the table) to this worker's commit, over the interval."""

    events: int  # live events committed in the interval
    p50_s: float | None  # None: no live event in the interval
    max_s: float | None

    @classmethod
    def of(cls, seconds: list[float]) -> Lag:
        if not seconds:
            return cls(0, None, None)
        ordered = sorted(seconds)
        return cls(len(ordered), ordered[(len(ordered) - 1) // 2], ordered[-1])


@dataclass(frozen=True, slots=True)
class ArchiveStatus:
    worker: str
    version: str
    pid: int
    started_at: float  # Unix seconds
    written_at: float
    interval_s: float
    broker: str  # host:port
    consumes: str
    stores: str  # the database, without a password
    counters: ArchiveCounters
    stored_in_interval: int
    lag: Lag
    format: str = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def safe_dsn(dsn: str) -> str:
    """The connection string without its password: ``user@host:port/dbname``."""
    try:
        p = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unreadable connection string)"
    host = p.get("host") or "localhost"
    port = f":{p['port']}" if p.get("port") else ""
    user = f"{p['user']}@" if p.get("user") else ""
    return f"postgresql://{user}{host}{port}/{p.get('dbname') or ''}"


def consumes(cfg: ArchiveConfig) -> str:
    base = f"casino/{cfg.site}/table/+"
    retained = ", ".join(f"{base}/{rel}" for rel in ("status", SOFTWARE_TOPIC, CHECKPOINT_TOPIC))
    return f"$share/{cfg.group}/{base}/# and {retained}"


def start_line(cfg: ArchiveConfig, interval: float, files: list[Path]) -> str:
    tls = f"TLS, CA {cfg.tls.ca}" if cfg.tls is not None else "no TLS"
    reports = f"; status every {interval:g} s" + (f" to {', '.join(map(str, files))}" if files else "")
    return (f"archive worker {cfg.worker} (tablectl {__version__}): consumes {consumes(cfg)} from the floor broker "
            f"{cfg.host}:{cfg.port} ({tls}) as {cfg.username}; stores into {safe_dsn(cfg.dsn)}{reports}")  # fmt: skip


def figures_line(st: ArchiveStatus) -> str:
    c = st.counters
    if not st.lag.events:
        lag = f"lag: no live events in the last {st.interval_s:g} s"
    else:
        lag = f"lag p50 {st.lag.p50_s:.3f} s max {st.lag.max_s:.3f} s ({st.lag.events} events)"
    return (f"archive worker {st.worker}: stored {c.stored} (+{st.stored_in_interval} in {st.interval_s:g} s), "
            f"duplicates {c.duplicates}, rejected {c.rejected}, retries {c.retries}; {lag}; open gaps {c.open_gaps}, "
            f"re-fetches {c.refetch_requests} (answered {c.refetch_answers}), missing alerted {c.missing_alerts}; "
            f"{'repairing' if c.repairs_held else 'not repairing'}, "
            f"{'connected' if c.connected else 'NOT CONNECTED'}")  # fmt: skip


def prometheus(st: ArchiveStatus) -> str:
    """The figures as Prometheus text exposition format, metric names ``tablectl_floor_archive_``."""
    base = f'worker="{prometheus_label(st.worker)}"'
    out: list[str] = []
    c = st.counters

    def metric(name: str, kind: str, help_text: str, value: float) -> None:
        out.append(f"# HELP tablectl_floor_archive_{name} {help_text}")
        out.append(f"# TYPE tablectl_floor_archive_{name} {kind}")
        out.append(f"tablectl_floor_archive_{name}{{{base}}} {prometheus_number(value)}")

    metric("connected", "gauge", "Subscribed on the floor broker (1) or not (0).", int(c.connected))
    metric("stored_total", "counter", "Events stored (new rows).", c.stored)
    metric("received_total", "counter", "Messages received.", c.received)
    metric("duplicates_total", "counter", "Events received again and not stored twice.", c.duplicates)
    metric("rejected_total", "counter", "Messages refused (see rejected_messages).", c.rejected)
    metric("retries_total", "counter", "Batches retried after a database error.", c.retries)
    metric("refetch_requests_total", "counter", "Re-fetch requests sent to tables.", c.refetch_requests)
    metric("refetch_answers_total", "counter", "Re-fetch requests answered.", c.refetch_answers)
    metric("missing_alerts_total", "counter", "Events given up on (event_missing alerts).", c.missing_alerts)
    metric("open_gaps", "gauge", "Gaps being repaired now.", c.open_gaps)
    metric("repairs_held", "gauge", "This worker holds the repair lock (1) or not (0).", int(c.repairs_held))
    of = "seconds from a live event's ts to its commit, over the last interval (0: no live event)."
    metric("lag_p50_seconds", "gauge", f"Median {of}", round(st.lag.p50_s or 0.0, 6))
    metric("lag_max_seconds", "gauge", f"Largest {of}", round(st.lag.max_s or 0.0, 6))
    metric("lag_events", "gauge", "Live events committed in the last interval.", st.lag.events)
    metric(
        "uptime_seconds",
        "gauge",
        "Seconds since the worker started.",
        round(st.written_at - st.started_at, 3),
    )
    return "\n".join(out) + "\n"


class Reporter:
    """A thread: every ``interval`` seconds one figures line (INFO) and the status files; once more at stop."""

    def __init__(self, worker: ArchiveWorker, interval: float = DEFAULT_INTERVAL_S, *,
                 status_file: Path | None = None, metrics_file: Path | None = None) -> None:  # fmt: skip
        self.worker, self.cfg, self.interval = worker, worker.cfg, interval
        self.status_file, self.metrics_file = status_file, metrics_file
        self.started_at = time.time()
        self._last_stored = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"floor-report-{self.cfg.worker}", daemon=True)

    @property
    def files(self) -> list[Path]:
        return [f for f in (self.status_file, self.metrics_file) if f is not None]

    def start(self) -> Reporter:
        log.info("%s", start_line(self.cfg, self.interval, self.files))
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.report()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.report()

    def report(self) -> ArchiveStatus:
        counters = self.worker.counters()
        st = ArchiveStatus(
            worker=self.cfg.worker, version=__version__, pid=os.getpid(), started_at=self.started_at,
            written_at=time.time(), interval_s=self.interval, broker=f"{self.cfg.host}:{self.cfg.port}",
            consumes=consumes(self.cfg), stores=safe_dsn(self.cfg.dsn), counters=counters,
            stored_in_interval=counters.stored - self._last_stored, lag=self._lag(),
        )  # fmt: skip
        self._last_stored = counters.stored
        log.info("%s", figures_line(st))
        try:
            if self.status_file is not None:
                write_atomic(self.status_file, st.to_json() + "\n")
            if self.metrics_file is not None:
                write_atomic(self.metrics_file, prometheus(st))
        except OSError as exc:
            log.warning("archive worker %s: cannot write its status: %s", self.cfg.worker, exc)
        return st

    def _lag(self) -> Lag:
        """This worker's lag over the interval; with --verbose (DEBUG) also one line per table."""
        taken = self.worker.take_lags()
        if log.isEnabledFor(logging.DEBUG):
            by_table: dict[TableRef, list[float]] = {}
            for table, seconds in taken:
                by_table.setdefault(table, []).append(seconds)
            for table, table_seconds in sorted(by_table.items(), key=lambda kv: kv[0].prefix):
                t = Lag.of(table_seconds)
                log.debug("table %s/%s: %d live events in %g s, lag p50 %.3f s max %.3f s", table.site,
                          table.table_id, t.events, self.interval, t.p50_s or 0.0, t.max_s or 0.0)  # fmt: skip
        return Lag.of([seconds for _, seconds in taken])
