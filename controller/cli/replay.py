"""`tablectl replay ROUND.json [--json [--pretty]] [--currency EUR] [--html FILE]`: settle a round description.

Default output: a dispute report a person reads (PT-2001 r.62): each card with where it went and why, each
decision, the dealer's hand, each hand's result and payment, insurance, side bets, prizes, jackpot, every dealer
error with its rule and remedy; cards as on the table (A♦), decisions in words, money with the currency.
`--json` (or `--pretty`, which indents it): the settlement and dealer errors as one JSON document, for scripts
(its fields and their units are docs/rounds.md's). `--report` is the default and kept for scripts that name it.
`--html FILE`: the report as a self-contained HTML page with card pictures.

`-` reads stdin: one round description, or JSON lines as `tablectl journal export` writes them (one round per
line, each with the journal's own settlement under "journal"): every round is settled again and compared with
the journal's settlement.

Exit 0: every round valid (dealer errors included in the output) and, where the journal's settlement is known,
in agreement with it; 1: a round is invalid or disagrees; 2: unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.rules.rounds import InvalidRound, ReplayResult, load_round_file, replay
from controller.terminal import dispute_report as report
from controller.words import count

MAX_INPUT = 64 * 1024 * 1024  # bytes read from stdin at most (a session export is far smaller)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "round",
        help="round description (JSON, see docs/rounds.md); '-' reads stdin (one round or JSON lines)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the settlement as JSON for scripts instead of the report"
    )
    parser.add_argument("--pretty", action="store_true", help="print the JSON indented (implies --json)")
    parser.add_argument(
        "--report",
        action="store_true",
        help="print the dispute report a person reads (what it prints anyway)",
    )
    parser.add_argument(
        "--currency",
        metavar="CODE",
        help="the table's currency for the report's amounts, e.g. EUR (a journal export names it itself)",
    )
    parser.add_argument("--html", metavar="FILE", help="also write the report as a self-contained HTML page")


def _read(args: argparse.Namespace) -> list[Any]:
    """The round documents: one from a file, or stdin (one document or JSON lines)."""
    if args.round != "-":
        return [load_round_file(args.round)]
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        raise InvalidRound(f"stdin: more than {MAX_INPUT} bytes")
    try:
        data = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRound(f"stdin: not UTF-8: {exc}") from exc
    try:
        return [json.loads(data)]
    except json.JSONDecodeError:
        pass
    docs = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InvalidRound(f"stdin line {n}: not valid JSON: {exc}") from exc
    if not docs:
        raise InvalidRound("stdin: no round description")
    return docs


def _settle(doc: Any) -> tuple[ReplayResult, None] | tuple[None, InvalidRound]:
    try:
        return replay(doc), None
    except InvalidRound as exc:
        return None, exc


def _journal(doc: Any) -> dict[str, Any] | None:
    j = doc.get("journal") if isinstance(doc, dict) else None
    return j if isinstance(j, dict) else None


def main(args: argparse.Namespace) -> int:
    pretty = bool(getattr(args, "pretty", False))
    indent = 2 if pretty else None
    want_report = not (getattr(args, "json", False) or pretty)
    html_path = getattr(args, "html", None)
    currency = getattr(args, "currency", None)
    if currency is not None and not report.CURRENCY.fullmatch(currency):
        print(f"replay: --currency {currency[:20]!r}: three capital letters, e.g. EUR", file=sys.stderr)
        return 2
    try:
        docs = _read(args)
    except (InvalidRound, json.JSONDecodeError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    several = len(docs) > 1
    reports: list[report.Report] = []
    failed = disagree = 0
    try:
        for n, doc in enumerate(docs, 1):
            result, error = _settle(doc)
            journal = _journal(doc)
            agreement = None
            if result is not None and journal is not None and "settlement" in journal:
                agreement = report.differences(result.settlement.to_json(), journal["settlement"])
            failed += result is None
            disagree += bool(agreement)
            label = f"round {n}" if several else "round"
            rep = report.build(
                doc,
                result,
                error,
                label=label,
                agreement=agreement,
                journal=journal,
                default_currency=currency,
            )
            reports.append(rep)
            if want_report:
                print(report.text(rep))
            elif several:
                out: dict[str, Any] = {"line": n, "round_id": journal.get("round_id") if journal else None}
                if result is None:
                    assert error is not None  # _settle returns one of the two
                    out.update(valid=False, error=error.message, rule=error.rule)
                else:
                    out.update(valid=True, total_net=result.settlement.total_net)
                    out["agrees"] = None if agreement is None else not agreement
                    if agreement:
                        out["differences"] = agreement
                print(json.dumps(out, indent=indent))
            elif result is None:
                assert error is not None
                print(json.dumps({"valid": False, "error": error.message, "rule": error.rule}, indent=indent))
            else:
                doc_out = result.to_json()
                if agreement is not None:
                    doc_out["journal_agrees"] = not agreement
                    if agreement:
                        doc_out["differences"] = agreement
                print(json.dumps(doc_out, indent=indent))
            if error is not None:
                print(
                    f"replay: {'line ' + str(n) + ': ' if several else ''}invalid round: {error}",
                    file=sys.stderr,
                )
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 1 if failed or disagree else 0
    if html_path:
        try:
            Path(html_path).write_text(report.html_page(reports), encoding="utf-8")
        except OSError as exc:
            print(f"replay: cannot write {html_path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    if several:
        print(
            f"replay: {count(len(docs), 'round')}: {len(docs) - failed} settled, {failed} invalid, "
            f"{disagree} disagree with the journal",
            file=sys.stderr,
        )
    return 1 if failed or disagree else 0
