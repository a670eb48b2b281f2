package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/store"
)

// generatedWorld lands a synthetic world of n matches in a new folder's
// store; it returns the folder, the store and a work folder beside it.
func generatedWorld(t *testing.T, n int) (dir, storeDir, work string) {
	t.Helper()
	dir = t.TempDir()
	storeDir, work = filepath.Join(dir, "store"), filepath.Join(dir, "work")
	if err := run(context.Background(), []string{"generate", "--store", storeDir, "--work", work, "--matches", strconv.Itoa(n),
		"--now", "2026-06-01T12:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	return dir, storeDir, work
}

// childWorld is generatedWorld of 40 matches and this test binary, which
// runs as eo for `pipeline step` (TestMain).
func childWorld(t *testing.T) (dir, storeDir, work, self string) {
	t.Helper()
	dir, storeDir, work = generatedWorld(t, 40)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return dir, storeDir, work, self
}

// childScript writes an executable shell script of body in dir; it
// returns its path.
func childScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A scheduled run's pipeline runs in a child process: a child that dies of
// a signal (DuckDB's SIGSEGV, once, in a COPY to Parquet) fails that run
// with an error that says so, publishes nothing, and the scheduler's next
// run, a real `eo pipeline step` child, publishes.
func TestCrashedPipelineChildFailsOneRun(t *testing.T) {
	ctx := context.Background()
	dir, storeDir, work, self := childWorld(t)
	// The child: the first one dies of SIGSEGV, the next ones are this
	// test binary as eo (TestMain runs main for `pipeline step`).
	mark := filepath.Join(dir, "crashed-once")
	script := childScript(t, dir, "eo-child",
		"if [ ! -e '"+mark+"' ]; then touch '"+mark+"'; kill -SEGV $$; fi\nexec '"+self+"' \"$@\"")
	st, err := store.NewLocal(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	c := common{cfg: Config{}, store: storeDir, work: work}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Exec: childPipeline(script, c, childStopGrace)})

	_, err = r.RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "ended by signal segmentation fault") {
		t.Fatalf("a run whose child died of SIGSEGV: %v, want an error naming the signal", err)
	}
	if _, err := publish.ReadPointer(ctx, st); err == nil {
		t.Fatal("the crashed run published a snapshot")
	}
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatalf("the run after the crash: %v", err)
	}
	ptr, err := publish.ReadPointer(ctx, st)
	if err != nil || ptr.SnapshotID != res.Manifest.SnapshotID {
		t.Fatalf("after the crash, the next run published %q, the pointer names %q (%v)", res.Manifest.SnapshotID, ptr.SnapshotID, err)
	}
	if res.Report.RunID == "" || len(res.Report.Tables) == 0 || res.Report.Mode != "full" {
		t.Fatalf("the child's report did not come back whole: run %q, %d tables, mode %q",
			res.Report.RunID, len(res.Report.Tables), res.Report.Mode)
	}
}

// childOf returns the pid of a child process of parent (0: none yet).
func childOf(parent int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ")".
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			return pid
		}
	}
	return 0
}

// gone reports whether process pid has ended (missing, or a zombie: its
// files are closed).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// eo jobs killed with -9 while its pipeline child runs: the child lives on
// (reparented), writing the work folder. The run lock was the parent's
// alone, so it went with the parent and the next run (the restarted eo
// jobs, an eo pipeline run) would write the folder at the same time. The
// child holds the lock too: the folder stays busy until the child ends.
// The child is frozen (SIGSTOP) to hold the moment still.
func TestOrphanedPipelineChildKeepsTheWorkFolder(t *testing.T) {
	ctx := context.Background()
	_, storeDir, work := generatedWorld(t, 200)
	p := startEO(t, 0, nil, "jobs", "--store", storeDir, "--work", work, "--schedule", "@every 1s")
	lockFile := filepath.Join(work, "pipeline", "run.lock")
	// The child, once it holds the run lock it was handed (fd 3): a process
	// caught before that, or one that already ended, proves nothing.
	var child int
	if !proctest.Within(60*time.Second, 2*time.Millisecond, func() bool {
		child = childOf(p.cmd.Process.Pid)
		fd3, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", child))
		return child != 0 && err == nil && fd3 == lockFile && !gone(child)
	}) {
		t.Fatalf("eo jobs started no pipeline child holding the run lock:\n%s", p.out)
	}
	if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()
	if err := proctest.WaitStopped(child, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Reaped (startEO's Wait), not only a zombie: its files are closed, so
	// a lock still held is the child's.
	if !proctest.Within(10*time.Second, 10*time.Millisecond, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", p.cmd.Process.Pid))
		return errors.Is(err, os.ErrNotExist)
	}) {
		t.Fatal("eo jobs outlived kill -9")
	}
	err := run(ctx, []string{"pipeline", "run", "--store", storeDir, "--work", work})
	if !errors.Is(err, jobs.ErrBusy) || !strings.Contains(err.Error(), "another process's run holds") {
		t.Fatalf("a run while the orphaned child lives: %v, want ErrBusy", err)
	}
	_ = syscall.Kill(child, syscall.SIGCONT)
	if !proctest.Within(2*time.Minute, 20*time.Millisecond, func() bool { return gone(child) }) {
		t.Fatal("the orphaned child never ended")
	}
	// A thread group's leader shows as a zombie before its last thread has
	// exited and closed the files: the lock goes a moment later.
	if !proctest.Within(30*time.Second, 20*time.Millisecond, func() bool {
		return exec.Command("flock", "-n", lockFile, "true").Run() == nil
	}) {
		t.Fatal("the run lock outlived the orphaned child")
	}
	if err := run(ctx, []string{"pipeline", "run", "--store", storeDir, "--work", work}); err != nil {
		t.Fatalf("the run after the child ended: %v", err)
	}
}

// A scheduled run whose pipeline child hangs is stopped at the run's time
// limit, and the next run publishes. Before the limit a frozen child held
// the run lock for good: every later tick of eo jobs was skipped as "a run
// is still in progress" and no snapshot was published again. Two children:
// a real `eo pipeline step` frozen with SIGSTOP (told to stop, it is thawed
// and stops by itself), and one that ignores SIGTERM (killed at the grace).
func TestHungPipelineChildIsStoppedAtTheRunTimeout(t *testing.T) {
	ctx := context.Background()
	dir, storeDir, work, self := childWorld(t)
	deaf := childScript(t, dir, "eo-deaf-child", "trap '' TERM\nexec sleep 600")
	st, err := store.NewLocal(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	c := common{cfg: Config{}, store: storeDir, work: work}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name, exe string
		freeze    bool
	}{{"frozen", self, true}, {"deaf to SIGTERM", deaf, false}} {
		t.Run(tc.name, func(t *testing.T) {
			const limit, grace = 3 * time.Second, 2 * time.Second
			r := jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Exec: childPipeline(tc.exe, c, grace),
				RunTimeout: limit})
			type result struct {
				res jobs.Result
				err error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() { res, err := r.RunOnce(ctx); done <- result{res, err} }()
			var child int
			if !proctest.Within(30*time.Second, 2*time.Millisecond, func() bool { child = childOf(os.Getpid()); return child != 0 }) {
				t.Fatal("the run started no child")
			}
			if tc.freeze {
				if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }()
				if err := proctest.WaitStopped(child, 10*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			// While it hangs: a second run is refused, saying for how long
			// this one has run, and the gauge shows it.
			time.Sleep(time.Second)
			if _, err := r.RunOnce(ctx); !errors.Is(err, jobs.ErrBusy) || !strings.Contains(err.Error(), "in this process, for") {
				t.Fatalf("a run while the hung one holds the lock: %v, want ErrBusy with its age", err)
			}
			if m := gatherMetrics(t, r); m["eo_pipeline_run_in_progress_seconds"] < 0.5 {
				t.Fatalf("eo_pipeline_run_in_progress_seconds = %v while a run hangs", m["eo_pipeline_run_in_progress_seconds"])
			}
			var got result
			select {
			case got = <-done:
			case <-time.After(limit + grace + 30*time.Second):
				t.Fatal("the hung run was never stopped")
			}
			if !errors.Is(got.err, jobs.ErrRunTimeout) || !strings.Contains(got.err.Error(), "3s") {
				t.Fatalf("the hung run ended with %v, want ErrRunTimeout naming the limit", got.err)
			}
			// Thawed with its SIGTERM, the frozen child stops by itself; the
			// deaf one is killed at the grace.
			if killed := strings.Contains(got.err.Error(), "ended by signal killed"); killed == tc.freeze {
				t.Fatalf("the hung run ended with %v; killed: %v, want %v", got.err, killed, !tc.freeze)
			}
			if took := time.Since(start); took < limit {
				t.Fatalf("the run was stopped after %s, before its limit", took)
			}
			if !proctest.Within(10*time.Second, 10*time.Millisecond, func() bool { return gone(child) }) {
				t.Fatal("the hung child outlived its run")
			}
			if _, err := publish.ReadPointer(ctx, st); err == nil {
				t.Fatal("the stopped run published a snapshot")
			}
			if m := gatherMetrics(t, r); m["eo_pipeline_run_in_progress_seconds"] != 0 || m[`eo_pipeline_runs_total{outcome="failed"}`] != 1 {
				t.Fatalf("after the stop: %v", m)
			}
		})
	}
	// The lock went with the child: the next run, a real child left alone,
	// publishes.
	r := jobs.NewRunner(jobs.Options{Pipeline: c.pipelineOptions(log, st), Exec: childPipeline(self, c, childStopGrace),
		RunTimeout: 5 * time.Minute})
	res, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatalf("the run after the stopped ones: %v", err)
	}
	if ptr, err := publish.ReadPointer(ctx, st); err != nil || ptr.SnapshotID != res.Manifest.SnapshotID {
		t.Fatalf("the next run published %q, the pointer names %q (%v)", res.Manifest.SnapshotID, ptr.SnapshotID, err)
	}
}

// gatherMetrics reads r's metrics (proctest.Values).
func gatherMetrics(t *testing.T, r *jobs.Runner) map[string]float64 {
	t.Helper()
	m, err := proctest.Values(r.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
