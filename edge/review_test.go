package edge

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/store"
)

// reviewServer is a test edge that authenticates with auth (no meter).
func reviewServer(t *testing.T, st *store.Local, auth Authenticator, clk *fakeClock) *testServer {
	t.Helper()
	return loadedTestServer(t, st, auth, clk.Now)
}

// unknownLike returns a well-formed key that is not key: the same prefix and
// length, every hex digit changed.
func unknownLike(key string) string {
	i := strings.LastIndexByte(key, '_') + 1
	b := []byte(key)
	for j := i; j < len(b); j++ {
		if b[j] == 'f' {
			b[j] = '0'
		} else {
			b[j] = 'f'
		}
	}
	return string(b)
}

// scrubbed is a 401 with its request id replaced: the body bytes and every
// header but X-Request-Id and Date, for a byte-for-byte comparison.
func scrubbed(t *testing.T, r result) (body string, headers string) {
	t.Helper()
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401: %s", r.status, r.body)
	}
	rid := r.header.Get("X-Request-Id")
	if rid == "" || bytes.Count(r.body, []byte(`"`+rid+`"`)) != 1 {
		t.Fatalf("request_id %q not in the body exactly once: %s", rid, r.body)
	}
	body = string(bytes.ReplaceAll(r.body, []byte(`"`+rid+`"`), []byte(`"<request_id>"`)))
	var hs []string
	for k, v := range r.header {
		if k == "X-Request-Id" || k == "Date" {
			continue
		}
		hs = append(hs, k+": "+strings.Join(v, ", "))
	}
	sort.Strings(hs)
	return body, strings.Join(hs, "\n")
}

// sameRefusal checks that the revoked key's 401 is byte-identical to an
// unknown key's, apart from the request id, so the answer never tells
// which case occurred (SPEC.md, Authentication 4).
func sameRefusal(t *testing.T, ts *testServer, revoked string) {
	t.Helper()
	const path = "/v1/cs2/matches?limit=1"
	rb, rh := scrubbed(t, ts.get(t, path, revoked))
	ub, uh := scrubbed(t, ts.get(t, path, unknownLike(revoked)))
	if rb != ub {
		t.Errorf("revoked and unknown 401 bodies differ:\nrevoked: %s\nunknown: %s", rb, ub)
	}
	if rh != uh {
		t.Errorf("revoked and unknown 401 headers differ:\nrevoked:\n%s\nunknown:\n%s", rh, uh)
	}
	// The apiKey fallback gives the same answer as the header.
	qb, _ := scrubbed(t, ts.get(t, path+"&apiKey="+revoked, "-"))
	if qb != ub {
		t.Errorf("revoked key by apiKey: %s, unknown by header: %s", qb, ub)
	}
}

// TestRevokedAndUnknownKeysAreIndistinguishable runs the real key store and
// the real keyring (what eo serve uses) behind the edge: a key that worked
// and was revoked gets exactly the 401 an unknown key gets.
func TestRevokedAndUnknownKeysAreIndistinguishable(t *testing.T) {
	clk := &fakeClock{t: fixtureNow}
	path := filepath.Join(t.TempDir(), "access.db")
	st := fixtureStore(t)

	s, err := access.Open(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := s.CreateAccount("acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	key1, k1, err := s.CreateKey(acct.ID, access.PlanStandard)
	if err != nil {
		t.Fatal(err)
	}
	key2, k2, err := s.CreateKey(acct.ID, access.PlanStandard)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("store", func(t *testing.T) {
		ts := reviewServer(t, st, s, clk)
		if r := ts.get(t, "/v1/cs2/matches?limit=1", key1); r.status != 200 {
			t.Fatalf("live key: %d %s", r.status, r.body)
		}
		if err := s.Revoke(k1.ID); err != nil {
			t.Fatal(err)
		}
		sameRefusal(t, ts, key1)
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("keyring", func(t *testing.T) {
		kr, err := access.OpenKeyring(path, clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		ts := reviewServer(t, st, kr, clk)
		if r := ts.get(t, "/v1/cs2/matches?limit=1", key2); r.status != 200 {
			t.Fatalf("live key: %d %s", r.status, r.body)
		}
		// A key revoked before the keyring was loaded.
		sameRefusal(t, ts, key1)
		// A key revoked beside the running keyring (as eo keys revoke does
		// beside eo serve), picked up on reload.
		s2, err := access.Open(path, clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.Revoke(k2.ID); err != nil {
			t.Fatal(err)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		if changed, err := kr.Reload(); err != nil || !changed {
			t.Fatalf("reload after the revocation: changed=%v %v", changed, err)
		}
		sameRefusal(t, ts, key2)
	})
}

// TestParseLimit exercises parseLimit with every endpoint's page limits:
// missing or nonsensical gives the default, above the maximum is clamped to
// it, never an error (SPEC.md, Errors rule 4).
func TestParseLimit(t *testing.T) {
	table := slices.Sorted(maps.Keys(routeLimits))
	// The spec's one stated value: /odds defaults to 100.
	if routeLimits["/odds"].def != 100 {
		t.Errorf("/odds default %d, the spec says 100", routeLimits["/odds"].def)
	}

	app := fiber.New()
	app.Get("/:i", func(c *fiber.Ctx) error {
		i, _ := strconv.Atoi(c.Params("i"))
		requestState(c).limits = routeLimits[table[i]] // as checkParams sets them
		return c.SendString(strconv.Itoa(parseLimit(c)))
	})
	call := func(name, rawQuery string) int {
		t.Helper()
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/"+name+rawQuery, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		n, err := strconv.Atoi(b.String())
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s%s: %d %q", name, rawQuery, resp.StatusCode, b.String())
		}
		return n
	}
	for i, name := range table {
		l := routeLimits[name]
		if l.def < 1 || l.def > l.max {
			t.Errorf("%s = %+v: the default must be in 1..max", name, l)
		}
		for _, c := range []struct {
			q    string
			want int
		}{
			{"", l.def},
			{"?limit=", l.def},
			{"?limit=abc", l.def},
			{"?limit=0", l.def},
			{"?limit=-5", l.def},
			{"?limit=1", 1},
			{"?limit=" + strconv.Itoa(l.max-1), l.max - 1},
			{"?limit=" + strconv.Itoa(l.max), l.max},
			{"?limit=" + strconv.Itoa(l.max+1), l.max},
			{"?limit=1000000", l.max},
		} {
			if got := call(strconv.Itoa(i), c.q); got != c.want {
				t.Errorf("%s %+v, query %q: parseLimit = %d, want %d", name, l, c.q, got, c.want)
			}
		}
		// Out of int range: never an error, and within 1..max.
		if got := call(strconv.Itoa(i), "?limit=99999999999999999999"); got < 1 || got > l.max {
			t.Errorf("%s: an overflowing limit gave %d", name, got)
		}
	}
}

// TestLimitClampThroughTheServer: on every list endpoint, a limit above the
// maximum returns what limit=max returns. Where the fixture holds more rows
// than the maximum this catches a missing clamp end to end; elsewhere it
// still checks no endpoint returns more than its maximum.
func TestLimitClampThroughTheServer(t *testing.T) {
	ts := newTestServer(t)
	clamped := 0
	for _, e := range []struct {
		path string
		l    pageLimits
	}{
		{"/v1/cs2/matches?", routeLimits["/matches"]},
		{"/v1/cs2/teams?", routeLimits["/teams"]},
		{"/v1/cs2/players?", routeLimits["/players"]},
		{"/v1/cs2/tournaments?", routeLimits["/tournaments"]},
		{"/v1/cs2/odds?", routeLimits["/odds"]},
		{"/v1/cs2/rankings?type=team&", routeLimits["/rankings"]},
		{"/v1/cs2/rankings?type=player&", routeLimits["/rankings"]},
	} {
		rows := func(limit int) int {
			r := ts.get(t, e.path+"limit="+strconv.Itoa(limit))
			if r.status != 200 {
				t.Fatalf("%slimit=%d: %d %s", e.path, limit, r.status, r.body)
			}
			return len(r.data(t))
		}
		atMax := rows(e.l.max)
		if atMax > e.l.max {
			t.Errorf("%slimit=%d returned %d rows", e.path, e.l.max, atMax)
		}
		for _, over := range []int{e.l.max + 1, 1000000} {
			if n := rows(over); n != atMax {
				t.Errorf("%slimit=%d: %d rows, want %d (limit=%d)", e.path, over, n, atMax, e.l.max)
			}
		}
		if atMax == e.l.max {
			clamped++
		}
		t.Logf("%s max %d: %d rows at the maximum", e.path, e.l.max, atMax)
	}
	if clamped == 0 {
		t.Log("the fixture has no endpoint with more rows than its maximum; TestParseLimit covers the clamp")
	}
}
