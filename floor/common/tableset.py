"""A read bounded to some tables: the dashboard refreshes only the tiles of the tables an archive commit named
(floor/common/notify.py, floor/web/live.py), so its queries read those tables' rows, not the floor's."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from floor.common.messages import TableRef

Only = Collection[TableRef] | None  # None: every table


def floor_tables(only: Only) -> tuple[str, tuple[Any, ...]]:
    """What to read in place of ``floor_tables`` (SQL text and the parameters it takes, first in the query)."""
    if only is None:
        return "floor_tables", ()
    keys = sorted((t.site, t.table_id) for t in only)
    return (
        "(SELECT * FROM floor_tables WHERE (site, table_id) IN (SELECT * FROM unnest(%s::text[], %s::text[])))",
        ([k[0] for k in keys], [k[1] for k in keys]),
    )


def keys_filter(only: Only, alias: str) -> tuple[str, tuple[Any, ...]]:
    """``AND`` the rows of ``alias`` (with ``site`` and ``table_id``) to those tables ("" for every table)."""
    if only is None:
        return "", ()
    keys = sorted((t.site, t.table_id) for t in only)
    return (
        f" AND ({alias}.site, {alias}.table_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
        ([k[0] for k in keys], [k[1] for k in keys]),
    )
