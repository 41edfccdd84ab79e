#!/usr/bin/env bash
# Switch `current` back to the previous release (or the one named) and restart the service.
#   sudo systemd/rollback.sh [RELEASE_ID] [--no-restart]
#   sudo systemd/rollback.sh --list
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
            sed -n '2,4p' "$0"
            exit 0
            ;;
        -*) die "unknown option $arg" ;;
        *) target="$arg" ;;
    esac
done
[ "$(id -u)" -eq 0 ] || [ -n "${TABLECTL_ROOT_OK:-}" ] || die "run as root"
lock_root

cur="$(current_release)" || die "no current release in $TABLECTL_ROOT"
if [ -z "$target" ]; then
    target="$(previous_release "$cur")" || die "no release older than $cur to roll back to"
fi
[ "$target" != "$cur" ] || die "$target is already current"
switch_to "$target"
if [ "$restart" -eq 1 ]; then
    restart_service || die "rolled back to $target but the service did not come up (journalctl -u $UNIT)"
fi
log "rolled back from $cur to $target"
