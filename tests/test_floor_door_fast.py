"""The archive's door checks take shortcuts (floor/common/messages.py): they must refuse and accept exactly what the
full checks do. A NUL character or a lone surrogate anywhere, nesting deeper than MAX_DEPTH (jsonb refuses each)
or a number beyond a double's range is refused; a ts that matches the format but is no date is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.journal.event_chain import chained_text
from floor.common import messages
from floor.common.messages import MAX_DEPTH, Envelope, TableRef, _storable, _timestamp, parse_envelope

T = TableRef("S1", "T1")
_text = st.text(
    alphabet=st.sampled_from(
        ["a", "\x00", "\\", "u", "0", "é", "{", "[", "\ud800", "\udfff", "😀", "\ud7ff", "\ue000"]
    ),
    max_size=8,
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=40,
)


def _envelope(data: dict) -> bytes:
    return json.dumps({"data": data, "event_id": 1, "table": "T1", "ts": "2026-11-23T12:00:00.000Z",
                       "type": "card"}).encode()  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(_json, st.booleans())
def test_the_nul_and_depth_shortcut_decides_as_the_full_walk(value: object, ascii_only: bool) -> None:
    payload = json.dumps({"data": {"v": value}, "event_id": 1, "table": "T1", "ts": "2026-11-23T12:00:00.000Z",
                          "type": "card"}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")  # fmt: skip
    full = _storable(json.loads(payload.decode("utf-8", "surrogatepass")))
    parsed = parse_envelope(T, "events/card", payload, "live")
    assert isinstance(parsed, Envelope) == full, (payload, parsed)


def test_nesting_just_within_and_just_beyond_the_limit() -> None:
    def nested(levels: int) -> dict:
        doc: dict = {"x": 1}
        for _ in range(levels):
            doc = {"x": doc}
        return doc

    depths = {n: isinstance(parse_envelope(T, "events/card", _envelope(nested(n)), "live"), Envelope)
              for n in range(MAX_DEPTH - 4, MAX_DEPTH + 4)}  # fmt: skip
    expected = {n: _storable({"data": nested(n)}) for n in depths}
    assert depths == expected and True in depths.values() and False in depths.values()


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 9999), st.integers(0, 19), st.integers(0, 39), st.integers(0, 29), st.integers(0, 69),
       st.integers(0, 69), st.integers(0, 999))  # fmt: skip
def test_the_timestamp_shortcut_reads_as_strptime(
    y: int, mo: int, d: int, h: int, mi: int, s: int, ms: int
) -> None:
    ts = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}Z"
    try:
        want: datetime | None = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        want = None
    try:
        got: datetime | None = _timestamp(ts)
    except ValueError:
        got = None
    assert got == want


def test_a_number_beyond_a_doubles_range_is_refused_and_one_within_taken() -> None:
    """jsonb has no infinity: 1e999 (which Python reads as inf) is refused at the door; 1e308 and 5e-324 are not."""
    for text, taken in (
        (b"1e999", False),
        (b"-1e400", False),
        (b"1e308", True),
        (b"5e-324", True),
        (b"2.5", True),
    ):
        payload = (b'{"data":{"v":' + text + b'},"event_id":1,"table":"T1","ts":"2026-11-23T12:00:00.000Z",'
                   b'"type":"card"}')  # fmt: skip
        assert isinstance(parse_envelope(T, "events/card", payload, "live"), Envelope) is taken, text


def _general(payload: bytes) -> Envelope | str:
    """``parse_envelope`` decoding every payload the general way (``_loads``), no table-form shortcut."""
    with mock.patch.object(messages, "_table_form", return_value=None):
        return parse_envelope(T, "events/card", payload, "live")


def _fields(parsed: Envelope | str) -> object:
    """Everything it holds (``data_text``, only the shortcut's, aside)."""
    return parsed if isinstance(parsed, str) else [getattr(parsed, f) for f in Envelope.__slots__[:-1]]


_numbers = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(st.recursive(st.none() | st.booleans() | _numbers | _text,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                    max_leaves=30),
       st.booleans(), st.sampled_from(["", " ", "\n\t", ',"data":{}', ',"chain":"' + "1" * 64 + '"', ',"x":1']),
       st.sampled_from(["T1", "T2", "T\\u0031"]), st.sampled_from([1, 0, 2**62, 2**70]))  # fmt: skip
def test_the_table_form_shortcut_decides_and_reads_as_the_general_way(
    value: object, ascii_only: bool, extra: str, table: str, event_id: int
) -> None:
    """An envelope as a table sends it (canonical, chained: controller/journal/event_chain.py) is read in one pass
    with its ``data`` text kept: the same Envelope (or the same refusal) as the general decoding, whatever ``data``
    holds (floats, big numbers, NUL, surrogates, depth) and whatever follows it (a key twice, spaces, an escaped
    table name, an event_id out of range); ``data_text`` reads back to ``data``."""
    data = json.dumps({"v": value}, ensure_ascii=ascii_only, separators=(",", ":"))
    unchained = (f'{{"data":{data}{extra},"event_id":{event_id},"prev":"{"0" * 64}","table":"{table}",'
                 f'"ts":"2026-11-23T12:00:00.000Z","type":"card"}}')  # fmt: skip
    payload = (
        chained_text("0" * 64, unchained)[0].encode()
        if ascii_only
        # the door does not hash it
        else (f'{{"chain":"{"1" * 64}",{unchained[1:]}'.encode("utf-8", "surrogatepass"))
    )
    parsed, general = parse_envelope(T, "events/card", payload, "live"), _general(payload)
    assert _fields(parsed) == _fields(general), payload
    if isinstance(parsed, Envelope) and parsed.data_text is not None:
        assert json.loads(parsed.data_text) == parsed.data


def test_a_well_formed_table_envelope_takes_the_shortcut() -> None:
    unchained = (f'{{"data":{{"round_id":"r-1","n":[1,2]}},"event_id":7,"prev":"{"0" * 64}","table":"T1",'
                 f'"ts":"2026-11-23T12:00:00.000Z","type":"card"}}')  # fmt: skip
    parsed = parse_envelope(T, "events/card", chained_text("0" * 64, unchained)[0].encode(), "live")
    assert isinstance(parsed, Envelope) and parsed.data_text == '{"round_id":"r-1","n":[1,2]}'
    assert parsed.event_id == 7 and parsed.prev == "0" * 64 and parsed.chain is not None
