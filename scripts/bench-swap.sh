#!/usr/bin/env bash
# A snapshot swap under full load: `eo up` serving a world with the live
# replay playing and wrk at -c$CONNS on a mix of read routes, in consecutive
# WINDOW-second windows; every SWAP_EVERY windows a copy of the served
# snapshot is published under a new id (same tables, a new manifest and
# pointer: no pipeline competes for the CPU), which the edge fetches, loads
# and swaps in while it serves. Each window's requests, failures (non-2xx,
# socket errors) and p99 are reported, with whether a load was in progress
# during it; the summary compares the worst p99 of the windows with a load
# against the median p99 of the steady windows.
#
#   scripts/bench-swap.sh
#   MATCHES=5000 CONNS=64 WINDOWS=24 WINDOW=3 SWAP_EVERY=6 scripts/bench-swap.sh
#   WORLD=/path scripts/bench-swap.sh   # a copy of /path/store and /path/work (a pipeline-run world)
#
# Needs wrk, curl, jq and sha256sum. Loopback only; every process is stopped
# and every temporary folder removed on exit.
set -euo pipefail

cd "$(dirname "$0")/.."

BENCH_NAME=bench-swap
BENCH_TOOLS="wrk curl jq sha256sum"
CONNS=${CONNS:-64}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
WINDOWS=${WINDOWS:-24}
WINDOW=${WINDOW:-3}
SWAP_EVERY=${SWAP_EVERY:-6}
export EO_POLL_INTERVAL=${EO_POLL_INTERVAL:-1s}

dir=$TMPROOT/world
if [[ -n "${WORLD:-}" ]]; then
	mkdir -p "$dir"
	cp -r "$WORLD/store" "$WORLD/work" "$dir/"
else
	world "$dir" "$MATCHES"
fi
KEY=$(mint_key "$dir")
up "$dir" "$LOGS/up.log" "$LIVE_SLOTS"
URL=$SERVE_URL

match=$(first_id "/v1/cs2/matches?status=completed&limit=1")
team=$(first_id "/v1/cs2/teams?limit=1")
mixed_lua "$TMPROOT/mixed.lua" \
	"/v1/cs2/matches?limit=50" \
	"/v1/cs2/matches?status=live" \
	"/v1/cs2/matches?status=live,scheduled&limit=50" \
	"/v1/cs2/odds/closing?limit=200" \
	"/v1/cs2/matches/$match?include=maps,odds" \
	"/v1/cs2/matches/$match/stats" \
	"/v1/cs2/odds?limit=50" \
	"/v1/cs2/odds?match=$match" \
	"/v1/cs2/teams?limit=50" \
	"/v1/cs2/teams/$team" \
	"/v1/cs2/players?limit=50" \
	"/v1/cs2/rankings?limit=50"

# republish: a copy of the served snapshot under a new id becomes the latest.
snaps=$dir/store/snapshots
n=0
republish() {
	local cur id src dst sum
	cur=$(jq -r .snapshot_id "$snaps/latest.json")
	n=$((n + 1))
	id="${cur%%-swap*}-swap$n"
	src=$snaps/$cur
	dst=$snaps/$id
	cp -r "$src" "$dst"
	jq --arg id "$id" '.snapshot_id = $id' "$src/manifest.json" >"$dst/manifest.json"
	sum=$(sha256sum "$dst/manifest.json" | cut -d' ' -f1)
	jq -n --arg id "$id" --arg m "snapshots/$id/manifest.json" --arg s "$sum" \
		--arg t "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" \
		'{snapshot_id: $id, manifest: $m, manifest_sha256: $s, published_at: $t}' >"$snaps/latest.json.tmp"
	mv "$snaps/latest.json.tmp" "$snaps/latest.json"
}

loads() { grep -c 'msg="snapshot loaded"' "$LOGS/up.log" || true; }

log "wrk -c$CONNS mixed reads in $WINDOWS windows of ${WINDOW}s, a new snapshot every $SWAP_EVERY windows"
wrk -t2 -c"$CONNS" -d3s -H "Authorization: Bearer $KEY" -s "$TMPROOT/mixed.lua" "$URL" >/dev/null # warm-up
rows=()
pending=0
for ((w = 1; w <= WINDOWS; w++)); do
	if ((w % SWAP_EVERY == 0)); then
		republish
		pending=$(($(loads) + 1))
	fi
	before=$(loads)
	wrk -t2 -c"$CONNS" -d"${WINDOW}s" --latency -H "Authorization: Bearer $KEY" -s "$TMPROOT/mixed.lua" "$URL" \
		>"$LOGS/win-$w.txt" 2>&1
	after=$(loads)
	# A window "has a load" when a published snapshot was not yet loaded at
	# its start (the load ran during it).
	swap=no
	if ((pending > 0 && before < pending)); then
		swap=yes
	fi
	((after >= pending)) && pending=0
	r=$(awk -v swap="$swap" '
		function ms(v) {
			if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
			if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
			if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
			return v
		}
		/requests in/ { n = $1 }
		$1 == "99%" { p99 = ms($2) }
		/Non-2xx or 3xx responses:/ { bad += $NF }
		/Socket errors:/ { gsub(",", ""); bad += $4 + $6 + $8 + $10 }
		END { printf "%s|%d|%d|%.2f\n", swap, n, bad, p99 }' "$LOGS/win-$w.txt")
	rows+=("$w|$r")
	log "window $w: $r"
done

echo
echo "| window | snapshot load during it | requests | failed | p99 ms |"
echo "|---:|---|---:|---:|---:|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
echo
steady=$(printf '%s\n' "${rows[@]}" | awk -F'|' 'NR > 1 && $2 == "no" { print $5 }' | sort -n)
printf '%s\n' "${rows[@]}" | awk -F'|' -v steady="$(echo $steady)" '
	{ total += $3; failed += $4 }
	$2 == "yes" { if ($5 > worst) worst = $5; nswap++ }
	END {
		n = split(steady, s, " ")
		med = (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
		printf "requests %d, failed %d; steady p99 (median of %d windows) %.2f ms; worst p99 of the %d windows with a load %.2f ms (%.1fx)\n",
			total, failed, n, med, nswap, worst, (med > 0) ? worst / med : 0
	}'
echo "snapshots loaded by the edge: $(loads) (the first at start)"
grep 'msg="snapshot loaded"' "$LOGS/up.log" | sed -n 's/.*elapsed=\([^ ]*\).*heap\(_alloc\)*_bytes=\([0-9]*\).*/  load \1, heap \3 B/p'
