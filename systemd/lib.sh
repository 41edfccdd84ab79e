# shellcheck shell=bash
# Shared by install.sh, update.sh and rollback.sh: release directories under /opt/tablectl.
#
#   /opt/tablectl/releases/<UTC time>[-<git sha>]/ the source tree, its wheel (dist/) and a .venv with the wheel
#   /opt/tablectl/current -> releases/<id>         the running release (switched atomically)
#   /opt/tablectl/.venv   -> current/.venv         what the unit's ExecStart= names
#
# Environment (the tests point these at a scratch folder): TABLECTL_ROOT, TABLECTL_ETC, SYSTEMCTL,
# TABLECTL_SKIP_VENV=1 (copy only, no venv), TABLECTL_REQUIREMENTS (the hash-locked dependencies, default
# requirements/pi.txt), TABLECTL_KEEP.

TABLECTL_ROOT="${TABLECTL_ROOT:-/opt/tablectl}"
TABLECTL_ETC="${TABLECTL_ETC:-/etc/tablectl}"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"
TABLECTL_KEEP="${TABLECTL_KEEP:-5}"
RELEASES="$TABLECTL_ROOT/releases"
UNIT=tablectl.service

log() { printf 'tablectl: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
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

# Copy SRC into a new release directory and build its venv there; prints the release directory.
make_release() {
    local src="$1" id dest
    [ -f "$src/pyproject.toml" ] || die "$src does not look like the tablectl source tree (no pyproject.toml)"
    mkdir -p "$RELEASES"
    id="$(new_release_id "$src")"
    dest="$RELEASES/$id"
    mkdir "$dest"
    tar -C "$src" \
        --exclude=./.venv --exclude=./.git --exclude='__pycache__' --exclude='.pytest_cache' \
        --exclude='.hypothesis' --exclude='.ruff_cache' --exclude='*.egg-info' --exclude=./build --exclude=./dist \
        -cf - . | tar -C "$dest" -xf -
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
        # Exactly the locked versions, each file checked against its sha256; then the project, no deps.
        "$dest/.venv/bin/python" -m pip install --quiet --require-hashes -r "$lock" >&2
        "$dest/.venv/bin/python" -m pip install --quiet --no-deps "$wheel" >&2
    fi
    chmod -R go-w "$dest"
    printf '%s\n' "$dest"
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
        prev="$r"
    done
    [ -n "$prev" ] && printf '%s\n' "$prev"
}

list_releases() {
    [ -d "$RELEASES" ] || return 0
    find "$RELEASES" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort
}

# Point current (and .venv) at a release; rename(2) makes the switch atomic.
switch_to() {
    local id="$1"
    [ -d "$RELEASES/$id" ] || die "no release $id in $RELEASES"
    ln -sfn "releases/$id" "$TABLECTL_ROOT/current.new"
    mv -Tf "$TABLECTL_ROOT/current.new" "$TABLECTL_ROOT/current"
    if [ ! -L "$TABLECTL_ROOT/.venv" ]; then
        ln -sfn current/.venv "$TABLECTL_ROOT/.venv"
    fi
    log "current -> releases/$id"
}

# Restart and report whether the unit came up. Type=notify: restart returns when the service sent READY=1
# (serial link, journal and broker up) or failed.
restart_service() {
    "$SYSTEMCTL" daemon-reload || true
    "$SYSTEMCTL" restart "$UNIT" && "$SYSTEMCTL" is-active --quiet "$UNIT"
}

# Keep the newest TABLECTL_KEEP releases, and never the current or previous one.
prune_releases() {
    local cur prev r n
    cur="$(current_release || true)"
    prev="$(previous_release "$cur" || true)"
    n="$(list_releases | wc -l)"
    for r in $(list_releases); do
        [ "$n" -le "$TABLECTL_KEEP" ] && break
        if [ "$r" != "$cur" ] && [ "$r" != "$prev" ]; then
            rm -rf "${RELEASES:?}/$r"
            log "pruned release $r"
            n=$((n - 1))
        fi
    done
}
