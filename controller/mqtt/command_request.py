"""The command intake's vocabulary: an authorised ``CommandRequest``, the ``CommandRejected`` refusal a handler
(or the intake) raises, the handler's signature and the intake's counters (controller/mqtt/commands.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


class CommandRejected(Exception):
    """Raised by a handler (or the intake) to refuse a command; ``reason`` goes back to the requester."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CommandRequest:
    role: str
    user: str
    action: str
    args: dict[str, Any]
    request_id: str


Handler = Callable[[CommandRequest], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class IntakeCounters:
    received: int = 0
    accepted: int = 0
    rejected: int = 0  # every refusal, including the ones below
    malformed: int = 0  # not JSON / schema-invalid
    unauthorised: int = 0  # forged, stale, replayed, wrong role, locked out
    handler_rejected: int = 0
    handler_errors: int = 0
    dropped: int = 0  # over the rate limit (journaled in aggregate)
    repeated: int = 0  # retries answered from the recorded result
    by_reason: dict[str, int] = field(default_factory=dict)

    def count_reject(self, key: str) -> None:
        self.rejected += 1
        self.by_reason[key] = self.by_reason.get(key, 0) + 1
