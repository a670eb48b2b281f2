package edge

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A client's X-Request-Id is the request's id when it is 1-128 characters
// of A-Z a-z 0-9 - _ . : (echoed in the header and in an error's
// request_id); any other value is replaced by the edge's own 32-hex id.
func TestClientRequestIDIsEchoed(t *testing.T) {
	ts := newTestServer(t)
	own := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range []struct {
		sent string
		echo bool
	}{
		{"3f2b8c1e-9d4a-4c1b-8e2f-0a1b2c3d4e5f", true},
		{"trace:01HZX.span_7-a", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{`quote"d`, false},
		{"é", false},
	} {
		for _, path := range []string{"/v1/cs2/matches?limit=1", "/v1/cs2/matches/not-an-id"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", "Bearer "+goodKey)
			req.Header.Set("X-Request-Id", tc.sent)
			r := ts.do(t, req) // also holds an error's request_id equal to the header
			got := r.header.Get("X-Request-Id")
			switch {
			case tc.echo && got != tc.sent:
				t.Errorf("%s with X-Request-Id %q: echoed %q", path, tc.sent, got)
			case !tc.echo && !own.MatchString(got):
				t.Errorf("%s with X-Request-Id %q: id %q, want the edge's own", path, tc.sent, got)
			}
		}
	}
}

// The ids the edge assigns are distinct across requests on one keep-alive
// connection and across connections, share this process's prefix, and
// count the requests of a connection in their last 10 hex digits.
func TestAssignedRequestIDs(t *testing.T) {
	ts := newTestServer(t)
	addr := listenTestServer(t, ts)
	prefix := hex.EncodeToString(idPrefix[:])
	seen := map[string]bool{}
	for conn := range 2 {
		c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		var last uint64
		for i := range 5 {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/cs2/matches?limit=1", nil)
			req.Header.Set("Authorization", "Bearer "+goodKey)
			r, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			id := r.Header.Get("X-Request-Id")
			if len(id) != 32 || !strings.HasPrefix(id, prefix) || seen[id] {
				t.Fatalf("connection %d, request %d: id %q (prefix %s, seen before: %v)", conn, i, id, prefix, seen[id])
			}
			seen[id] = true
			num, err := strconv.ParseUint(id[22:], 16, 64)
			if err != nil || i > 0 && num != last+1 {
				t.Fatalf("connection %d: request number %q after %d", conn, id[22:], last)
			}
			last = num
		}
		c.CloseIdleConnections()
	}
	if a, b := assignedID(1, 2), assignedID(2, 1); a == b || hex.EncodeToString(a[6:11]) != "0000000001" ||
		hex.EncodeToString(a[11:]) != "0000000002" {
		t.Fatalf("assignedID(1, 2) = %x, assignedID(2, 1) = %x", a, b)
	}
}
