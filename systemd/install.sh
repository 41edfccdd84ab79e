#!/usr/bin/env bash
# From a fresh Raspberry Pi OS Lite or minimal Debian (Bookworm) to a running table controller. Run as root.
#   systemd/install.sh [--table-id ID] [--site SITE] [--no-start]
# Steps (docs/deploy.md explains each): apt packages; user tablectl in groups dialout and gpio; a release in
# /opt/tablectl/releases with its venv (the wheel, dependencies hash-checked from requirements/pi.txt); /etc/tablectl;
# mosquitto with TLS, accounts and ACL (the wheel's templates); udev rules; the systemd unit; then, with the
# configuration accepted, `current` switched and the unit enabled and started. Safe to run again: the same source
# makes no new release, and nothing is restarted that did not change. Exits non-zero when the configuration is
# refused (the unit is then left stopped).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"
src="$(cd "$here/.." && pwd)"

table_id=""
site=""
start=1
while [ $# -gt 0 ]; do
    case "$1" in
        --table-id)
            table_id="${2:?--table-id needs a value}"
            shift
            ;;
        --site)
            site="${2:?--site needs a value}"
            shift
            ;;
        --no-start) start=0 ;;
        -h | --help)
            sed -n '2,9p' "$0"
            exit 0
            ;;
        *) die "unknown argument $1" ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || die "run as root (e.g. sudo $0 $*)"
name_re='^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$'
[ -z "$table_id" ] || [[ "$table_id" =~ $name_re ]] || die "--table-id: letters, digits, _ and - only"
[ -z "$site" ] || [[ "$site" =~ $name_re ]] || die "--site: letters, digits, _ and - only"

CERTS=/etc/mosquitto/certs

# ---- 1. packages ----------------------------------------------------------------------------------------
# apt only for what is missing, so a re-run (e.g. to add broker accounts) needs no network.
log "1/8 apt packages"
export DEBIAN_FRONTEND=noninteractive
missing=()
for pkg in python3 python3-venv python3-dev python3-pip mosquitto mosquitto-clients openssl ca-certificates tar \
    util-linux; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# rpi-lgpio needs lgpio; on Raspberry Pi OS these let pip build it when no wheel fits (best effort: where the
# archive has no such package, or none can be fetched, pip uses a wheel).
for pkg in swig liblgpio-dev; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
        && apt-cache show "$pkg" >/dev/null 2>&1; then
        apt-get install -y -qq "$pkg" >/dev/null || log "could not install $pkg (only needed to build lgpio)"
    fi
done

# ---- 2. user and groups -----------------------------------------------------------------------------------
log "2/8 user tablectl (groups dialout, gpio)"
getent group gpio >/dev/null || groupadd --system gpio
getent group dialout >/dev/null || groupadd --system dialout
if ! id tablectl >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/tablectl --shell /usr/sbin/nologin tablectl
fi
usermod --groups dialout,gpio tablectl # exactly these supplementary groups, nothing else

# ---- 3. release + venv ------------------------------------------------------------------------------------
# Built beside the running one; `current` switches only in step 8, once everything else is in place. The same
# source tree as the current release's (a re-run): no new release.
lock_root
trap forget_uncommitted EXIT
old="$(current_release || true)"
if release="$(current_if_same_source "$src")"; then
    log "3/8 release $release already holds this source tree: no new release"
    new_release=0
else
    release="$(new_release_id "$src")"
    log "3/8 release $release in $RELEASES"
    make_release "$src" "$release"
    new_release=1
fi
release_dir="$RELEASES/$release"
venv_python="$release_dir/.venv/bin/python"
tablectl_bin="$TABLECTL_ROOT/.venv/bin/tablectl" # what the unit and the operator run once `current` is switched

# ---- 4. /etc/tablectl ---------------------------------------------------------------------------------------
log "4/8 configuration in $TABLECTL_ETC"
install -d -m 0750 -o root -g tablectl "$TABLECTL_ETC"
cfg="$TABLECTL_ETC/table.toml"
if [ ! -f "$cfg" ]; then
    install -m 0640 -o root -g tablectl "$release_dir/firmware_configs/table.example.toml" "$cfg"
    [ -z "$table_id" ] || sed -i -e "s/^id = \"bj07\"/id = \"$table_id\"/" \
        -e "s/^username = \"table-bj07\"/username = \"table-$table_id\"/" "$cfg"
    [ -z "$site" ] || sed -i -e "s/^site = \"lisboa\"/site = \"$site\"/" "$cfg"
    log "wrote $cfg from table.example.toml: edit it for this table (pins, USB ids, jackpot values)"
fi
table_id="$("$venv_python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["table"]["id"])' "$cfg")"
site="$("$venv_python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["table"]["site"])' "$cfg")"
# A new release over an installed one (an upgrade through install.sh): its code must accept the configuration
# before anything else changes (on a first install it cannot yet: step 5 makes files it names).
if [ "$new_release" -eq 1 ] && [ -n "$old" ] && ! "$release_dir/.venv/bin/tablectl" config check "$cfg" >&2; then
    die "configuration refused by the new release (reasons above): still on $old, nothing changed"
fi

# ---- 5. mosquitto: TLS, accounts, ACL -------------------------------------------------------------------------
# Restarted only when its configuration or certificates changed; new or changed accounts only make it read
# passwd and acl again (SIGHUP; connected clients stay).
log "5/8 mosquitto (TLS on 8883, accounts, ACL)"
mosq_restart=0
install -d -m 0755 "$CERTS"
if [ -f "$CERTS/ca.crt" ] && [ -f "$CERTS/broker.crt" ] && [ -f "$CERTS/broker.key" ]; then
    : # the site PKI's, or this Pi's from an earlier run (docs/deploy.md "Certificates")
elif [ -e "$CERTS/ca.crt" ] || [ -e "$CERTS/broker.crt" ] || [ -e "$CERTS/broker.key" ]; then
    die "$CERTS has some of ca.crt, broker.crt, broker.key but not all three (docs/deploy.md \"Certificates\")"
else
    # No PKI given: a CA made here for this one broker certificate. Its private key never touches the disk
    # outside a private temporary folder and is deleted at once: nothing on the table can sign another
    # certificate. A site that needs client certificates keeps its CA on the operator's machine (offline).
    ca_tmp="$(mktemp -d)"
    openssl req -x509 -newkey rsa:3072 -nodes -days 3650 -subj "/CN=tablectl broker CA $(hostname)" \
        -keyout "$ca_tmp/ca.key" -out "$ca_tmp/ca.crt" 2>/dev/null
    openssl req -newkey rsa:3072 -nodes -subj "/CN=$(hostname)" \
        -keyout "$ca_tmp/broker.key" -out "$ca_tmp/broker.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,DNS:%s,IP:127.0.0.1\n' "$(hostname)" >"$ca_tmp/broker.ext"
    openssl x509 -req -in "$ca_tmp/broker.csr" -CA "$ca_tmp/ca.crt" -CAkey "$ca_tmp/ca.key" -CAcreateserial \
        -days 3650 -extfile "$ca_tmp/broker.ext" -out "$ca_tmp/broker.crt" 2>/dev/null
    install -m 0600 "$ca_tmp/broker.key" "$CERTS/broker.key"
    install -m 0644 "$ca_tmp/broker.crt" "$CERTS/broker.crt"
    install -m 0644 "$ca_tmp/ca.crt" "$CERTS/ca.crt"
    rm -rf "$ca_tmp"
    mosq_restart=1
    log "made a CA and the broker's certificate; the CA's private key was not kept (docs/deploy.md \"Certificates\")"
fi
if ! getent hosts localhost >/dev/null; then
    log "WARNING: localhost does not resolve (no /etc/hosts?): the controller connects to the broker as localhost"
fi
if [ -e "$CERTS/ca.key" ]; then
    log "WARNING: $CERTS/ca.key is a CA's private key on the table: move it to the operator's machine (offline)"
fi
chown mosquitto:mosquitto "$CERTS/broker.key"
chmod 0600 "$CERTS/broker.key"
chmod 0644 "$CERTS/ca.crt" "$CERTS/broker.crt"

users="$TABLECTL_ETC/mqtt-users.toml"
if [ ! -f "$users" ]; then
    password="$(openssl rand -hex 24)"
    umask 077
    {
        echo "# Broker accounts (name = password), rendered into /etc/mosquitto/passwd and acl by install.sh."
        echo "# Add dealer*, supervisor*, technician*, monitor* accounts here, then run systemd/install.sh again."
        echo "[users]"
        echo "\"table-$table_id\" = \"$password\""
    } >"$users"
    printf '%s\n' "$password" >"$TABLECTL_ETC/mqtt-password"
    umask 022
fi
chown root:root "$users" && chmod 0600 "$users"
if [ -f "$TABLECTL_ETC/mqtt-password" ]; then
    chown root:tablectl "$TABLECTL_ETC/mqtt-password"
    chmod 0640 "$TABLECTL_ETC/mqtt-password"
fi
apply_broker_config "$venv_python" "$users" "site=$site" "$mosq_restart" \
    "the broker did not start (journalctl -u mosquitto)" --site "$site"

# ---- 6. udev ----------------------------------------------------------------------------------------------
log "6/8 udev rules (/dev/tablectl-shoe, -reader, -display; gpio group)"
install -d -m 0755 /etc/udev/rules.d # a minimal Debian has no udev folder yet
if ! cmp -s "$release_dir/systemd/99-tablectl.rules" /etc/udev/rules.d/99-tablectl.rules; then
    install -m 0644 "$release_dir/systemd/99-tablectl.rules" /etc/udev/rules.d/99-tablectl.rules
    if command -v udevadm >/dev/null 2>&1 && [ -S /run/udev/control ]; then # udevd runs (not in a container)
        udevadm control --reload-rules
        udevadm trigger --subsystem-match=tty --subsystem-match=usb --subsystem-match=gpio
    fi
fi

# ---- 7. systemd unit --------------------------------------------------------------------------------------
log "7/8 systemd unit"
unit_changed=0
if ! cmp -s "$release_dir/systemd/tablectl.service" /etc/systemd/system/tablectl.service; then
    install -m 0644 "$release_dir/systemd/tablectl.service" /etc/systemd/system/tablectl.service
    systemctl daemon-reload
    unit_changed=1
fi

# A file of /etc/tablectl (but the broker's accounts) changed since the running service started: restart it so
# the change takes effect (seconds resolution: a file written in the second before the start counts).
config_changed_since_start() {
    local since
    # to the microsecond: at whole seconds a file written in the second before the start counted as changed
    # after it, and a re-run restarted the service it had just started
    since="$(systemctl show --timestamp=us+utc -p ActiveEnterTimestamp --value tablectl.service)"
    [ -n "$since" ] && since="$(date -d "$since" +%s.%N)" || return 0
    [ -n "$(find "$TABLECTL_ETC" -maxdepth 1 -type f ! -name mqtt-users.toml -newermt "@$since" -print -quit)" ]
}

# ---- 8. check, switch and start ----------------------------------------------------------------------------
# The release's own tablectl checks the configuration. Refused: the service is not started (nor enabled, so
# no boot crash-loops on it) and the script ends non-zero with one line saying what to do.
log "8/8 configuration check, switch and start"
ok=1
"$release_dir/.venv/bin/tablectl" config check "$cfg" >&2 || ok=0
if [ "$new_release" -eq 1 ]; then
    if [ "$ok" -eq 0 ] && [ -n "$old" ]; then
        die "configuration refused by the new release (reasons above): still on $old, service not restarted"
    fi
    commit_release "$release_dir"
    switch_to "$release"
    prune_releases
fi
if [ ! -f "$TABLECTL_ETC/integrity.json" ]; then
    log "no integrity manifest yet: the controller keeps the table closed until one is recorded."
    log "  after review: $tablectl_bin config record $cfg --manifest $TABLECTL_ETC/integrity.json"
fi
if [ "$ok" -eq 0 ]; then
    if systemctl is-active --quiet tablectl.service; then
        was="left running on the configuration it started with"
    else
        was="left stopped"
    fi
    die "configuration refused (reasons above): tablectl.service $was; fix $cfg (docs/deploy.md §1 step 6), then run $here/install.sh again"
fi
systemctl enable tablectl.service >/dev/null 2>&1
if [ "$start" -eq 1 ]; then
    if [ "$new_release" -eq 1 ] || [ "$unit_changed" -eq 1 ] || ! systemctl is-active --quiet tablectl.service \
        || config_changed_since_start; then
        # reset-failed: a unit that used up its start limit (5 in 5 min) refuses to start until it is reset
        systemctl reset-failed tablectl.service 2>/dev/null || true
        systemctl restart --no-block tablectl.service
        log "starting tablectl.service; follow it with: journalctl -fu tablectl"
    else
        log "tablectl.service is running this release already: not restarted"
    fi
fi
log "installed release $(current_release) (update: systemd/update.sh, rollback: systemd/rollback.sh)"
