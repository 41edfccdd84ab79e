"""One way to stop a part's background tasks (every part's ``stop()`` uses it), and one way to take what a
queue holds now (a driver's events, a burst at once)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


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


def drain_queue(queue: asyncio.Queue[T], limit: int) -> list[T]:
    """What the queue holds now, oldest first, up to ``limit`` items, without waiting (a driver's burst of events,
    taken at once)."""
    out: list[T] = []
    while len(out) < limit and not queue.empty():
        out.append(queue.get_nowait())
    return out
