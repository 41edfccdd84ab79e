"""A read bounded to some tables: the dashboard refreshes only the tiles of the tables an archive commit named
(floor/common/notify.py, floor/web/live.py), so its queries read those tables' rows, not the floor's.

The tables go to the server as two array literals, made once per set (``_arrays``): a refresh reads a set of a few
hundred tables with about a dozen queries, and psycopg's adapting of a Python list element by element cost more
than some of those queries."""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from floor.common.messages import TableRef

Only = Collection[TableRef] | None  # None: every table


def _literal(values: list[str]) -> str:
    """A PostgreSQL array literal of ``values``: each element quoted, its ``"`` and ``\\`` escaped (any text)."""
    return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def _arrays(only: Collection[TableRef]) -> tuple[str, str]:
    """The sites and the table ids of ``only`` (in the same order) as array literals; a frozenset's are kept (the
    queries of one refresh pass the same set; a set that cannot change is never read stale)."""
    if isinstance(only, frozenset):
        return _set_arrays(only)
    return _arrays_of(only)


@functools.lru_cache(maxsize=1)
def _set_arrays(only: frozenset[TableRef]) -> tuple[str, str]:
    return _arrays_of(only)


def _arrays_of(only: Collection[TableRef]) -> tuple[str, str]:
    keys = sorted((t.site, t.table_id) for t in only)
    return _literal([k[0] for k in keys]), _literal([k[1] for k in keys])


def floor_tables(only: Only) -> tuple[str, tuple[Any, ...]]:
    """What to read in place of ``floor_tables`` (SQL text and the parameters it takes, first in the query)."""
    if only is None:
        return "floor_tables", ()
    return (
        "(SELECT * FROM floor_tables WHERE (site, table_id) IN (SELECT * FROM unnest(%s::text[], %s::text[])))",
        _arrays(only),
    )


def keys_filter(only: Only, alias: str) -> tuple[str, tuple[Any, ...]]:
    """``AND`` the rows of ``alias`` (with ``site`` and ``table_id``) to those tables ("" for every table)."""
    if only is None:
        return "", ()
    return (
        f" AND ({alias}.site, {alias}.table_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
        _arrays(only),
    )
