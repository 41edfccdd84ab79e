#!/usr/bin/env bash
# From a fresh Debian (Bookworm) server to a running casino floor. Run as root.
#   systemd/floor/install.sh --site SITE [--hostname NAME] [--workers N] [--web-listen HOST:PORT]
#       [--public-url URL] [--supervisor NAME] [--add-table ID]... [--add-link LINK]... [--backup-dir DIR]
#       [--backup-keep N] [--standby HOST | --standby-of PRIMARY] [--synchronous on|off] [--no-start]
# Steps (docs/floor.md "Install it" explains each): apt packages (PostgreSQL, mosquitto); users
# floor-archive and floor-web; a release in /opt/tablectl-floor/releases with its venv (both wheels,
# dependencies hash-checked from requirements/floor.txt); the settings in /etc/tablectl-floor, checked before
# anything runs; certificates; PostgreSQL (TLS, pg_hba, roles, database, migrations, grants); the floor broker
# (TLS, accounts, floor ACL); the units; then `current` switched, the first supervisor, and the services
# enabled and started; WAL archiving into the backup directory, the nightly base backup and restore check. Safe to run again: the same source makes no new release and nothing is restarted that
# did not change. A refused setting ends it with one line, before any service is started or changed.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
src="$(cd "$here/../.." && pwd)"

opt_site=""
opt_hostname=""
opt_workers=""
opt_listen=""
opt_url=""
supervisor=""
opt_backup_dir=""
opt_backup_keep=""
opt_peer=""
opt_sync=""
standby_of=0
add_tables=()
add_links=()
start=1
while [ $# -gt 0 ]; do
    case "$1" in
        --site | --hostname | --workers | --web-listen | --public-url | --supervisor | --add-table | --add-link \
            | --backup-dir | --backup-keep | --standby | --standby-of | --synchronous)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --site) opt_site="$2" ;;
                --hostname) opt_hostname="$2" ;;
                --workers) opt_workers="$2" ;;
                --web-listen) opt_listen="$2" ;;
                --public-url) opt_url="$2" ;;
                --supervisor) supervisor="$2" ;;
                --add-table) add_tables+=("$2") ;;
                --backup-dir) opt_backup_dir="$2" ;;
                --backup-keep) opt_backup_keep="$2" ;;
                --add-link) add_links+=("$2") ;;
                --standby) opt_peer="$2" ;;
                --standby-of) opt_peer="$2" standby_of=1 ;;
                --synchronous) opt_sync="$2" ;;
            esac
            shift
            ;;
        --no-start) start=0 ;;
        -h | --help)
            sed -n '2,12p' "$0"
            exit 0
            ;;
        *) die "unknown argument $1" ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || die "run as root (e.g. sudo $0 $*)"

# The settings: the options given, else those of the last run (floor.env), else the defaults. Checked before
# anything is installed or changed.
load_settings
FLOOR_SITE="${opt_site:-${FLOOR_SITE:-}}"
FLOOR_HOSTNAME="${opt_hostname:-${FLOOR_HOSTNAME:-$(hostname)}}"
FLOOR_WORKERS="${opt_workers:-${FLOOR_WORKERS:-2}}"
FLOOR_WEB_LISTEN="${opt_listen:-${FLOOR_WEB_LISTEN:-0.0.0.0:8443}}"
FLOOR_PUBLIC_URL="${opt_url:-${FLOOR_PUBLIC_URL:-https://$FLOOR_HOSTNAME:${FLOOR_WEB_LISTEN##*:}}}"
FLOOR_BROKER_HOST="${FLOOR_BROKER_HOST:-localhost}"
FLOOR_BACKUP_DIR="${opt_backup_dir:-${FLOOR_BACKUP_DIR:-/var/backups/tablectl-floor}}"
FLOOR_BACKUP_KEEP="${opt_backup_keep:-${FLOOR_BACKUP_KEEP:-7}}"
FLOOR_PEER="${opt_peer:-${FLOOR_PEER:-}}"
case "${opt_sync:-keep}" in on) FLOOR_SYNC_STANDBY=1 ;; off) FLOOR_SYNC_STANDBY=0 ;; keep) FLOOR_SYNC_STANDBY="${FLOOR_SYNC_STANDBY:-0}" ;;
    *) die "--synchronous $opt_sync: on or off" ;; esac
refuse() { die "configuration refused: $*; nothing was started or changed (docs/floor.md \"Install it\")"; }
name_re='^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$'
[ -n "$FLOOR_SITE" ] || refuse "--site is needed on the first install (the casino's site name, as in each table.toml)"
[[ "$FLOOR_SITE" =~ $name_re ]] || refuse "--site $FLOOR_SITE: letters, digits, _ and - only"
[[ "$FLOOR_HOSTNAME" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$ ]] || refuse "--hostname $FLOOR_HOSTNAME: not a host name"
[[ "$FLOOR_WORKERS" =~ ^[1-9]$ ]] || refuse "--workers $FLOOR_WORKERS: 1 to 9 archive workers"
[[ "$FLOOR_WEB_LISTEN" =~ ^[0-9A-Za-z.:-]+:[0-9]{2,5}$ ]] || refuse "--web-listen $FLOOR_WEB_LISTEN: HOST:PORT"
[[ "$FLOOR_PUBLIC_URL" =~ ^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$ ]] \
    || refuse "--public-url $FLOOR_PUBLIC_URL: https://NAME[:PORT], the address people open"
[ -z "$supervisor" ] || [[ "$supervisor" =~ $name_re ]] || refuse "--supervisor $supervisor: letters, digits, _ and - only"
for t in "${add_tables[@]}"; do
    [[ "$t" =~ $name_re ]] || refuse "--add-table $t: letters, digits, _ and - only"
done
[[ "$FLOOR_BACKUP_DIR" =~ ^/[A-Za-z0-9._/-]+$ ]] || refuse "--backup-dir $FLOOR_BACKUP_DIR: an absolute path (letters, digits, . _ - /)"
[ -z "$FLOOR_PEER" ] || [[ "$FLOOR_PEER" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$ ]] || refuse "--standby/--standby-of $FLOOR_PEER: not a host name"
[ -n "$FLOOR_PEER" ] || [ "$FLOOR_SYNC_STANDBY" = 0 ] || refuse "--synchronous on needs a standby (--standby HOST)"
[ -z "$FLOOR_PEER" ] || [ -n "$(peer_address)" ] || refuse "--standby/--standby-of $FLOOR_PEER: the name does not resolve here (DNS or /etc/hosts)"
[[ "$FLOOR_BACKUP_KEEP" =~ ^[1-9][0-9]?$ ]] || refuse "--backup-keep $FLOOR_BACKUP_KEEP: 1 to 99 base backups"
for l in "${add_links[@]}"; do
    [[ "$l" =~ ^[a-z0-9-]{1,32}$ ]] || refuse "--add-link $l: a linked progressive is named [a-z0-9-]{1,32}"
done

# ---- 1. packages ----------------------------------------------------------------------------------------
log "1/9 apt packages (PostgreSQL, mosquitto)"
export DEBIAN_FRONTEND=noninteractive
missing=()
for pkg in python3 python3-venv python3-pip postgresql mosquitto mosquitto-clients openssl ca-certificates \
    util-linux; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ---- 2. users -------------------------------------------------------------------------------------------
log "2/9 users floor-archive, floor-web and floor-progressive (no shell, no groups)"
for user in floor-archive floor-web floor-progressive; do
    if ! id "$user" >/dev/null 2>&1; then
        useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
    fi
done

# ---- 3. release + venv ------------------------------------------------------------------------------------
lock_root
trap forget_uncommitted EXIT
old="$(current_release || true)"
if release="$(current_if_same_source "$src")"; then
    log "3/9 release $release already holds this source tree: no new release"
    new_release=0
else
    release="$(new_release_id "$src")"
    log "3/9 release $release in $RELEASES"
    make_release "$src" "$release"
    new_release=1
fi
release_dir="$RELEASES/$release"
venv_python="$release_dir/.venv/bin/python"

# ---- 4. settings, checked before anything runs --------------------------------------------------------------
log "4/9 settings in $FLOOR_ETC"
install -d -m 0755 -o root -g root "$FLOOR_ETC"
umask 077
users="$FLOOR_ETC/mqtt-users.toml"
if [ ! -f "$users" ]; then
    {
        echo "# The floor broker's accounts (name = password), rendered into /etc/mosquitto/passwd and acl (the"
        echo "# floor ACL) by systemd/floor/install.sh. A table's bridge: \"table-<id>\" (install.sh --add-table ID)."
        echo "[users]"
        echo "archive = \"$(openssl rand -hex 24)\""
        echo "supervisor-floor = \"$(openssl rand -hex 24)\""
    } >"$users"
fi
users_new="$(mktemp "$FLOOR_ETC/.mqtt-users.XXXXXX")"
cp "$users" "$users_new"
for t in "${add_tables[@]}"; do
    if ! grep -q "^\"table-$t\" = " "$users_new"; then
        printf '"table-%s" = "%s"\n' "$t" "$(openssl rand -hex 24)" >>"$users_new"
    fi
done
for l in "${add_links[@]}"; do # a linked progressive's controller: it alone writes its link's meter
    if ! grep -q "^\"progressive-$l\" = " "$users_new"; then
        printf '"progressive-%s" = "%s"\n' "$l" "$(openssl rand -hex 24)" >>"$users_new"
    fi
done
# The accounts as the release renders them: a file it refuses stops here, with its reason.
check_dir="$(mktemp -d)"
if ! why="$("$venv_python" -m controller.broker render --floor --users "$users_new" --site "$FLOOR_SITE" \
    --out "$check_dir" 2>&1 >/dev/null)"; then
    rm -rf "$check_dir" "$users_new"
    refuse "$users: ${why#error: }"
fi
for account in archive supervisor-floor; do
    grep -q "^\"\{0,1\}$account\"\{0,1\} = " "$users_new" || {
        rm -rf "$check_dir" "$users_new"
        refuse "$users has no account $account (the archive workers' and the dashboard's)"
    }
done
rm -rf "$check_dir"
mv -f "$users_new" "$users"
umask 022
broker_password() { "$venv_python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["users"][sys.argv[2]])' "$users" "$1"; }
# The settings file, written only when it changes (a change restarts the services in step 9).
settings_new="$(mktemp "$FLOOR_ETC/.floor.env.XXXXXX")"
cat >"$settings_new" <<SETTINGS
# The floor's settings, written by systemd/floor/install.sh from its options (run it again to change them).
FLOOR_SITE=$FLOOR_SITE
FLOOR_HOSTNAME=$FLOOR_HOSTNAME
FLOOR_WORKERS=$FLOOR_WORKERS
FLOOR_WEB_LISTEN=$FLOOR_WEB_LISTEN
FLOOR_PUBLIC_URL=$FLOOR_PUBLIC_URL
FLOOR_BROKER_HOST=$FLOOR_BROKER_HOST
FLOOR_BACKUP_DIR=$FLOOR_BACKUP_DIR
FLOOR_BACKUP_KEEP=$FLOOR_BACKUP_KEEP
FLOOR_PEER=$FLOOR_PEER
FLOOR_SYNC_STANDBY=$FLOOR_SYNC_STANDBY
SETTINGS
chmod 0644 "$settings_new"
if cmp -s "$settings_new" "$FLOOR_ETC/floor.env"; then
    rm -f "$settings_new"
else
    mv -f "$settings_new" "$FLOOR_ETC/floor.env"
fi
# A new release over an installed one must know the database's schema before anything else changes.
if [ "$new_release" -eq 1 ] && [ -n "$old" ] && ! check_release "$release_dir"; then
    die "configuration refused by the new release (reason above): still on $old, nothing changed"
fi

# ---- 5. certificates ----------------------------------------------------------------------------------------
# One CA for the floor's three TLS servers (broker, PostgreSQL, dashboard): the site PKI's when all its files
# are in certs/, else made here; its private key is deleted at once (nothing here can sign another).
log "5/9 certificates in $FLOOR_CERTS"
install -d -m 0755 "$FLOOR_CERTS"
cert_files=(ca.crt broker.crt broker.key postgres.crt postgres.key web.crt web.key)
present=0
for f in "${cert_files[@]}"; do [ -f "$FLOOR_CERTS/$f" ] && present=$((present + 1)); done
if [ "$present" -eq 0 ]; then
    ca_tmp="$(mktemp -d)"
    openssl req -x509 -newkey rsa:3072 -nodes -days 3650 -subj "/CN=tablectl floor CA $FLOOR_HOSTNAME" \
        -keyout "$ca_tmp/ca.key" -out "$ca_tmp/ca.crt" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,DNS:%s%s,IP:127.0.0.1,IP:::1\n' "$FLOOR_HOSTNAME" "${FLOOR_PEER:+,DNS:$FLOOR_PEER}" >"$ca_tmp/san.ext"
    for server in broker postgres web; do
        openssl req -newkey rsa:3072 -nodes -subj "/CN=$FLOOR_HOSTNAME" \
            -keyout "$ca_tmp/$server.key" -out "$ca_tmp/$server.csr" 2>/dev/null
        openssl x509 -req -in "$ca_tmp/$server.csr" -CA "$ca_tmp/ca.crt" -CAkey "$ca_tmp/ca.key" \
            -CAcreateserial -days 3650 -extfile "$ca_tmp/san.ext" -out "$ca_tmp/$server.crt" 2>/dev/null
        install -m 0600 "$ca_tmp/$server.key" "$FLOOR_CERTS/$server.key"
        install -m 0644 "$ca_tmp/$server.crt" "$FLOOR_CERTS/$server.crt"
    done
    install -m 0644 "$ca_tmp/ca.crt" "$FLOOR_CERTS/ca.crt"
    rm -rf "$ca_tmp"
    log "made a CA and the broker's, PostgreSQL's and the dashboard's certificates; the CA's private key was not kept"
elif [ "$present" -ne ${#cert_files[@]} ]; then
    die "$FLOOR_CERTS has some of ${cert_files[*]} but not all (docs/floor.md \"Certificates\")"
fi
[ ! -e "$FLOOR_CERTS/ca.key" ] || log "WARNING: $FLOOR_CERTS/ca.key is a CA's private key: keep it offline"
chown root:root "$FLOOR_CERTS"/*.crt && chmod 0644 "$FLOOR_CERTS"/*.crt
chown postgres:postgres "$FLOOR_CERTS/postgres.key" && chmod 0600 "$FLOOR_CERTS/postgres.key"
chown root:floor-web "$FLOOR_CERTS/web.key" && chmod 0640 "$FLOOR_CERTS/web.key"
chown root:root "$FLOOR_CERTS/broker.key" && chmod 0600 "$FLOOR_CERTS/broker.key" # copied for mosquitto below

# ---- 6. PostgreSQL ------------------------------------------------------------------------------------------
log "6/9 PostgreSQL: TLS, pg_hba, roles, database $FLOOR_DB"
cluster="$(pg_lsclusters -h 2>/dev/null | head -n 1 || true)"
if [ -z "$cluster" ]; then
    version="$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -n 1)"
    pg_createcluster "$version" main >/dev/null
    cluster="$(pg_lsclusters -h | head -n 1)"
fi
read -r pg_version pg_cluster pg_port _ _ pg_data _ <<<"$cluster"
pg_conf="/etc/postgresql/$pg_version/$pg_cluster"
pg_unit="postgresql@$pg_version-$pg_cluster.service"
pg_restart=0
pg_reload=0
install -d -m 0755 -o postgres -g postgres "$pg_conf/conf.d"
backup_storage "$release_dir" "$pg_data"
conf_new="$(mktemp)"
cat >"$conf_new" <<CONF
# Written by systemd/floor/install.sh (docs/floor.md "The database"): TLS only, scram passwords.
listen_addresses = 'localhost'
ssl = on
ssl_cert_file = '$FLOOR_CERTS/postgres.crt'
ssl_key_file = '$FLOOR_CERTS/postgres.key'
ssl_min_protocol_version = 'TLSv1.2'
password_encryption = 'scram-sha-256'
$(backup_pg_settings)
$(standby_pg_settings)
CONF
if ! cmp -s "$conf_new" "$pg_conf/conf.d/tablectl-floor.conf"; then
    install -m 0644 -o postgres -g postgres "$conf_new" "$pg_conf/conf.d/tablectl-floor.conf"
    pg_restart=1
fi
# a certificate made here or replaced by the site's: PostgreSQL reads it again (reload; TLS settings reload)
pg_certs_digest="$(cat "$FLOOR_CERTS/postgres.crt" "$FLOOR_CERTS/postgres.key" "$FLOOR_CERTS/ca.crt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$pg_conf/tablectl-floor-certs.sha256" 2>/dev/null)" != "$pg_certs_digest" ]; then
    printf '%s\n' "$pg_certs_digest" >"$pg_conf/tablectl-floor-certs.sha256"
    pg_reload=1
fi
hba_new="$(mktemp)"
cat >"$hba_new" <<HBA
# Written by systemd/floor/install.sh (docs/floor.md "The database"); Debian's is pg_hba.conf.debian.
# The superuser over the local socket only (the installer); the floor's roles over TLS only, with a password.
# TYPE   DATABASE  USER                                 ADDRESS       METHOD
local    all       postgres                                           peer
local    replication postgres                                         peer
hostssl  $FLOOR_DB     floor_owner,floor_archive,floor_web,floor_progressive  127.0.0.1/32  scram-sha-256
hostssl  $FLOOR_DB     floor_owner,floor_archive,floor_web,floor_progressive  ::1/128       scram-sha-256
# Archive workers or dashboards on other hosts: add hostssl lines for their addresses above this one.
$(standby_hba)
host     all       all                                  0.0.0.0/0     reject
host     all       all                                  ::/0          reject
local    all       all                                                reject
HBA
[ -f "$pg_conf/pg_hba.conf.debian" ] || cp -p "$pg_conf/pg_hba.conf" "$pg_conf/pg_hba.conf.debian"
if ! cmp -s "$hba_new" "$pg_conf/pg_hba.conf"; then
    install -m 0640 -o postgres -g postgres "$hba_new" "$pg_conf/pg_hba.conf"
    pg_reload=1
fi
rm -f "$conf_new" "$hba_new"
systemctl enable "$pg_unit" postgresql.service >/dev/null 2>&1
if [ "$pg_restart" -eq 1 ] || ! systemctl is-active --quiet "$pg_unit"; then
    systemctl reset-failed "$pg_unit" 2>/dev/null || true
    systemctl restart "$pg_unit" || die "PostgreSQL did not start (journalctl -u $pg_unit; $pg_conf)"
    systemctl start postgresql.service
    log "PostgreSQL $pg_version/$pg_cluster (re)started"
elif [ "$pg_reload" -eq 1 ]; then
    pg_super -c "SELECT pg_reload_conf()" >/dev/null
    log "PostgreSQL re-read pg_hba.conf"
fi
wait_pg() {
    local n
    for n in $(seq 1 300); do
        runuser -u postgres -- psql -X -q -At -c 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.2 # the poll interval of a condition wait: the server accepts connections
    done
    die "PostgreSQL does not accept connections (journalctl -u $pg_unit)"
}
wait_pg
# Passwords: made once, kept in the services' environment files (readable by root and that service only).
secret_of() { # FILE KEY: the value of KEY= in FILE, if any
    [ -f "$1" ] && sed -n "s/^$2=//p" "$1" | head -n 1
}
umask 077
owner_pw="$(secret_of "$FLOOR_ETC/owner.env" PGPASSWORD || true)"
archive_pw="$(secret_of "$FLOOR_ETC/archive.env" PGPASSWORD || true)"
web_pw="$(secret_of "$FLOOR_ETC/web.env" PGPASSWORD || true)"
progressive_pw="$(secret_of "$FLOOR_ETC/progressive.env" PGPASSWORD || true)"
owner_pw="${owner_pw:-$(openssl rand -hex 24)}"
archive_pw="${archive_pw:-$(openssl rand -hex 24)}"
web_pw="${web_pw:-$(openssl rand -hex 24)}"
progressive_pw="${progressive_pw:-$(openssl rand -hex 24)}"
replication_pw="$(secret_of "$FLOOR_ETC/replication.env" PGPASSWORD || true)"
replication_pw="${replication_pw:-$(openssl rand -hex 24)}"
dsn_of() { pair_dsn "$1" "$pg_port"; }
write_env() { # FILE GROUP LINES...: written only when it changes, mode 0640 root:GROUP
    local file="$1" group="$2" tmp
    shift 2
    tmp="$(mktemp "$FLOOR_ETC/.env.XXXXXX")"
    printf '%s\n' "# Written by systemd/floor/install.sh: this service's secrets (docs/floor.md)." "$@" >"$tmp"
    chown "root:$group" "$tmp" && chmod 0640 "$tmp"
    if cmp -s "$tmp" "$file"; then rm -f "$tmp"; else mv -f "$tmp" "$file"; fi
}
write_env "$FLOOR_ETC/owner.env" root "FLOOR_DSN=\"$(dsn_of floor_owner)\"" "PGPASSWORD=$owner_pw"
write_env "$FLOOR_ETC/archive.env" floor-archive "FLOOR_DSN=\"$(dsn_of floor_archive)\"" "PGPASSWORD=$archive_pw" \
    "FLOOR_ARCHIVE_PASSWORD=$(broker_password archive)"
write_env "$FLOOR_ETC/web.env" floor-web "FLOOR_DSN=\"$(dsn_of floor_web)\"" "PGPASSWORD=$web_pw" \
    "FLOOR_WEB_PASSWORD=$(broker_password supervisor-floor)"
write_env "$FLOOR_ETC/progressive.env" floor-progressive "FLOOR_DSN=\"$(dsn_of floor_progressive)\"" \
    "PGPASSWORD=$progressive_pw"
[ -z "$FLOOR_PEER" ] || write_env "$FLOOR_ETC/replication.env" root "PGPASSWORD=$replication_pw"
install -d -m 0750 -o root -g floor-progressive "$FLOOR_ETC/progressive"
# the links' meter keys (made by `progressive record` or the first start; the unit's StateDirectory)
install -d -m 0700 -o floor-progressive -g floor-progressive /var/lib/tablectl-floor-progressive
for l in "${add_links[@]}"; do # each link's broker password (the unit reads progressive/<link>.env)
    write_env "$FLOOR_ETC/progressive/$l.env" floor-progressive \
        "FLOOR_PROGRESSIVE_PASSWORD=$(broker_password "progressive-$l")"
done
umask 022
# Roles without any power beyond their grants (grants.sql), the database owned by floor_owner, nothing for PUBLIC.
if [ "$standby_of" -eq 1 ] && ! pg_is_standby; then
    [ "$(pg_super -At -c 'SELECT count(*) FROM pg_stat_replication')" = 0 ] \
        || die "--standby-of $FLOOR_PEER: this server is the primary of a standby now; nothing changed"
    standby_clone "$pg_version" "$pg_cluster" "$pg_data" "$pg_unit"
    wait_pg
fi
if pg_is_standby; then # roles, database, schema and grants come from the primary, replicated
    log "PostgreSQL is a standby of $FLOOR_PEER: its roles and schema come from there (promote: tablectl-floor promote)"
else
pg_super -v owner_pw="$owner_pw" -v archive_pw="$archive_pw" -v web_pw="$web_pw" \
    -v progressive_pw="$progressive_pw" <<'SQL'
SELECT format('CREATE ROLE %I', r) FROM unnest(ARRAY['floor_owner', 'floor_archive', 'floor_web', 'floor_progressive']) AS r
    WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE floor_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD :'owner_pw';
ALTER ROLE floor_archive LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD :'archive_pw';
ALTER ROLE floor_web LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD :'web_pw';
ALTER ROLE floor_progressive LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD :'progressive_pw';
SELECT 'CREATE DATABASE floor OWNER floor_owner ENCODING ''UTF8'' LC_COLLATE ''C.UTF-8'' LC_CTYPE ''C.UTF-8'' TEMPLATE template0'
    WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'floor') \gexec
REVOKE ALL ON DATABASE floor FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE floor TO floor_owner;
GRANT CONNECT ON DATABASE floor TO floor_archive, floor_web, floor_progressive;
\connect floor
ALTER SCHEMA public OWNER TO floor_owner;
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO floor_archive, floor_web, floor_progressive;
SQL
migrate_and_grant "$release_dir" || die "the database could not be migrated (reason above): nothing started"
standby_primary_sql "$replication_pw"
fi

# ---- 7. the floor broker: TLS, accounts, floor ACL ----------------------------------------------------------
log "7/9 floor broker (mosquitto: TLS on 8883, accounts, floor ACL)"
mosq_restart=0
install -d -m 0755 /etc/mosquitto/certs
for f in ca.crt broker.crt broker.key; do
    if ! cmp -s "$FLOOR_CERTS/$f" "/etc/mosquitto/certs/$f"; then
        install -m 0644 "$FLOOR_CERTS/$f" "/etc/mosquitto/certs/$f"
        mosq_restart=1
    fi
done
chown mosquitto:mosquitto /etc/mosquitto/certs/broker.key && chmod 0600 /etc/mosquitto/certs/broker.key
apply_broker_config "$venv_python" "$users" "floor site=$FLOOR_SITE" "$mosq_restart" \
    "the floor broker did not start (journalctl -u mosquitto)" --floor --site "$FLOOR_SITE"
for t in "${add_tables[@]}"; do
    umask 077
    broker_password "table-$t" >"$FLOOR_ETC/table-$t.password"
    umask 022
    log "table $t: its bridge logs in as table-$t with the password in $FLOOR_ETC/table-$t.password (docs/floor.md \"Enrolling a table\")"
done
for l in "${add_links[@]}"; do
    log "link $l: write $FLOOR_ETC/progressive/$l.toml, record the manifest (tablectl-floor progressive record --config"
    log "         $FLOOR_ETC/progressive/$l.toml), then systemctl enable --now tablectl-floor-progressive@$l (docs/progressive.md)"
done

# ---- 8. units and the technician's command --------------------------------------------------------------------
log "8/9 systemd units ($WEB_UNIT, tablectl-floor-archive@1..$FLOOR_WORKERS, $PROGRESSIVE_TEMPLATE, $JUDGE_TIMER) and /usr/local/sbin/tablectl-floor"
units_changed=0
for unit in "$WEB_UNIT" "$ARCHIVE_TEMPLATE" "$PROGRESSIVE_TEMPLATE" "${JUDGE_UNITS[@]}"; do
    if ! cmp -s "$release_dir/systemd/floor/$unit" "/etc/systemd/system/$unit"; then
        install -m 0644 "$release_dir/systemd/floor/$unit" "/etc/systemd/system/$unit"
        units_changed=1
    fi
done
[ "$units_changed" -eq 0 ] || systemctl daemon-reload
install -d -m 0755 /usr/local/sbin
if ! cmp -s "$release_dir/systemd/floor/tablectl-floor" /usr/local/sbin/tablectl-floor; then
    install -m 0755 "$release_dir/systemd/floor/tablectl-floor" /usr/local/sbin/tablectl-floor
fi

# ---- 9. switch, first supervisor, start ------------------------------------------------------------------------
log "9/9 switch, first supervisor, start"
if [ "$new_release" -eq 1 ]; then
    commit_release "$release_dir"
    switch_to "$release"
    prune_releases
fi
if [ -n "$supervisor" ]; then
    if owner_floor "$release_dir" user list 2>/dev/null | cut -f1 | grep -qx "$supervisor"; then
        log "dashboard user $supervisor exists already: left as it is"
    else
        umask 077
        openssl rand -base64 18 >"$FLOOR_ETC/$supervisor.password"
        umask 022
        owner_floor "$release_dir" user add "$supervisor" --role supervisor \
            --password-file "$FLOOR_ETC/$supervisor.password" >/dev/null || die "could not add the dashboard user $supervisor"
        log "dashboard supervisor $supervisor: first password in $FLOOR_ETC/$supervisor.password (give it, then delete the file)"
    fi
fi
backup_units "$release_dir" "$pg_port" "$start"
# A file this run wrote since the unit started (settings, secrets, certificates): the unit restarts for it.
changed_since_start() {
    local since
    since="$(systemctl show --timestamp=us+utc -p ActiveEnterTimestamp --value "$1")"
    [ -n "$since" ] && since="$(date -d "$since" +%s.%N)" || return 0
    [ -n "$(find "$FLOOR_ETC" "$FLOOR_CERTS" -maxdepth 1 -type f ! -name 'mqtt-users.toml' ! -name '*.password' \
        -newermt "@$since" -print -quit)" ]
}
wanted=()
for unit in $(floor_units); do wanted+=("$unit"); done
# workers beyond FLOOR_WORKERS (fewer asked for than before): stopped and disabled
for unit in $(systemctl list-units --all --plain --no-legend 'tablectl-floor-archive@*.service' | awk '{print $1}'); do
    [[ " ${wanted[*]} " == *" $unit "* ]] || {
        systemctl disable --now "$unit" >/dev/null 2>&1 || true
        log "$unit stopped and disabled (--workers $FLOOR_WORKERS)"
    }
done
systemctl enable "${wanted[@]}" "$JUDGE_TIMER" >/dev/null 2>&1
if [ "$start" -eq 0 ]; then
    log "installed release $(current_release); not started (--no-start): systemctl start ${wanted[*]}"
    exit 0
fi
failed=()
for unit in "${wanted[@]}"; do
    if [ "$new_release" -eq 1 ] || [ "$units_changed" -eq 1 ] || ! systemctl is-active --quiet "$unit" \
        || changed_since_start "$unit"; then
        systemctl reset-failed "$unit" 2>/dev/null || true
        # Type=notify: returns once the service said READY=1, or failed
        if systemctl restart "$unit" && systemctl is-active --quiet "$unit"; then
            log "$unit started"
        else
            failed+=("$unit")
        fi
    else
        log "$unit is running this release already: not restarted"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    systemctl stop "${failed[@]}" 2>/dev/null || true
    die "${failed[*]} did not come up: stopped; the reason is in journalctl -u ${failed[0]}"
fi
systemctl start "$JUDGE_TIMER" # the judging pass every 10 minutes (docs/floor.md "Judged rounds")
log "installed release $(current_release): dashboard $FLOOR_PUBLIC_URL (update: systemd/floor/update.sh, rollback: systemd/floor/rollback.sh)"
