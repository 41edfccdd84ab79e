"""The table's setup: the open (or last) session and the rule profile it runs (its name, the kind of shoe, the
parsed profile and what the table takes from it). Owned here; the other concerns read it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from controller.rules.profiles import Profile
from controller.table.base import _parse_profile_text
from controller.table.concern import NO_HANDLERS, Handlers
from controller.table.profile import TableProfile, table_profile
from controller.table.state import SessionState


@dataclass
class SetupState:
    """Snapshot keys ``profile``, ``shuffler``, ``session``; ``rules_profile`` and ``tp`` follow from them."""

    profile_name: str | None = None
    shuffler: str = "continuous"  # "continuous" | "batch" (the table's shoe, not the profile)
    session: SessionState = field(default_factory=SessionState)
    rules_profile: Profile | None = None
    tp: TableProfile | None = None


class TableSetup:
    """Owns the setup (``SetupState``); handles no input of its own (open_table sets it, supervisor.py)."""

    name: ClassVar[str] = "setup"

    def __init__(self, load_profile: Callable[[str], Profile]) -> None:
        self.load_profile = load_profile
        self.s = SetupState()

    def handlers(self) -> Handlers:
        return NO_HANDLERS

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        s = self.s
        snap["profile"], snap["shuffler"], snap["session"] = s.profile_name, s.shuffler, s.session.to_dict()

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap)

    # ---- read by the other concerns
    @property
    def session(self) -> SessionState:
        return self.s.session

    @property
    def tp(self) -> TableProfile:
        """Typed as set: every caller runs inside a session (None before a profile is set; the few callers
        that may run then compare it with None)."""
        return cast(TableProfile, self.s.tp)

    @property
    def rules_profile(self) -> Profile:
        """Set with the profile, like ``tp``."""
        return cast(Profile, self.s.rules_profile)

    @property
    def shuffler(self) -> str:
        return self.s.shuffler

    @property
    def profile_name(self) -> str | None:
        return self.s.profile_name

    # ---- the one writer
    def set_profile(self, name: str | None, shuffler: str) -> None:
        s = self.s
        s.profile_name, s.shuffler = name, shuffler
        if name is None:
            s.rules_profile, s.tp = None, None
            return
        pinned = s.session.pinned
        if isinstance(pinned, dict) and pinned.get("profile") == name and pinned.get("profile_text"):
            # Issue 13 §2: the session's rules are the ones pinned when it opened, never the file as it is now
            s.rules_profile = _parse_profile_text(str(pinned["profile_text"]), name)
        else:
            s.rules_profile = self.load_profile(name)
        s.tp = table_profile(s.rules_profile, continuous=shuffler == "continuous")

    def pin(self, pinned: dict[str, Any]) -> None:
        """The service's digests and profile text, journaled with open_table (issue 13 §2)."""
        self.s.session.pinned = dict(pinned)

    def open_session(self, user: str, now: float) -> None:
        session = self.s.session
        session.update(
            id=time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)),
            no=session.no + 1,
            packets=0,
            opened_by=user,
            rounds=0,
        )

    def close_session(self, user: str) -> None:
        self.s.session.closed_by = user

    def count_round(self) -> None:
        self.s.session.rounds += 1

    def count_packet(self) -> None:
        self.s.session.packets += 1  # PT-2001 r.54: at least two packets

    def restore(self, snap: dict[str, Any]) -> None:
        self.s = SetupState(session=SessionState.from_dict(snap["session"]))  # its pinned profile text first
        self.set_profile(snap["profile"], snap["shuffler"])
