"""The pit terminal's supervisor keys: the argument the credential prompt proposes, and the signed command(s) a
confirmed credential sends on ``cmd/supervisor`` (docs/terminal.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from controller.client import TableClient
from controller.terminal.credentials import Credential
from controller.words import ACTION_WORDS, words

SupervisorCall = Callable[[], Awaitable[Any]]


class SupervisorArgumentError(Exception):
    """The prompt's argument cannot be sent; ``str(exc)`` is the refusal the terminal shows."""


def supervisor_default(action: str, profile: str, alerts_open: list[Any], hits: list[dict[str, Any]]) -> str:
    """What the prompt proposes: the profile to open, the open alerts' ids, the first pending jackpot hit."""
    default = profile if action == "open_table" else ""
    if action == "ack_alert":
        default = ",".join(str(a.get("alert_id")) for a in alerts_open if isinstance(a, dict))
    elif action.startswith("jackpot_") and hits:
        default = str(hits[0].get("hit_id"))
    return default


def supervisor_call(
    action: str, cred: Credential, sup: TableClient, profile: str, alerts_open: list[Any]
) -> SupervisorCall:
    """The signed command(s) for ``action`` with the prompt's argument; ``SupervisorArgumentError`` if the
    argument is not what the action takes."""
    what = words(ACTION_WORDS, action)
    if action == "ack_alert":
        try:
            ids = [int(x) for x in cred.arg.replace(" ", "").split(",") if x]
        except ValueError:
            raise SupervisorArgumentError(
                f"refused: {what}: alert ids must be whole numbers, got {cred.arg!r}"
            ) from None
        ids = ids or [a["alert_id"] for a in alerts_open
                      if isinstance(a, dict) and isinstance(a.get("alert_id"), int)]  # fmt: skip

        async def ack_all() -> dict[str, Any]:
            for alert_id in ids:
                await sup.supervisor(cred.user, cred.pin, "ack_alert", alert_id=alert_id)
            return {"acknowledged": ids}

        return ack_all
    args: dict[str, Any] = {}
    if action == "open_table":
        args["profile"] = cred.arg or profile
    elif action.startswith("jackpot_"):
        if not cred.arg.isdigit():
            raise SupervisorArgumentError(
                f"refused: {what}: the jackpot hit id must be a whole number, got {cred.arg!r}"
            )
        args["hit_id"] = int(cred.arg)
    return lambda: sup.supervisor(cred.user, cred.pin, action, **args)
