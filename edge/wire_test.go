package edge

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/eodata/eo/access"
)

func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		accept string
		want   coding
	}{
		{"", identity},
		{"identity", identity},
		{"deflate", identity}, // not offered
		{"gzip", gzipCoding},
		{"GZIP", gzipCoding},
		{"gzip, deflate, br", brCoding},        // equal q: the server prefers br to gzip
		{"gzip, br, zstd", zstdCoding},         // and zstd to br
		{"br;q=0.5, gzip;q=0.8", gzipCoding},   // the client's weights first
		{"zstd;q=0, br;q=0, gzip", gzipCoding}, // q=0 refuses a coding
		{"*", zstdCoding},
		{"*;q=0", identity},
		{"gzip;q=0, *", zstdCoding},
		{"zstd;q=0, *;q=0.5", brCoding},
		{"br;q=abc", identity}, // a malformed weight accepts nothing
		{"br;q=2", identity},
	} {
		if got := negotiate([]byte(c.accept)); got != c.want {
			t.Errorf("Accept-Encoding %q: coding %d, want %d", c.accept, got, c.want)
		}
	}
}

// wireGet sends one GET with the good key and the given request headers
// straight to the app (appGet).
func wireGet(t *testing.T, ts *testServer, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return appGet(t, ts.App(), path, append([]string{"Authorization", "Bearer " + goodKey}, headers...)...)
}

// appGet sends one GET with the given request headers (name, value pairs)
// straight to app (a 304 has no error envelope, so not through ts.get's
// checks) and reads the body.
func appGet(t testing.TB, app *fiber.App, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1]) // a name given twice is sent as two lines
	}
	resp, err := app.Test(req, 10000)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// revalidate is appGet with key (none: "") and If-None-Match inm (none: "").
func revalidate(t testing.TB, app *fiber.App, path, key, inm string) *http.Response {
	t.Helper()
	var headers []string
	if key != "" {
		headers = append(headers, "Authorization", "Bearer "+key)
	}
	if inm != "" {
		headers = append(headers, "If-None-Match", inm)
	}
	resp, _ := appGet(t, app, path, headers...)
	return resp
}

func decode(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s body does not decode: %v", enc, err)
	}
	return out
}

// Every coding the client accepts decodes to the same JSON the identity
// response carries, with Vary: Accept-Encoding and a tag of its own; a small
// body is sent as it is.
func TestCompressionNegotiation(t *testing.T) {
	ts := newTestServer(t)
	const list = "/v1/cs2/matches?limit=50"
	plain, want := wireGet(t, ts, list)
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || len(want) < compressMin {
		t.Fatalf("identity: %d %q, %d bytes", plain.StatusCode, plain.Header.Get("Content-Encoding"), len(want))
	}
	tags := map[string]string{"": plain.Header.Get("ETag")}
	for _, enc := range []string{"gzip", "br", "zstd"} {
		resp, body := wireGet(t, ts, list, "Accept-Encoding", enc)
		if got := resp.Header.Get("Content-Encoding"); got != enc {
			t.Fatalf("Accept-Encoding %s: Content-Encoding %q", enc, got)
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s: Vary %q", enc, resp.Header.Get("Vary"))
		}
		if len(body) >= len(want) {
			t.Errorf("%s: %d bytes for %d of JSON", enc, len(body), len(want))
		}
		if got := decode(t, enc, body); !bytes.Equal(got, want) {
			t.Fatalf("%s body decodes to other bytes than the identity response", enc)
		}
		tags[enc] = resp.Header.Get("ETag")
	}
	// Two Accept-Encoding lines are one list: br refused on the first,
	// gzip offered on the second.
	if resp, _ := wireGet(t, ts, list, "Accept-Encoding", "br;q=0", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Accept-Encoding on two lines: Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	seen := map[string]bool{}
	for enc, tag := range tags {
		if tag == "" || seen[tag] {
			t.Fatalf("%q representation: ETag %q missing or shared with another coding (%v)", enc, tag, tags)
		}
		seen[tag] = true
	}
	id := ts.Current().Matches()[0].ID.String()
	resp, body := wireGet(t, ts, "/v1/cs2/matches/"+id+"/streams", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || len(body) >= compressMin || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("small body: %d, %d bytes, Content-Encoding %q", resp.StatusCode, len(body), resp.Header.Get("Content-Encoding"))
	}
	if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("small body: Vary %q", resp.Header.Get("Vary"))
	}
}

// A strong ETag and Cache-Control on every data response; If-None-Match
// naming the current tag (weakly, or the tag of another coding) gives 304
// with no body; another tag gives the 200. Health is not cached.
func TestETagAndNotModified(t *testing.T) {
	ts := newTestServer(t)
	const path = "/v1/cs2/teams?limit=20"
	resp, body := wireGet(t, ts, path)
	tag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !strings.HasPrefix(tag, `"`) || !strings.HasSuffix(tag, `"`) || len(tag) < 4 {
		t.Fatalf("200 with ETag %q", tag)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != cachePolicy {
		t.Errorf("Cache-Control %q, want %q", cc, cachePolicy)
	}
	again, body2 := wireGet(t, ts, path)
	if again.Header.Get("ETag") != tag || !bytes.Equal(body, body2) {
		t.Fatal("the same resource at the same instant has another tag or body")
	}
	gz, _ := wireGet(t, ts, path, "Accept-Encoding", "gzip")
	for _, inm := range []string{tag, "W/" + tag, `"nope", ` + tag, gz.Header.Get("ETag"), "*"} {
		r, b := wireGet(t, ts, path, "If-None-Match", inm)
		if r.StatusCode != 304 || len(b) != 0 || r.Header.Get("ETag") != tag {
			t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q; want 304, none, %s", inm, r.StatusCode, len(b), r.Header.Get("ETag"), tag)
		}
	}
	// Two If-None-Match lines are one list (RFC 9110 §5.3): the tag on the
	// second line counts.
	if r, _ := wireGet(t, ts, path, "If-None-Match", `"other"`, "If-None-Match", tag); r.StatusCode != 304 {
		t.Errorf("If-None-Match on two lines, the tag on the second: %d, want 304", r.StatusCode)
	}
	if r, b := wireGet(t, ts, path, "If-None-Match", `"other"`); r.StatusCode != 200 || !bytes.Equal(b, body) {
		t.Errorf("a stale tag: %d, want the 200", r.StatusCode)
	}
	if other, _ := wireGet(t, ts, "/v1/cs2/teams?limit=21"); other.Header.Get("ETag") == tag {
		t.Error("two different responses share a tag")
	}
	if h, _ := wireGet(t, ts, "/health"); h.Header.Get("ETag") != "" {
		t.Error("/health carries an ETag")
	}
	if e, _ := wireGet(t, ts, "/v1/cs2/matches/not-an-id"); e.StatusCode < 400 || e.Header.Get("ETag") != "" {
		t.Errorf("an error: %d with ETag %q", e.StatusCode, e.Header.Get("ETag"))
	}
}

// A 304 is metered like the 200 it replaces (the contract says so).
func TestNotModifiedIsMetered(t *testing.T) {
	clk := &fakeClock{t: fixtureNow}
	keys := openTestKeys(t, clk)
	ms := newMeteredServer(t, openEmbedded(t), keys, nil, clk)
	key := newTestKey(t, keys, access.PlanStandard)
	get := func(inm string) *http.Response { return revalidate(t, ms.App(), "/v1/cs2/teams?limit=5", key, inm) }
	first := get("")
	second := get(first.Header.Get("ETag"))
	if second.StatusCode != 304 {
		t.Fatalf("revalidation: %d", second.StatusCode)
	}
	q1, q2 := first.Header.Get("X-Quota-Remaining"), second.Header.Get("X-Quota-Remaining")
	if q1 == "" || q1 == q2 {
		t.Errorf("X-Quota-Remaining %q then %q: the 304 was not counted", q1, q2)
	}
}

// BenchmarkWire: one request through the edge (fixture, unmetered) per
// content coding, for a 50-row match list, a 1,000-row odds page and the
// docs page (compressed once, served from memory); the
// wire_bytes metric is the body sent. revalidate is an If-None-Match hit
// (304, no body).
func BenchmarkWire(b *testing.B) {
	ts := newTestServer(b)
	for _, uri := range []string{"/v1/cs2/matches?limit=50", "/v1/cs2/odds?limit=1000", "/docs"} {
		im := newInMemory(ts.App(), uri, goodKey)
		tag := string(im.do().Header.Peek(fiber.HeaderETag))
		for _, enc := range []string{"identity", "gzip", "br", "zstd", "revalidate"} {
			b.Run(strings.TrimPrefix(strings.TrimPrefix(uri, "/v1/cs2"), "/")+"/"+enc, func(b *testing.B) {
				im.ctx.Request.Header.Del(fiber.HeaderIfNoneMatch)
				im.ctx.Request.Header.Set(fiber.HeaderAcceptEncoding, enc)
				if enc == "revalidate" {
					im.ctx.Request.Header.Del(fiber.HeaderAcceptEncoding)
					im.ctx.Request.Header.Set(fiber.HeaderIfNoneMatch, tag)
				}
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					r := im.do()
					if r.StatusCode() != fiber.StatusOK && r.StatusCode() != fiber.StatusNotModified {
						b.Fatalf("status %d", r.StatusCode())
					}
					n = len(r.Body())
				}
				b.ReportMetric(float64(n), "wire_bytes")
			})
		}
	}
}

// The docs page, the contract and the console are compressed once (best level) and served
// from memory: every coding decodes to the embedded bytes, the tag is the
// same on each request, and revalidation works as on data responses.
func TestStaticBodiesCompressedOnce(t *testing.T) {
	ts := newTestServer(t)
	for path, want := range map[string][]byte{"/docs": docsHTML, "/openapi.yaml": openapiYAML, "/": consoleHTML} {
		first, _ := wireGet(t, ts, path)
		tag := first.Header.Get("ETag")
		for _, enc := range []string{"gzip", "br", "zstd"} {
			r1, b1 := wireGet(t, ts, path, "Accept-Encoding", enc)
			r2, b2 := wireGet(t, ts, path, "Accept-Encoding", enc)
			if r1.Header.Get("Content-Encoding") != enc || !bytes.Equal(b1, b2) || r1.Header.Get("ETag") != r2.Header.Get("ETag") {
				t.Fatalf("%s %s: encoding %q, stable bytes %v", path, enc, r1.Header.Get("Content-Encoding"), bytes.Equal(b1, b2))
			}
			if got := decode(t, enc, b1); !bytes.Equal(got, want) {
				t.Fatalf("%s %s: does not decode to the embedded bytes", path, enc)
			}
			if len(b1) >= len(want)/2 {
				t.Errorf("%s %s: %d bytes of %d", path, enc, len(b1), len(want))
			}
		}
		if r, b := wireGet(t, ts, path, "If-None-Match", tag); r.StatusCode != 304 || len(b) != 0 {
			t.Errorf("%s revalidation: %d", path, r.StatusCode)
		}
	}
}

// A page from the page cache is compressed once per coding: after the
// request that stores the page, each coding's first request stores its
// compressed form in the entry and later ones are sent those bytes, which
// decode to the identity body, under the coding's own tag.
func TestCachedPagesCompressedOnce(t *testing.T) {
	ts := newTestServer(t)
	const list = "/v1/cs2/matches?limit=50"
	wireGet(t, ts, list) // remembered
	plain, body := wireGet(t, ts, list)
	e := ts.pages.For(ts.View(), ts.View()).Get([]byte(list), 0)
	if e == nil {
		t.Fatal("the page was not stored")
	}
	for _, enc := range []string{"gzip", "br", "zstd"} {
		cd := negotiate([]byte(enc))
		r1, b1 := wireGet(t, ts, list, "Accept-Encoding", enc)
		stored := e.Enc[cd].Load()
		if stored == nil {
			t.Fatalf("%s: the compressed page was not kept in the cache entry", enc)
		}
		r2, b2 := wireGet(t, ts, list, "Accept-Encoding", enc)
		if !bytes.Equal(b1, *stored) || !bytes.Equal(b2, *stored) {
			t.Fatalf("%s: the responses are not the stored compressed bytes", enc)
		}
		if r2.Header.Get("Content-Encoding") != enc || r2.Header.Get("Vary") != "Accept-Encoding" ||
			r2.Header.Get("ETag") != r1.Header.Get("ETag") || r2.Header.Get("ETag") == plain.Header.Get("ETag") {
			t.Fatalf("%s: headers %v (identity tag %s)", enc, r2.Header, plain.Header.Get("ETag"))
		}
		if got := decode(t, enc, b2); !bytes.Equal(got, body) {
			t.Fatalf("%s: does not decode to the identity body", enc)
		}
	}
}
