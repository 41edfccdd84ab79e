"""An example for every ``tablectl floor`` command's ``--help`` (issue 42), as controller/cli/examples.py does for
the table's commands: a command's path -> (command line, what it does)."""

from __future__ import annotations

EXAMPLES: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {
    ("floor",): (
        ("tablectl floor shift --hours 8 --html shift.html", "the last eight hours' figures as a page"),
        ("tablectl floor web --help", "the dashboard and its options"),
    ),
    ("floor", "migrate"): (
        ("tablectl floor migrate", "create the floor's database, or bring it up to date"),
    ),
    ("floor", "archive"): (
        (
            "FLOOR_ARCHIVE_PASSWORD=... tablectl floor archive --ca /etc/floor/ca.pem --worker 1",
            "keep every table's events in the archive (one of several workers)",
        ),
    ),
    ("floor", "alerts"): (
        ("tablectl floor alerts --table T1", "the floor's open alerts for table T1"),
        ("tablectl floor alerts --ack 12 --user alice", "alice acknowledges alert 12"),
    ),
    ("floor", "rounds"): (
        (
            "tablectl floor rounds --table T1 --since 2026-11-28 --out rounds/",
            "each archived round of T1 since that day as a file tablectl replay settles",
        ),
    ),
    ("floor", "jackpot"): (
        ("tablectl floor jackpot --table T1", "table T1's jackpot meter over the last day"),
    ),
    ("floor", "report"): (
        ("tablectl floor report --day 2026-11-28 --html day.html", "that day's summary per table as a page"),
    ),
    ("floor", "players"): (
        (
            "tablectl floor players --hours 12 --player 4711AB",
            "one player's visits and rating over the last 12 hours",
        ),
        (
            "tablectl floor players --since 2026-11-28 --csv players.csv",
            "every player's rating since that day",
        ),
    ),
    ("floor", "players", "register"): (
        ("tablectl floor players register --card 4711AB --name 'Ana Example'", "name a card's player"),
    ),
    ("floor", "players", "erase"): (
        (
            "tablectl floor players erase --player 4711AB --reason 'asked on 2026-11-28'",
            "erase the player's personal data",
        ),
    ),
    ("floor", "players", "settings"): (
        ("tablectl floor players settings --comp-share 25 --retention-days 730", "comp policy and retention"),
    ),
    ("floor", "players", "retention"): (
        ("tablectl floor players retention", "erase players not seen for the retention days"),
    ),
    ("floor", "shift"): (
        (
            "tablectl floor shift --since 2026-11-28T22:00 --hours 8 --layout /etc/floor/floor.toml --csv shift.csv",
            "the night shift's figures per table, pit and floor",
        ),
    ),
    ("floor", "sessions"): (
        ("tablectl floor sessions --hours 8 --html sessions.html", "the last eight hours' play sessions"),
    ),
    ("floor", "judge"): (
        (
            "tablectl floor judge --hours 1",
            "judge the last hour's settled rounds (the periodic judging pass)",
        ),
    ),
    ("floor", "bridge"): (
        (
            "tablectl floor bridge --config table.toml --bridge bridge.toml --out /etc/mosquitto/conf.d/floor.conf",
            "connect a table's broker to the floor broker",
        ),
    ),
    ("floor", "web"): (
        (
            "FLOOR_WEB_PASSWORD=... tablectl floor web --listen 127.0.0.1:8080 --public-url https://floor.casino.lan",
            "the dashboard behind the casino's reverse proxy",
        ),
    ),
    ("floor", "user"): (("tablectl floor user list", "every dashboard account with its role"),),
    ("floor", "user", "add"): (
        (
            "tablectl floor user add alice --role supervisor --password-file -",
            "a supervisor's account, the password typed on standard input",
        ),
    ),
    ("floor", "user", "password"): (
        ("tablectl floor user password alice --password-file -", "a new password for alice"),
    ),
    ("floor", "user", "role"): (("tablectl floor user role alice --role viewer", "alice may only look now"),),
    ("floor", "user", "disable"): (("tablectl floor user disable alice", "alice cannot log in any more"),),
    ("floor", "user", "enable"): (("tablectl floor user enable alice", "alice may log in again"),),
    ("floor", "user", "list"): (
        ("tablectl floor user list", "every account, its role and whether it is enabled"),
    ),
    ("floor", "enrol"): (
        (
            "tablectl floor enrol --site lisbon --table T1 --manifest manifest.json --user alice",
            "trust table T1's audit key, read from its manifest",
        ),
    ),
    ("floor", "backup"): (("tablectl floor backup status", "the last good base backup and restore check"),),
    ("floor", "backup", "run"): (
        (
            "tablectl floor backup run --backup-dir /srv/floor-backup --keep 7",
            "a base backup now, a week kept",
        ),
    ),
    ("floor", "backup", "verify"): (
        (
            "tablectl floor backup verify --backup-dir /srv/floor-backup",
            "restore the newest backup and compare",
        ),
    ),
    ("floor", "backup", "status"): (
        ("tablectl floor backup status --json", "backups, WAL archiving and the last restore check, as JSON"),
    ),
    ("floor", "promote"): (
        (
            "tablectl floor promote --old-primary floor1.casino.lan:5432",
            "make this standby the primary, once the old primary no longer answers",
        ),
    ),
    ("floor", "restore"): (
        (
            "tablectl floor restore --to 2026-11-29T10:15:00Z --data-dir /var/lib/postgresql/15/main",
            "a new data directory as the database was at 10:15 UTC",
        ),
    ),
    ("floor", "progressive"): (
        (
            "tablectl floor progressive report --link bank-a",
            "the link's meter, hits, last wins and contributions",
        ),
    ),
    ("floor", "progressive", "run"): (
        (
            "FLOOR_PROGRESSIVE_PASSWORD=... tablectl floor progressive run --config bank-a.toml",
            "the controller of link bank-a (as its unit runs it)",
        ),
    ),
    ("floor", "progressive", "record"): (
        (
            "tablectl floor progressive record --config bank-a.toml",
            "approve this release: its digest and the link's key in the manifest",
        ),
    ),
    ("floor", "progressive", "suspend"): (
        (
            "tablectl floor progressive suspend --link bank-a --by ana --by-password-file - --with rui"
            " --with-password-file rui.pw --reason 'new rate'",
            "two supervisors stop the link taking chips",
        ),
    ),
    ("floor", "progressive", "resume"): (
        (
            "tablectl floor progressive resume --link bank-a --by ana --by-password-file - --with rui"
            " --with-password-file rui.pw --reason 'new rate checked'",
            "two supervisors let the link take chips again",
        ),
    ),
    ("floor", "progressive", "correct"): (
        (
            "tablectl floor progressive correct --link bank-a --to-minor 1250000 --by ana --by-password-file -"
            " --with rui --with-password-file rui.pw --reason 'meter reset by the regulator'",
            "two supervisors set a suspended link's meter to 12,500.00",
        ),
    ),
    ("floor", "progressive", "set"): (
        (
            "tablectl floor progressive set --link bank-a --config new.toml --by ana --by-password-file -"
            " --with rui --with-password-file rui.pw --reason 'rate 15 % to 18 %'",
            "new parameters for a suspended link",
        ),
    ),
    ("floor", "progressive", "report"): (
        ("tablectl floor progressive report --link bank-a --csv", "the same as CSV"),
    ),
}
