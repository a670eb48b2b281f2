package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only on EO_DEBUG_ADDR
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/edge"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
)

// counters opens the metering backend: Redis when EO_REDIS_URL is set (for
// several edge instances), else the embedded bbolt store in the work folder.
// EO_REDIS_TIMEOUT (default 300ms) bounds each Redis dial, read and write,
// EO_REDIS_RETRIES (default 1) the retries of a failed call;
// EO_USAGE_MAX_EVENTS (default 10,000,000; 0: no cap) caps the usage events
// kept while the export cannot write them.
func (c *common) counters(ctx context.Context, log *slog.Logger) (access.Counters, error) {
	if url := c.cfg.RedisURL; url != "" {
		ro := c.cfg.Redis
		ro.MaxRetainedEvents, ro.Logger = c.cfg.UsageMaxEvents, log
		// An edge restarted during a Redis outage starts: metered requests
		// get 503 until Redis answers, then it serves as if nothing happened.
		ro.StartDown = true
		return access.OpenRedisWith(ctx, url, c.cfg.RedisPrefix, ro)
	}
	return access.OpenEmbeddedWith(filepath.Join(c.work, "counters.db"),
		access.EmbeddedOptions{MaxRetainedEvents: c.cfg.UsageMaxEvents, Logger: log})
}

// plans reads plan limits: the spec's defaults, overridden per plan and
// field by the JSON file at path, EO_PLANS ({"internal": {"burst": 1e6},
// ...}: the internal plan's other limits and its exports flag stay).
func plans(path string) (map[string]access.PlanLimits, error) {
	p := access.DefaultPlans()
	if path == "" {
		return p, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("EO_PLANS: %w", err)
	}
	var over map[string]json.RawMessage
	if err := json.Unmarshal(b, &over); err != nil {
		return nil, fmt.Errorf("EO_PLANS %s: %w", path, err)
	}
	for k, raw := range over {
		pl := p[k] // a field the file does not give keeps its default (a new plan's: zero)
		if err := json.Unmarshal(raw, &pl); err != nil {
			return nil, fmt.Errorf("EO_PLANS %s: plan %s: %w", path, k, err)
		}
		p[k] = pl
	}
	return p, nil
}

// openKeyring loads the keys into memory and reloads them every
// EO_KEY_RELOAD (default 1s) while ctx lives. With EO_REDIS_URL they are
// the shared store in Redis (a reload is one GET while nothing changed; the
// last good read is cached in WORK/keys.cache.json for a start with Redis
// down); else the work folder's key file, created if needed (as `eo keys`
// would). The serving process holds no lock either way, so `eo keys` works
// beside it and its changes apply within the interval.
func (c *common) openKeyring(ctx context.Context, log *slog.Logger) (*access.Keyring, error) {
	var kr *access.Keyring
	if url := c.cfg.RedisURL; url != "" {
		if err := os.MkdirAll(c.work, 0o755); err != nil {
			return nil, err
		}
		var err error
		kr, err = access.OpenRedisKeyring(ctx, url, c.cfg.RedisPrefix, c.cfg.Redis,
			filepath.Join(c.work, "keys.cache.json"), nil, log)
		if err != nil {
			return nil, err
		}
		c.warnUnimportedKeys(kr, log)
	} else {
		st, err := c.openKeyFile()
		if err != nil {
			return nil, err
		}
		if err := st.Close(); err != nil {
			return nil, err
		}
		if kr, err = access.OpenKeyring(filepath.Join(c.work, "access.db"), nil); err != nil {
			return nil, err
		}
	}
	go kr.Watch(ctx, c.cfg.KeyReload, log)
	return kr, nil
}

// warnUnimportedKeys logs an error when the keys are read from Redis, Redis
// holds none, and this host's key file (where they lived before
// EO_REDIS_URL was set) holds some: every request would get 401 until they
// are imported.
func (c *common) warnUnimportedKeys(kr *access.Keyring, log *slog.Logger) {
	file := filepath.Join(c.work, "access.db")
	if kr.Len() > 0 {
		return
	}
	if _, err := os.Stat(file); err != nil {
		return
	}
	st, err := access.Open(file, nil)
	if err != nil {
		return
	}
	defer st.Close()
	if keys, err := st.Keys(""); err == nil && len(keys) > 0 {
		log.Error("the keys are read from Redis (EO_REDIS_URL) and Redis holds none, but this host's key file does: every request gets 401 until they are imported",
			"keys_in_file", len(keys), "file", file, "fix", "eo keys import --from "+file)
	}
}

// softMemoryLimit gives the Go runtime a soft memory limit of 80 % of the
// machine's RAM unless GOMEMLIMIT is set (operatorLimit). The edge holds a whole snapshot in
// memory (two while swapping); with the default GOGC alone the heap may grow
// to twice the live data before a collection, which for a large snapshot is
// more than the machine has. Near the limit the runtime collects sooner
// instead.
func softMemoryLimit(log *slog.Logger, operatorLimit bool) {
	if operatorLimit {
		return
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			_, _ = fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
		}
	}
	if kb <= 0 {
		return
	}
	limit := kb * 1024 / 10 * 8
	debug.SetMemoryLimit(limit)
	log.Info("soft memory limit (80% of RAM; set GOMEMLIMIT to override)", "bytes", limit)
}

func serve(ctx context.Context, c common, addr string, banner func(*edge.Server, string) error) error {
	log := c.logger()
	softMemoryLimit(log, c.cfg.GoMemLimit)
	// Not contacting the store here: when it is down the edge serves the
	// newest good snapshot in its local cache (edge.Server.Start).
	st, err := c.openStoreWith(ctx, store.OpenLazy)
	if err != nil {
		return err
	}
	keys, err := c.openKeyring(ctx, log)
	if err != nil {
		return err
	}
	if dbg := c.cfg.DebugAddr; dbg != "" {
		// Go's profiler (net/http/pprof) for operators, on its own listener:
		// never on the public address.
		go func() { log.Warn("debug listener stopped", "err", http.ListenAndServe(dbg, nil)) }()
		log.Info("debug listener (pprof)", "addr", "http://"+dbg+"/debug/pprof/")
	}
	secret, err := c.cursorSecret(log)
	if err != nil {
		return err
	}
	var meter *access.Meter
	var ctr access.Counters
	var exporter *access.UsageExporter
	health := map[string]edge.HealthCheck{}
	metrics := append([]prometheus.Collector(nil), c.metrics...)
	if c.noMetering {
		log.Warn("metering is off (--no-metering): keys are checked, but no rate limit, quota or usage record applies")
	} else {
		if ctr, err = c.counters(ctx, log); err != nil {
			return err
		}
		defer func() {
			// The last usage events are written as the counters close: a
			// failure loses them, so say so.
			if err := ctr.Close(); err != nil {
				log.Error("closing the counters: usage events still buffered may be lost", "err", err)
			}
		}()
		pl, err := plans(c.cfg.Plans)
		if err != nil {
			return err
		}
		meter = &access.Meter{C: ctr, Plans: pl, Accounts: keys, Now: time.Now}
		// The embedded counters database is locked by the serving process,
		// so the usage export runs here, every EO_USAGE_EXPORT_INTERVAL.
		exporter = access.NewUsageExporter(ctr, st, c.cfg.UsageExportInterval, log)
		health["usage_export"] = func() edge.Check { return edge.CheckOf(exporter.Health()) }
		metrics = append(metrics, access.Metrics(ctr, exporter)...)
	}
	lo, closeLive, err := liveOptions(ctx, c.cfg, log)
	if err != nil {
		return err
	}
	defer closeLive()
	var accessLog *slog.Logger
	if c.accessLog {
		accessLog = log.With("log", "access")
	}
	snaps := snapshot.Options{Store: st, CacheDir: filepath.Join(c.work, "edge-cache"), PollInterval: c.cfg.PollInterval}
	srv, err := edge.New(edge.Options{Snapshots: snaps, Auth: keys, CursorSecret: secret, Logger: log, AccessLog: accessLog,
		CORSOrigins: c.cfg.CORSOrigins, Live: lo, Meter: meter, MaxConns: c.cfg.MaxConns, Health: health, Metrics: metrics})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	if exporter != nil {
		go exporter.Run(ctx)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Info("edge listening", "addr", "http://"+ln.Addr().String(), "snapshot", srv.Current().ID)
	fmt.Printf("\nedge serving snapshot %s on http://%s\n  docs:   http://%s/docs\n  ready:  curl http://%s/ready\n",
		srv.Current().ID, ln.Addr(), ln.Addr(), ln.Addr())
	if banner != nil {
		if err := banner(srv, ln.Addr().String()); err != nil {
			return err
		}
	}
	return srv.Serve(ctx, ln)
}

// readyKeys are the demo keys make run prints.
type readyKeys struct{ standard, sandbox string }

// mintReadyKeys creates a demo account with a standard key and a sandbox key
// for make run. Keys are stored hashed, so new ones are minted (and printed)
// on each start.
func (c *common) mintReadyKeys() (readyKeys, error) {
	keys, err := c.openAccess()
	if err != nil {
		return readyKeys{}, err
	}
	defer keys.Close()
	acct, err := keys.CreateAccount("make-run demo", 0)
	if err != nil {
		return readyKeys{}, err
	}
	std, _, err := keys.CreateKey(acct.ID, access.PlanStandard)
	if err != nil {
		return readyKeys{}, err
	}
	sb, _, err := keys.CreateKey(acct.ID, access.PlanSandbox)
	if err != nil {
		return readyKeys{}, err
	}
	return readyKeys{standard: std, sandbox: sb}, nil
}

// consoleLink opens the console (edge/console.html) that the edge on addr
// serves at / with key: the page takes the key from the fragment, which no
// request carries, keeps it for the tab and takes it out of the address bar.
func consoleLink(addr, key string) string { return "http://" + addr + "/#key=" + key }

// printReadyKeys prints the demo keys with the sandbox sample's tournaments.
func printReadyKeys(rk readyKeys, srv *edge.Server, addr string) error {
	std, sb := rk.standard, rk.sandbox
	fmt.Printf("\nAPI key (standard plan): %s\n", std)
	fmt.Printf("  console: %s  (live matches, odds lines, rankings)\n", consoleLink(addr, std))
	fmt.Printf("  curl -H 'Authorization: Bearer %s' 'http://%s/v1/cs2/matches?limit=5'\n", std, addr)
	fmt.Printf("Sandbox key:             %s\n", sb)
	for _, t := range srv.Current().SampleTournaments() {
		fmt.Printf("  sample tournament %s  curl -H 'Authorization: Bearer %s' 'http://%s/v1/cs2/matches?tournament=%s'\n", t, sb, addr, t)
	}
	fmt.Println()
	return nil
}
