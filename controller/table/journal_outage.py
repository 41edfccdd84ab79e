"""What the table shell owes while the journal cannot write (issue 14 item 3): the ``journal_io`` fault is entered
at once and carried out without the journal (outputs safe, its messages published directly, marked as not
journaled); the fault's input and any sensor input nobody can send again are kept and committed, in order,
once the journal writes again. ``TableController`` (controller/shell/) holds one ``JournalOutage``; it owns the
problem, the inputs whose commit is owed and the held sensor inputs, and nothing else."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from controller.table import inputs
from controller.table.core import Step, TableCore
from controller.table.journal_io import JournalProblem, classify
from controller.table.messages import Publish, messages

log = logging.getLogger("controller.table.controller")  # the shell's one logger

HELD_INPUTS_MAX = 1000

Committed = tuple[inputs.Input, float, Step]  # an input, its time and its step, for one journal transaction


class JournalOutage:
    def __init__(
        self,
        journal_dir: Callable[[], Path],
        core: TableCore,
        clock: Callable[[], float],
        unjournaled: Callable[[Publish], None] | None = None,
    ) -> None:
        self._dir = journal_dir  # where the journal lives: for the problem's words (disk full, read-only)
        self._core = core
        self._clock = clock
        # The fault input's effects are carried out at once without the journal (``unjournaled`` publishes
        # them, marked so) and the input is committed once it can be.
        self.unjournaled = unjournaled
        self.problem: JournalProblem | None = None
        self.deferred: list[Committed] = []  # applied, their commit owed: committed first, in order
        self._fault_step: Step | None = None  # the fault's effects, for the caller to carry out
        # Sensor inputs (lid switch, chip slots) that arrived while the journal could not take them: applied in
        # order once it writes again. (Shoe events are not held here: the shoe keeps them until committed.)
        self.held: list[inputs.Input] = []

    def failed(self, exc: BaseException) -> JournalProblem:
        """The fault at once: the core enters ``journal_io`` (its effects are taken with ``take_fault_step`` and
        carried out by the caller, outside its lock) and the fault's input is owed to the journal."""
        problem = classify(exc, self._dir())
        first = self.problem is None
        self.problem = problem
        if first:
            log.critical("%s: the table goes into the journal_io fault", problem.text)
        if "journal_io" in self._core.faults:
            return problem
        inp = inputs.JournalFault(problem.kind, problem.text)
        now = self._clock()
        step = self._core.apply(inp, now)
        self.deferred.append((inp, now, step))
        self._fault_step = step
        return problem

    def still_failing(self, exc: BaseException) -> None:
        """A retry failed too: the problem as it is now."""
        self.problem = classify(exc, self._dir())

    def take_fault_step(self) -> Step | None:
        step, self._fault_step = self._fault_step, None
        return step

    def hold(self, inp: inputs.Input) -> None:
        """A sensor input the journal could not take: applied again once it writes (a lid switch opened during a
        disk fault is not forgotten)."""
        if len(self.held) < HELD_INPUTS_MAX:
            self.held.append(inp)
        else:
            log.error("held sensor inputs full: %s dropped", inp)

    def committed(self) -> bool:
        """A commit went through: nothing is owed any more. True if the journal came back just now (the caller
        asks the shoe again, tells the service and submits the held inputs)."""
        if self.deferred:
            log.warning("journal writes again: %d deferred input(s) committed", len(self.deferred))
        self.deferred.clear()
        if self.problem is None:
            return False
        log.warning("journal writes again (was: %s)", self.problem.text)
        self.problem = None
        return True

    def publish_unjournaled(self, step: Step) -> None:
        """The fault's messages published directly, marked as not journaled (the journal gets them once it writes
        again)."""
        if self.unjournaled is None:
            return
        for msg in messages(step.effects):
            try:
                self.unjournaled(msg)
            except Exception:
                log.exception("unjournaled publish of %s failed", msg.topic)
