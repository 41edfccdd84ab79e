#!/usr/bin/env bash
# Install a new floor release beside the running one, bring the database to its schema, switch `current` to it
# and restart the dashboard and the archive workers; if one does not come up, switch back and restart the old
# release (docs/floor.md "Update and roll back").
#   sudo systemd/floor/update.sh [SOURCE_DIR] [--no-restart]
# SOURCE_DIR defaults to the source tree this script is in (e.g. a fresh `git pull`).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

src="$(cd "$here/../.." && pwd)"
restart=1
for arg in "$@"; do
    case "$arg" in
        --no-restart) restart=0 ;;
        -h | --help)
            sed -n '2,6p' "$0"
            exit 0
            ;;
        -*) die "unknown option $arg" ;;
        *) src="$(cd "$arg" && pwd)" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || die "run as root"
[ -f "$FLOOR_ETC/floor.env" ] || die "the floor is not installed here (no $FLOOR_ETC/floor.env): systemd/floor/install.sh"
load_settings
lock_root
trap forget_uncommitted EXIT

old="$(current_release || true)"
new="$(new_release_id "$src")"
new_dir="$RELEASES/$new"
make_release "$src" "$new"
check_release "$new_dir" || die "update refused; still on ${old:-nothing}" # the trap removes $new
migrate_and_grant "$new_dir" || die "the database could not be migrated (reason above); still on ${old:-nothing}"
commit_release "$new_dir"
switch_to "$new"
if [ "$restart" -eq 0 ]; then
    log "switched to $new; restart with: systemctl restart $(floor_units | tr '\n' ' ')"
    exit 0
fi
if restart_service; then
    log "updated: $new is running${old:+ (rollback: systemd/floor/rollback.sh $old)}"
    prune_releases
    exit 0
fi
log "the floor did not come up on $new"
[ -n "$old" ] || die "no earlier release to return to"
check_release "$RELEASES/$old" || die "update failed and $old does not know the database's schema any more: fix $new"
switch_to "$old"
if restart_service; then
    die "update failed; rolled back to $old, which is running"
fi
die "update failed and $old did not come up either (journalctl -u $WEB_UNIT)"
