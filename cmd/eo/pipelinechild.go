package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/eodata/eo/jobs"
	"github.com/eodata/eo/pipelines"
)

// A scheduled run's pipeline runs in a child process (`eo pipeline step`),
// and the scheduler (eo jobs, eo up) publishes what it reports. DuckDB is
// native code: a fault in it is a signal that ends the whole process, and
// one did (a SIGSEGV in a COPY to Parquet in a full run of the 10,000-match
// world, once: eight reruns of the same input passed). In a child it ends that
// run only: the scheduler logs it, keeps serving (eo up's edge) and runs
// again at the next tick, which finds the pipeline state marked unfinished
// and rebuilds in full. The child's memory (DuckDB's buffers, the model's
// history) also goes back to the system when the run ends, instead of
// staying with the scheduler, beside eo up's edge.

// stepResult is what `eo pipeline step` writes on its standard output: the
// run's report, or the error it stopped with.
type stepResult struct {
	Report    pipelines.Report `json:"report"`
	Error     string           `json:"error,omitempty"`
	NoBatches bool             `json:"no_batches,omitempty"`
}

// childStopGrace is how long a child has to stop after SIGTERM (the
// scheduler is shutting down, or the run is past its time limit) before it
// is killed.
const childStopGrace = 30 * time.Second

// childPipeline is a jobs.Options.Exec that runs each pipeline run as
// `exe pipeline step` with c's store, work folder, DuckDB limits and log
// format; its log lines go to this process's standard error. When the
// run's context ends the child gets SIGTERM and SIGCONT (a frozen child
// could not act on the first), and SIGKILL grace later if it is still
// there.
func childPipeline(exe string, c common, grace time.Duration) func(context.Context, pipelines.Options) (pipelines.Report, error) {
	return func(ctx context.Context, o pipelines.Options) (pipelines.Report, error) {
		args := []string{"pipeline", "step", "--store", c.store, "--work", c.work}
		if o.MemoryLimit != "" {
			args = append(args, "--duckdb-memory", o.MemoryLimit)
		}
		if o.Threads > 0 {
			args = append(args, "--duckdb-threads", strconv.Itoa(o.Threads))
		}
		if o.Full {
			args = append(args, "--full")
		}
		if c.json {
			args = append(args, "--log-json")
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		if lock := jobs.WorkLockFile(ctx); lock != nil {
			// Held by the child too: a child that outlives this process
			// (kill -9) keeps the work folder from the next run until it
			// ends, instead of two runs writing it at once.
			cmd.ExtraFiles = []*os.File{lock}
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		cmd.Cancel = func() error {
			err := cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Process.Signal(syscall.SIGCONT)
			return err
		}
		cmd.WaitDelay = grace
		runErr := cmd.Run()
		var res stepResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return pipelines.Report{}, childFailure(cmd, runErr)
		}
		switch {
		case res.NoBatches:
			return res.Report, pipelines.ErrNoBatches
		case res.Error != "":
			return res.Report, errors.New(res.Error)
		case runErr != nil:
			return res.Report, childFailure(cmd, runErr)
		}
		return res.Report, nil
	}
}

// childFailure describes a child that ended without a result.
func childFailure(cmd *exec.Cmd, err error) error {
	pid := 0
	if cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("pipeline run (child process %d) ended by signal %s: the run is lost, this process goes on, "+
				"and the next run starts over (its log lines above say how far it got)", pid, ws.Signal())
		}
	}
	if err == nil {
		err = errors.New("no result on its standard output")
	}
	return fmt.Errorf("pipeline run (child process %d) failed without a result: %w", pid, err)
}

// cmdPipelineStep is `eo pipeline step`: one pipeline run, without
// publishing, its result as JSON on standard output (stepResult). The
// child of a scheduled run (childPipeline); not for people.
func cmdPipelineStep(ctx context.Context, cfg Config, args []string) error {
	c := common{cfg: cfg}
	fs := c.flags("pipeline step")
	c.registerPipeline(fs)
	log, st, err := c.parseOpen(ctx, fs, args)
	var res stepResult
	if err == nil {
		res.Report, err = pipelines.Run(ctx, c.pipelineOptions(log, st))
	}
	if err != nil {
		res.Error, res.NoBatches = err.Error(), errors.Is(err, pipelines.ErrNoBatches)
	}
	if werr := json.NewEncoder(os.Stdout).Encode(res); werr != nil {
		return werr
	}
	return err
}
