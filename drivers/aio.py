"""One way to stop a part's background tasks (every part's ``stop()`` uses it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable


async def cancel_tasks(tasks: Iterable[asyncio.Task[object]], *, swallow_errors: bool = False) -> None:
    """Cancel each task and wait for it to end. With ``swallow_errors``, a task that had already died with an
    error does not stop the others from being stopped (it has logged why); otherwise its error is raised."""
    ignored: tuple[type[BaseException], ...] = (
        (asyncio.CancelledError, Exception) if swallow_errors else (asyncio.CancelledError,)
    )
    for task in list(tasks):
        task.cancel()
        with contextlib.suppress(*ignored):
            await task
