package edge

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/redistest"
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

// TestRequestIDsHoldUnderConcurrentRequests: with request states pooled,
// many keep-alive clients at once (cached pages, error bodies, 304s, with
// and without their own X-Request-Id) each get their own id, in the header
// and in an error body alike, and the usage events the Redis backend
// buffers carry exactly the ids the responses were sent with.
func TestRequestIDsHoldUnderConcurrentRequests(t *testing.T) {
	url := redistest.Start(t)
	clk := &fakeClock{t: fixtureNow}
	ms := newMeteredServer(t, openRedisCounters(t, url), openTestKeys(t, clk), nil, clk)
	key := newTestKey(t, ms.keys, access.PlanInternal)
	addr := listenTestServer(t, ms.testServer)
	const clients, each = 16, 60
	first, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/cs2/matches?limit=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(first)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	var (
		mu  sync.Mutex
		ids = map[string]bool{resp.Header.Get("X-Request-Id"): true}
		wg  sync.WaitGroup
	)
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for i := range each {
				path, want := "/v1/cs2/matches?limit=1", http.StatusOK
				req, _ := http.NewRequest(http.MethodGet, "", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				switch i % 3 {
				case 1:
					path, want = "/v1/cs2/matches/not-an-id", http.StatusNotFound
				case 2:
					req.Header.Set("If-None-Match", etag)
					want = http.StatusNotModified
				}
				own := ""
				if i%2 == 1 {
					own = fmt.Sprintf("client-%d-%d", g, i)
					req.Header.Set("X-Request-Id", own)
				}
				req.URL, _ = req.URL.Parse("http://" + addr + path)
				r, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(r.Body)
				r.Body.Close()
				id := r.Header.Get("X-Request-Id")
				var env struct {
					Error *struct {
						RequestID string `json:"request_id"`
					} `json:"error"`
				}
				_ = json.Unmarshal(body, &env)
				switch {
				case r.StatusCode != want:
					t.Errorf("%s: %d, want %d: %s", path, r.StatusCode, want, body)
				case own != "" && id != own:
					t.Errorf("%s: id %q, sent %q", path, id, own)
				case want == http.StatusNotFound && (env.Error == nil || env.Error.RequestID != id):
					t.Errorf("%s: error body %s, header id %q", path, body, id)
				}
				mu.Lock()
				if ids[id] {
					t.Errorf("id %q answered twice", id)
				}
				ids[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	usageHasIDs(t, ms.ctr, ids)
}
