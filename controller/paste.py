"""Command lines the product prints for a person to paste. They must work as pasted into a fresh shell (issue 26),
where ``tablectl`` is usually not on PATH: on a Pi it is ``/opt/tablectl/.venv/bin/tablectl``, in a checkout
``.venv/bin/tablectl``. So a printed line names the running program by its absolute path, and every argument is
quoted for the shell."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


def tablectl() -> str:
    """The running tablectl as a shell word: the ``tablectl`` script beside this Python, else ``python -m``."""
    beside = Path(sys.executable).absolute().parent / "tablectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside))
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m controller.cli"


def command(*args: str | Path) -> str:
    """``tablectl ARGS...`` as one line that runs in a fresh shell."""
    return " ".join([tablectl(), *(shlex.quote(str(a)) for a in args)])
