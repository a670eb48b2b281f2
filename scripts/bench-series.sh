#!/usr/bin/env bash
# A time series of the edge in motion: `eo up` with the live replay, and wrk
# run one second at a time on one target, so that periodic work on the
# edge's side (the usage export, the replay's batches, collector cycles)
# shows as the windows it slows instead of vanishing into an average.
#
#   scripts/bench-series.sh                        # 40 one-second windows, /players, -c32
#   WINDOWS=60 CONNS=64 TARGET='/v1/cs2/odds' scripts/bench-series.sh
#   EO_BIN=/path/to/eo scripts/bench-series.sh     # measure that binary
#
# Prints one line per window (time, req/s, p99), a summary, and the edge's
# "usage exported" log lines. Needs wrk, curl, jq.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-series
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

WINDOWS=${WINDOWS:-40}
TARGET=${TARGET:-/v1/cs2/players?limit=50}
C=${CONNS%% *}

W=$TMPROOT/world
world "$W" "$MATCHES"
KEY=$(mint_key "$W")
up "$W" "$LOGS/up.log" "$LIVE_SLOTS"
wrk -t2 -c"$C" -d"$WARMUP" -H "Authorization: Bearer $KEY" "$SERVE_URL$TARGET" >/dev/null

echo "| window | req/s | p99 ms |"
echo "| --- | ---: | ---: |"
for ((i = 1; i <= WINDOWS; i++)); do
	IFS='|' read -r rps p99 _ < <(wrk -t2 -c"$C" -d1s --latency -H "Authorization: Bearer $KEY" "$SERVE_URL$TARGET" | wrk_stats)
	echo "| $(date +%T) | $rps | $p99 |"
done | tee "$LOGS/series.md"
awk -F'|' '
	{ r = $3 + 0; p = $4 + 0; n++; sum += r; if (min == "" || r < min) min = r; if (p > max) max = p; if (p > 10) slow++ }
	END { printf "\n%d windows (%s, -c%s): mean %.0f req/s, lowest %.0f, highest p99 %.2f ms, %d with p99 > 10 ms\n",
		n, TARGET, C, sum / n, min, max, slow }' TARGET="$TARGET" C="$C" "$LOGS/series.md"
echo
grep 'usage exported' "$LOGS/up.log" | sed 's/^/    /' || echo "    (no usage export ran)"
