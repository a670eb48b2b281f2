// Package deps holds no code: its test keeps the module's house rules, as
// tailscale's deptest does. Which packages may import DuckDB, Fiber,
// minio-go and go-redis (allow-lists as tight as today's tree); that the
// view reaches no other package and the edge never the pipeline; that
// nothing imports cmd; that only tests import the test helpers
// (internal/testkit); that no library reads the environment (cmd/eo reads
// it once, into its Config); that every package has one package doc
// comment; and that no function runs over 100 lines unless its comment says
// why.
package deps
