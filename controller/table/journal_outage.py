"""The table shell while the journal cannot write (issue 14 item 3): the ``journal_io`` fault is entered at
once and carried out without the journal (outputs safe, its messages published directly, marked as not
journaled); the fault's input and any sensor input nobody can send again are kept and committed, in order,
once the journal writes again. Part of ``TableController`` (controller.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from controller.table import inputs
from controller.table.core import Step
from controller.table.effects import Rejected
from controller.table.journal_io import JournalProblem, JournalWriteFailed, classify, is_write_failure
from controller.table.messages import messages

log = logging.getLogger("controller.table.controller")  # the shell's one logger

HELD_INPUTS_MAX = 1000


class JournalOutage:
    """Attributes: see ``TableController.__init__``."""

    def _journal_failed(self, exc: BaseException) -> JournalProblem:
        """The fault at once: the core enters ``journal_io`` (its effects are carried out by the caller with
        ``_execute_unjournaled``, outside the lock) and the input is kept to be committed when it can be."""
        problem = classify(exc, self.journal.path.parent)
        first = self.journal_problem is None
        self.journal_problem = problem
        if first:
            log.critical("%s: the table goes into the journal_io fault", problem.text)
        if "journal_io" in self.core.faults:
            return problem
        inp = inputs.JournalFault(problem.kind, problem.text)
        now = self._clock()
        step = self.core.apply(inp, now)
        self._deferred.append((inp, now, step))
        self._fault_step = step
        return problem

    async def submit_or_hold(self, inp: inputs.Input) -> dict[str, Any] | None:
        """``submit`` for sensor inputs nobody can send again: if the journal cannot take it, it is held and
        submitted when the journal writes again (a lid switch opened during a disk fault is not forgotten)."""
        try:
            return await self.submit(inp)
        except JournalWriteFailed:
            if len(self._held) < HELD_INPUTS_MAX:
                self._held.append(inp)
            else:
                log.error("held sensor inputs full: %s dropped", inp)
            return None

    async def _submit_held(self) -> None:
        while self._held and self.journal_problem is None:
            inp = self._held.pop(0)
            try:
                await self.submit(inp)
            except JournalWriteFailed:
                self._held.insert(0, inp)
                return
            except Rejected as exc:
                log.info("held input %s refused: %s", inp, exc.reason)

    async def journal_failed_elsewhere(self, exc: BaseException) -> None:
        """Another part's journal write failed (an alert, a command's nonce, the outbox's deletes): the same
        fault, at once."""
        async with self._lock:
            if "journal_io" in self.core.faults and self.journal_problem is not None:
                return
            self._journal_failed(exc)
            step = self._take_fault_step()
        if step is not None:
            await self._execute_unjournaled(step)

    def _take_fault_step(self) -> Step | None:
        step, self._fault_step = self._fault_step, None
        return step

    def _journal_ok(self) -> None:
        if self._deferred:
            log.warning("journal writes again: %d deferred input(s) committed", len(self._deferred))
        self._deferred.clear()
        if self.journal_problem is None:
            return
        log.warning("journal writes again (was: %s)", self.journal_problem.text)
        self.journal_problem = None
        self.resend.ask_again(self.shoe)  # before anything else can take a later shoe event (shoe_resend.py)
        if self.journal_back is not None:
            try:
                self.journal_back()
            except Exception as exc:  # the service's health loop tries again
                log.error("after the journal came back: %s", exc)
        if self._held:
            with contextlib.suppress(RuntimeError):  # no running loop: recovery, nothing held then
                task = asyncio.get_running_loop().create_task(self._submit_held(), name="held-inputs")
                self._background.add(task)  # a strong reference until it is done
                task.add_done_callback(self._background.discard)

    async def _execute_unjournaled(self, step: Step) -> None:
        """The fault's effects without the journal: outputs first, the messages published directly (marked
        as not journaled; the journal gets them once it writes again), then the shoe commands."""
        self._safe_outputs()
        if self.unjournaled is not None:
            for msg in messages(step.effects):
                try:
                    self.unjournaled(msg)
                except Exception:
                    log.exception("unjournaled publish of %s failed", msg.topic)
        await self._execute(step)

    async def retry_journal(self) -> bool:
        """Commit what is owed (the fault's input) if the journal writes again; True if it did just now."""
        if self.journal_problem is None and not self._deferred:
            return False
        async with self._lock:
            try:
                self._commit_many(list(self._deferred))
            except Exception as exc:
                if not is_write_failure(exc):
                    raise
                self.journal_problem = classify(exc, self.journal.path.parent)
                return False
            self._journal_ok()
        return True
