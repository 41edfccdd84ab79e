"""The row a query must return: an aggregate (``count(*)``, ``max(...)``, ``coalesce(min(...), 0)``) always
returns one, and a table's row in ``floor_tables`` is there once ``ensure_tables`` made it (no command deletes
one). Its absence means the archive is not the one the code was written for (a schema changed under a running
worker, a row deleted by hand): ``MissingRow`` names the query's subject instead of a TypeError on ``None[0]``."""

from __future__ import annotations

from typing import Any

import psycopg


class MissingRow(RuntimeError):
    """A query that always returns a row returned none."""


def one_row(cursor: psycopg.Cursor[Any], what: str) -> tuple[Any, ...]:
    """The row ``cursor`` (just executed) returns; ``what`` names it for the error ("floor_tables row of S/T")."""
    row = cursor.fetchone()
    if row is None:
        raise MissingRow(f"the floor archive returned no {what}")
    return tuple(row)
