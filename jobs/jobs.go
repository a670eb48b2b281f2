// Package jobs runs the pipeline and publishes its snapshot, once or on a
// cron schedule: never two runs at once on one work folder (in one process
// or several), a scheduled run is skipped when no raw batch has landed
// since the snapshot the pointer names (the batches a snapshot was built
// from are recorded in its manifest), and after each publish the snapshots
// past retention are removed (publish.Clean).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
)

// Options configures a run.
type Options struct {
	// Pipeline configures the pipeline (store, work folder, logger).
	Pipeline pipelines.Options
	// Retention is how long superseded snapshots are kept; 0 means 7 days.
	Retention time.Duration
	// Keep is how many complete snapshots are always kept; 0 means 3.
	Keep int
	// Force runs even when no new batch landed.
	Force bool
	// NoCompaction leaves the live lander's batches as they landed (by
	// default each run first merges those of every hour that ended at least
	// 10 minutes ago into one batch: raw.Compact).
	NoCompaction bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Published, when set, is called after each run that published a
	// snapshot (eo up reloads its in-process edge at once).
	Published func(Result)
	// Exec runs the pipeline of a run; nil: pipelines.Run, in this
	// process. eo jobs and eo up run it in a child process instead, so
	// that a crash in native code (DuckDB) ends that run only, and its
	// memory goes back to the system when it ends.
	Exec func(context.Context, pipelines.Options) (pipelines.Report, error)
	// RunTimeout bounds a run, from its start to its publish: past it the
	// run's context ends (a child pipeline is told to stop, then killed),
	// the run fails with ErrRunTimeout and the next tick runs again. 0: no
	// bound. Without one, a run that hangs (a frozen child, a native call
	// that never returns) held the run lock for good: every later tick was
	// skipped as "still in progress" and no snapshot was published again.
	RunTimeout time.Duration
}

// Result says what a run did.
type Result struct {
	Skipped  bool
	Report   pipelines.Report
	Manifest publish.Manifest
	Cleaned  []string
}

// ErrBusy is returned when a run is already in progress: in this Runner,
// or in another process on the same work folder.
var ErrBusy = errors.New("jobs: a run is already in progress")

// ErrRunTimeout is the error (errors.Is) of a run stopped by
// Options.RunTimeout.
var ErrRunTimeout = errors.New("jobs: the run took longer than its time limit")

// batchesKey is the manifest Extra key that records which raw batches a
// snapshot was built from.
const batchesKey = "raw_batches"

// Runner runs the pipeline and publish; at most one run at a time.
type Runner struct {
	o       Options
	mu      sync.Mutex
	metrics *runMetrics
	// since is when the run in progress started (unix nanoseconds; 0:
	// none), for the scheduler's log and eo_pipeline_run_in_progress_seconds.
	since atomic.Int64
}

// NewRunner returns a Runner with defaults filled in.
func NewRunner(o Options) *Runner {
	if o.Retention == 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.Keep == 0 {
		o.Keep = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Pipeline.Logger == nil {
		o.Pipeline.Logger = slog.Default()
	}
	if o.Exec == nil {
		o.Exec = pipelines.Run
	}
	r := &Runner{o: o}
	r.metrics = newRunMetrics(r.Running)
	return r
}

// batchFingerprint is the sorted list of batch ids, joined; a batch the
// pipeline skips (its _batch.json cannot be trusted) counts by its folder,
// marked, so that it triggers one run (which reports it) and not one per
// tick, and a build that can read it later runs again.
func batchFingerprint(batchIDs []string, skipped []raw.SkippedBatch) string {
	ids := make([]string, 0, len(batchIDs)+len(skipped))
	ids = append(ids, batchIDs...)
	for _, b := range skipped {
		ids = append(ids, "skipped:"+b.BatchID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// supersededError refuses a publish over a snapshot published while the
// run ran, built from a batch the run did not read (unread) or from the
// same batches (another runner did the same work: the pointer stays on the
// newer snapshot).
type supersededError struct {
	by    publish.Manifest
	batch string // a batch by was built from and the run did not read; "": the same batches
}

func (e *supersededError) Error() string {
	if e.batch == "" {
		return fmt.Sprintf("superseded by snapshot %s, built from the same batches", e.by.SnapshotID)
	}
	return fmt.Sprintf("superseded by snapshot %s, built from batch %s, which this run did not read", e.by.SnapshotID, e.batch)
}

// unread returns a batch the fingerprint cur names and fp does not ("":
// none). A run does not publish over a snapshot published while it ran
// that was built from a batch it did not read: another process (a second
// jobs host, an eo pipeline run with another work folder, on the same
// store) built it from more, and moving the pointer to this run's would
// take the served data back in time. A snapshot published before the run
// started does not count (a batch removed from the raw area since is
// meant to go). A batch counts as read whether it was read or skipped
// ("skipped:" ids).
func unread(cur, fp string) string {
	if cur == "" {
		return ""
	}
	have := map[string]bool{}
	for id := range strings.SplitSeq(fp, ",") {
		have[strings.TrimPrefix(id, "skipped:")] = true
	}
	for id := range strings.SplitSeq(cur, ",") {
		if id = strings.TrimPrefix(id, "skipped:"); !have[id] {
			return id
		}
	}
	return ""
}

// RunOnce runs pipeline + publish + clean unless another run is in progress
// (ErrBusy) or, without Force, nothing new landed since the current snapshot.
// Every call is counted in the runner's metrics (Collectors).
func (r *Runner) RunOnce(ctx context.Context) (Result, error) {
	start := time.Now()
	if r.o.RunTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.o.RunTimeout, ErrRunTimeout)
		defer cancel()
	}
	res, err := r.runOnce(ctx)
	if err != nil && !errors.Is(err, ErrBusy) && errors.Is(context.Cause(ctx), ErrRunTimeout) {
		err = fmt.Errorf("%w of %s (EO_RUN_TIMEOUT, --run-timeout); stopped: %w", ErrRunTimeout, r.o.RunTimeout, err)
	}
	r.metrics.record(res, err, time.Since(start), r.o.Now())
	return res, err
}

// Running is how long the run in progress in this Runner has been running
// (0: none).
func (r *Runner) Running() time.Duration {
	if s := r.since.Load(); s != 0 {
		return time.Since(time.Unix(0, s))
	}
	return 0
}

func (r *Runner) runOnce(ctx context.Context) (Result, error) {
	if !r.mu.TryLock() {
		return Result{}, fmt.Errorf("%w (in this process, for %s)", ErrBusy, r.Running().Round(time.Second))
	}
	defer r.mu.Unlock()
	r.since.Store(time.Now().UnixNano())
	defer r.since.Store(0)
	lock, err := lockWork(r.o.Pipeline.WorkDir)
	if err != nil {
		return Result{}, err
	}
	defer lock.Close()
	ctx = context.WithValue(ctx, lockKey{}, lock)
	r.compact(ctx)
	if res, done, err := r.nothingNew(ctx); done {
		return res, err
	}
	rep, err := r.o.Exec(ctx, r.o.Pipeline)
	if err != nil {
		return Result{Report: rep}, err
	}
	return r.publishRun(ctx, rep)
}

// nothingNew reports, done true, a run with nothing to do: no raw batch
// at all, or (unless Force) none since the current snapshot.
func (r *Runner) nothingNew(ctx context.Context) (res Result, done bool, err error) {
	st := r.o.Pipeline.Store
	batches, skipped, err := raw.ScanBatches(ctx, st)
	if err != nil {
		return Result{}, true, err
	}
	if len(batches) == 0 && len(skipped) == 0 {
		return Result{Skipped: true}, true, pipelines.ErrNoBatches
	}
	if r.o.Force {
		return Result{}, false, nil
	}
	var ids []string
	for _, b := range batches {
		ids = append(ids, b.Lineage()...)
	}
	_, cur, err := publish.LoadLatest(ctx, st)
	if err == nil && cur.Extra[batchesKey] == batchFingerprint(ids, skipped) {
		r.o.Pipeline.Logger.Info("no new raw batch since the current snapshot; skipping", "snapshot", cur.SnapshotID)
		return Result{Skipped: true, Manifest: cur}, true, nil
	}
	return Result{}, false, nil
}

// publishRun publishes what run rep exported, unless a snapshot published
// while it ran holds all it read (it is superseded), and cleans the
// snapshots past retention.
func (r *Runner) publishRun(ctx context.Context, rep pipelines.Report) (Result, error) {
	st, log := r.o.Pipeline.Store, r.o.Pipeline.Logger
	// The snapshot records the batches this run read (a batch that landed
	// since the listing above is in it, and not run again next time).
	fp := batchFingerprint(rep.Lineage, rep.SkippedBatches)
	// Checked before the upload (nothing to upload when it is superseded
	// already) and again as the pointer moves (PublishIf: another
	// publisher may have moved it in between).
	guard := supersededGuard(rep, fp)
	if _, cur, err := publish.LoadLatest(ctx, st); err == nil {
		if err := guard(&cur); err != nil {
			return r.superseded(err, rep)
		}
	}
	now := r.o.Now().UTC()
	m := publish.Manifest{
		SnapshotID:         publish.NewSnapshotID(now),
		CreatedAt:          now,
		SchemaVersion:      pipelines.SchemaVersion,
		PipelineVersion:    pipelines.Version,
		RawContractVersion: raw.ContractVersion,
		Extra:              map[string]string{batchesKey: fp, "run_id": rep.RunID, "run_mode": rep.Mode},
	}
	m, err := publish.PublishIf(ctx, st, m, rep.Tables, guard)
	if err != nil {
		if res, serr := r.superseded(err, rep); serr == nil {
			return res, nil
		}
		return Result{Report: rep}, fmt.Errorf("jobs: publish: %w", err)
	}
	log.Info("snapshot published", "snapshot", m.SnapshotID, "tables", len(m.Tables),
		"quarantined", rep.QuarantinedTotal(), "elapsed", rep.Elapsed, "mode", rep.Mode,
		"batches_read", len(rep.Read), "scope_matches", rep.Scope, "changed_tables", len(rep.Changed))
	cleaned, err := publish.Clean(ctx, st, publish.CleanOptions{Retention: r.o.Retention, Keep: r.o.Keep, Now: now})
	if err != nil {
		// The snapshot is published; a failed clean-up is retried next run.
		log.Warn("snapshot clean-up", "err", err)
	}
	res := Result{Report: rep, Manifest: m, Cleaned: cleaned}
	if r.o.Published != nil {
		r.o.Published(res)
	}
	return res, nil
}

// supersededGuard refuses to publish run rep (whose read batches fp names)
// over a snapshot published after it started that read all it read.
func supersededGuard(rep pipelines.Report, fp string) publish.Guard {
	return func(cur *publish.Manifest) error {
		if cur == nil || !cur.CreatedAt.After(rep.StartedAt) {
			return nil
		}
		if missing := unread(cur.Extra[batchesKey], fp); missing != "" {
			return &supersededError{by: *cur, batch: missing}
		}
		if cur.Extra[batchesKey] == fp {
			return &supersededError{by: *cur}
		}
		return nil
	}
}

// superseded is the result of run rep when err says it is superseded (it
// is skipped, and says by which snapshot); any other err is returned.
func (r *Runner) superseded(err error, rep pipelines.Report) (Result, error) {
	var se *supersededError
	if !errors.As(err, &se) {
		return Result{}, err
	}
	r.o.Pipeline.Logger.Warn("run superseded: a snapshot published while it ran holds all it read; not published",
		"snapshot", se.by.SnapshotID, "why", se.Error(), "run", rep.RunID)
	return Result{Skipped: true, Report: rep, Manifest: se.by}, nil
}

// workLock is the file, in the pipeline's work folder, whose flock a run
// holds from its start to its publish.
const workLock = "run.lock"

// lockKey is the context key of a run's lock file (WorkLockFile).
type lockKey struct{}

// WorkLockFile is the open run lock of the run ctx belongs to (nil: none),
// for an Exec that starts a child process: handed to the child
// (exec.Cmd.ExtraFiles), the lock is held as long as either process keeps
// it open, so a child that outlives this process (killed with -9) keeps
// the work folder from a second run until it ends.
func WorkLockFile(ctx context.Context) *os.File {
	f, _ := ctx.Value(lockKey{}).(*os.File)
	return f
}

// lockWork takes dir's run lock, or fails with ErrBusy naming the holder;
// closing the file releases it (once every process it was handed to has
// closed it too: see WorkLockFile).
// One run at a time on a work folder, across processes (eo jobs, eo up, an
// eo pipeline run by hand): two runs at once emptied each other's output
// folder (pipelines.Run resets WorkDir/out) and fought over the state's
// files; one failed, and the other could publish a mix of both runs'
// tables. The lock is held through the publish, which uploads that folder.
// An flock goes with its holder however it ends (kill -9 too): no stale
// lock to clear by hand.
func lockWork(dir string) (*os.File, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, workLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := make([]byte, 200)
		n, _ := f.ReadAt(holder, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another process's run holds %s (%s)", ErrBusy, dir, strings.TrimSpace(string(holder[:n])))
		}
		return nil, fmt.Errorf("jobs: lock %s: %w", dir, err)
	}
	// Who holds it, for the error of the next one that tries.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d, since %s", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	}
	// No LOCK_UN on release: it would drop the lock a child still holds.
	return f, nil
}

// compact merges the live lander's batches of each settled hour into one
// (raw.Compact) before a run reads them, unless Options.NoCompaction. A
// failure is logged: the run reads the batches as they are.
func (r *Runner) compact(ctx context.Context) {
	if r.o.NoCompaction {
		return
	}
	log := r.o.Pipeline.Logger
	done, err := raw.Compact(ctx, r.o.Pipeline.Store, r.o.Now(), raw.CompactOptions{Source: "live", TmpDir: r.o.Pipeline.WorkDir})
	for _, c := range done {
		log.Info("live batches compacted", "batch", c.BatchID, "replaces", len(c.Replaces), "lines", c.Lines)
	}
	if err != nil {
		log.Warn("compaction of live batches failed; the run reads them as they are", "err", err)
	}
}

// Schedule runs RunOnce on the cron spec until ctx ends. A tick that finds a
// run in progress is skipped (logged), never queued.
func (r *Runner) Schedule(ctx context.Context, spec string) error {
	c := cron.New(cron.WithLocation(time.UTC))
	log := r.o.Pipeline.Logger
	_, err := c.AddFunc(spec, func() {
		res, err := r.RunOnce(ctx)
		switch {
		case errors.Is(err, ErrBusy):
			log.Warn("scheduled run skipped: a run is still in progress", "err", err)
		case errors.Is(err, pipelines.ErrNoBatches):
			log.Info("scheduled run skipped: no raw batch landed yet")
		case err != nil:
			log.Error("scheduled run", "err", err)
		case res.Skipped:
		default:
			log.Info("scheduled run done", "snapshot", res.Manifest.SnapshotID)
		}
	})
	if err != nil {
		return fmt.Errorf("jobs: bad schedule %q: %w", spec, err)
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}
