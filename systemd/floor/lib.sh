# shellcheck shell=bash
# The floor's part of the release tooling, shared by systemd/floor/install.sh, update.sh and rollback.sh. It
# sources the table's ../lib.sh (releases beside each other, atomic `current`, .incomplete marks, pruning, one
# run at a time) and points it at the floor's own folders; what differs is below: the release's venv holds the
# product's and the floor's wheels (requirements/floor.txt, hash-checked), a release is checked against the
# database's schema, and there are several units to restart.
#
#   /opt/tablectl-floor/releases/<id>/  /opt/tablectl-floor/current  /opt/tablectl-floor/.venv -> current/.venv
#   /etc/tablectl-floor/                 settings (floor.env), the services' secrets, broker accounts, certs/
#
# Environment (for tests): TABLECTL_FLOOR_ROOT, TABLECTL_FLOOR_ETC, TABLECTL_KEEP.
# shellcheck source-path=SCRIPTDIR
TABLECTL_ROOT="${TABLECTL_FLOOR_ROOT:-/opt/tablectl-floor}"
TABLECTL_ETC="${TABLECTL_FLOOR_ETC:-/etc/tablectl-floor}"
TABLECTL_REQUIREMENTS=requirements/floor.txt
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
FLOOR_ETC="$TABLECTL_ETC"
# shellcheck disable=SC2034 # used by the scripts that source this file
FLOOR_CERTS="$FLOOR_ETC/certs"
FLOOR_DB=floor
WEB_UNIT=tablectl-floor-web.service
# shellcheck disable=SC2034 # used by install.sh
ARCHIVE_TEMPLATE=tablectl-floor-archive@.service
# shellcheck disable=SC2034 # used by install.sh
PROGRESSIVE_TEMPLATE=tablectl-floor-progressive@.service
# The judging pass (docs/floor.md "Judged rounds"): a oneshot and the timer that starts it every 10 minutes.
# shellcheck disable=SC2034 # used by install.sh
JUDGE_UNITS=(tablectl-floor-judge.service tablectl-floor-judge.timer)
# shellcheck disable=SC2034 # used by install.sh
JUDGE_TIMER=tablectl-floor-judge.timer

log() { printf 'tablectl-floor: %s\n' "$*" >&2; }

# The release's venv: the locked dependencies (hash-checked), then the product's and the floor's wheels built
# from the release's own copy of the source tree (docs/floor.md "Install it").
make_release() {
    local src="$1" id="$2" dest
    if [ ! -f "$src/pyproject.toml" ] || [ ! -f "$src/floor/pyproject.toml" ]; then
        die "$src does not look like the tablectl source tree (no pyproject.toml, floor/pyproject.toml)"
    fi
    mkdir -p "$RELEASES"
    dest="$RELEASES/$id"
    UNCOMMITTED="$dest"
    mkdir "$dest"
    : >"$dest/$INCOMPLETE"
    source_digest "$src" >"$dest/$SOURCE_DIGEST"
    tar -C "$src" "${TAR_EXCLUDES[@]}" -cf - . | tar -C "$dest" -xf -
    log "building the wheels and $dest/.venv (dependencies hash-checked from $TABLECTL_REQUIREMENTS)"
    python3 -m venv "$dest/.venv"
    "$dest/.venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$dest/.venv/bin/python" -m pip install --quiet --require-hashes -r "$dest/$TABLECTL_REQUIREMENTS" >&2
    "$dest/.venv/bin/python" -m pip wheel --quiet --no-deps -w "$dest/dist" "$dest" "$dest/floor" >&2
    rm -rf "$dest/build" "$dest"/*.egg-info "$dest"/floor/*.egg-info
    local product floor
    product="$(find "$dest/dist" -name 'blackjack_table_controller-*.whl' | head -n 1)"
    floor="$(find "$dest/dist" -name 'blackjack_table_floor-*.whl' | head -n 1)"
    if [ -z "$product" ] || [ -z "$floor" ]; then
        die "the wheels were not built in $dest/dist"
    fi
    "$dest/.venv/bin/python" -m pip install --quiet --no-deps "$product" "$floor" >&2
    chmod -R go-w "$dest"
}

# psql as PostgreSQL's superuser, over the local socket (peer authentication as the OS user postgres).
pg_super() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# A floor command of release DIR as the migrations owner (root only: owner.env is root's).
owner_floor() {
    local dir="$1"
    shift
    (
        set -a
        # shellcheck disable=SC1091
        source "$FLOOR_ETC/owner.env"
        set +a
        "$dir/.venv/bin/tablectl" floor "$@"
    )
}

# The migrations a release ships (the highest NNNN of floor/migrations/).
release_schema() { find "$RELEASES/$1/floor/migrations" -name '[0-9][0-9][0-9][0-9]_*.sql' -printf '%f\n' | sort | tail -n 1 | cut -c1-4 | sed 's/^0*//'; }

# The schema version of the database (0 when there is none yet).
database_schema() {
    pg_super -d "$FLOOR_DB" -At -c "SELECT coalesce(max(version), 0) FROM schema_migrations" 2>/dev/null || echo 0
}

# Refuse (status 1, a reason logged) a release whose code does not know every migration the database has: it
# would refuse to start (a rollback across a migration; docs/floor.md "Update and roll back").
check_release() {
    local id db rel
    id="$(basename "$1")"
    "$1/.venv/bin/tablectl" floor --help >/dev/null || {
        log "release $id: tablectl floor does not run"
        return 1
    }
    db="$(database_schema)"
    rel="$(release_schema "$id")"
    if [ "${db:-0}" -gt "${rel:-0}" ]; then
        log "release $id knows schema version ${rel:-0}, the database is at $db"
        return 1
    fi
}

# Bring the database to the release's schema as its owner, then give the services' roles their rights.
migrate_and_grant() {
    local dir="$1" out
    if pg_is_standby; then # read-only: update the primary first; its migrations and grants replicate here
        log "database: a standby of ${FLOOR_PEER:-the primary}: migrated there, not here"
        return 0
    fi
    out="$(owner_floor "$dir" migrate 2>&1)" || {
        log "$out"
        return 1
    }
    log "database: $out"
    runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d "$FLOOR_DB" \
        -c "SET ROLE floor_owner" -f "$dir/systemd/floor/grants.sql" >/dev/null
}

# The floor's units: the dashboard and archive workers 1..FLOOR_WORKERS.
floor_units() {
    local n
    echo "$WEB_UNIT"
    for n in $(seq 1 "${FLOOR_WORKERS:-2}"); do echo "tablectl-floor-archive@$n.service"; done
}

# Restart every floor unit and wait for each to come up (Type=notify: READY=1 or failed). Status 1 when one
# did not; its name is logged.
restart_service() {
    local unit ok=0
    "$SYSTEMCTL" daemon-reload || true
    for unit in $(floor_units); do
        "$SYSTEMCTL" reset-failed "$unit" 2>/dev/null || true
        if ! "$SYSTEMCTL" restart "$unit" || ! "$SYSTEMCTL" is-active --quiet "$unit"; then
            log "$unit did not come up (journalctl -u $unit)"
            ok=1
        fi
    done
    return "$ok"
}

# floor.env: the settings (site, workers, addresses), KEY=value lines.
load_settings() {
    if [ -f "$FLOOR_ETC/floor.env" ]; then
        # shellcheck disable=SC1091
        source "$FLOOR_ETC/floor.env"
    fi
}

# ---- backups (docs/floor.md "Backups and point-in-time recovery") ------------------------------------------------
# FLOOR_BACKUP_DIR (floor.env): WAL archive (wal/) and base backups (base/), owned by postgres, mode 0700; best a
# disk or a mount of its own. FLOOR_BACKUP_KEEP: base backups kept.
WAL_ARCHIVE_SCRIPT=/usr/local/lib/tablectl-floor/wal-archive
BACKUP_UNITS=(tablectl-floor-backup.service tablectl-floor-backup.timer tablectl-floor-backup-verify.service
    tablectl-floor-backup-verify.timer)

# The backup directory and PostgreSQL's archive_command script, before PostgreSQL is told to archive into it.
backup_storage() {
    local release_dir="$1" data_dir="$2" d
    install -d -m 0755 "$(dirname "$WAL_ARCHIVE_SCRIPT")"
    if ! cmp -s "$release_dir/systemd/floor/tablectl-floor-wal-archive" "$WAL_ARCHIVE_SCRIPT"; then
        install -m 0755 "$release_dir/systemd/floor/tablectl-floor-wal-archive" "$WAL_ARCHIVE_SCRIPT"
    fi
    for d in "$FLOOR_BACKUP_DIR" "$FLOOR_BACKUP_DIR/wal" "$FLOOR_BACKUP_DIR/base"; do
        install -d -m 0700 -o postgres -g postgres "$d"
    done
    if [ -d "$data_dir" ] && [ "$(stat -c %d "$FLOOR_BACKUP_DIR")" = "$(stat -c %d "$data_dir")" ]; then
        log "WARNING: $FLOOR_BACKUP_DIR is on the database's own disk: a lost disk takes the backups too (mount another disk there)"
    fi
}

# PostgreSQL's settings for continuous WAL archiving (part of its conf.d/tablectl-floor.conf).
backup_pg_settings() {
    printf '%s\n' "# WAL archived to the backup directory (docs/floor.md \"Backups and point-in-time recovery\")" \
        "wal_level = replica" "archive_mode = on" \
        "archive_command = '$WAL_ARCHIVE_SCRIPT %p $FLOOR_BACKUP_DIR/wal/%f'" \
        "archive_timeout = 300"
}

# The backup and restore-check units and their timers; the first base backup started at once when there is none.
backup_units() {
    local release_dir="$1" pg_port="$2" start="$3" unit changed=0
    write_env "$FLOOR_ETC/backup.env" postgres \
        "FLOOR_BACKUP_DSN=postgresql:///$FLOOR_DB?host=/var/run/postgresql&port=$pg_port&user=postgres"
    for unit in "${BACKUP_UNITS[@]}"; do
        if ! cmp -s "$release_dir/systemd/floor/$unit" "/etc/systemd/system/$unit"; then
            install -m 0644 "$release_dir/systemd/floor/$unit" "/etc/systemd/system/$unit"
            changed=1
        fi
    done
    [ "$changed" -eq 0 ] || systemctl daemon-reload
    systemctl enable tablectl-floor-backup.timer tablectl-floor-backup-verify.timer >/dev/null 2>&1
    [ "$start" -eq 1 ] || return 0
    systemctl start tablectl-floor-backup.timer tablectl-floor-backup-verify.timer
    if [ -z "$(find "$FLOOR_BACKUP_DIR/base" -mindepth 2 -maxdepth 2 -name backup.json -print -quit)" ]; then
        systemctl start --no-block tablectl-floor-backup.service
        log "backups: the first base backup is being taken into $FLOOR_BACKUP_DIR (tablectl-floor backup status)"
    fi
}

# ---- the standby floor server (docs/floor.md "The standby floor server") -----------------------------------------
# FLOOR_PEER (floor.env): the other floor server's host name (empty: a single floor server). Which of the two is
# the primary is PostgreSQL's own state, not a setting: a server in recovery is the standby and is left as it is.
# FLOOR_SYNC_STANDBY=1: synchronous replication (a commit waits for the standby: nothing acknowledged is lost with
# the primary; every archive write waits a round trip more, and the archive stops while the standby is away).
STANDBY_SLOT=floor_standby # floor/backup/replication.py STANDBY_SLOT
STANDBY_NAME=floor_standby # the standby's cluster_name: pg_stat_replication and synchronous_standby_names say it

peer_address() { # the peer's IPv4 address for pg_hba (resolved now: pg_hba wants addresses)
    getent ahostsv4 "$FLOOR_PEER" | awk 'NR == 1 {print $1}'
}

# PostgreSQL's settings of the pair (part of conf.d/tablectl-floor.conf); nothing without a peer.
standby_pg_settings() {
    [ -n "${FLOOR_PEER:-}" ] || return 0
    printf '%s\n' "# the standby floor server: streaming replication to and from $FLOOR_PEER" \
        "listen_addresses = '*'" "max_wal_senders = 10" "max_replication_slots = 10" "hot_standby = on" \
        "hot_standby_feedback = on" "cluster_name = '$STANDBY_NAME'" \
        "max_slot_wal_keep_size = '${FLOOR_SLOT_KEEP:-50GB}'" \
        "synchronous_standby_names = '$([ "${FLOOR_SYNC_STANDBY:-0}" = 1 ] && echo "$STANDBY_NAME")'"
}

# pg_hba lines for the peer: its floor clients (workers and dashboard run on both) and its replication.
standby_hba() {
    local addr
    [ -n "${FLOOR_PEER:-}" ] || return 0
    addr="$(peer_address)" || true
    [ -n "$addr" ] || die "--standby/--standby-of $FLOOR_PEER: the name does not resolve (/etc/hosts or DNS)"
    printf 'hostssl  %-12s %-55s %s/32  scram-sha-256\n' "$FLOOR_DB" \
        floor_owner,floor_archive,floor_web,floor_progressive "$addr" replication floor_replication "$addr"
}

# The DSN every floor service is given: both servers, the one that takes writes wins (libpq tries them in turn),
# a dead one given up on after 3 s, a connection to a host gone silent dropped within ~15 s (TCP keepalives).
pair_dsn() { # ROLE PORT
    if [ -z "${FLOOR_PEER:-}" ]; then # a single floor server
        printf 'postgresql://%s@localhost:%s/%s?sslmode=verify-full&sslrootcert=%s/ca.crt' "$1" "$2" "$FLOOR_DB" "$FLOOR_CERTS"
        return 0
    fi
    printf 'postgresql://%s@%s:%s,%s:%s/%s?sslmode=verify-full&sslrootcert=%s/ca.crt' "$1" "$FLOOR_HOSTNAME" "$2" \
        "$FLOOR_PEER" "$2" "$FLOOR_DB" "$FLOOR_CERTS"
    printf '&target_session_attrs=read-write&connect_timeout=3&keepalives_idle=5&keepalives_interval=2&keepalives_count=3&tcp_user_timeout=15000'
}

# On the primary: the replication account, the standby's slot (WAL kept for it while it is away, up to
# max_slot_wal_keep_size), and tablectl-floor promote's right to promote (replicated to the standby with the rest).
standby_primary_sql() { # REPLICATION_PASSWORD
    [ -n "${FLOOR_PEER:-}" ] || return 0
    pg_super -d "$FLOOR_DB" -v pw="$1" -v slot="$STANDBY_SLOT" <<'SQL'
SELECT 'CREATE ROLE floor_replication' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'floor_replication') \gexec
ALTER ROLE floor_replication LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'pw';
SELECT pg_create_physical_replication_slot(:'slot') WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = :'slot');
GRANT EXECUTE ON FUNCTION pg_promote(boolean, integer) TO floor_owner;
SQL
}

# Is the local server a standby (in recovery)? Then no roles, migrations or grants here: they come from the primary.
pg_is_standby() { [ "$(pg_super -At -c 'SELECT pg_is_in_recovery()')" = t ]; }

# On a new standby (--standby-of PRIMARY): its data directory replaced by a copy of the primary's (the old one
# moved aside), streaming from it through the slot. The secrets and certificates are the primary's, copied to
# /etc/tablectl-floor beforehand (docs/floor.md); the replication password is in replication.env.
standby_clone() { # PG_VERSION PG_CLUSTER PG_DATA PG_UNIT
    local version="$1" cluster="$2" data="$3" unit="$4" pw aside
    pw="$(secret_of "$FLOOR_ETC/replication.env" PGPASSWORD || true)"
    [ -n "$pw" ] || die "$FLOOR_ETC/replication.env: no PGPASSWORD; copy /etc/tablectl-floor from the primary first (docs/floor.md \"The standby floor server\")"
    systemctl stop "$unit"
    aside="$data.before-standby.$(date -u +%Y%m%dT%H%M%SZ)"
    [ ! -d "$data" ] || mv "$data" "$aside"
    install -d -m 0700 -o postgres -g postgres "$data"
    if ! PGPASSWORD="$pw" runuser -u postgres -- "/usr/lib/postgresql/$version/bin/pg_basebackup" -D "$data" -R \
        -S "$STANDBY_SLOT" -X stream --checkpoint=fast \
        -d "host=$FLOOR_PEER port=${pg_port:-5432} user=floor_replication sslmode=verify-full sslrootcert=$FLOOR_CERTS/ca.crt"; then
        rm -rf "$data"
        [ -z "${aside:-}" ] || [ ! -d "$aside" ] || mv "$aside" "$data"
        die "pg_basebackup from $FLOOR_PEER failed (reason above): the old data directory is back, nothing started"
    fi
    systemctl start "$unit"
    log "PostgreSQL $version/$cluster is a standby of $FLOOR_PEER now (the old data directory: $aside)"
}
