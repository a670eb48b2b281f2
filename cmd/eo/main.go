// Command eo is the service's one binary: generate a synthetic world, run the
// pipeline and publish snapshots, schedule jobs, and serve the edge.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/eodata/eo/model"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/raw"
)

const usage = `eo: Counter-Strike 2 match data and odds service

Usage:
  eo generate [flags]        land a deterministic synthetic world as one raw batch
  eo pipeline run [flags]    run the pipeline on every landed batch and publish a snapshot
  eo snapshots [flags]       list published snapshots
  eo jobs [flags]            run pipeline + publish on a cron schedule
  eo serve [flags]           serve the newest snapshot over REST
  eo keys ...                accounts and API keys (eo keys for help)
  eo usage export            export usage events to the store as Parquet
  eo up [flags]              the embedded default end to end: generate if empty, pipeline, serve
  eo model report --out FILE write the eo_model review report (HTML) of the latest pipeline run
  eo import --source S --path P   land a public HLTV dataset (csgo2015, cs2-2024, cs2-2026) as one raw batch
  eo validate --source S --path P walk-forward evaluation of eo_model vs baselines on real matches
  eo version [--json]        the build: module version, commit, Go, pipeline, schema and model versions

Run "eo <command> -h" for a command's flags. Flags fall back to EO_* environment
variables (EO_STORE, EO_WORK, EO_ADDR); README.md lists every EO_* setting.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if exitCode(err) != 0 {
		fmt.Fprintln(os.Stderr, "eo:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command line eo cannot run as given: no command, an
// unknown command or flag, a missing required flag, an unexpected
// argument. Its message says which, and the usage follows where it helps.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCode is 0 for success and for a command asked for help (-h: the flag
// package has printed the flags and returns flag.ErrHelp), 2 for a usage
// error (as the flag package and shells have it), 1 for a command that
// failed.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string) error {
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErrorf("no command given\n\n%s", usage)
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Print(usage)
		return nil
	}
	switch args[0] {
	case "version":
		return cmdVersion(args[1:])
	case "generate":
		return cmdGenerate(ctx, cfg, args[1:])
	case "pipeline":
		if len(args) > 1 && args[1] == "step" { // cmd/eo/pipelinechild.go: the child of eo jobs and eo up
			return cmdPipelineStep(ctx, cfg, args[2:])
		}
		rest, done, err := subcommand(args[1:], "run", "usage: eo pipeline run [flags]  (eo pipeline run -h for the flags)")
		if done || err != nil {
			return err
		}
		return cmdPipelineRun(ctx, cfg, rest)
	case "snapshots":
		return cmdSnapshots(ctx, cfg, args[1:])
	case "jobs":
		return cmdJobs(ctx, cfg, args[1:])
	case "serve":
		return cmdServe(ctx, cfg, args[1:])
	case "keys":
		return cmdKeys(cfg, args[1:])
	case "usage":
		return cmdUsage(ctx, cfg, args[1:])
	case "up":
		return cmdUp(ctx, cfg, args[1:])
	case "bench-bare": // cmd/eo/benchbare.go: the bare Fiber baseline of scripts/bench-edge.sh
		return cmdBenchBare(ctx, cfg, args[1:])
	case "bench-duckdb": // cmd/eo/benchduckdb.go: the bare DuckDB baseline of scripts/bench-incremental.sh
		return cmdBenchDuckDB(ctx, cfg, args[1:])
	case "bench-flood": // cmd/eo/benchflood.go: the hostile clients of scripts/flood.sh
		return cmdBenchFlood(ctx, cfg, args[1:])
	case "model": // cmd/eo/model.go
		return cmdModel(ctx, cfg, args[1:])
	case "import": // cmd/eo/import.go
		return cmdImport(ctx, cfg, args[1:])
	case "validate": // cmd/eo/validate.go
		return cmdValidate(ctx, cfg, args[1:])
	default:
		return usageErrorf("unknown command %q\n\n%s", args[0], usage)
	}
}

// isHelp: -h, -help or --help. A command asked for help prints its usage
// and exits 0 (flag.ErrHelp, once the flag package has printed the flags).
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// subcommand reads the args of a command whose one subcommand is sub: the
// args after sub; done when help was asked for (the usage is printed); the
// usage as the error when sub is not there.
func subcommand(args []string, sub, usage string) (rest []string, done bool, err error) {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Println(usage)
		return nil, true, nil
	}
	if len(args) == 0 || args[0] != sub {
		return nil, false, usageError{usage}
	}
	return args[1:], false, nil
}

// cmdVersion: eo version [--json].
func cmdVersion(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print a JSON object instead of lines")
	if err := parseFlags(fs, args, ""); err != nil {
		return err
	}
	v := buildVersion()
	if *asJSON {
		return printJSON(v)
	}
	fmt.Print(v.text())
	return nil
}

// version describes the build: the module version and VCS commit Go
// stamped into the binary, the Go release, and the versions of what it
// writes and serves.
type version struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	Modified       bool   `json:"modified"` // built from a work tree with changes
	Go             string `json:"go"`
	Pipeline       string `json:"pipeline"`
	SnapshotSchema int    `json:"snapshot_schema"`
	RawContract    int    `json:"raw_contract"`
	Model          string `json:"model"`
}

func buildVersion() version {
	v := version{Version: "(devel)", Commit: "unknown", Go: runtime.Version(), Pipeline: pipelines.Version,
		SnapshotSchema: pipelines.SchemaVersion, RawContract: raw.ContractVersion, Model: model.Version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Version = cmp.Or(bi.Main.Version, v.Version)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

func (v version) text() string {
	modified := ""
	if v.Modified {
		modified = " (modified)"
	}
	return fmt.Sprintf("eo %s\ncommit %s%s\n%s\npipeline %s, snapshot schema %d, raw contract %d, model %s\n",
		v.Version, v.Commit, modified, v.Go, v.Pipeline, v.SnapshotSchema, v.RawContract, v.Model)
}
