"""Integrity manifest and `tablectl config`.

Issue: "At start-up the controller checks its configuration and firmware profiles against recorded SHA-256
digests and refuses to open the table if they differ." These tests record real files, change them, and check
that every change is caught and named.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli import main as tablectl
from controller.config import ConfigError
from controller.config.integrity import (
    FORMAT,
    combined_digest,
    compute_digests,
    verify,
)
from controller.ops.manifest import write_manifest

ROOT = Path(__file__).resolve().parents[1]


def make_table(folder: Path) -> Path:
    """demo.toml and the real PT-2001 profile copied into ``folder`` (the config names its profiles dir)."""
    (folder / "profiles").mkdir(parents=True)
    shutil.copy(ROOT / "firmware_configs" / "profiles" / "pt-2001.toml", folder / "profiles" / "pt-2001.toml")
    (folder / "credentials.toml").write_text("# supervisors\n")
    text = (ROOT / "firmware_configs" / "demo.toml").read_text()
    text = text.replace("[table]\n", '[table]\nprofiles_dir = "profiles"\n', 1)
    text = text.replace('"/tmp/tablectl-demo/credentials.toml"', '"credentials.toml"')
    path = folder / "table.toml"
    path.write_text(text)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_digests_cover_config_and_profile(tmp_path: Path) -> None:
    cfg = make_table(tmp_path)
    digests = compute_digests(cfg)
    assert digests == {"config": sha(cfg), "profile": sha(tmp_path / "profiles" / "pt-2001.toml")}


def test_separate_firmware_files_are_digested(tmp_path: Path) -> None:
    cfg = make_table(tmp_path)
    (tmp_path / "display.toml").write_text("baudrate = 57600\n")
    cfg.write_text(
        cfg.read_text()
        .replace("[display]\n", '[display]\nfile = "display.toml"\n')
        .replace('port = "/dev/null"\nbaudrate = 115200\n\n[mqtt]', 'port = "/dev/null"\n\n[mqtt]')
    )
    assert compute_digests(cfg)["firmware.display"] == sha(tmp_path / "display.toml")


def test_recorded_manifest_verifies(tmp_path: Path) -> None:
    cfg = make_table(tmp_path)
    manifest = write_manifest(cfg, tmp_path / "integrity.json")
    assert manifest["format"] == FORMAT
    assert manifest["combined"] == combined_digest(compute_digests(cfg))
    on_disk = json.loads((tmp_path / "integrity.json").read_text())
    assert on_disk["files"]["profile"]["sha256"] == sha(tmp_path / "profiles" / "pt-2001.toml")
    assert verify(cfg, tmp_path / "integrity.json") == []


@pytest.mark.parametrize("role", ["config", "profile"])
def test_a_changed_file_is_a_named_mismatch(tmp_path: Path, role: str) -> None:
    cfg = make_table(tmp_path)
    write_manifest(cfg, tmp_path / "integrity.json")
    target = cfg if role == "config" else tmp_path / "profiles" / "pt-2001.toml"
    target.write_text(target.read_text() + "# edited\n")  # still valid, but not what was approved
    [problem] = verify(cfg, tmp_path / "integrity.json")
    assert problem.startswith(f"{role}: {target} differs from the recorded digest")


def test_a_firmware_file_added_after_recording_is_a_mismatch(tmp_path: Path) -> None:
    cfg = make_table(tmp_path)
    write_manifest(cfg, tmp_path / "integrity.json")
    (tmp_path / "shoe.toml").write_text("retries = 4\n")
    cfg.write_text(
        cfg.read_text().replace("[shoe]\n", '[shoe]\nfile = "shoe.toml"\n').replace("retries = 3\n", "", 1)
    )
    problems = verify(cfg, tmp_path / "integrity.json")
    assert any(p.startswith("firmware.shoe: ") and "not in the manifest" in p for p in problems)
    assert any(p.startswith("config: ") for p in problems)


def test_moving_to_a_new_release_folder_still_verifies(tmp_path: Path) -> None:
    """Files are keyed by role, so an update that only moves the same files (new release dir) verifies."""
    cfg = make_table(tmp_path / "release-1")
    write_manifest(cfg, tmp_path / "integrity.json")
    shutil.copytree(tmp_path / "release-1", tmp_path / "release-2")
    assert verify(tmp_path / "release-2" / "table.toml", tmp_path / "integrity.json") == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "manifest not found"),
        ("{not json", "not valid JSON"),
        ('{"format": "other/1", "files": {}}', "format is not"),
        (json.dumps({"format": FORMAT, "files": {}}), "no files recorded"),
        (json.dumps({"format": FORMAT, "files": {"config": {"sha256": "abc"}}}), "not a SHA-256"),
    ],
)
def test_bad_manifest_keeps_the_table_closed(tmp_path: Path, content: str | None, reason: str) -> None:
    cfg = make_table(tmp_path)
    manifest = tmp_path / "integrity.json"
    if content is not None:
        manifest.write_text(content)
    [problem] = verify(cfg, manifest)
    assert reason in problem


def test_config_whose_references_cannot_be_read_raises_config_error(tmp_path: Path) -> None:
    cfg = tmp_path / "table.toml"
    cfg.write_text("[table]\nid = 'x'\n")
    with pytest.raises(ConfigError, match=r"table\.profile: missing"):
        compute_digests(cfg)
    cfg.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        compute_digests(cfg)


def test_unreadable_profile_is_a_mismatch_not_a_crash(tmp_path: Path) -> None:
    cfg = make_table(tmp_path)
    write_manifest(cfg, tmp_path / "integrity.json")
    (tmp_path / "profiles" / "pt-2001.toml").unlink()
    [problem] = verify(cfg, tmp_path / "integrity.json")
    assert problem.startswith("profile: cannot read")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.binary(max_size=40))
def test_any_change_to_the_profile_is_caught(tmp_path_factory: pytest.TempPathFactory, extra: bytes) -> None:
    folder = tmp_path_factory.mktemp("t")
    cfg = make_table(folder)
    write_manifest(cfg, folder / "integrity.json")
    profile = folder / "profiles" / "pt-2001.toml"
    profile.write_bytes(profile.read_bytes() + b"#" + extra)  # any bytes, even ones that break the TOML
    assert [p.split(":")[0] for p in verify(cfg, folder / "integrity.json")] == ["profile"]


# ---- tablectl config ----------


def test_cli_check_prints_one_line_per_file_and_the_combined_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_table(tmp_path)
    assert tablectl(["config", "check", str(cfg)]) == 0
    lines = capsys.readouterr().out.splitlines()
    digests = compute_digests(cfg)
    assert [line.split()[:2] for line in lines] == [
        [digests["config"], "config"],
        [digests["profile"], "profile"],
        [combined_digest(digests), "combined"],
    ]


def test_cli_check_refuses_a_bad_config_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_table(tmp_path)
    cfg.write_text(cfg.read_text().replace("baudrate = 115200", "baudrate = 1200", 1))
    assert tablectl(["config", "check", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert f"{cfg}: shoe.baudrate: " in err


def test_cli_check_requires_credentials_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_table(tmp_path)
    (tmp_path / "credentials.toml").unlink()
    assert tablectl(["config", "check", str(cfg)]) == 1
    assert "supervisors.credentials_file: file not found" in capsys.readouterr().err
    assert tablectl(["config", "check", str(cfg), "--no-file-check"]) == 0


def test_cli_record_then_verify_then_tamper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = make_table(tmp_path)
    manifest = tmp_path / "integrity.json"
    assert tablectl(["config", "record", str(cfg), "--manifest", str(manifest)]) == 0
    assert tablectl(["config", "verify", str(cfg), "--manifest", str(manifest)]) == 0
    assert "integrity OK" in capsys.readouterr().out
    profile = tmp_path / "profiles" / "pt-2001.toml"
    profile.write_text(profile.read_text().replace("decks = 6 ", "decks = 6  "))
    assert tablectl(["config", "verify", str(cfg), "--manifest", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "FAILED" in err and "profile:" in err


def test_cli_without_action_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["config"]) == 2


def test_tablectl_entry_point_end_to_end(tmp_path: Path) -> None:
    """The same through a real process, as a technician types it."""
    cfg = make_table(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli", "config", "check", str(cfg)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1].split()[1] == "combined"
