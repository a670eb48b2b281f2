#!/usr/bin/env bash
# The edge in motion as `make run` runs it, measured: `eo up` on a fresh
# MATCHES world with its defaults (the pipeline every 2 minutes, so a
# snapshot swap every 2 minutes; 4 live matches replayed; live events landed
# every 5 s), a client paging /matches with cursors all along, the edge's
# RSS sampled every 10 s, and, once SWAP_MINUTES of swaps have run, the
# WebSocket fan-out: CONNS connections subscribed to the match and odds
# targets of the live matches, measured by a client in a process of its
# own (CLIENTS: the Go one, scripts/wsbench; the Node.js one,
# scripts/wsbench/client.mjs with the ws package, installed in the
# temporary folder) for DURATION seconds each. Prints Markdown for
# BENCHMARKS.md: the RSS after minute RSS_FROM and at its peak, the swaps,
# each client's event-to-client latency and first-to-last client spread,
# and the load (uptime) before and after.
#
#   scripts/bench-ws.sh
#   CONNS=1000 CLIENTS=go SWAP_MINUTES=3 WORLD=/tmp/w5k scripts/bench-ws.sh
#
# Needs curl, jq, node and npm. Loopback only; every process is stopped on
# exit.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-ws
BENCH_TOOLS="curl jq node npm"
CONNS=${CONNS:-5000}
CLIENTS=${CLIENTS:-go node}
SWAP_MINUTES=${SWAP_MINUTES:-9}
RSS_FROM=${RSS_FROM:-3}
WS_DURATION=${WS_DURATION:-60}
PAGE_RATE=${PAGE_RATE:-10}
PAGE_PAUSE=$(awk -v r="$PAGE_RATE" 'BEGIN { printf "%.3f", 1 / r }')
WS_NODE_VERSION=8.18.3
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

load0=$(uptime)
dir=$TMPROOT/world
if [[ -n ${WORLD:-} ]]; then
	cp -a "$WORLD" "$dir" # a world generated and run through the pipeline before (store/, work/)
else
	world "$dir" "$MATCHES"
fi
KEY=$(mint_key "$dir")
go build -o "$TMPROOT/wsbench" ./scripts/wsbench
if [[ " $CLIENTS " == *" node "* ]]; then
	mkdir -p "$TMPROOT/node"
	cp scripts/wsbench/client.mjs "$TMPROOT/node/"
	npm install --silent --prefix "$TMPROOT/node" "ws@$WS_NODE_VERSION" >"$LOGS/npm.log" 2>&1
fi

port=$(free_port)
"$EO" up --store "$dir/store" --work "$dir/work" --addr "127.0.0.1:$port" >"$LOGS/up.log" 2>&1 &
EDGE_PID=$!
PIDS+=("$EDGE_PID")
SERVE_URL="http://127.0.0.1:$port"
wait_http "$SERVE_URL/ready" "$EDGE_PID" 900
start=$SECONDS
log "eo up serving $SERVE_URL (pid $EDGE_PID); paging with cursors and sampling RSS for $SWAP_MINUTES minutes"

# The cursor client: PAGE_RATE /matches pages a second, each following the
# last one's next_cursor, from the first page again once the last is read.
# Paced, and the cursor read without a jq process a page: an unpaced
# curl-and-jq loop took more than one of the two cores, and the fan-out
# measured the wait for a core, not the edge.
(
	cursor=""
	while :; do
		page=$(curl -fsS -H "Authorization: Bearer $KEY" "$SERVE_URL/v1/cs2/matches?limit=50${cursor:+&cursor=$cursor}") || page='{}'
		cursor=""
		if [[ $page =~ \"next_cursor\":\"([^\"]+)\" ]]; then
			cursor=${BASH_REMATCH[1]}
		fi
		echo "${cursor:+next}" >>"$LOGS/pages"
		sleep "$PAGE_PAUSE"
	done
) >/dev/null 2>&1 &
PIDS+=("$!")

rss() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$EDGE_PID/status"; }
# edge_cpu is the edge process's processor time so far, in seconds.
edge_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$EDGE_PID/stat"; }
samples=$LOGS/rss.txt
: >"$samples"
while ((SECONDS - start < SWAP_MINUTES * 60)); do
	echo "$(((SECONDS - start))) $(rss)" >>"$samples"
	sleep 10
done
swaps=$(($(grep -c 'msg="snapshot loaded"' "$LOGS/up.log" || true) - 1))
rss_after=$(awk -v from=$((RSS_FROM * 60)) '$1 >= from && $2 > m { m = $2 } END { print m + 0 }' "$samples")
rss_peak=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$samples")
rss_first=$(awk 'NR == 1 { print $2 }' "$samples")

declare -A result
for client in $CLIENTS; do
	log "minute $(((SECONDS - start) / 60)): $CONNS connections, the $client client, ${WS_DURATION}s"
	out=$LOGS/ws-$client.json
	cpu0=$(edge_cpu)
	if [[ $client == go ]]; then
		"$TMPROOT/wsbench" -url "$SERVE_URL" -key "$KEY" -conns "$CONNS" -duration "${WS_DURATION}s" >"$out"
	else
		(cd "$TMPROOT/node" && node client.mjs "$SERVE_URL" "$KEY" "$CONNS" 5 "$WS_DURATION") >"$out"
	fi
	result[$client]=$(jq -r 'def ms: . * 10 | round / 10; [(.event_to_client_ms | .p50, .p99, .max | ms),
		(.first_to_last_client_ms | .p50, .p99 | ms), .event_to_client_ms.n, .events, .frames,
		(.targets | length), (.client_cpu_seconds // "n/a" | if type == "number" then (. * 10 | round / 10) else . end),
		.events_stamped_ahead] | map(tostring) | join("|")' "$out")
	result[$client]+="|$(awk -v a="$cpu0" -v b="$(edge_cpu)" 'BEGIN { printf "%.1f", b - a }')"
done
rss_ws=$(rss)
pages=$(wc -l <"$LOGS/pages")
paged=$(grep -c next "$LOGS/pages" || true)
load1=$(uptime)

echo
echo "### The edge in motion as make run runs it ($MATCHES matches; $(nproc) CPUs)"
echo
echo "Load before: \`${load0# }\`; after: \`${load1# }\`."
echo
echo "- RSS of \`eo up\` with a client paging /matches with cursors: ${rss_first} MiB at start, at most **${rss_after} MiB**"
echo "  from minute $RSS_FROM to minute $SWAP_MINUTES (peak ${rss_peak} MiB), $swaps snapshot swaps; ${rss_ws} MiB after the WebSocket runs."
echo "  The paging client read $pages pages (about $PAGE_RATE a second), $paged of them with a next cursor."
echo
echo "| client | connections | targets each | event to client p50 ms | p99 ms | max ms | first-to-last client p50 ms | p99 ms | updates measured | events | frames | events stamped ahead of arrival (left out) | edge CPU s, whole client run | client CPU s, while measuring |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for client in $CLIENTS; do
	IFS='|' read -r p50 p99 mx s50 s99 n ev fr nt ccpu ahead ecpu <<<"${result[$client]}"
	echo "| $client | $CONNS | $nt | $p50 | **$p99** | $mx | $s50 | $s99 | $n | $ev | $fr | $ahead | $ecpu | $ccpu |"
done
