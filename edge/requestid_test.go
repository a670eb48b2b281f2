package edge

import (
	"net/http"
	"net/http/httptest"
	"regexp"
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
