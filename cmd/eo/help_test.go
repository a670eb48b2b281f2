package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eodata/eo/pipelines"
)

// Every command answers -h, -help and --help with its usage and exit code
// 0; a flag it does not know and an unknown command still exit 1.
func TestHelpExitsZero(t *testing.T) {
	commands := [][]string{{}, {"generate"}, {"pipeline"}, {"pipeline", "run"}, {"snapshots"}, {"jobs"}, {"serve"},
		{"keys"}, {"keys", "create"}, {"keys", "list"}, {"keys", "account", "create"}, {"usage"}, {"usage", "export"},
		{"up"}, {"bench-bare"}, {"bench-duckdb"}, {"bench-flood"}, {"model"}, {"model", "report"}, {"import"}, {"validate"}}
	t.Setenv("EO_WORK", t.TempDir())
	t.Setenv("EO_STORE", t.TempDir())
	for _, c := range commands {
		for _, h := range []string{"-h", "-help", "--help"} {
			args := append(append([]string{}, c...), h)
			if err := run(context.Background(), args); exitCode(err) != 0 {
				t.Errorf("eo %s: exit %d (%v), want 0", strings.Join(args, " "), exitCode(err), err)
			}
		}
	}
}

// eoExit runs this binary as the eo command with args and returns its exit
// code, standard output and standard error.
func eoExit(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "EO_TEST_EXEC_MAIN=1"), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// A command line eo cannot run as given exits 2 and says why: bare eo (it
// exited 0), an unknown command or flag, a flag another command takes, an
// argument left after the flags (eo version ignored every argument), a
// missing required flag, named (eo keys create without --account said
// "account : access: not found"). Every command, every required flag.
func TestUsageErrorsExitTwoNamingTheProblem(t *testing.T) {
	work, store := t.TempDir(), t.TempDir()
	t.Setenv("EO_WORK", work)
	t.Setenv("EO_STORE", store)
	code, stdout, stderr := eoExit(t, nil)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "no command given") || !strings.Contains(stderr, "Usage:") {
		t.Errorf("bare eo: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"no-such-command"}, `unknown command "no-such-command"`},
		{[]string{"serve", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"pipeline", "walk"}, "usage: eo pipeline run"},
		{[]string{"pipeline"}, "usage: eo pipeline run"},
		{[]string{"usage"}, "usage: eo usage export"},
		{[]string{"model"}, "eo model report"},
		{[]string{"version", "--jsn"}, "flag provided but not defined: -jsn"},
		{[]string{"version", "now"}, `version: unexpected argument "now"`},
		{[]string{"snapshots", "extra"}, `snapshots: unexpected argument "extra"`},
		{[]string{"generate", "--matches", "10", "more"}, `generate: unexpected argument "more"`},
		{[]string{"keys"}, "keys: no command given"},
		{[]string{"keys", "account"}, "keys: no command given"},
		{[]string{"keys", "frobnicate"}, `unknown keys command "frobnicate"`},
		{[]string{"keys", "create"}, "keys create: --account is required"},
		{[]string{"keys", "create", "--account", "x", "--name", "y"}, "flag provided but not defined: -name"},
		{[]string{"keys", "account", "create"}, "keys account create: --name is required"},
		{[]string{"keys", "account", "subscribe"}, "keys account subscribe: --account is required"},
		{[]string{"keys", "rotate"}, "keys rotate: --key is required"},
		{[]string{"keys", "revoke"}, "keys revoke: --key is required"},
		{[]string{"keys", "import"}, "keys import: --from is required"},
		{[]string{"model", "report"}, "model report: --out is required"},
		{[]string{"import", "--source", "csgo2015"}, "import: --path is required"},
		{[]string{"validate"}, "validate: --source and --path are required"},
		{[]string{"bench-bare"}, "bench-bare: --body is required"},
		{[]string{"bench-duckdb", "--out", "x"}, "bench-duckdb: --raw is required"},
		{[]string{"bench-flood"}, "bench-flood: --key is required"},
	} {
		err := run(context.Background(), c.args)
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("eo %s: exit %d (%v), want 2 saying %q", strings.Join(c.args, " "), exitCode(err), err, c.says)
		}
	}
}

// eo version names the versions of what the binary writes and serves, as
// lines or, with --json, as one object.
func TestVersion(t *testing.T) {
	code, text, stderr := eoExit(t, nil, "version")
	for _, want := range []string{"pipeline " + pipelines.Version, "go1."} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("eo version: exit %d, %q (%s): no %q", code, text, stderr, want)
		}
	}
	code, out, stderr := eoExit(t, nil, "version", "--json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("eo version --json: exit %d, %q (%s)", code, out, stderr)
	}
	if v["pipeline"] != pipelines.Version || v["snapshot_schema"] != float64(pipelines.SchemaVersion) ||
		!strings.HasPrefix(v["go"].(string), "go1.") || v["version"] == "" || v["commit"] == nil || v["model"] == "" {
		t.Errorf("eo version --json: %s", out)
	}
}

// A command that reads what a store holds refuses a local store that does
// not exist (a mistyped --store): an error naming it, exit 1, and no folder
// left behind. eo snapshots used to create the folder and list nothing.
func TestReadCommandsNeedAnExistingStore(t *testing.T) {
	work := t.TempDir()
	for _, args := range [][]string{{"snapshots"}, {"snapshots", "--json"}, {"pipeline", "run"}, {"serve", "--addr", "127.0.0.1:0"},
		{"model", "report", "--out", filepath.Join(work, "r.html")}} {
		missing := filepath.Join(t.TempDir(), "typo", "store")
		for _, store := range []string{missing, "file://" + missing} {
			full := append(append([]string{}, args...), "--store", store, "--work", work)
			err := run(context.Background(), full)
			if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "store "+store+" does not exist") {
				t.Errorf("eo %s: exit %d (%v), want 1 naming the store", strings.Join(full, " "), exitCode(err), err)
			}
			if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
				t.Errorf("eo %s left %s behind", strings.Join(full, " "), filepath.Dir(missing))
			}
		}
	}
	// A file where the folder should be.
	file := filepath.Join(t.TempDir(), "store")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"snapshots", "--store", file, "--work", work}); exitCode(err) != 1 ||
		!strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("eo snapshots on a file: %v", err)
	}
	// An existing (empty) store lists nothing and succeeds.
	if err := run(context.Background(), []string{"snapshots", "--store", t.TempDir(), "--work", work}); err != nil {
		t.Errorf("eo snapshots on an empty store: %v", err)
	}
}
