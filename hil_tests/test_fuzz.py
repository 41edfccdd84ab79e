"""Small fuzz runs in the default suite (the 1,000,000-frame and 1,000,000-command runs are
benchmarks/fuzz_link.py and benchmarks/fuzz_commands.py, results in docs/reliability.md)."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.protocol import messages as msg
from drivers.protocol.framing import FrameDecoder
from tablebench.bench.fuzz import fuzz_commands, fuzz_link, mutate


def test_link_parser_survives_50k_mutated_and_random_frames() -> None:
    rep = fuzz_link(50_000, seed=3)
    assert rep.crashes == [], rep.lines()
    assert rep.counters["decoder_crc_errors"] > 0 and rep.counters["payload_refused"] > 0  # it did refuse
    assert rep.counters.get("mutated_frame_passed_crc", 0) == 0


def test_command_intake_survives_3k_malformed_commands_no_forgery_reaches_the_table(tmp_path: Path) -> None:
    rep = fuzz_commands(3_000, seed=3, workdir=tmp_path)
    assert rep.crashes == [], rep.lines()
    assert rep.counters["intake_malformed"] > 2_000 and rep.counters["intake_handler_errors"] == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_decoder_then_message_decoder_only_ever_refuse(data: bytes, seed: int) -> None:
    """Property: whatever bytes arrive, the framing layer returns frames or nothing and the message layer
    returns a message or DecodeError."""
    dec = FrameDecoder("prop")
    for chunk in (data, mutate(random.Random(seed), data), b"\x7e"):
        for frame in dec.feed(chunk):
            with contextlib.suppress(msg.DecodeError):
                msg.decode_event(frame.type, frame.payload)
