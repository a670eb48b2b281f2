package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
)

// waitOutput waits (up to a minute: the child's output arrives through a
// pipe) until what reports true of the process output, and returns it.
func waitOutput(t *testing.T, what string, out interface{ String() string }, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := out.String()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in:\n%s", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// EO_ACCESS_LOG=true makes `eo serve` log one line per request, with the
// key's id and never the key, whether it came in the header or the query.
func TestServeAccessLog(t *testing.T) {
	p := startEdge(t, sharedWorld(t), 0, "EO_ACCESS_LOG=true")
	if code, b := p.get("/v1/cs2/matches?limit=1&apiKey="+p.key, ""); code != 200 {
		t.Fatalf("apiKey request: %d %s", code, b)
	}
	if code, b := p.get("/v1/cs2/teams?limit=1", p.key); code != 200 {
		t.Fatalf("header request: %d %s", code, b)
	}
	out := waitOutput(t, "access log lines", p.out, func(s string) bool {
		return strings.Contains(s, "route=/v1/:game/teams")
	})
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "msg=request") && strings.Contains(l, "route=/v1/") { // not the /health polls
			lines = append(lines, l)
		}
	}
	for i, want := range []string{"route=/v1/:game/matches path=/v1/cs2/matches query=\"limit=1&apiKey=REDACTED\" status=200",
		"route=/v1/:game/teams path=/v1/cs2/teams query=\"limit=1\" status=200"} {
		if i >= len(lines) || !strings.Contains(lines[i], want) || !strings.Contains(lines[i], "log=access") ||
			strings.Contains(lines[i], "key_id=\"\"") || strings.Contains(lines[i], "key_id= ") {
			t.Errorf("access line %d: want %s with a key id, got %q", i, want, lines)
		}
	}
	if strings.Contains(out, p.key) || strings.Contains(out, p.key[len(p.key)-12:]) {
		t.Errorf("the key is in the output:\n%s", out)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// `eo jobs --metrics-addr` serves its runs' metrics: here a scheduled run
// that finds nothing new is counted as skipped.
func TestJobsMetricsListener(t *testing.T) {
	store := sharedWorld(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"jobs", "--store", store, "--work", t.TempDir(), "--schedule", "@every 1s",
			"--metrics-addr", addr})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("eo jobs: %v", err)
		}
	}()
	var text string
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text = string(b)
			if n, _ := proctest.MetricValue(text, `eo_pipeline_runs_total{outcome="skipped"}`); n >= 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no skipped run counted:\n%s", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, series := range []string{`eo_pipeline_runs_total{outcome="ok"}`, `eo_pipeline_runs_total{outcome="failed"}`,
		"eo_pipeline_run_duration_seconds_count", "eo_pipeline_last_success_timestamp_seconds"} {
		if v, ok := proctest.MetricValue(text, series); !ok || v != 0 {
			t.Errorf("%s = %v (exported: %v), want 0: nothing ran the pipeline", series, v, ok)
		}
	}
	if _, ok := proctest.MetricValue(text, "go_goroutines"); !ok {
		t.Error("the listener lacks the Go runtime metrics")
	}
}
