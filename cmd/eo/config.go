package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/store"
)

// DefaultDuckDBMemory is the pipeline's DuckDB memory limit unless
// EO_DUCKDB_MEMORY or --duckdb-memory says otherwise: the batch fits beside
// an edge on one machine (DuckDB's own default, 80 % of RAM, does not;
// BENCHMARKS.md has a rebuild's peak under it).
const DefaultDuckDBMemory = "2GB"

// Config is every setting eo takes from the environment: each EO_*
// variable, read once when a command starts (loadConfig) and handed down
// as options, so no library reads the environment. Flags of the same
// meaning (--store, --work, --addr, --schedule, --duckdb-memory,
// --log-json, --access-log, --metrics-addr) default to these values. README.md's settings table lists
// every variable with its default; a test holds the two equal.
type Config struct {
	Store, Work, Addr string // EO_STORE, EO_WORK, EO_ADDR
	LogJSON           bool   // EO_LOG_JSON (any non-empty value)
	AccessLog         bool   // EO_ACCESS_LOG: eo serve / eo up log every request
	DuckDBMemory      string // EO_DUCKDB_MEMORY: the pipeline's DuckDB memory limit (2GB)
	DuckDBThreads     int    // EO_DUCKDB_THREADS; 0: DuckDB's default
	Schedule          string // EO_SCHEDULE: eo jobs
	UpSchedule        string // EO_UP_SCHEDULE: eo up's in-process runs
	// RunTimeout is EO_RUN_TIMEOUT: how long a scheduled run (eo jobs,
	// eo up) may take before it is stopped (0 or negative: no bound).
	RunTimeout time.Duration

	// S3 holds the endpoint, credentials and call bounds of an s3:// store
	// (EO_S3_*); the bucket and prefix come from the location.
	S3 store.S3Options

	RedisURL    string              // EO_REDIS_URL; empty: embedded counters, in-memory live path
	RedisPrefix string              // EO_REDIS_PREFIX
	Redis       access.RedisOptions // EO_REDIS_TIMEOUT, EO_REDIS_RETRIES

	UsageMaxEvents      int64         // EO_USAGE_MAX_EVENTS (access.NoCap for "0")
	UsageExportInterval time.Duration // EO_USAGE_EXPORT_INTERVAL
	Plans               string        // EO_PLANS: JSON file of plan limit overrides
	KeyReload           time.Duration // EO_KEY_RELOAD
	DebugAddr           string        // EO_DEBUG_ADDR: pprof listener
	JobsMetricsAddr     string        // EO_JOBS_METRICS_ADDR: eo jobs' metrics listener; empty: none
	CORSOrigins         []string      // EO_CORS_ORIGINS, comma-separated
	CursorSecret        string        // EO_CURSOR_SECRET; empty: WORK/cursor.secret
	PollInterval        time.Duration // EO_POLL_INTERVAL
	MaxConns            int           // EO_MAX_CONNS; 0: the open-file limit less a reserve
	// GoMemLimit is set when GOMEMLIMIT is: the runtime then has the
	// operator's limit and eo serve does not set its own.
	GoMemLimit bool
}

// DefaultRunTimeout is EO_RUN_TIMEOUT's default: about five times a full
// rebuild of 100,000 matches on 2 processors (BENCHMARKS.md), so only a
// run that hangs reaches it.
const DefaultRunTimeout = 30 * time.Minute

// loadConfig reads the environment through lookup (os.LookupEnv in main)
// and checks every value: a malformed one fails the command at start, with
// the variable's name and what it wants, whether or not the command uses it.
func loadConfig(lookup func(string) (string, bool)) (Config, error) {
	e := envReader{lookup: lookup}
	c := Config{
		Store:         e.str("EO_STORE", ".eo/store"),
		Work:          e.str("EO_WORK", ".eo/work"),
		Addr:          e.str("EO_ADDR", "127.0.0.1:8080"),
		LogJSON:       e.str("EO_LOG_JSON", "") != "",
		AccessLog:     e.boolean("EO_ACCESS_LOG", false),
		DuckDBMemory:  e.str("EO_DUCKDB_MEMORY", DefaultDuckDBMemory),
		DuckDBThreads: e.count("EO_DUCKDB_THREADS", 0, 0, "a count of threads (0: one per core)"),
		Schedule:      e.str("EO_SCHEDULE", "*/15 * * * *"),
		UpSchedule:    e.str("EO_UP_SCHEDULE", "*/2 * * * *"),
		RunTimeout:    e.duration("EO_RUN_TIMEOUT", DefaultRunTimeout, "a duration such as 30m (0 or negative: no bound)"),
		S3: store.S3Options{
			Endpoint:   e.str("EO_S3_ENDPOINT", ""),
			AccessKey:  e.str("EO_S3_ACCESS_KEY", ""),
			SecretKey:  e.str("EO_S3_SECRET_KEY", ""),
			Region:     e.str("EO_S3_REGION", ""),
			UseSSL:     e.boolean("EO_S3_USE_SSL", false),
			IOTimeout:  e.positive("EO_S3_IO_TIMEOUT", store.DefaultS3IOTimeout),
			MaxRetries: e.count("EO_S3_MAX_RETRIES", store.DefaultS3MaxRetries, 1, "a positive count of attempts"),
		},
		RedisURL:    e.str("EO_REDIS_URL", ""),
		RedisPrefix: e.str("EO_REDIS_PREFIX", "eo:"),
		Redis: access.RedisOptions{
			Timeout:    e.positive("EO_REDIS_TIMEOUT", access.DefaultRedisTimeout),
			MaxRetries: e.count("EO_REDIS_RETRIES", access.DefaultRedisRetries, 0, "a count (0: none)"),
		},
		UsageMaxEvents:      int64(e.count("EO_USAGE_MAX_EVENTS", access.DefaultMaxRetainedEvents, 0, "a count of events (0: no cap)")),
		UsageExportInterval: e.positive("EO_USAGE_EXPORT_INTERVAL", 5*time.Minute),
		Plans:               e.str("EO_PLANS", ""),
		KeyReload:           e.positive("EO_KEY_RELOAD", time.Second),
		DebugAddr:           e.str("EO_DEBUG_ADDR", ""),
		JobsMetricsAddr:     e.str("EO_JOBS_METRICS_ADDR", ""),
		CursorSecret:        e.str("EO_CURSOR_SECRET", ""),
		PollInterval:        e.positive("EO_POLL_INTERVAL", 10*time.Second),
		MaxConns:            e.count("EO_MAX_CONNS", 0, 0, "a count (0: the open-file limit less a reserve)"),
		GoMemLimit:          e.str("GOMEMLIMIT", "") != "",
	}
	if v := e.str("EO_CORS_ORIGINS", ""); v != "" {
		c.CORSOrigins = strings.Split(v, ",")
	}
	// The libraries' zero values mean "default"; these settings' zeros mean
	// "none", said by the libraries' named values.
	if c.Redis.MaxRetries == 0 {
		c.Redis.MaxRetries = access.NoRetries
	}
	if c.UsageMaxEvents == 0 {
		c.UsageMaxEvents = access.NoCap
	}
	return c, errors.Join(e.errs...)
}

// envReader reads variables with their defaults and collects the errors of
// malformed values.
type envReader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (e *envReader) str(name, def string) string {
	if v, ok := e.lookup(name); ok && v != "" {
		return v
	}
	return def
}

func (e *envReader) fail(name, v, want string) {
	e.errs = append(e.errs, fmt.Errorf("%s: want %s, got %q", name, want, v))
}

func (e *envReader) boolean(name string, def bool) bool {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, v, "true or false")
	}
	return b
}

func (e *envReader) duration(name string, def time.Duration, want string) time.Duration {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.fail(name, v, want)
		return def
	}
	return d
}

func (e *envReader) positive(name string, def time.Duration) time.Duration {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.fail(name, v, "a positive duration such as "+def.String())
		return def
	}
	return d
}

func (e *envReader) count(name string, def, min int, want string) int {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		e.fail(name, v, want)
		return def
	}
	return n
}
