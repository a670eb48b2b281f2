package main

import (
	"context"
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
	for _, args := range [][]string{{"serve", "--no-such-flag"}, {"no-such-command"}, {"pipeline", "walk"}} {
		if err := run(context.Background(), args); exitCode(err) != 1 {
			t.Errorf("eo %s: exit %d (%v), want 1", strings.Join(args, " "), exitCode(err), err)
		}
	}
}

// eo version names the versions of what the binary writes and serves.
func TestVersion(t *testing.T) {
	text := versionText()
	for _, want := range []string{"pipeline " + pipelines.Version, "go1."} {
		if !strings.Contains(text, want) {
			t.Errorf("eo version says %q: no %q", text, want)
		}
	}
}
