package edge

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// accessLine is one access log line as the JSON handler writes it.
type accessLine struct {
	Msg         string  `json:"msg"`
	Method      string  `json:"method"`
	Route       string  `json:"route"`
	Path        string  `json:"path"`
	Query       string  `json:"query"`
	Status      int     `json:"status"`
	Bytes       int     `json:"bytes"`
	Duration    *int64  `json:"duration"`
	RequestID   string  `json:"request_id"`
	KeyID       *string `json:"key_id"`
	Remote      string  `json:"remote"`
	PageCache   string  `json:"page_cache"`
	NotModified bool    `json:"not_modified"`
}

// With the access log on, every request gets one line once it is answered,
// saying what was asked and answered and by which key id, and no API key
// (header, apiKey, a misspelled apikey, a key in the path) ever reaches it.
func TestAccessLog(t *testing.T) {
	ts := newTestServer(t)
	var buf bytes.Buffer
	ts.o.AccessLog = slog.New(slog.NewJSONHandler(&buf, nil))
	const unknownKey = "eo_live_ffffffffffffffffffffffffffffffffffffffffffffffff"
	send := func(path, auth, inm string) *http.Response {
		t.Helper()
		return revalidate(t, ts.App(), path, auth, inm)
	}
	list := "/v1/cs2/matches?limit=1&apiKey=" + goodKey
	first := send(list, "", "")
	send(list, "", "")                                                          // a miss: remembered, then stored
	hit := send(list, "", "")                                                   // from the page cache
	send(list, "", hit.Header.Get("ETag"))                                      // 304
	send("/v1/cs2/matches?apikey="+goodKey, goodKey, "")                        // 400: not a parameter, still a key
	send("/v1/cs2/matches?apiKey="+unknownKey, "", "")                          // 401
	send("/v1/cs2/teams/"+goodKey, goodKey, "")                                 // a key in the path: 404
	send("/v1/cs2/teams/"+strings.ReplaceAll(goodKey, "_", "%5F"), goodKey, "") // percent-encoded: 404
	send("/v1/cs2/matches?"+goodKey+"=1", goodKey, "")                          // a key as a parameter's name: 400
	send("/metrics", goodKey, "")                                               // 403, the key id known
	send("/nowhere", "", "")                                                    // no route

	out := buf.String()
	for _, secret := range []string{goodKey, unknownKey, "eo_live_", goodKey[8:]} {
		if strings.Contains(out, secret) {
			t.Fatalf("the access log holds %q:\n%s", secret, out)
		}
	}
	var lines []accessLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var a accessLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("not a JSON line: %v\n%s", err, l)
		}
		if a.Msg != "request" || a.Method != "GET" || a.Duration == nil || *a.Duration < 0 || a.RequestID == "" ||
			a.KeyID == nil || a.Remote == "" {
			t.Errorf("incomplete line: %s", l)
		}
		lines = append(lines, a)
	}
	if len(lines) != 11 {
		t.Fatalf("%d lines for 11 requests:\n%s", len(lines), out)
	}
	want := []struct {
		route, path, query, cache string
		status                    int
		key                       string
	}{
		{"/v1/:game/matches", "/v1/cs2/matches", "limit=1&apiKey=REDACTED", "miss", 200, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "limit=1&apiKey=REDACTED", "miss", 200, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "limit=1&apiKey=REDACTED", "hit", 200, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "limit=1&apiKey=REDACTED", "hit", 304, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "apikey=REDACTED", "none", 400, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "apiKey=REDACTED", "none", 401, ""},
		{"/v1/:game/teams/:id", "/v1/cs2/teams/REDACTED", "", "miss", 404, "k1"},
		{"/v1/:game/teams/:id", "/v1/cs2/teams/REDACTED", "", "miss", 404, "k1"},
		{"/v1/:game/matches", "/v1/cs2/matches", "REDACTED=1", "none", 400, "k1"},
		{"/metrics", "/metrics", "", "none", 403, "k1"},
		{"unmatched", "/nowhere", "", "none", 404, ""},
	}
	for i, w := range want {
		a := lines[i]
		if a.Route != w.route || a.Path != w.path || a.Query != w.query || a.PageCache != w.cache ||
			a.Status != w.status || *a.KeyID != w.key || a.NotModified != (w.status == 304) {
			t.Errorf("line %d: %+v, want %+v", i, a, w)
		}
	}
	if lines[0].RequestID != first.Header.Get("X-Request-Id") || lines[0].Bytes == 0 || lines[3].Bytes != 0 {
		t.Errorf("request id %q (header %q), bytes %d and %d (304)", lines[0].RequestID,
			first.Header.Get("X-Request-Id"), lines[0].Bytes, lines[3].Bytes)
	}
}
