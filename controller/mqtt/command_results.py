"""Idempotency of the command intake: the answers already given, by (role, user, request id), so a retry gets
the recorded answer and the handler is not called twice. Kept for ``RESULT_RETENTION`` results, journaled as
``command_result`` records and rebuilt from the journal at start-up (controller/mqtt/commands.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import OrderedDict
from typing import Any

from controller.journal.store import KIND_INDEXED, Journal
from controller.mqtt.command_log import intake_log as log
from controller.mqtt.command_log import journal_failure
from controller.mqtt.command_payload import journal_text
from controller.mqtt.command_request import CommandRequest

RESULT_RECORD = "command_result"
RESULT_RETENTION = 10_000  # answered request ids remembered for idempotent retries
UNANSWERED_WINDOW = 1_000  # the newest inputs searched at start-up for a request committed but never answered

ResultKey = tuple[str, str, str]  # (role, user, request id)


class ResultBook:
    """The answered requests, rebuilt from the journal at start-up."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._results: OrderedDict[ResultKey, dict[str, Any]] = OrderedDict()
        self._unjournaled: list[dict[str, Any]] = []
        self._results_handle: asyncio.Handle | None = None
        with self.journal.transaction() as tx:
            rows = tx.execute(
                f"SELECT data FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC LIMIT ?",
                (RESULT_RECORD, RESULT_RETENTION),
            ).fetchall()
        for (data,) in reversed(rows):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                doc = json.loads(data)
                self._remember((doc["role"], doc["user"], doc["request_id"]), doc["response"])
        self._recover_unanswered()

    def __contains__(self, key: ResultKey) -> bool:
        return key in self._results

    def get(self, key: ResultKey) -> dict[str, Any] | None:
        return self._results.get(key)

    def _recover_unanswered(self) -> None:
        """Inputs committed with a request id after the last recorded answer: the controller stopped between
        the commit and the answer (kill -9). Their retry must not act again: it gets an answer saying so."""
        with self.journal.transaction() as tx:
            # Results are journaled just after their answers, so an input may precede the result record of an
            # earlier request; looking back from the 100th-last result covers that overlap.
            marks = tx.execute(
                f"SELECT seq FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC LIMIT 100",
                (RESULT_RECORD,),
            ).fetchall()
            since = marks[-1][0] if len(marks) == 100 else 0
            # at most the newest UNANSWERED_WINDOW inputs: an unanswered one is among the last few committed
            # before the stop, and a journal with few answers must not be read whole at every start
            rows = tx.execute(
                "SELECT data FROM (SELECT seq, data FROM records WHERE kind = 'input' AND seq > ?"
                " ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                (since, UNANSWERED_WINDOW),
            ).fetchall()
        for (data,) in rows:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                req = json.loads(data)["input"].get("request")
                if not isinstance(req, dict):
                    continue
                key = (str(req["role"]), str(req["user"]), str(req["request_id"]))
                if key not in self._results:
                    self._remember(
                        key,
                        {"request_id": key[2], "ok": True,
                         "result": {"recovered": True, "note": "committed before a restart; its answer was lost"}},
                    )  # fmt: skip

    def _remember(self, key: ResultKey, response: dict[str, Any]) -> None:
        self._results[key] = response
        self._results.move_to_end(key)
        while len(self._results) > RESULT_RETENTION:
            self._results.popitem(last=False)

    def record(self, req: CommandRequest, account: str, response: dict[str, Any]) -> None:
        """Remember the answer and journal it (the dealer's ``user`` field and handler refusals included). The
        record is written just after the answer goes out, several in one transaction, so it costs the answer no
        extra disk sync; if the controller dies before, the input record (which carries the request id, written
        with the action) still makes the retry answer without acting (``_recover_unanswered``)."""
        self._remember((req.role, req.user, req.request_id), response)
        self._unjournaled.append(
            {"role": req.role, "user": journal_text(req.user, 64), "account": account, "action": req.action,
             "request_id": req.request_id, "response": response}
        )  # fmt: skip
        if self._results_handle is None:
            try:
                self._results_handle = asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:
                self.flush()

    def flush(self) -> None:
        """Journal the answers given since the last flush (one transaction)."""
        self._results_handle = None
        pending, self._unjournaled = self._unjournaled, []
        if not pending:
            return
        try:
            with self.journal.transaction() as tx:
                for rec in pending:
                    tx.append(RESULT_RECORD, rec)
        except Exception as exc:
            if not journal_failure(exc, f"{len(pending)} command results"):
                log.exception("commands: could not journal %d command results", len(pending))
            # kept for the next flush (the journal_io fault is up meanwhile): nothing is lost, memory bounded
            self._unjournaled = (pending + self._unjournaled)[-RESULT_RETENTION:]
