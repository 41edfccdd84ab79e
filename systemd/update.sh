#!/usr/bin/env bash
# Install a new release beside the running one, switch `current` to it and restart; if the service does not
# come up, switch back and restart the old release.
#   sudo systemd/update.sh [SOURCE_DIR] [--no-restart]
# SOURCE_DIR defaults to the source tree this script is in (e.g. a fresh `git pull`).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

src="$(cd "$here/.." && pwd)"
restart=1
for arg in "$@"; do
    case "$arg" in
        --no-restart) restart=0 ;;
        -h | --help)
            sed -n '2,5p' "$0"
            exit 0
            ;;
        -*) die "unknown option $arg" ;;
        *) src="$(cd "$arg" && pwd)" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || [ -n "${TABLECTL_ROOT_OK:-}" ] || die "run as root"
lock_root
trap forget_uncommitted EXIT

old="$(current_release || true)"
new="$(new_release_id "$src")"
new_dir="$RELEASES/$new"
make_release "$src" "$new"
check_release "$new_dir" || die "update refused; still on ${old:-nothing}" # the trap removes $new
commit_release "$new_dir"
switch_to "$new"
if [ "$restart" -eq 0 ]; then
    log "switched to $new; restart with: systemctl restart $UNIT"
    exit 0
fi
if restart_service; then
    log "updated: $new is running${old:+ (rollback: systemd/rollback.sh $old)}"
    prune_releases
    exit 0
fi
log "the service did not come up on $new (journalctl -u $UNIT)"
[ -n "$old" ] || die "no earlier release to return to"
switch_to "$old"
if restart_service; then
    die "update failed; rolled back to $old, which is running"
fi
die "update failed and $old did not come up either (journalctl -u $UNIT)"
