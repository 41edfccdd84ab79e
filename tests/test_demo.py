"""`tablectl demo` as a user runs it: a subprocess starting the whole table (broker, shoe, service)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.code_names import code_names

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)


def run(*args: str, timeout: float = 100) -> subprocess.CompletedProcess[str]:
    (done,) = run_together(args, timeout=timeout)
    return done


def run_together(*runs: tuple[str, ...], timeout: float = 100) -> list[subprocess.CompletedProcess[str]]:
    """``tablectl demo`` with each of ``runs``' arguments, all started at once and waited for together (each
    killed if it outlasts ``timeout``)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "demo", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
        for args in runs
    ]
    done: list[subprocess.CompletedProcess[str]] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return done


def test_demo_auto_plays_two_rounds_over_mqtt(tmp_path: Path) -> None:
    """Session prepared (PT-2001 r.53-54), two rounds dealt by the scripted dealer; every card event and both
    settlements printed as they arrived over MQTT; exit 0 and every process stopped."""
    proc = run("--auto", "2", "--workdir", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "loaded in two packets by alice" in out
    money = r"[+-]?[\d,]+\.\d\d EUR"  # major units with the table's currency (issue 30)
    settlements = re.findall(rf"^settlement (\S+): dealer .+ = \d+ \| Seat 1 .+ net {money}", out, re.M)
    assert len(set(settlements)) == 2
    face = r"(?:10|[2-9AJQK])[♠♥♦♣]"  # as on the table, never a code such as QH
    cards = re.findall(
        rf"^card (\d+) (to Seat \d|to Dealer|burnt): ({face}|face down \(hole card\))$", out, re.M
    )
    assert len(cards) >= 2 * 5  # two seats and the dealer, two cards each at least, per round
    seqs = [int(c[0]) for c in cards]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # in shoe order, each once (deduped)
    assert "2 rounds dealt and settled" in out
    played = [line for line in out.splitlines() if line.startswith(("card ", "round ", "settlement "))]
    assert not [(line, code_names(line)) for line in played if code_names(line)]  # in words (issue 30)
    # one line per round in words, every amount in money (issue 19)
    summaries = re.findall(rf"^round \S+: Seat 1 bet \d+\.\d\d EUR: .+ = \d+, [a-z ,]+, {money}", out, re.M)
    assert len(summaries) == 2
    assert re.search(r"^round \S+: bets Seat 1 10\.00 EUR, Seat 3 5\.00 EUR$", out, re.M)
    console = re.search(r"^demo: floor alert console \(another terminal\): (.+)$", out, re.M)
    assert console and console.group(1).startswith(
        str(Path(sys.executable).absolute().parent / "tablectl") + " alerts "
    )
    # the printed line works pasted into a fresh shell: no venv on PATH (issue 26)
    fresh = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", f"{console.group(1)} --help"],
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert fresh.returncode == 0 and "usage:" in fresh.stdout, fresh.stdout + fresh.stderr
    assert re.search(r"^demo: card order seed \d+ \(--seed \d+ deals the same cards again\)$", out, re.M)
    log = (tmp_path / "demo" / "controller.log").read_text(errors="replace")
    assert "Traceback" not in log
    # the service log says what happened, and nothing from library internals at INFO (issue 19)
    assert "INFO tablectl.table: open_table: alice (supervisor)" in log
    assert re.search(r"INFO tablectl\.table: table opened: session \S+ \(pt-2001\)", log)
    assert (
        len(re.findall(r"INFO tablectl\.table: round \S+ settled: dealer \d+, 2 hand\(s\), players net", log))
        == 2
    )
    assert "transitions.core" not in log


def test_demo_without_a_tty_plays_three_rounds(tmp_path: Path) -> None:
    """stdout is a pipe here: no terminal UI, the scripted dealer plays three rounds."""
    proc = run("--workdir", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(re.findall(r"^settlement ", proc.stdout, re.M)) == 3
    assert "3 rounds dealt and settled" in proc.stdout


def test_demo_refuses_bad_options_with_a_reason() -> None:
    bad = run("--profile", "it-online", timeout=30)
    assert bad.returncode == 2 and "does not allow the emulated continuous shuffler" in bad.stderr
    assert run("--profile", "nope", timeout=30).returncode == 2
    zero = run("--auto", "0", timeout=30)
    assert zero.returncode == 2 and "--auto needs a positive number" in zero.stderr


def cards_of(out: str) -> list[str]:
    return re.findall(r"^card \d+ [^:]+: (\S+)$", out, re.M)


def test_demo_card_order_is_random_unless_seeded(tmp_path: Path) -> None:
    """Issue 19 / 13 §5: the emulated shoe's order differs between runs; --seed repeats it."""
    # the two runs side by side (each its own broker on a free port and its own workdir): one run's wall time
    one, two = run_together(
        ("--auto", "1", "--seed", "42", "--workdir", str(tmp_path / "a")),
        ("--auto", "1", "--seed", "42", "--workdir", str(tmp_path / "b")),
    )
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert "card order seed 42" in one.stdout
    assert cards_of(one.stdout) == cards_of(two.stdout) and len(cards_of(one.stdout)) >= 4


def test_service_log_lines_cannot_be_forged_by_a_user_name(caplog: pytest.LogCaptureFixture) -> None:
    """A user name or refusal from a command is one line of text in the service log: no newline, no escape."""
    import logging

    from controller.table.activity import log_supervisor

    with caplog.at_level(logging.INFO, logger="tablectl.table"):
        log_supervisor(
            "mallory\n2026-01-01 INFO tablectl.table: open_table: alice", "supervisor", "clear_jam", "\x1b[2J"
        )
    (record,) = caplog.records
    assert "\n" not in record.getMessage() and "\x1b" not in record.getMessage()


def test_demo_batch_shoe_is_cut_then_dealt(tmp_path: Path) -> None:
    """`--shoe batch`: a full batch shoe (cut card, warning card) shuffled when the table opens, cut by seat 1
    (PT-2001 r.8), then dealt."""
    proc = run("--auto", "1", "--shoe", "batch", "--seed", "3", "--workdir", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo: Seat 1 cuts the cards (PT-2001 r.8)" in proc.stdout
    assert "batch shoe shuffled and cut" in proc.stdout and "1 round dealt and settled" in proc.stdout
