# shellcheck shell=bash
# Shared by install.sh, update.sh and rollback.sh: release directories under /opt/tablectl.
#
#   /opt/tablectl/releases/<UTC time>[-<git sha>]/ the source tree, its wheel (dist/) and a .venv with the wheel
#   /opt/tablectl/current -> releases/<id>         the running release (switched atomically)
#   /opt/tablectl/.venv   -> current/.venv         what the unit's ExecStart= names
#
# A release being built carries the file .incomplete until the script that built it switches to it
# (commit_release); an install or update that stops before that removes it (forget_uncommitted, an EXIT trap),
# and one that could not (power cut) is shown as incomplete by `rollback.sh --list`, never chosen by a
# rollback and removed by the next prune. .source-sha256 holds the digest of the source tree it was built from,
# so a re-run of install.sh on the same source reuses the current release instead of building another.
#
# Environment (the tests point these at a scratch folder): TABLECTL_ROOT, TABLECTL_ETC, SYSTEMCTL,
# TABLECTL_SKIP_VENV=1 (copy only, no venv), TABLECTL_REQUIREMENTS (the hash-locked dependencies, default
# requirements/pi.txt), TABLECTL_KEEP (releases kept, default 5).

TABLECTL_ROOT="${TABLECTL_ROOT:-/opt/tablectl}"
TABLECTL_ETC="${TABLECTL_ETC:-/etc/tablectl}"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"
TABLECTL_KEEP="${TABLECTL_KEEP:-5}"
RELEASES="$TABLECTL_ROOT/releases"
UNIT=tablectl.service
INCOMPLETE=.incomplete
SOURCE_DIGEST=.source-sha256
# The copy of a source tree: everything but the developer's venv, git data and build leftovers.
TAR_EXCLUDES=(--exclude=./.venv --exclude=./.git --exclude='__pycache__' --exclude='.pytest_cache'
    --exclude='.hypothesis' --exclude='.ruff_cache' --exclude='*.egg-info' --exclude=./build --exclude=./dist)

log() { printf 'tablectl: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# One install, update or rollback at a time (fd 9 stays open until the script exits).
lock_root() {
    mkdir -p "$TABLECTL_ROOT"
    exec 9>"$TABLECTL_ROOT/.lock"
    flock -n 9 || die "another install, update or rollback is running ($TABLECTL_ROOT/.lock)"
}

# SHA-256 of the source tree as a release would copy it (names, modes, contents; not times or owners).
source_digest() {
    tar -C "$1" "${TAR_EXCLUDES[@]}" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        -cf - . | sha256sum | cut -d' ' -f1
}

# The current release when it was built from exactly this source tree (prints its id), else status 1.
current_if_same_source() {
    local cur digest
    cur="$(current_release)" || return 1
    [ -f "$RELEASES/$cur/$SOURCE_DIGEST" ] || return 1
    digest="$(source_digest "$1")"
    [ "$(cat "$RELEASES/$cur/$SOURCE_DIGEST")" = "$digest" ] || return 1
    printf '%s\n' "$cur"
}

# A new release id: UTC time to the nanosecond (sorts by time, never reused even after pruning), plus the git
# commit when the source is a checkout.
new_release_id() {
    local src="$1" id sha
    id="$(date -u +%Y%m%dT%H%M%S.%NZ)"
    if sha="$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null)"; then
        id="$id-$sha"
    fi
    [ ! -e "$RELEASES/$id" ] || die "release $id already exists"
    printf '%s\n' "$id"
}

# Copy SRC into the new release directory RELEASES/ID and build its venv there. UNCOMMITTED names it from the
# start, so an EXIT trap (forget_uncommitted) removes it when anything later fails.
make_release() {
    local src="$1" id="$2" dest
    [ -f "$src/pyproject.toml" ] || die "$src does not look like the tablectl source tree (no pyproject.toml)"
    mkdir -p "$RELEASES"
    dest="$RELEASES/$id"
    UNCOMMITTED="$dest"
    mkdir "$dest"
    : >"$dest/$INCOMPLETE"
    source_digest "$src" >"$dest/$SOURCE_DIGEST"
    tar -C "$src" "${TAR_EXCLUDES[@]}" -cf - . | tar -C "$dest" -xf -
    if [ "${TABLECTL_SKIP_VENV:-0}" != 1 ]; then
        local lock="$dest/${TABLECTL_REQUIREMENTS:-requirements/pi.txt}" wheel
        log "building the wheel and $dest/.venv (dependencies hash-checked from ${lock#"$dest"/})"
        python3 -m venv "$dest/.venv"
        "$dest/.venv/bin/python" -m pip install --quiet --upgrade pip >&2
        # A normal (not editable) install: the wheel carries the schemas and profiles as package data.
        "$dest/.venv/bin/python" -m pip wheel --quiet --no-deps -w "$dest/dist" "$dest" >&2
        rm -rf "$dest/build" "$dest"/*.egg-info
        wheel="$(find "$dest/dist" -name 'blackjack_table_controller-*.whl' | head -n 1)"
        [ -n "$wheel" ] || die "no wheel was built in $dest/dist"
        # Exactly the locked versions, each file checked against its sha256 (requirements/pi.txt: the product's with
        # its extras `table` and `pi`); then the project, no deps.
        "$dest/.venv/bin/python" -m pip install --quiet --require-hashes -r "$lock" >&2
        "$dest/.venv/bin/python" -m pip install --quiet --no-deps "$wheel" >&2
    fi
    chmod -R go-w "$dest"
}

# Fail (status 1) when the release's code rejects the installed configuration; warn on an integrity mismatch
# (the controller would keep the table closed until the change is approved and recorded).
check_release() {
    local dest="$1" cfg="$TABLECTL_ETC/table.toml" manifest="$TABLECTL_ETC/integrity.json"
    [ "${TABLECTL_SKIP_VENV:-0}" = 1 ] && return 0
    [ -f "$cfg" ] || return 0
    if ! "$dest/.venv/bin/tablectl" config check "$cfg" >/dev/null; then
        log "release $(basename "$dest") refuses $cfg (reasons above)"
        return 1
    fi
    if [ -f "$manifest" ] && ! "$dest/.venv/bin/tablectl" config verify "$cfg" --manifest "$manifest" >/dev/null; then
        log "WARNING: $cfg or its rule profile no longer matches $manifest: the table will stay closed until"
        log "         the change is approved and recorded: tablectl config record $cfg --manifest $manifest"
    fi
}

# The release is whole and about to run: drop its .incomplete mark (before switch_to, which refuses marked ones).
commit_release() {
    rm -f "$1/$INCOMPLETE"
    UNCOMMITTED=""
}

# EXIT trap of install.sh and update.sh: a release they built but did not switch to is removed, so it is never
# offered as one to roll back to.
forget_uncommitted() {
    if [ -n "${UNCOMMITTED:-}" ] && [ -d "$UNCOMMITTED" ]; then
        rm -rf "$UNCOMMITTED"
        log "removed the unfinished release $(basename "$UNCOMMITTED")"
    fi
}

is_incomplete() { [ -e "$RELEASES/$1/$INCOMPLETE" ]; }

current_release() {
    local target
    target="$(readlink "$TABLECTL_ROOT/current" 2>/dev/null)" || return 1
    basename "$target"
}

# The release installed just before the current one (ids sort by time).
previous_release() {
    local cur="$1" prev="" r
    for r in $(list_releases); do
        [ "$r" = "$cur" ] && break
        is_incomplete "$r" || prev="$r"
    done
    [ -n "$prev" ] && printf '%s\n' "$prev"
}

list_releases() {
    [ -d "$RELEASES" ] || return 0
    find "$RELEASES" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort
}

# Every release, oldest first, the current one and the incomplete ones marked (rollback.sh --list).
print_releases() {
    local cur r
    cur="$(current_release || true)"
    for r in $(list_releases); do
        if [ "$r" = "$cur" ]; then
            echo "$r  (current)"
        elif is_incomplete "$r"; then
            echo "$r  (incomplete: an install or update that did not finish; not offered)"
        else
            echo "$r"
        fi
    done
}

# Point current (and .venv) at a release; rename(2) makes the switch atomic.
switch_to() {
    local id="$1"
    [ -d "$RELEASES/$id" ] || die "no release $id in $RELEASES"
    ! is_incomplete "$id" || die "release $id is incomplete (an install or update that did not finish)"
    ln -sfn "releases/$id" "$TABLECTL_ROOT/current.new"
    mv -Tf "$TABLECTL_ROOT/current.new" "$TABLECTL_ROOT/current"
    if [ ! -L "$TABLECTL_ROOT/.venv" ]; then
        ln -sfn current/.venv "$TABLECTL_ROOT/.venv"
    fi
    log "current -> releases/$id"
}

# Restart and report whether the unit came up. Type=notify: restart returns when the service sent READY=1
# (serial link, journal and broker up) or failed. reset-failed first: a unit that used up its start limit
# (StartLimitBurst=) would refuse the restart.
restart_service() {
    "$SYSTEMCTL" daemon-reload || true
    "$SYSTEMCTL" reset-failed "$UNIT" 2>/dev/null || true
    "$SYSTEMCTL" restart "$UNIT" && "$SYSTEMCTL" is-active --quiet "$UNIT"
}

# Keep the newest TABLECTL_KEEP releases (at least 2), and never the current or previous one; incomplete ones
# (an install cut off before it finished) go first.
prune_releases() {
    local cur prev r n keep="$TABLECTL_KEEP"
    if ! [[ "$keep" =~ ^[0-9]+$ ]] || [ "$keep" -lt 2 ]; then
        die "TABLECTL_KEEP=$keep: a number of releases, 2 or more"
    fi
    cur="$(current_release || true)"
    prev="$(previous_release "$cur" || true)"
    for r in $(list_releases); do
        if [ "$r" != "$cur" ] && is_incomplete "$r"; then
            rm -rf "${RELEASES:?}/$r"
            log "removed incomplete release $r"
        fi
    done
    n="$(list_releases | wc -l)"
    for r in $(list_releases); do
        [ "$n" -le "$keep" ] && break
        if [ "$r" != "$cur" ] && [ "$r" != "$prev" ]; then
            rm -rf "${RELEASES:?}/$r"
            log "pruned release $r"
            n=$((n - 1))
        fi
    done
}

# The broker's accounts and configuration, as the table's and the floor's installers both keep them: passwd and
# acl rendered from USERS (`controller.broker render --users USERS RENDER_ARGS...`) only when what they are made
# from changed (passwd is hashed with a fresh salt each time: a digest of USERS, the release's ACL template and
# DIGEST_EXTRA decides), the release's mosquitto.conf installed (Debian's kept as mosquitto.conf.debian), then
# mosquitto restarted (RESTART=1: the caller changed certificates; or the configuration changed, or it is not
# running; FAILED is said if it does not start) or told to re-read passwd and acl (accounts only).
#   apply_broker_config VENV_PYTHON USERS DIGEST_EXTRA RESTART FAILED [RENDER_ARGS...]
apply_broker_config() {
    local py="$1" users="$2" extra="$3" restart="$4" failed="$5" reload=0 acl_template conf_template digest
    local stamp=/etc/mosquitto/tablectl-accounts.sha256 render_tmp f
    shift 5
    # The templates are the release's package data (python -m controller.broker path ...), not this source tree.
    acl_template="$("$py" -m controller.broker path acl)"
    conf_template="$("$py" -m controller.broker path conf)"
    digest="$(cat "$users" "$acl_template" <(printf '%s\n' "$extra") | sha256sum | cut -d' ' -f1)"
    if [ ! -f /etc/mosquitto/passwd ] || [ ! -f /etc/mosquitto/acl ] || [ ! -f "$stamp" ] \
        || [ "$(cat "$stamp")" != "$digest" ]; then
        render_tmp="$(mktemp -d /etc/mosquitto/.render.XXXXXX)"
        "$py" -m controller.broker render "$@" --users "$users" --out "$render_tmp" >/dev/null
        for f in passwd acl; do
            chown root:mosquitto "$render_tmp/$f"
            chmod 0640 "$render_tmp/$f"
            mv -f "$render_tmp/$f" "/etc/mosquitto/$f"
        done
        rm -rf "$render_tmp"
        printf '%s\n' "$digest" >"$stamp"
        reload=1
        log "rendered /etc/mosquitto/passwd and acl from $users"
    fi
    if [ -f /etc/mosquitto/mosquitto.conf ] && [ ! -f /etc/mosquitto/mosquitto.conf.debian ]; then
        cp -p /etc/mosquitto/mosquitto.conf /etc/mosquitto/mosquitto.conf.debian
    fi
    if ! cmp -s "$conf_template" /etc/mosquitto/mosquitto.conf; then
        install -m 0644 "$conf_template" /etc/mosquitto/mosquitto.conf
        restart=1
    fi
    systemctl enable mosquitto.service >/dev/null 2>&1
    if [ "$restart" -eq 1 ] || ! systemctl is-active --quiet mosquitto.service; then
        systemctl reset-failed mosquitto.service 2>/dev/null || true
        systemctl restart mosquitto.service || die "$failed"
        log "mosquitto (re)started"
    elif [ "$reload" -eq 1 ]; then
        # SIGHUP from systemd itself: Debian's ExecReload= runs /bin/kill, which a minimal Debian lacks (procps)
        systemctl kill --signal=HUP --kill-whom=main mosquitto.service
        log "mosquitto re-read passwd and acl (SIGHUP; not restarted)"
    fi
}
