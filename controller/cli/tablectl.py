"""`tablectl`: one command line with a subcommand per job.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and ``main(args) -> int``; this
file only registers them, so a module that fails to import breaks its own subcommand and nothing else.
The development tooling's subcommands (demo, bench, emulators) are not the product's: the tablebench
distribution (bench/, development installs only) registers them through the ``tablectl.commands`` entry
points; without it they say in one line that the bench is not installed (exit 2). The floor's commands are the
floor distribution's (floor/, on the floor's servers): where it is not installed (a table's Pi), ``tablectl
floor`` says so in one line (exit 2)."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import sys

from controller import __version__
from controller.cli.examples import EXAMPLES, attach

DESCRIPTION = "tablectl: the blackjack table's command line, one command per job"

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("controller.cli.run", "run the table controller service (what systemd starts)"),
    "replay": ("controller.cli.replay", "settle a round by hand and show every card, decision and payment"),
    "jackpot-math": (
        "controller.cli.jackpot_math",
        "the odds of each jackpot combination and the jackpot's return",
    ),
    "strategy": ("controller.cli.strategy", "basic strategy and house edge of a game"),
    "rtp": ("controller.cli.rtp", "the exact return to player of the side bets (perfect pairs, insurance)"),
    "status": (
        "controller.cli.status",
        "what the running service reports: shoe, broker, journal, messages waiting, faults",
    ),
    "journal": ("controller.cli.journal", "check the journal, archive and prune it, export its rounds"),
    "config": ("controller.cli.config", "check a table's configuration and record its fingerprints"),
    "terminal": ("controller.cli.terminal", "dealer pit terminal (MQTT)"),
    "alerts": ("controller.cli.alerts", "floor supervisor alert console (MQTT)"),
    "sign": ("controller.cli.sign", "sign a supervisor's or technician's command with their key and PIN"),
    # the floor (floor/: a distribution of its own) is found by name only: nothing in controller/ imports it
    "floor": ("floor.cli.tablectl", "the casino floor: archive, queries, report, bridge, dashboard"),
}

# `tablectl --help`: the commands by who uses them and where, each group with an example (issue 42)
GROUPS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("the table (on its computer beside the shoe)",
     ("run", "status", "config", "terminal", "alerts", "sign"), "tablectl status"),
    ("the journal and the rounds (inspectors)", ("journal", "replay"),
     "tablectl replay docs/examples/rounds/pt-2001-double-blackjack-r19.json --currency EUR"),
    ("the game's figures", ("strategy", "rtp", "jackpot-math"), "tablectl strategy --profile pt-2001"),
    ("the casino floor (on the floor's servers)", ("floor",), "tablectl floor shift --help"),
    ("development tooling (the bench: development installs only)", (), "tablectl demo --auto 3"),
)  # fmt: skip

# The entry-point group through which development tooling adds subcommands (name = a module with
# add_arguments, main and HELP, its one line in --help); bench/pyproject.toml registers the tablebench ones.
TOOLING_GROUP = "tablectl.commands"
# The tooling's subcommands the docs name: on a product-only install each says where it went.
TOOLING = ("demo", "bench", "emulate-shoe", "emulate-display")
NOT_INSTALLED = (
    "tablectl {name}: the bench is not installed (development tooling: pip install -e ./bench; docs/bench.md)"
)


# `tablectl floor` where the floor's distribution (floor/pyproject.toml) is not installed: a table's Pi.
FLOOR_NOT_INSTALLED = (
    "tablectl floor: the floor is not installed here (its commands come with the floor's own distribution, "
    "blackjack-table-floor, on the floor's servers: docs/floor.md)"
)


# The modules of the product's extra `table` (pyproject.toml: the devices, the state machine, the screens), which a
# floor server does not install: a command that needs one says in one line what to install, not a traceback.
TABLE_EXTRA_MODULES = ("textual", "serial", "serial_asyncio_fast", "usb", "transitions")
TABLE_EXTRA_MISSING = (
    "tablectl {name}: needs the table's own dependencies, not installed here ({missing} is missing): a table "
    "installs the product with its extra `table`, pip install 'blackjack-table-controller[table]' (on a table's "
    "computer systemd/install.sh installs them from requirements/pi.txt: docs/deploy.md)"
)


def unavailable(name: str, module_name: str) -> str | None:
    """Why the command ``name`` cannot run here (its module does not import), in one line; None: it can."""
    try:
        importlib.import_module(module_name)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in TABLE_EXTRA_MODULES:
            return TABLE_EXTRA_MISSING.format(name=name, missing=missing)
        return f"{name}: not available in this build ({exc})"
    return None


def tooling_commands() -> dict[str, str]:
    """name -> module of the subcommands installed development tooling registers (none on a Pi); a name
    the product already has stays the product's."""
    found = importlib.metadata.entry_points(group=TOOLING_GROUP)
    return {ep.name: ep.module for ep in found if ep.name not in COMMANDS}


def _tooling_help(module_name: str) -> str:
    try:
        return str(importlib.import_module(module_name).HELP)
    except (ImportError, AttributeError) as exc:
        return f"development tooling (not available: {exc})"


class DefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's default in ``--help``: "(default: X)" after its help, unless the help already names its
    default or the option has none worth showing (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text.lower()
            or default is None
            or default is False
            or default == []
            or default is argparse.SUPPRESS
            or not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE))
        ):
            return action.help
        return f"{text} (default: %(default)s)"

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        return action.dest.upper().replace("_", "-")  # --state-dir STATE-DIR, never a name from the code


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """The formatter on this parser and on every nested subcommand's parser (argparse does not pass it on)."""
    parser.formatter_class = DefaultsHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _show_defaults(child)


def _commands_epilog(commands: dict[str, tuple[str, str]]) -> str:
    """The commands in their groups, each group with an example; the tooling's where the bench is installed."""
    width = max(len(name) for name in commands) + 2
    grouped = {name for _, names, _ in GROUPS for name in names}
    lines = []
    for title, names, example in GROUPS:
        members = [n for n in names if n in commands] if names else [n for n in commands if n not in grouped]
        if not members:
            continue
        lines += ["", f"{title}:"]
        lines += [f"    {name.ljust(width)}{commands[name][1]}" for name in members]
        lines.append(f"  example: {example}")
    lines += ["", "tablectl COMMAND --help: what a command does, its options and an example."]
    return "\n".join(lines[1:])


def build_parser(
    selected: str | None = None, tooling: dict[str, str] | None = None
) -> argparse.ArgumentParser:
    """Build the parser; only the selected subcommand's module is imported (start-up stays fast)."""
    parser = argparse.ArgumentParser(
        prog="tablectl",
        description=DESCRIPTION,
        formatter_class=DefaultsHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="one of the commands below")
    commands = dict(COMMANDS)
    for name, module_name in (tooling_commands() if tooling is None else tooling).items():
        # a tooling module is imported for its line only when the list of commands is shown
        help_text = _tooling_help(module_name) if selected in (None, name) else "development tooling"
        commands[name] = (module_name, help_text)
    parser.epilog = _commands_epilog(commands)
    for name, (module_name, help_text) in commands.items():
        # no abbreviated options: `--password` must not be taken for `--password-file` (nor any option for another)
        # (listed in the epilog by group, not by argparse: no help= here)
        sp = sub.add_parser(name, description=help_text, allow_abbrev=False)
        sp.set_defaults(_module=module_name)
        if name != selected:
            continue
        why = unavailable(name, module_name)
        if why is not None:
            sp.set_defaults(_unavailable=why)
            continue
        module = importlib.import_module(module_name)
        module.add_arguments(sp)
        _show_defaults(sp)
        attach(sp, (name,), {**EXAMPLES, **getattr(module, "EXAMPLES", {})})
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    selected = next((a for a in argv if not a.startswith("-")), None)
    tooling = tooling_commands()
    if selected in TOOLING and selected not in tooling:
        print(NOT_INSTALLED.format(name=selected), file=sys.stderr)
        return 2
    if selected == "floor" and importlib.util.find_spec("floor") is None:
        print(FLOOR_NOT_INSTALLED, file=sys.stderr)
        return 2
    if selected in COMMANDS and selected != "floor":
        # before the arguments are parsed: a command whose module does not import has no options to parse
        why = unavailable(selected, COMMANDS[selected][0])
        if why is not None:
            print(why, file=sys.stderr)
            return 2
    parser = build_parser(selected, tooling)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if getattr(args, "_unavailable", None):
        print(args._unavailable, file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    try:
        return int(module.main(args) or 0)
    except OSError as exc:  # the last guard: a path given that the system refuses (a name too long, ...)
        if exc.filename is None:
            raise
        name = str(exc.filename)
        shown = name[:120] + ("..." if len(name) > 120 else "")
        print(f"{args.command}: cannot use {shown}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
