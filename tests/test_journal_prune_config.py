"""`tablectl journal archive|prune --config` (docs/cli.md): the journal, the audit key, the trusted public key and
``[journal] event_retention_days`` come from the table's configuration; an option that contradicts it is refused
(exit 2, one line naming both); without --config the options stay required one by one.

Real journals written by a real TableController (test_journal_prune's ``recorded_session``), real `tablectl`."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from test_journal_checkpoint import ROOT, tablectl
from test_journal_prune import make_archive, recorded_session, untouched

from controller.audit.keys import load_or_create
from controller.config.load import load_config
from controller.journal.table_files import audit_key_file, journal_file
from controller.journal.trusted_key import configured_key


def table_config(
    where: Path, state_dir: Path, *, retention_days: int | None = None, key_file: Path | None = None
) -> Path:
    """The example table configuration with its state in ``state_dir`` (where ``recorded_session`` put the
    journal and, by default, the audit key), written to ``where``/table.toml (its integrity manifest, if any:
    ``where``/integrity.json)."""
    text = (ROOT / "firmware_configs" / "table.example.toml").read_text(encoding="utf-8")
    text = text.replace('state_dir = "/var/lib/tablectl"', f"state_dir = {json.dumps(str(state_dir))}", 1)
    assert str(state_dir) in text
    if key_file is not None:  # the example's [audit] leaves key_file commented out (the default)
        text = text.replace("[audit]", f"[audit]\nkey_file = {json.dumps(str(key_file))}", 1)
        assert str(key_file) in text
    if retention_days is not None:
        text, n = re.subn(
            r"(?m)^event_retention_days = \d+", f"event_retention_days = {retention_days}", text
        )
        assert n == 1, "the example configuration's [journal] event_retention_days"
    where.mkdir(parents=True, exist_ok=True)
    path = where / "table.toml"
    path.write_text(text, encoding="utf-8")
    return path


def one_line(run, code: int, *wanted: str) -> str:
    assert run.returncode == code, run
    assert len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr
    for want in wanted:
        assert want in run.stderr, run.stderr
    return run.stderr


def event_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        conn.close()


def test_the_service_and_the_prune_read_the_same_files_from_a_configuration(tmp_path: Path) -> None:
    state, other_key = tmp_path / "state", tmp_path / "keys" / "audit.pem"
    cfg = load_config(table_config(tmp_path / "a", state), check_files=False)
    assert journal_file(cfg.table.state_dir) == state / "journal.db"
    assert audit_key_file(cfg) == state / "audit_key.pem"
    cfg = load_config(
        table_config(tmp_path / "b", state, key_file=other_key, retention_days=45), check_files=False
    )
    assert audit_key_file(cfg) == other_key and cfg.journal.event_retention_days == 45
    load_or_create(other_key)
    # no manifest yet: the key file's public key, as state/software publishes it; then the manifest's
    assert configured_key(cfg).source == f"the public key of {other_key}"
    (tmp_path / "b" / "integrity.json").write_text(json.dumps({"audit_public_key": "ab" * 32}))
    assert configured_key(cfg).hex == "ab" * 32 and "integrity.json" in configured_key(cfg).source


async def test_prune_with_config_only_keeps_the_configured_retention(tmp_path: Path) -> None:
    # a session played 40 days ago: outside the built-in 30-day retention, inside this table's 60 days
    db, kf, key, _book = await recorded_session(tmp_path / "state")
    config = table_config(tmp_path / "etc", tmp_path / "state", retention_days=60)
    run = tablectl("journal", "archive", "--config", str(config), "--to", str(tmp_path / "archive.db"))
    assert run.returncode == 0 and f"signed by the public key of {kf}" in run.stdout, run
    arch = tmp_path / "archive.db"
    state, events = untouched(db), event_count(db)

    run = tablectl("journal", "prune", "--config", str(config), "--archive", str(arch), "--by", "ana")
    one_line(run, 1, "journal prune: refused:", "60-day replay retention")
    assert untouched(db) == state and event_count(db) == events

    # a shorter retention given as well contradicts the configuration: refused, naming both
    run = tablectl("journal", "prune", "--config", str(config), "--archive", str(arch), "--by", "ana",
                   "--event-retention-days", "30")  # fmt: skip
    one_line(run, 2, "--event-retention-days 30", "event_retention_days 60", str(config))
    assert untouched(db) == state

    # the same options without --config: the built-in 30 days, and the kept events go
    run = tablectl("journal", "prune", "--db", str(db), "--archive", str(arch), "--by", "ana",
                   "--public-key", key, "--key-file", str(kf))  # fmt: skip
    assert run.returncode == 0, run
    assert event_count(db) < events


async def test_prune_with_config_only_uses_the_tables_journal_and_key(tmp_path: Path) -> None:
    db, _kf, key, _book = await recorded_session(tmp_path / "state")
    config = table_config(tmp_path / "etc", tmp_path / "state")  # the default retention, 30 days
    (tmp_path / "etc" / "integrity.json").write_text(json.dumps({"audit_public_key": key}))
    arch = make_archive(db, tmp_path / "archive.db", key)
    # options that agree with the configuration are accepted; a longer retention too (it keeps more)
    run = tablectl("journal", "prune", "--config", str(config), "--archive", str(arch), "--by", "ana",
                   "--db", str(db), "--public-key", key, "--event-retention-days", "31")  # fmt: skip
    assert run.returncode == 0, run
    assert "signed by the key in" in run.stdout and "integrity.json" in run.stdout, run.stdout
    assert tablectl("journal", "verify", "--db", str(db), "--public-key", key).returncode == 0


async def test_options_contradicting_the_configuration_are_refused(tmp_path: Path) -> None:
    db, _kf, key, _book = await recorded_session(tmp_path / "state")
    config = table_config(tmp_path / "etc", tmp_path / "state")
    arch = make_archive(db, tmp_path / "archive.db", key)
    other_db = tmp_path / "copy" / "journal.db"
    other_db.parent.mkdir()
    other_db.write_bytes(db.read_bytes())
    other_key_file = tmp_path / "other.pem"
    load_or_create(other_key_file)
    manifest = tmp_path / "other-integrity.json"
    manifest.write_text(json.dumps({"audit_public_key": "cd" * 32}))
    state = untouched(db)

    base = ("journal", "prune", "--config", str(config), "--archive", str(arch), "--by", "mallory")
    one_line(tablectl(*base, "--db", str(other_db)), 2, f"--db {other_db}", str(db))
    one_line(tablectl(*base, "--key-file", str(other_key_file)), 2, str(other_key_file), "audit_key.pem")
    one_line(tablectl(*base, "--public-key", "ab" * 32), 2, "ab" * 32, key)
    one_line(tablectl(*base, "--manifest", str(manifest)), 2, str(manifest), key)
    archived = ("journal", "archive", "--config", str(config), "--to", str(tmp_path / "a2.db"))
    one_line(tablectl(*archived, "--public-key", "ab" * 32), 2, "journal archive:", key)
    assert not (tmp_path / "a2.db").exists()

    bad = tmp_path / "bad.toml"
    bad.write_text("[table]\nid = 7\n")
    one_line(tablectl("journal", "prune", "--config", str(bad), "--archive", str(arch), "--by", "ana"), 2,
             "bad configuration")  # fmt: skip
    one_line(tablectl("journal", "prune", "--config", str(tmp_path / "none.toml"), "--archive", str(arch),
                      "--by", "ana"), 2, "none.toml")  # fmt: skip
    assert untouched(db) == state


async def test_without_config_the_options_are_required(tmp_path: Path) -> None:
    db, kf, key, _book = await recorded_session(tmp_path / "state")
    arch = make_archive(db, tmp_path / "archive.db", key)
    state = untouched(db)
    prune = ("journal", "prune", "--archive", str(arch), "--by", "ana")
    one_line(tablectl(*prune), 2, "missing --db, --key-file, one of --public-key/--manifest", "--config")
    one_line(tablectl(*prune, "--db", str(db), "--public-key", key), 2, "missing --key-file")
    one_line(
        tablectl(*prune, "--db", str(db), "--key-file", str(kf)), 2, "missing one of --public-key/--manifest"
    )
    one_line(tablectl(*prune, "--key-file", str(kf), "--public-key", key), 2, "missing --db")
    archive = ("journal", "archive", "--to", str(tmp_path / "a2.db"))
    one_line(tablectl(*archive, "--public-key", key), 2, "journal archive: missing --db")
    one_line(
        tablectl(*archive, "--db", str(db)), 2, "journal archive: missing one of --public-key/--manifest"
    )
    assert untouched(db) == state and not (tmp_path / "a2.db").exists()


async def test_verify_with_config_checks_the_tables_journal_or_an_archive_with_the_tables_key(
    tmp_path: Path,
) -> None:
    """`journal verify --config`: the table's journal by default, another file (an archive) with --db, always
    with the table's key (every checkpoint record's signature checked); a different key given too is refused."""
    db, kf, key, _book = await recorded_session(tmp_path / "state")
    config = table_config(tmp_path / "etc", tmp_path / "state")
    run = tablectl("journal", "verify", "--config", str(config))
    assert run.returncode == 0, run
    assert "hash chain intact" in run.stdout and f"signed by the public key of {kf}" in run.stdout, run.stdout
    arch = make_archive(db, tmp_path / "archive.db", key)
    run = tablectl("journal", "verify", "--config", str(config), "--db", str(arch))
    assert run.returncode == 0 and "signed by the public key of" in run.stdout, run
    one_line(tablectl("journal", "verify", "--config", str(config), "--public-key", "ab" * 32), 2,
             "journal verify:", "ab" * 32, key)  # fmt: skip
    one_line(tablectl("journal", "verify"), 2, "journal verify: missing --db")
    # the key is really used: with another key recorded in the table's manifest, the signatures do not verify
    (tmp_path / "etc" / "integrity.json").write_text(json.dumps({"audit_public_key": "cd" * 32}))
    run = tablectl("journal", "verify", "--config", str(config))
    assert run.returncode == 1 and "BROKEN" in run.stderr, run
