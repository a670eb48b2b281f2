// Package access owns who may call the API and how much:
//
//   - accounts and API keys (keys.go): creating, listing, rotating and
//     revoking keys, and resolving a presented key to its account and plan.
//     Keys are stored only as SHA-256 hashes, in an embedded bbolt file
//     (keys_bolt.go, one host) or in Redis (keys_redis.go, shared by every
//     host and edge); the plaintext is shown once, at creation. The Keyring
//     (keyring.go) is the serving side: an in-memory copy reloaded when the
//     store changes.
//   - plans and metering (meter.go): per-plan rate limits (token buckets),
//     monthly and lifetime quotas, and one usage event per metered request.
//   - two counter backends behind Counters: the embedded one (embedded.go,
//     in memory, written to bbolt in the work folder; one edge instance) and
//     Redis (redis.go, shared by several instances, with a circuit breaker,
//     breaker.go: during a Redis outage metered requests fail at once with
//     503 instead of each waiting out its timeouts).
//   - usage export (export.go, exporter.go, usage_codec.go): usage events
//     exported from the backend to the store as Parquet for billing, and the
//     /ready checks and Prometheus metrics of the backend and the export
//     (health.go).
package access
