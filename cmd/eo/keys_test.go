package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
)

// eoCLI runs this binary as the eo command with args and returns its
// standard output; a failing command fails the test.
func eoCLI(t *testing.T, env []string, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "EO_TEST_EXEC_MAIN=1"), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("eo %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// TestKeysRoundTrip drives `eo keys` as an operator would, beside a running
// `eo serve` on the same work folder: an account and a key created by the
// CLI are listed (only the key's display form), the key is served, and once
// `eo keys revoke` has run the edge refuses it within its reload interval.
func TestKeysRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eo serve")
	}
	store := sharedWorld(t)
	work := filepath.Join(t.TempDir(), "work")
	env := []string{"EO_STORE=" + store, "EO_WORK=" + work}
	acct := regexp.MustCompile(`^account (\S+) \(ci account\)`).FindStringSubmatch(eoCLI(t, env, "keys", "account", "create", "--name", "ci account"))
	if acct == nil {
		t.Fatal("eo keys account create printed no account id")
	}
	out := eoCLI(t, env, "keys", "create", "--account", acct[1], "--plan", "standard")
	m := regexp.MustCompile(`^key (\S+) \(standard plan\)[^\n]*\n(eo_live_[0-9a-f]{48})\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("eo keys create printed %q", out)
	}
	keyID, key := m[1], m[2]
	list := eoCLI(t, env, "keys", "list", "--account", acct[1])
	if !strings.Contains(list, keyID) || strings.Contains(list, key) {
		t.Fatalf("eo keys list must name the key by id and never print it:\n%s", list)
	}

	p := startEdgeIn(t, store, work, key, 0, "EO_KEY_RELOAD=100ms")
	if code, body := p.get("/v1/cs2/matches?limit=1", key); code != 200 {
		t.Fatalf("the new key: %d %s", code, body)
	}
	eoCLI(t, env, "keys", "revoke", "--key", keyID)
	if code := statusWithin(p, "/v1/cs2/matches?limit=1", key, 401); code != 401 {
		t.Fatalf("a revoked key still gets %d after 10 s (reload every 100ms)", code)
	}
	if list := eoCLI(t, env, "keys", "list", "--account", acct[1]); !strings.Contains(list, "revoked") {
		t.Errorf("eo keys list does not show the revocation:\n%s", list)
	}
	raw := eoCLI(t, env, "keys", "list", "--account", acct[1], "--json")
	var keys []struct {
		ID, AccountID, Plan, Display, State string
		Hash                                string `json:"hash"`
	}
	if err := json.Unmarshal([]byte(raw), &keys); err != nil || len(keys) != 1 {
		t.Fatalf("eo keys list --json: %v\n%s", err, raw)
	}
	if k := keys[0]; k.ID != keyID || k.State != "revoked" || k.Plan != "standard" || k.Hash != "" ||
		strings.Contains(raw, key) || !strings.HasSuffix(k.Display, key[len(key)-4:]) {
		t.Errorf("eo keys list --json: %+v\n%s", k, raw)
	}
}

// eo snapshots --json lists the published snapshots as JSON: the current
// one with its table, row and byte counts.
func TestSnapshotsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the shared world")
	}
	store := sharedWorld(t)
	raw := eoCLI(t, []string{"EO_STORE=" + store, "EO_WORK=" + t.TempDir()}, "snapshots", "--json")
	var snaps []snapshotLine
	if err := json.Unmarshal([]byte(raw), &snaps); err != nil || len(snaps) == 0 {
		t.Fatalf("eo snapshots --json: %v\n%s", err, raw)
	}
	current := 0
	for _, s := range snaps {
		if s.State == "current" {
			current++
			if s.Tables < 25 || s.Rows == 0 || s.Bytes == 0 || s.CreatedAt.IsZero() || s.SnapshotID == "" {
				t.Errorf("the current snapshot: %+v", s)
			}
		}
	}
	if current != 1 {
		t.Errorf("%d current snapshots in %s", current, raw)
	}
}

// TestKeysImportIntoRedis: `eo keys import` with EO_REDIS_URL copies a
// host's key file into the shared store (once: a second import copies
// nothing), and `eo keys list` then reads the keys from Redis, a data-plan
// key among them.
func TestKeysImportIntoRedis(t *testing.T) {
	url := redistest.Start(t)
	work := filepath.Join(t.TempDir(), "work")
	file := []string{"EO_WORK=" + work}
	acct := regexp.MustCompile(`^account (\S+) `).FindStringSubmatch(eoCLI(t, file, "keys", "account", "create", "--name", "data team"))
	if acct == nil {
		t.Fatal("no account id")
	}
	out := eoCLI(t, file, "keys", "create", "--account", acct[1], "--plan", "data")
	m := regexp.MustCompile(`^key (\S+) \(data plan\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("eo keys create --plan data printed %q", out)
	}
	shared := []string{"EO_WORK=" + t.TempDir(), "EO_REDIS_URL=" + url}
	if out := eoCLI(t, shared, "keys", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("Redis holds keys before the import: %s", out)
	}
	from := filepath.Join(work, "access.db")
	if out := eoCLI(t, shared, "keys", "import", "--from", from); !strings.Contains(out, "imported 1 accounts and 1 keys") {
		t.Fatalf("first import: %q", out)
	}
	if out := eoCLI(t, shared, "keys", "import", "--from", from); !strings.Contains(out, "imported 0 accounts and 0 keys") {
		t.Fatalf("second import: %q", out)
	}
	var keys []keyLine
	if err := json.Unmarshal([]byte(eoCLI(t, shared, "keys", "list", "--json")), &keys); err != nil || len(keys) != 1 ||
		keys[0].ID != m[1] || keys[0].Plan != "data" || keys[0].State != "active" {
		t.Fatalf("eo keys list from Redis: %+v %v", keys, err)
	}
}

// TestRedisEdgeSaysWhenTheKeysAreNotImported: an edge switched to Redis
// (EO_REDIS_URL) whose keys are still in the host's key file says so, with
// the command that fixes it; the key is refused until the import, then
// served.
func TestRedisEdgeSaysWhenTheKeysAreNotImported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eo serve")
	}
	store := sharedWorld(t)
	url := redistest.Start(t)
	work := filepath.Join(t.TempDir(), "work")
	key := workKeys(t, work, "standard")[0]
	p := startEdgeIn(t, store, work, key, 0, "EO_REDIS_URL="+url)
	waitFor(t, p, "eo keys import --from "+filepath.Join(work, "access.db"))
	if code, _ := p.get("/v1/cs2/teams?limit=1", key); code != 401 {
		t.Fatalf("a key only in the file: %d, want 401", code)
	}
	eoCLI(t, []string{"EO_REDIS_URL=" + url, "EO_WORK=" + t.TempDir()}, "keys", "import", "--from", filepath.Join(work, "access.db"))
	if code := statusWithin(p, "/v1/cs2/teams?limit=1", key, 200); code != 200 {
		t.Fatalf("after the import the key still gets %d", code)
	}
}

// statusWithin polls GET path with key on p every 50 ms, for up to 10 s,
// until it answers want, and returns the last status: the edge picks a
// change of the keys up on its next reload.
func statusWithin(p *edgeProc, path, key string, want int) int {
	var code int
	proctest.Within(10*time.Second, 50*time.Millisecond, func() bool {
		code, _ = p.get(path, key)
		return code == want
	})
	return code
}
