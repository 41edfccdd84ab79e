"""An example for every ``tablectl`` command's ``--help`` (issue 42): the commands an operator, a technician or
an inspector types, each with what it does, under the help's "examples:" heading. One place for the table's
commands; the floor's (floor/cli/examples.py) and the bench's (tablebench) come with their distributions, as
``EXAMPLES`` beside their ``add_arguments``."""

from __future__ import annotations

import argparse

# a command's path ("journal", "export") -> (command line, what it does)
Examples = dict[tuple[str, ...], tuple[tuple[str, str], ...]]

CONFIG = "/etc/tablectl/table.toml"
JOURNAL = "/var/lib/tablectl/journal.db"

EXAMPLES: Examples = {
    ("run",): (
        (f"tablectl run --config {CONFIG}", "the table's service, as systemd starts it (docs/deploy.md)"),
    ),
    ("replay",): (
        (
            "tablectl replay docs/examples/rounds/pt-2001-double-blackjack-r19.json --currency EUR",
            "settle a round by hand: every card, decision and payment in words",
        ),
        ("tablectl replay ROUND.json --json --pretty", "the same settlement as JSON, for a script"),
        (
            f"tablectl journal export --db {JOURNAL} | tablectl replay -",
            "settle every journalled round again and compare it with what the table paid",
        ),
    ),
    ("jackpot-math",): (
        (
            "tablectl jackpot-math --decks 6 --bet-value 100 --increment-bp 5000 --seed 1000000 --currency EUR",
            "the odds of each jackpot combination and the return for a 1.00 EUR jackpot bet",
        ),
    ),
    ("strategy",): (("tablectl strategy --profile pt-2001", "basic strategy and house edge of the game"),),
    ("rtp",): (("tablectl rtp --decks 6", "the return to player of the side bets with six decks"),),
    ("status",): (
        ("tablectl status", "what the running table reports: shoe, broker, journal, faults"),
        ("tablectl status --prometheus", "the same as metrics for Prometheus"),
    ),
    ("journal",): (
        (f"tablectl journal verify --config {CONFIG}", "check that no record was changed or removed"),
    ),
    ("journal", "verify"): (
        (f"tablectl journal verify --config {CONFIG}", "check the table's journal against its audit key"),
        (
            "tablectl journal verify --db archive.db --manifest manifest.json",
            "check an archive on another computer",
        ),
    ),
    ("journal", "archive"): (
        (
            f"tablectl journal archive --config {CONFIG} --to /srv/archive/T1-2026-11.db",
            "copy the signed records into an archive file and check it",
        ),
    ),
    ("journal", "prune"): (
        (
            f"tablectl journal prune --config {CONFIG} --archive /srv/archive/T1-2026-11.db --by alice",
            "with the service stopped: delete the records the archive holds",
        ),
    ),
    ("journal", "export"): (
        (
            f"tablectl journal export --db {JOURNAL} --out rounds.jsonl",
            "the latest session's rounds, one a line",
        ),
    ),
    ("config",): ((f"tablectl config check {CONFIG}", "check a table's configuration before starting it"),),
    ("config", "check"): (
        (f"tablectl config check {CONFIG}", "check the configuration and print its fingerprints"),
        (
            "tablectl config check --no-file-check table.toml",
            "check it on a workstation, without its key files",
        ),
    ),
    ("config", "record"): (
        (
            f"tablectl config record --manifest /etc/tablectl/manifest.json {CONFIG}",
            "record the approved configuration's fingerprints",
        ),
    ),
    ("config", "verify"): (
        (
            f"tablectl config verify --manifest /etc/tablectl/manifest.json {CONFIG}",
            "check that nothing changed since it was recorded",
        ),
    ),
    ("terminal",): (
        ("tablectl terminal --client-config ~/.config/tablectl/pit.toml", "the dealer's pit terminal"),
    ),
    ("alerts",): (
        ("tablectl alerts --client-config ~/.config/tablectl/floor.toml", "every table's open alerts, live"),
    ),
    ("sign",): (
        (
            "tablectl sign --user alice --role supervisor --action clear_jam --args '{\"alert_id\": 3}'",
            "sign a supervisor's command; the PIN is asked on the terminal",
        ),
        (
            "tablectl sign --user alice --role supervisor --pin-file ~/.pin --action ack_alert "
            "--args '{\"alert_id\": 3}'",
            "acknowledge alert 3, the PIN read from a file only alice can read",
        ),
    ),
    ("floor",): (("tablectl floor web --help", "the floor's dashboard and its options"),),
}


def epilog(examples: tuple[tuple[str, str], ...]) -> str:
    lines = ["examples:"]
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines)


def attach(parser: argparse.ArgumentParser, path: tuple[str, ...], examples: Examples) -> None:
    """The examples of ``path`` and of each nested command as the parsers' epilogs (kept where one is set)."""
    if parser.epilog is None and path in examples:
        parser.epilog = epilog(examples[path])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                attach(child, (*path, name), examples)
