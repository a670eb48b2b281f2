// The Node.js client of the WebSocket fan-out benchmark (scripts/bench-ws.sh),
// measuring what scripts/wsbench/main.go measures, as a browser or Node
// client would: the `ws` package, every frame parsed with JSON.parse, one
// process for every connection.
//
//   node scripts/wsbench/client.mjs URL KEY CONNS WARMUP_S DURATION_S
//
// Prints one JSON object (the Go client's fields).
import WebSocket from "ws";

const [base, key, nConns = "5000", warmupS = "5", durationS = "60"] = process.argv.slice(2);
const conns = Number(nConns), warmup = Number(warmupS) * 1000, duration = Number(durationS) * 1000;
const auth = { Authorization: `Bearer ${key}` };
const host = new URL(base).host;

async function call(method, path) {
  const r = await fetch(base + path, { method, headers: auth });
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

const live = (await call("GET", "/v1/cs2/matches?status=live&limit=200")).data.map((m) => m.id);
if (live.length === 0) throw new Error("no match is live");
const targets = live.flatMap((id) => [`match:${id}`, `odds:${id}`]);

let measuring = false;
let since = 0; // when measuring started, µs: an older event is a swap's resend, not an event of the measurement
let frames = 0;
let ahead = 0; // new events stamped over a second after their frame arrived: left out
const samples = []; // [target, at µs, latency µs]

function newest(data, kind) {
  if (kind === "match") return Date.parse(data.changed_at) * 1000;
  let at = 0;
  for (const l of data) at = Math.max(at, Date.parse(l.captured_at) * 1000);
  return at;
}

async function open() {
  const { data } = await call("POST", "/v1/cs2/ws-token");
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${host}/v1/ws?token=${data.token}`);
    const last = new Map();
    let pending = 2 * targets.length;
    ws.on("open", () => targets.forEach((t) => ws.send(JSON.stringify({ type: "subscribe", target: t }))));
    ws.on("error", reject);
    ws.on("message", (raw) => {
      const now = (performance.timeOrigin + performance.now()) * 1000;
      const f = JSON.parse(raw);
      if (pending > 0) {
        if (f.type === "error") reject(new Error(JSON.stringify(f)));
        if (--pending === 0) resolve(ws);
        return;
      }
      if (f.type !== "update" || !measuring) return;
      frames++;
      const kind = f.target.startsWith("match:") ? "match" : "odds";
      const at = newest(f.data, kind);
      if (!(at > (last.get(f.target) ?? 0))) return;
      last.set(f.target, at);
      if (at < since) return;
      if (at > now + 1e6) { ahead++; return; } // more than the clocks' offset: stamped ahead
      samples.push([f.target, at, now - at]);
    });
  });
}

const t0 = Date.now();
const sockets = [];
for (let i = 0; i < conns; i += 32) {
  const batch = [];
  for (let j = i; j < Math.min(conns, i + 32); j++) batch.push(open());
  sockets.push(...(await Promise.all(batch)));
}
const connect = (Date.now() - t0) / 1000;
await new Promise((r) => setTimeout(r, warmup));
since = Date.now() * 1000;
measuring = true;
await new Promise((r) => setTimeout(r, duration));
measuring = false;
sockets.forEach((s) => s.terminate());

function quant(us) {
  if (us.length === 0) return { n: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  us.sort((a, b) => a - b);
  const at = (p) => us[Math.floor(p * (us.length - 1))] / 1000;
  return { n: us.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}
const first = new Map(), lastArrival = new Map();
for (const [t, at, lat] of samples) {
  const e = `${t}|${at}`, arrived = at + lat;
  if (!first.has(e) || arrived < first.get(e)) first.set(e, arrived);
  if (!lastArrival.has(e) || arrived > lastArrival.get(e)) lastArrival.set(e, arrived);
}
const spread = [...first].map(([e, f]) => lastArrival.get(e) - f);
console.log(JSON.stringify({
  connections: conns, targets, seconds: duration / 1000, frames, events_stamped_ahead: ahead,
  event_to_client_ms: quant(samples.map((s) => s[2])),
  match_updates_ms: quant(samples.filter((s) => s[0].startsWith("match:")).map((s) => s[2])),
  odds_updates_ms: quant(samples.filter((s) => s[0].startsWith("odds:")).map((s) => s[2])),
  first_to_last_client_ms: quant(spread), events: first.size, connect_seconds: connect,
}, null, 2));
process.exit(0);
