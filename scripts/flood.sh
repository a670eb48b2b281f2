#!/usr/bin/env bash
# Hostile clients against a real edge: IDLE connections that never send a
# byte and SLOW ones sending a request header one byte a second
# (slowloris), each reopened as soon as the edge closes it, while one
# /health and one keyed request at a time are timed on fresh connections
# (`eo bench-flood`). The edge serves a MATCHES-match world with the live
# replay playing. Prints the percentiles and whether the edge survived.
#
#   scripts/flood.sh
#   IDLE=5000 SLOW=1000 DURATION=60s scripts/flood.sh
#
# Needs wrk, curl and jq (bench-lib). Loopback only.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=flood
MATCHES=${MATCHES:-3000}
# Set before bench-lib, whose defaults (DURATION 10s) would apply otherwise.
IDLE=${IDLE:-5000}
SLOW=${SLOW:-1000}
DURATION=${DURATION:-60s}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

dir=$TMPROOT/world
world "$dir" "$MATCHES"
KEY=$(mint_key "$dir")
up "$dir" "$LOGS/up.log" 4 1
EDGE_PID=$SERVE_PID
log "edge open-file limit: $(awk '/Max open files/ {print $4}' "/proc/$EDGE_PID/limits")"

log "flood: $IDLE idle + $SLOW slow connections for $DURATION"
"$EO" bench-flood --addr "${SERVE_URL#http://}" --key "$KEY" --idle "$IDLE" --slow "$SLOW" --duration "$DURATION"
if kill -0 "$EDGE_PID" 2>/dev/null; then
	echo "edge: alive, $(find "/proc/$EDGE_PID/fd" -mindepth 1 -maxdepth 1 | wc -l) fds open after the flood"
else
	echo "edge: EXITED"; tail -20 "$LOGS/up.log"; exit 1
fi
