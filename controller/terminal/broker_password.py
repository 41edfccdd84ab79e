"""The terminals' broker passwords: from a file only its owner reads, the environment, or typed at a prompt;
never on the command line, where every local account could read it in the process list (issue 16)."""

from __future__ import annotations

import getpass
import os
import stat
import sys
from pathlib import Path


class PasswordError(Exception):
    """No usable password; the message is the one line the command prints."""


def from_file(path: str) -> str:
    p = Path(path)
    try:
        mode = p.stat().st_mode
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PasswordError(f"cannot read the password file {path}: {exc.strerror or exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PasswordError(f"the password file {path} is readable by others: chmod 600 {path}")
    first = text.splitlines()[0].strip() if text.strip() else ""
    if not first:
        raise PasswordError(f"the password file {path} is empty")
    return first


def broker_password(file: str | None, env: str, what: str, *, interactive: bool | None = None) -> str:
    """``file`` (--password-file), else ``$env``, else a prompt on a terminal; PasswordError otherwise."""
    if file:
        return from_file(file)
    value = os.environ.get(env, "")
    if value:
        return value
    if interactive if interactive is not None else sys.stdin.isatty():
        typed = getpass.getpass(f"{what} broker password: ")
        if typed:
            return typed
    raise PasswordError(f"{what}: no broker password: --password-file FILE, ${env}, or type it at a terminal")
