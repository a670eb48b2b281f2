package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/edge"
	"github.com/eodata/eo/internal/scrape"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
)

// common holds the settings and flags every command shares.
type common struct {
	cfg   Config
	store string
	work  string
	json  bool
	// duckMemory is DuckDB's memory_limit for the pipeline commands (set by
	// registerPipeline); empty keeps DuckDB's default, 80 % of RAM.
	duckMemory  string
	duckThreads int
	full        bool
	// runTimeout bounds each scheduled run (--run-timeout, EO_RUN_TIMEOUT;
	// set by registerScheduled).
	runTimeout time.Duration
	// noMetering serves without limits, quotas or usage records (eo serve
	// --no-metering: benchmarks, or a deployment metered by its gateway).
	noMetering bool
	// accessLog logs every request the edge answers (--access-log,
	// EO_ACCESS_LOG; set by registerEdge).
	accessLog bool
	// metrics are more collectors for the edge's /metrics (eo up: its
	// in-process pipeline runs').
	metrics []prometheus.Collector
	// readsStore: the command reads what the store holds (eo snapshots,
	// serve, pipeline run, model report), so a local store that does not
	// exist is an error (publish.MustExist), not a new empty folder.
	readsStore bool
}

// flags starts the flag set of the command name with the flags every
// command shares (they set c's fields).
func (c *common) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.store, "store", c.cfg.Store, "snapshot store: a folder, or s3://bucket/prefix (EO_S3_* env for endpoint and credentials)")
	fs.StringVar(&c.work, "work", c.cfg.Work, "local work folder (DuckDB spill, exported files, snapshot cache)")
	fs.BoolVar(&c.json, "log-json", c.cfg.LogJSON, "log JSON lines instead of text")
	return fs
}

// registerPipeline adds the flags of the commands that run the pipeline.
func (c *common) registerPipeline(fs *flag.FlagSet) {
	fs.StringVar(&c.duckMemory, "duckdb-memory", c.cfg.DuckDBMemory,
		"DuckDB memory limit for the pipeline, e.g. 8GB; above it DuckDB spills to --work")
	fs.IntVar(&c.duckThreads, "duckdb-threads", c.cfg.DuckDBThreads,
		"DuckDB worker threads for the pipeline (default 0: one per core); fewer use less memory at once")
	fs.BoolVar(&c.full, "full", false,
		"rebuild every table from every landed batch, even when the last run's state allows an incremental run")
}

// registerScheduled adds the flags of the commands that run the pipeline on
// a schedule (eo jobs, eo up): the pipeline's and the run time limit.
func (c *common) registerScheduled(fs *flag.FlagSet) {
	c.registerPipeline(fs)
	fs.DurationVar(&c.runTimeout, "run-timeout", c.cfg.RunTimeout,
		"stop a run that takes longer than this (its pipeline child is told to stop, then killed); the next tick runs again (0: no bound)")
}

// registerEdge adds the flags of the commands that serve the edge.
func (c *common) registerEdge(fs *flag.FlagSet) {
	fs.BoolVar(&c.accessLog, "access-log", c.cfg.AccessLog,
		"log one line per HTTP request (method, route, status, bytes, duration, request and key ids; never the key)")
}

func (c *common) logger() *slog.Logger {
	if c.json {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

func (c *common) openStore(ctx context.Context) (store.Store, error) {
	return c.openStoreWith(ctx, store.Open)
}

// openStoreWith opens the command's store with the S3 settings of its
// config (open: store.Open or store.OpenLazy).
func (c *common) openStoreWith(ctx context.Context,
	open func(context.Context, string, store.S3Options) (store.Store, error)) (store.Store, error) {
	if strings.HasPrefix(c.store, "s3://") && c.cfg.S3.Endpoint == "" {
		return nil, fmt.Errorf("store %s: EO_S3_ENDPOINT is not set", c.store)
	}
	if c.readsStore {
		if err := store.MustExist(c.store); err != nil {
			return nil, fmt.Errorf("%w (check --store or EO_STORE)", err)
		}
	}
	return open(ctx, c.store, c.cfg.S3)
}

// parseFlags parses a command's flags, every command's: a flag it does not
// know, an argument left after the flags, or an empty string flag named in
// required is a usage error naming it, followed by usage when there is one.
func parseFlags(fs *flag.FlagSet, args []string, usage string, required ...string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()} // the flag package has printed the flags
	}
	msg := ""
	var missing []string
	for _, name := range required {
		if fs.Lookup(name).Value.String() == "" {
			missing = append(missing, "--"+name)
		}
	}
	switch {
	case fs.NArg() > 0:
		msg = fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	case len(missing) == 1:
		msg = fmt.Sprintf("%s: %s is required", fs.Name(), missing[0])
	case len(missing) > 1:
		msg = fmt.Sprintf("%s: %s are required", fs.Name(), strings.Join(missing, " and "))
	default:
		return nil
	}
	if usage != "" {
		msg += "\n\n" + usage
	}
	return usageError{msg}
}

// parseOpen parses a command's flags, then opens its logger and store.
func (c *common) parseOpen(ctx context.Context, fs *flag.FlagSet, args []string) (*slog.Logger, store.Store, error) {
	if err := parseFlags(fs, args, ""); err != nil {
		return nil, nil, err
	}
	st, err := c.openStore(ctx)
	return c.logger(), st, err
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func cmdGenerate(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg}
	fs := c.flags("generate")
	seed := fs.Int64("seed", 42, "random seed: the same seed, --now and --matches give the same world")
	matches := fs.Int("matches", 5000, "number of matches (the default spans about two years)")
	teams := fs.Int("teams", 0, "number of teams (0: 60, or matches/80 above 5,000 matches)")
	nowFlag := fs.String("now", "", "the world's present as RFC 3339 (default: now, to the minute)")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Minute)
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return fmt.Errorf("--now: %w", err)
		}
		now = t.UTC()
	}
	return generate(ctx, c, synth.Options{Seed: *seed, Now: now, Matches: *matches, Teams: *teams})
}

func generate(ctx context.Context, c common, o synth.Options) error {
	log := c.logger()
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	start := time.Now()
	b, err := raw.NewBatch(c.work, "synth", start)
	if err != nil {
		return err
	}
	sum, err := synth.Generate(ctx, o, b)
	if err != nil {
		b.Discard()
		return err
	}
	// The world's records change up to o.Now: a world generated as of a
	// later time (--now) lands then, or the pipeline would reject its
	// change times as too far past the batch's landing
	// (raw.MaxClockSkew).
	landed := time.Now()
	if o.Now.After(landed) {
		landed = o.Now
	}
	m, err := b.Land(ctx, st, landed)
	if err != nil {
		return err
	}
	log.Info("synthetic world landed", "batch", m.BatchID, "store", st.String(), "matches", sum.Matches,
		"teams", sum.Teams, "players", sum.Players, "price_captures", sum.PriceCaptures,
		"elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// newRunner builds the pipeline + publish runner; published (may be nil) is
// called after each run that published a snapshot.
func newRunner(c common, log *slog.Logger, st store.Store, force bool, published func(jobs.Result)) *jobs.Runner {
	return jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Force: force, Published: published})
}

// newScheduledRunner is newRunner for the commands that run the pipeline
// again and again (eo jobs, eo up): each run's pipeline in a child process
// (childPipeline), so that a crash in DuckDB ends that run, not them.
func newScheduledRunner(c common, log *slog.Logger, st store.Store, published func(jobs.Result)) (*jobs.Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the pipeline's child process: %w", err)
	}
	return jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Published: published,
		Exec: childPipeline(exe, c, childStopGrace), RunTimeout: c.runTimeout}), nil
}

// pipelineOptions are the pipeline's options from c's flags.
func (c common) pipelineOptions(log *slog.Logger, st store.Store) pipelines.Options {
	po := pipelines.Options{Store: st, WorkDir: filepath.Join(c.work, "pipeline"), Logger: log, MemoryLimit: c.duckMemory,
		Threads: c.duckThreads, Full: c.full}
	if isTerminal(os.Stderr) {
		po.Progress = func(step string, rows int64, elapsed time.Duration) {
			fmt.Fprintf(os.Stderr, "  %-20s %12d rows  %8s\n", step, rows, elapsed.Round(time.Millisecond))
		}
	}
	return po
}

func cmdPipelineRun(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg, readsStore: true} // it runs on the batches landed there
	fs := c.flags("pipeline run")
	c.registerPipeline(fs)
	ifNew := fs.Bool("if-new", false, "skip when no raw batch landed since the current snapshot")
	log, st, err := c.parseOpen(ctx, fs, args)
	if err != nil {
		return err
	}
	res, err := newRunner(c, log, st, !*ifNew, nil).RunOnce(ctx)
	if err != nil {
		return err
	}
	if res.Skipped {
		fmt.Printf("up to date: snapshot %s\n", res.Manifest.SnapshotID)
		return nil
	}
	fmt.Printf("published snapshot %s (%d tables, %d quarantined lines, %s, %s run of %d new batches)\n",
		res.Manifest.SnapshotID, len(res.Manifest.Tables), res.Report.QuarantinedTotal(), res.Report.Elapsed,
		res.Report.Mode, len(res.Report.Read))
	if res.Report.FullReason != "" {
		fmt.Printf("  full rebuild: %s\n", res.Report.FullReason)
	}
	for e, reasons := range res.Report.Quarantined {
		for reason, n := range reasons {
			fmt.Printf("  quarantined %s: %d × %s\n", e, n, reason)
		}
	}
	for _, b := range res.Report.SkippedBatches {
		fmt.Printf("  skipped batch %s: %s %s\n", b.BatchID, b.Reason, b.Detail)
	}
	return nil
}

func cmdSnapshots(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg, readsStore: true}
	fs := c.flags("snapshots")
	asJSON := fs.Bool("json", false, "print a JSON array (snapshot_id, state, created_at, tables, rows, bytes) instead of lines")
	_, st, err := c.parseOpen(ctx, fs, args)
	if err != nil {
		return err
	}
	ls, err := publish.ListAll(ctx, st)
	if err != nil {
		return err
	}
	// current: served now; published: served before; orphan: its publish
	// stopped before the pointer moved (never served; Clean removes it).
	out := []snapshotLine{}
	for _, l := range ls {
		line := snapshotLine{SnapshotID: l.SnapshotID, State: string(l.State), CreatedAt: l.CreatedAt.UTC(), Tables: len(l.Tables)}
		for _, t := range l.Tables {
			line.Rows += t.Rows
			line.Bytes += t.Bytes
		}
		out = append(out, line)
	}
	if *asJSON {
		return printJSON(out)
	}
	for _, l := range out {
		fmt.Printf("%-9s %s  %s  %d tables  %d rows  %d bytes\n", l.State, l.SnapshotID, l.CreatedAt.Format(time.RFC3339),
			l.Tables, l.Rows, l.Bytes)
	}
	return nil
}

// snapshotLine is one snapshot in eo snapshots (--json).
type snapshotLine struct {
	SnapshotID string    `json:"snapshot_id"`
	State      string    `json:"state"`
	CreatedAt  time.Time `json:"created_at"`
	Tables     int       `json:"tables"`
	Rows       int64     `json:"rows"`
	Bytes      int64     `json:"bytes"`
}

// printJSON prints v as indented JSON on stdout (the --json output of the
// listing commands).
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cmdJobs(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg}
	fs := c.flags("jobs")
	c.registerScheduled(fs)
	spec := fs.String("schedule", cfg.Schedule, "cron schedule (UTC, 5 fields)")
	metricsAddr := fs.String("metrics-addr", cfg.JobsMetricsAddr,
		"serve the pipeline runs' Prometheus metrics at http://ADDR/metrics (no key: keep it private); empty: none")
	landEvery := fs.Duration("land-every", 5*time.Second,
		"with EO_REDIS_URL: land the shared live feed's events in the raw area as one batch this often (0: not landed)")
	log, st, err := c.parseOpen(ctx, fs, args)
	if err != nil {
		return err
	}
	var lander *live.Lander
	if cfg.RedisURL != "" && *landEvery > 0 {
		stop, l, err := startFeedLander(ctx, cfg, log, st, c.work, *landEvery)
		if err != nil {
			return err
		}
		defer stop()
		lander = l
	}
	runner, err := newScheduledRunner(c, log, st, nil)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		collectors := runner.Collectors()
		if lander != nil {
			collectors = append(collectors, scrape.Counter("eo_live_lander_missed_events_total",
				"Live feed events the lander never received (gaps in the feed's positions: published while it was not subscribed); they are not landed.",
				scrape.Float(lander.Missed)))
		}
		if _, err := serveMetrics(ctx, log, *metricsAddr, collectors); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	log.Info("jobs scheduled", "schedule", *spec, "store", st.String())
	return runner.Schedule(ctx, *spec)
}

func cmdServe(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg, readsStore: true}
	fs := c.flags("serve")
	addr := fs.String("addr", cfg.Addr, "listen address")
	c.registerEdge(fs)
	fs.BoolVar(&c.noMetering, "no-metering", false,
		"serve without rate limits, quotas or usage records (keys are still required): for benchmarks, or behind a gateway that meters")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	return serve(ctx, c, *addr, nil)
}

// openAccess opens the key store: the one in Redis shared by every host
// when EO_REDIS_URL is set, else the work folder's key file.
func (c *common) openAccess() (*access.Store, error) {
	if url := c.cfg.RedisURL; url != "" {
		return access.OpenRedisKeys(context.Background(), url, c.cfg.RedisPrefix, c.cfg.Redis, nil)
	}
	return c.openKeyFile()
}

// openKeyFile opens (creating) the work folder's key file.
func (c *common) openKeyFile() (*access.Store, error) {
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return nil, err
	}
	return access.Open(filepath.Join(c.work, "access.db"), nil)
}

// minCursorSecret is the shortest cursor signing secret accepted: 32
// bytes, the size of the HMAC's hash (RFC 2104 §3).
const minCursorSecret = 32

// cursorSecret is EO_CURSOR_SECRET, or a secret kept in the work folder
// (created once), so cursors survive restarts of a single instance. A
// secret set shorter than minCursorSecret is refused: cursors signed with
// it could be forged. A kept secret that is cut short (a disk that filled
// as it was written) is replaced, and the replacement logged: the cursors
// it signed cannot be checked either way.
func (c *common) cursorSecret(log *slog.Logger) ([]byte, error) {
	if v := c.cfg.CursorSecret; v != "" {
		if len(v) < minCursorSecret {
			return nil, fmt.Errorf("EO_CURSOR_SECRET is %d bytes; a cursor signing secret needs at least %d (for example: openssl rand -hex 32)",
				len(v), minCursorSecret)
		}
		return []byte(v), nil
	}
	path := filepath.Join(c.work, "cursor.secret")
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) >= minCursorSecret:
		return b, nil
	case err == nil:
		log.Warn("cursor secret cut short; replaced by a new one: cursors handed out before are refused (400 invalid_cursor)",
			"file", path, "bytes", len(b))
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	b = make([]byte, minCursorSecret)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, writeSecret(path, b)
}

// writeSecret writes b to path (mode 0600) through a temp file and a
// rename: a crash leaves the old file or the whole new one.
func writeSecret(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cursor secret: %w", err)
	}
	return nil
}

func cmdUp(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg}
	fs := c.flags("up")
	c.registerScheduled(fs)
	addr := fs.String("addr", cfg.Addr, "listen address")
	c.registerEdge(fs)
	matches := fs.Int("matches", 5000, "matches to generate when the store has no raw batch")
	spec := fs.String("schedule", cfg.UpSchedule,
		"cron schedule (UTC) of the in-process pipeline + publish runs, so live events reach the next snapshot; off: none")
	var ll localLive
	fs.IntVar(&ll.slots, "live-matches", 4, "matches the local live replay keeps playing at once (0: no replay)")
	fs.Float64Var(&ll.speed, "live-speed", 1, "live replay speed (1: a round every 3 seconds)")
	fs.DurationVar(&ll.landEvery, "land-every", 5*time.Second, "how often live events are landed in the raw area as a batch (0: not landed, for benchmarks)")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	log := c.logger()
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	batches, err := raw.ListBatches(ctx, st)
	if err != nil {
		return err
	}
	if len(batches) == 0 {
		fmt.Println("no raw batch in", st.String(), "- generating the synthetic world")
		if err := generate(ctx, c, synth.Options{Seed: 42, Now: time.Now().UTC().Truncate(time.Minute), Matches: *matches}); err != nil {
			return err
		}
	}
	// The background work (scheduled runs, the live replay and lander) has
	// stopped when eo up returns: a run in progress finishes or aborts first.
	var bg sync.WaitGroup
	defer bg.Wait()
	// The edge is built after the first run; runs it triggers later reload
	// it as soon as they publish.
	var srv atomic.Pointer[edge.Server]
	runner, err := newScheduledRunner(c, log, st, func(res jobs.Result) {
		if s := srv.Load(); s != nil {
			if err := s.Load(ctx); err != nil {
				log.Warn("edge reload after publish", "snapshot", res.Manifest.SnapshotID, "err", err)
			}
		}
	})
	if err != nil {
		return err
	}
	res, err := runner.RunOnce(ctx)
	if err != nil && !errors.Is(err, jobs.ErrBusy) {
		return err
	}
	if res.Skipped {
		fmt.Println("snapshot up to date:", res.Manifest.SnapshotID)
	} else {
		fmt.Printf("published snapshot %s (%d quarantined lines)\n", res.Manifest.SnapshotID, res.Report.QuarantinedTotal())
	}
	rk, err := c.mintReadyKeys()
	if err != nil {
		return err
	}
	c.metrics = runner.Collectors() // the in-process runs, on the edge's /metrics
	return serve(ctx, c, *addr, func(s *edge.Server, addr string) error {
		srv.Store(s)
		// Live path: replay matches on an in-process feed (cmd/eo/live.go).
		if err := startLocalLive(ctx, log, st, c.work, s, ll, &bg); err != nil {
			return err
		}
		if *spec != "off" {
			bg.Go(func() {
				if err := runner.Schedule(ctx, *spec); err != nil {
					log.Error("in-process jobs stopped", "err", err)
				}
			})
			log.Info("in-process jobs scheduled", "schedule", *spec)
		}
		return printReadyKeys(rk, s, addr)
	})
}
