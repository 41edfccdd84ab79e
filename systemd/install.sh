#!/usr/bin/env bash
# From a fresh Raspberry Pi OS (Bookworm, 64-bit) to a running table controller. Safe to run again.
#   sudo systemd/install.sh [--table-id ID] [--site SITE] [--no-start]
# Steps (docs/deploy.md explains each): apt packages; user tablectl in groups dialout and gpio; a release in
# /opt/tablectl/releases with its venv (the wheel, dependencies hash-checked from requirements/pi.txt) and
# the `current` symlink; /etc/tablectl; mosquitto with TLS,
# accounts and ACL (firmware_configs/mosquitto/); udev rules; the systemd unit, enabled and started.
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
            sed -n '2,7p' "$0"
            exit 0
            ;;
        *) die "unknown argument $1" ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || die "run as root: sudo $0 $*"
name_re='^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$'
[ -z "$table_id" ] || [[ "$table_id" =~ $name_re ]] || die "--table-id: letters, digits, _ and - only"
[ -z "$site" ] || [[ "$site" =~ $name_re ]] || die "--site: letters, digits, _ and - only"

MOSQ_SRC="$src/firmware_configs/mosquitto"
CERTS=/etc/mosquitto/certs

# ---- 1. packages ----------------------------------------------------------------------------------------
log "1/8 apt packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3 python3-venv python3-dev python3-pip mosquitto mosquitto-clients openssl \
    ca-certificates tar >/dev/null
# rpi-lgpio needs lgpio; on Raspberry Pi OS these let pip build it when no wheel fits.
for pkg in swig liblgpio-dev; do
    if apt-cache show "$pkg" >/dev/null 2>&1; then
        apt-get install -y -qq "$pkg" >/dev/null
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
log "3/8 release in $RELEASES"
install -d -m 0755 "$TABLECTL_ROOT" "$RELEASES"
release_dir="$(make_release "$src")"
switch_to "$(basename "$release_dir")"
tablectl_bin="$TABLECTL_ROOT/.venv/bin/tablectl"
venv_python="$TABLECTL_ROOT/.venv/bin/python"

# ---- 4. /etc/tablectl ---------------------------------------------------------------------------------------
log "4/8 configuration in $TABLECTL_ETC"
install -d -m 0750 -o root -g tablectl "$TABLECTL_ETC"
cfg="$TABLECTL_ETC/table.toml"
if [ ! -f "$cfg" ]; then
    install -m 0640 -o root -g tablectl "$src/firmware_configs/table.example.toml" "$cfg"
    [ -z "$table_id" ] || sed -i -e "s/^id = \"bj07\"/id = \"$table_id\"/" \
        -e "s/^username = \"table-bj07\"/username = \"table-$table_id\"/" "$cfg"
    [ -z "$site" ] || sed -i -e "s/^site = \"lisboa\"/site = \"$site\"/" "$cfg"
    log "wrote $cfg from table.example.toml: edit it for this table (pins, USB ids, jackpot values)"
fi
table_id="$("$venv_python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["table"]["id"])' "$cfg")"
site="$("$venv_python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["table"]["site"])' "$cfg")"

# ---- 5. mosquitto: TLS, accounts, ACL -------------------------------------------------------------------------
log "5/8 mosquitto (TLS on 8883, accounts, ACL)"
install -d -m 0755 "$CERTS"
if [ ! -f "$CERTS/ca.crt" ]; then
    # A CA of this Pi's own. A site with its own PKI replaces ca.crt, broker.crt and broker.key.
    openssl req -x509 -newkey rsa:3072 -nodes -days 3650 -subj "/CN=tablectl broker CA $(hostname)" \
        -keyout "$CERTS/ca.key" -out "$CERTS/ca.crt" 2>/dev/null
    openssl req -newkey rsa:3072 -nodes -subj "/CN=$(hostname)" \
        -keyout "$CERTS/broker.key" -out "$CERTS/broker.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,DNS:%s,IP:127.0.0.1\n' "$(hostname)" >"$CERTS/broker.ext"
    openssl x509 -req -in "$CERTS/broker.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" -CAcreateserial \
        -days 3650 -extfile "$CERTS/broker.ext" -out "$CERTS/broker.crt" 2>/dev/null
    rm -f "$CERTS/broker.csr" "$CERTS/broker.ext"
fi
chmod 0600 "$CERTS/ca.key" 2>/dev/null || true
chown mosquitto:mosquitto "$CERTS/broker.key"
chmod 0600 "$CERTS/broker.key"
chmod 0644 "$CERTS/ca.crt" "$CERTS/broker.crt"

users="$TABLECTL_ETC/mqtt-users.toml"
if [ ! -f "$users" ]; then
    password="$(openssl rand -hex 24)"
    umask 077
    {
        echo "# Broker accounts (name = password), rendered into /etc/mosquitto/passwd and acl by install.sh."
        echo "# Add dealer*, supervisor*, technician*, monitor* accounts here, then re-run systemd/install.sh."
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
"$venv_python" -m controller.broker render --users "$users" --site "$site" --out /etc/mosquitto
chown root:mosquitto /etc/mosquitto/passwd /etc/mosquitto/acl
chmod 0640 /etc/mosquitto/passwd /etc/mosquitto/acl
if [ -f /etc/mosquitto/mosquitto.conf ] && [ ! -f /etc/mosquitto/mosquitto.conf.debian ]; then
    cp -p /etc/mosquitto/mosquitto.conf /etc/mosquitto/mosquitto.conf.debian
fi
install -m 0644 "$MOSQ_SRC/mosquitto.conf" /etc/mosquitto/mosquitto.conf
systemctl enable mosquitto.service >/dev/null 2>&1
systemctl restart mosquitto.service

# ---- 6. udev ----------------------------------------------------------------------------------------------
log "6/8 udev rules (/dev/tablectl-shoe, -reader, -display; gpio group)"
install -m 0644 "$here/99-tablectl.rules" /etc/udev/rules.d/99-tablectl.rules
if command -v udevadm >/dev/null 2>&1; then
    udevadm control --reload-rules
    udevadm trigger --subsystem-match=tty --subsystem-match=usb --subsystem-match=gpio
fi

# ---- 7. systemd unit --------------------------------------------------------------------------------------
log "7/8 systemd unit"
install -m 0644 "$here/tablectl.service" /etc/systemd/system/tablectl.service
systemctl daemon-reload
systemctl enable tablectl.service >/dev/null 2>&1

# ---- 8. check and start -----------------------------------------------------------------------------------
log "8/8 configuration check and start"
ok=1
"$tablectl_bin" config check "$cfg" || ok=0
if [ ! -f "$TABLECTL_ETC/integrity.json" ]; then
    log "no integrity manifest yet: the controller keeps the table closed until one is recorded."
    log "  after review: $tablectl_bin config record $cfg --manifest $TABLECTL_ETC/integrity.json"
fi
if [ "$start" -eq 1 ]; then
    systemctl restart --no-block tablectl.service
    log "started; follow it with: journalctl -fu tablectl"
fi
if [ "$ok" -eq 0 ]; then
    log "the configuration above is refused: fix $cfg, add supervisors with"
    log "  $tablectl_bin sign --add-to $TABLECTL_ETC/credentials.toml --user NAME --role supervisor"
    log "then record the manifest and: systemctl restart tablectl"
fi
log "installed release $(current_release) (update: systemd/update.sh, rollback: systemd/rollback.sh)"
