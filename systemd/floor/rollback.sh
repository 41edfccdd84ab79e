#!/usr/bin/env bash
# Switch the floor's `current` back to the previous release (or the one named) and restart its services. A
# release that does not know every migration the database has is refused (docs/floor.md "Update and roll back").
#   sudo systemd/floor/rollback.sh [RELEASE_ID] [--no-restart]
#   sudo systemd/floor/rollback.sh --list
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

target=""
restart=1
for arg in "$@"; do
    case "$arg" in
        --no-restart) restart=0 ;;
        --list)
            print_releases
            exit 0
            ;;
        -h | --help)
            sed -n '2,5p' "$0"
            exit 0
            ;;
        -*) die "unknown option $arg" ;;
        *) target="$arg" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || die "run as root"
load_settings
lock_root

cur="$(current_release)" || die "no current release in $TABLECTL_ROOT"
if [ -z "$target" ]; then
    target="$(previous_release "$cur")" || die "no release older than $cur to roll back to"
fi
[ "$target" != "$cur" ] || die "$target is already current"
[ -d "$RELEASES/$target" ] || die "no release $target in $RELEASES"
check_release "$RELEASES/$target" || die "rollback refused: $target cannot run on this database; still on $cur"
switch_to "$target"
if [ "$restart" -eq 1 ]; then
    restart_service || die "rolled back to $target but the floor did not come up (reasons above)"
fi
log "rolled back from $cur to $target"
