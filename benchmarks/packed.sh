#!/usr/bin/env bash
# Runs a device script with $OUT pointing at a fresh subfolder, then packs that folder into one
# file, $OUT/NAME.tgz. A device call returns at most 8 files; a script that writes more loses the
# rest, as one call of 2026-12-04 lost its host-sync results. Several packed runs in one call each
# return one file:
#   bash benchmarks/packed.sh hs env SETTINGS=span bash benchmarks/host_sync_h200.sh
#   bash benchmarks/packed.sh b3 env TASKS=gdn_decode SOLUTIONS=naive bash benchmarks/content_b_h200.sh
# The command's own stdout and stderr go to NAME/console.txt. Exits with the command's status.
set -uo pipefail
(( $# >= 2 )) || { echo "usage: packed.sh NAME COMMAND [ARG...]" >&2; exit 2; }
name=$1; shift
top=${OUT:-/tmp/out}
mkdir -p "$top/$name"
OUT=$top/$name "$@" > "$top/$name/console.txt" 2>&1
status=$?
tar czf "$top/$name.tgz" -C "$top" "$name" && rm -rf "${top:?}/$name"
exit $status
