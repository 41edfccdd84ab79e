"""controller/canonical.py: the journal hashes and the core compares the text ``canonical`` gives, so the encoder
built once (issue 44) must give exactly ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.canonical import canonical


def reference(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(
    "data",
    [
        {"b": [1, 2.25, "é", {"z": None, "a": -0.0}], "a": {}, "c": True},
        {"input": {"event": {"rank": "A", "suit": "S"}, "type": "device"}, "now": 1790000000.5},
        'a\u2028"\\\x00\ud800 ünicode ✓',
        [1e300, 1e-7, 10**30, -1, 0.1 + 0.2],
        {1: "int key", 2: "x"},
        {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")},
        (1, "tuple"),
        [],
        None,
    ],
)
def test_the_text_of_json_dumps_sorted_compact_unescaped(data: Any) -> None:
    assert canonical(data) == reference(data)


@pytest.mark.parametrize("data", [{"a": object()}, {"a": {1, 2}}, {(1,): 2}])
def test_what_has_no_json_text_raises_as_before(data: Any) -> None:
    with pytest.raises(TypeError):
        canonical(data)


def test_an_encode_that_raised_leaves_nothing_behind() -> None:
    shared = {"x": 1}
    with pytest.raises(TypeError):
        canonical({"a": shared, "b": object()})
    assert canonical({"a": shared}) == '{"a":{"x":1}}'
