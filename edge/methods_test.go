package edge

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A path the API serves, asked with another method, gets 405
// method_not_allowed with Allow; HEAD answers wherever GET does, with the
// GET's status and headers and no body; an unknown path stays 404.
func TestMethodNotAllowedAndHead(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		method, path, allow string
	}{
		{http.MethodPost, "/v1/cs2/matches", "GET, HEAD"},
		{http.MethodDelete, "/v1/cs2/matches/00000000-0000-0000-0000-000000000000/rounds", "GET, HEAD"},
		{http.MethodPut, "/v1/cs2/odds", "GET, HEAD"},
		{http.MethodGet, "/v1/cs2/ws-token", "POST"},
		{http.MethodPost, "/health", "GET, HEAD"},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+goodKey)
		r := ts.do(t, req)
		if r.status != 405 || r.code(t) != "method_not_allowed" || r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q %s, want 405 method_not_allowed Allow %q", tc.method, tc.path, r.status,
				r.header.Get("Allow"), r.body, tc.allow)
		}
	}
	if r := ts.get(t, "/v1/cs2/nothing-here"); r.status != 404 || r.code(t) != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.body)
	}

	for _, path := range []string{"/v1/cs2/matches?limit=2", "/v1/cs2/teams?limit=1", "/health", "/v1/cs2/matches/nope"} {
		get := ts.get(t, path)
		req := httptest.NewRequest(http.MethodHead, path, nil)
		req.Header.Set("Authorization", "Bearer "+goodKey)
		resp, err := ts.App().Test(req, 10000)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != get.status || body.Len() != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes, want GET's %d and none", path, resp.StatusCode, body.Len(), get.status)
		}
		for _, h := range []string{"Content-Type", "ETag", "Cache-Control", "X-RateLimit-Limit"} {
			if resp.Header.Get(h) != get.header.Get(h) {
				t.Errorf("HEAD %s: %s %q, GET %q", path, h, resp.Header.Get(h), get.header.Get(h))
			}
		}
	}
}
