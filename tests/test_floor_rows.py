"""A query that always returns a row (an aggregate, a table's ``floor_tables`` row once made) and returns none
(floor/common/rows.py, issue 31): a ``MissingRow`` naming what was asked for, not a TypeError on ``None[0]`` from deep
inside the chain check, the enrolment or a report."""

from __future__ import annotations

from typing import Any

import pytest

from floor.common.rows import MissingRow, one_row


class _Cursor:
    def __init__(self, row: tuple[Any, ...] | None) -> None:
        self.row = row

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.row


def test_no_row_is_an_error_that_names_what_was_asked_for() -> None:
    with pytest.raises(MissingRow, match=r"\Athe floor archive returned no floor_tables row of S1/T1\Z"):
        one_row(_Cursor(None), "floor_tables row of S1/T1")


def test_the_row_is_returned_as_it_is() -> None:
    assert one_row(_Cursor((7, None)), "count")[0] == 7
