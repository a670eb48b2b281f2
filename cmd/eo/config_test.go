package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/store"
)

// envOf is a lookup over a fixed environment that records every name read.
func envOf(vars map[string]string, read *[]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if read != nil {
			*read = append(*read, name)
		}
		v, ok := vars[name]
		return v, ok
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig(envOf(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != ".eo/store" || c.Work != ".eo/work" || c.Addr != "127.0.0.1:8080" || c.LogJSON || c.AccessLog {
		t.Errorf("store/work/addr/log defaults: %+v", c)
	}
	if c.DuckDBMemory != "2GB" || c.DuckDBThreads != 0 {
		t.Errorf("DuckDB defaults: memory %q, threads %d; want 2GB and 0 (BENCHMARKS.md: a 100k rebuild under 4 GB)", c.DuckDBMemory, c.DuckDBThreads)
	}
	if c.Schedule != "*/15 * * * *" || c.UpSchedule != "*/2 * * * *" || c.RedisPrefix != "eo:" {
		t.Errorf("schedule/prefix defaults: %q %q %q", c.Schedule, c.UpSchedule, c.RedisPrefix)
	}
	if c.S3.IOTimeout != store.DefaultS3IOTimeout || c.S3.MaxRetries != store.DefaultS3MaxRetries || c.S3.UseSSL {
		t.Errorf("S3 defaults: %+v", c.S3)
	}
	if c.Redis.Timeout != access.DefaultRedisTimeout || c.Redis.MaxRetries != access.DefaultRedisRetries {
		t.Errorf("Redis defaults: %+v", c.Redis)
	}
	if c.UsageMaxEvents != access.DefaultMaxRetainedEvents || c.UsageExportInterval != 5*time.Minute ||
		c.KeyReload != time.Second || c.PollInterval != 10*time.Second ||
		c.MaxConns != 0 || c.CORSOrigins != nil || c.GoMemLimit || c.JobsMetricsAddr != "" {
		t.Errorf("edge defaults: %+v", c)
	}
}

// A zero that means "none" in a setting becomes the library's named value
// (the libraries read 0 as "default").
func TestConfigZeroMeansNone(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"EO_REDIS_RETRIES": "0", "EO_USAGE_MAX_EVENTS": "0",
		"EO_CORS_ORIGINS": "https://a.example,https://b.example", "EO_S3_USE_SSL": "true",
		"GOMEMLIMIT": "4GiB", "EO_ACCESS_LOG": "true"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.MaxRetries != access.NoRetries || c.UsageMaxEvents != access.NoCap {
		t.Errorf("zero settings: retries %d, max events %d", c.Redis.MaxRetries, c.UsageMaxEvents)
	}
	if !slices.Equal(c.CORSOrigins, []string{"https://a.example", "https://b.example"}) || !c.S3.UseSSL || !c.GoMemLimit ||
		!c.AccessLog {
		t.Errorf("origins %q, ssl %v, memlimit %v, access log %v", c.CORSOrigins, c.S3.UseSSL, c.GoMemLimit, c.AccessLog)
	}
}

// Every malformed value is reported at once, each with its variable.
func TestConfigRejectsMalformedValues(t *testing.T) {
	bad := map[string]string{
		"EO_S3_USE_SSL": "maybe", "EO_S3_IO_TIMEOUT": "0s", "EO_S3_MAX_RETRIES": "0", "EO_REDIS_TIMEOUT": "fast",
		"EO_REDIS_RETRIES": "-1", "EO_USAGE_MAX_EVENTS": "lots", "EO_USAGE_EXPORT_INTERVAL": "-5m",
		"EO_KEY_RELOAD": "1", "EO_POLL_INTERVAL": "0", "EO_MAX_CONNS": "-3",
		"EO_ACCESS_LOG": "sometimes",
	}
	_, err := loadConfig(envOf(bad, nil))
	if err == nil {
		t.Fatal("malformed settings accepted")
	}
	for name, v := range bad {
		if !strings.Contains(err.Error(), name+": want ") || !strings.Contains(err.Error(), `"`+v+`"`) {
			t.Errorf("error does not name %s=%q:\n%v", name, v, err)
		}
	}
}

// TestPlansOverrideFieldByField: EO_PLANS changes the fields it gives and
// keeps the others (an internal plan given a larger burst keeps its exports
// flag and quota); a malformed plan fails with its name.
func TestPlansOverrideFieldByField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(path, []byte(`{"internal": {"burst": 5}, "gold": {"rate": 7, "exports": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := plans(path)
	if err != nil {
		t.Fatal(err)
	}
	def := access.DefaultPlans()
	want := def[access.PlanInternal]
	want.Burst = 5
	if p[access.PlanInternal] != want || !p[access.PlanInternal].Exports {
		t.Errorf("internal: %+v, want %+v", p[access.PlanInternal], want)
	}
	if p[access.PlanStandard] != def[access.PlanStandard] {
		t.Errorf("standard changed: %+v", p[access.PlanStandard])
	}
	if g := p["gold"]; g != (access.PlanLimits{Rate: 7, Exports: true}) {
		t.Errorf("a new plan: %+v", g)
	}
	if err := os.WriteFile(path, []byte(`{"internal": {"burst": "many"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := plans(path); err == nil || !strings.Contains(err.Error(), "internal") {
		t.Errorf("a malformed plan: %v", err)
	}
}

// The cursor signing secret: EO_CURSOR_SECRET shorter than 32 bytes is
// refused; a kept secret that was cut short is replaced (and the
// replacement logged), atomically, with mode 0600; a whole one is kept.
func TestCursorSecret(t *testing.T) {
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	short := common{cfg: Config{CursorSecret: "too-short"}}
	if _, err := short.cursorSecret(log); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("a 9-byte EO_CURSOR_SECRET: %v", err)
	}
	set := common{cfg: Config{CursorSecret: strings.Repeat("k", 32)}}
	if b, err := set.cursorSecret(log); err != nil || string(b) != strings.Repeat("k", 32) {
		t.Fatalf("a 32-byte EO_CURSOR_SECRET: %q %v", b, err)
	}

	c := common{work: t.TempDir()}
	path := filepath.Join(c.work, "cursor.secret")
	first, err := c.cursorSecret(log)
	if err != nil || len(first) != 32 {
		t.Fatalf("a new secret: %d bytes, %v", len(first), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the kept secret: %v %v, want mode 0600", fi.Mode(), err)
	}
	if again, err := c.cursorSecret(log); err != nil || string(again) != string(first) {
		t.Fatalf("a restart signs with another secret (%v)", err)
	}
	if logged.Len() != 0 {
		t.Fatalf("logged for a whole secret: %s", logged.String())
	}
	if err := os.WriteFile(path, first[:5], 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := c.cursorSecret(log)
	if err != nil || len(next) != 32 || string(next[:5]) == string(first[:5]) {
		t.Fatalf("a secret cut to 5 bytes: replaced by %d bytes, %v", len(next), err)
	}
	if kept, _ := os.ReadFile(path); string(kept) != string(next) {
		t.Fatal("the replacement is not what the file holds")
	}
	if !strings.Contains(logged.String(), "cursor secret cut short") {
		t.Fatalf("the replacement is not logged: %q", logged.String())
	}
	if ents, _ := os.ReadDir(c.work); len(ents) != 1 {
		t.Fatalf("work folder holds %d files, want the secret alone (no temp file)", len(ents))
	}
}
