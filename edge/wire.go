package edge

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/zeebo/xxh3"

	"github.com/eodata/eo/pagecache"
)

// The wire: what every data response carries besides its JSON (edge/
// openapi.yaml, "Caching and compression").
//
//   - ETag: a strong validator of the response's bytes (a hash of the
//     uncompressed body, so two instances serving the same snapshot and live
//     state give the same tag; a live change or a new snapshot changes it).
//     A compressed representation has its own tag (the body's tag with the
//     coding appended), as a strong validator must.
//   - If-None-Match: a request naming the current tag (any coding's, weak or
//     strong) gets 304 Not Modified without a body. It is metered like the
//     200 it replaces: the lookup was done.
//   - Cache-Control: private, max-age=0, must-revalidate — data changes with
//     every live event, so a client keeps a response but revalidates it on
//     each use (which costs a 304, not a body).
//   - Content-Encoding: zstd, br or gzip, negotiated from Accept-Encoding
//     (q-values honoured, q=0 refuses a coding; the server prefers zstd, then
//     br, then gzip); bodies under compressMin bytes are sent as they are.
//     Vary: Accept-Encoding on every such response. A body is compressed
//     once: the contract and the docs at start (staticBody), a page of the
//     page cache by the first request for each coding (pagecache.Page.Enc),
//     others per request with a pooled encoder.

// compressMin is the smallest body worth compressing: below about a kilobyte
// the framing and CPU cost more than the bytes saved.
const compressMin = 1024

// cachePolicy is the Cache-Control of data responses.
const cachePolicy = "private, max-age=0, must-revalidate"

// coding is a content coding the edge can send.
type coding uint8

const (
	identity coding = iota
	zstdCoding
	brCoding
	gzipCoding
)

// A cached page keeps a compressed form a coding (identity's slot unused).
var (
	_ [pagecache.Codings - len(codings) - 1]struct{}
	_ [len(codings) + 1 - pagecache.Codings]struct{}
)

// codings in the server's order of preference.
var codings = [...]struct {
	c      coding
	name   string
	suffix string // appended to the ETag of the compressed representation
}{
	{zstdCoding, "zstd", "-zst"},
	{brCoding, "br", "-br"},
	{gzipCoding, "gzip", "-gz"},
}

// negotiate picks the content coding for an Accept-Encoding header: the
// acceptable coding (q > 0) with the highest q, the server's preference
// breaking ties; identity when none is acceptable.
func negotiate(accept []byte) coding {
	if len(accept) == 0 {
		return identity
	}
	var q [4]float64 // by coding; -1: not named
	for i := range q {
		q[i] = -1
	}
	star := -1.0
	for _, part := range bytes.Split(accept, []byte(",")) {
		name, params, _ := bytes.Cut(part, []byte(";"))
		name = bytes.TrimSpace(name)
		w := 1.0
		for _, p := range bytes.Split(params, []byte(";")) {
			k, v, ok := bytes.Cut(bytes.TrimSpace(p), []byte("="))
			if ok && bytes.EqualFold(k, []byte("q")) {
				f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0 // a malformed weight accepts nothing
				}
				w = f
			}
		}
		if bytes.Equal(name, []byte("*")) {
			star = w
			continue
		}
		for _, c := range codings {
			if bytes.EqualFold(name, []byte(c.name)) {
				q[c.c] = w
			}
		}
	}
	best, bestQ := identity, 0.0
	for _, c := range codings {
		w := q[c.c]
		if w < 0 {
			w = star // not named: "*" speaks for it
		}
		if w > bestQ {
			best, bestQ = c.c, w
		}
	}
	return best
}

// wired reports whether a route's responses get the wire treatment: the data
// routes under /v1/{game} and the pages served without a key (edge/docs.go),
// not /health, /metrics or the WebSocket handshake.
func wired(c *fiber.Ctx) bool {
	r := c.Route()
	if r == nil {
		return false
	}
	if r.Path == exportFileRoute {
		return false // a Parquet file, streamed: its own ETag, no compression (edge/exports.go)
	}
	return strings.HasPrefix(r.Path, "/v1/:game") || c.Locals(staticKey) != nil
}

// The wire's header names and the cache policy as bytes, spelled as sent:
// SetCanonical skips normalising the name on every request.
var (
	hdrETag         = []byte(fiber.HeaderETag)
	hdrCacheControl = []byte(fiber.HeaderCacheControl)
	hdrCachePolicy  = []byte(cachePolicy)
)

// finishWire applies the wire to a successful response of a wired route:
// ETag and Cache-Control, 304 for a matching If-None-Match, then compression
// with Vary.
func finishWire(c *fiber.Ctx) {
	m := c.Method()
	if (m != fiber.MethodGet && m != fiber.MethodHead) || !wired(c) {
		return
	}
	resp := c.Response()
	resp.Header.Add(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if resp.StatusCode() != fiber.StatusOK {
		return
	}
	body := resp.Body()
	st := requestState(c)
	cd := negotiate(st.hdr.acceptEncoding)
	if len(body) < compressMin {
		cd = identity
	}
	static, _ := c.Locals(staticKey).(*staticBody)
	page := st.page
	var tag [32]byte
	var base []byte
	switch {
	case static != nil:
		base = append(tag[:0], static.base...)
	case page != nil:
		base = append(tag[:0], page.ETag...)
	default:
		base = strconv.AppendUint(append(tag[:0], '"'), xxh3.Hash(body), 36)
	}
	etag := append(base, codingSuffix(cd)...)
	etag = append(etag, '"')
	resp.Header.SetCanonical(hdrETag, etag)
	resp.Header.SetCanonical(hdrCacheControl, hdrCachePolicy)
	if inm := st.hdr.ifNoneMatch; len(inm) > 0 && noneMatch(inm, base[1:]) {
		resp.SetStatusCode(fiber.StatusNotModified)
		resp.ResetBody()
		resp.Header.Del(fiber.HeaderContentType)
		return
	}
	switch {
	case cd == identity:
	case static != nil:
		resp.SetBodyRaw(static.encoded(cd)) // shared, never written to
		resp.Header.Set(fiber.HeaderContentEncoding, codingName(cd))
	case page != nil:
		if enc := page.Enc[cd].Load(); enc != nil {
			resp.SetBodyRaw(*enc) // shared, never written to
			resp.Header.Set(fiber.HeaderContentEncoding, codingName(cd))
			return
		}
		compress(resp, cd, body)
		enc := bytes.Clone(resp.Body())
		page.Enc[cd].Store(&enc) // two requests racing store equal bytes
	default:
		compress(resp, cd, body)
	}
}

func codingName(cd coding) string {
	for _, c := range codings {
		if c.c == cd {
			return c.name
		}
	}
	return ""
}

// staticKey is the fiber.Ctx local naming a response's staticBody.
const staticKey = "wire_static"

// staticBody is a body that never changes while the process runs (the
// contract, the docs page): its tag is computed once, and each coding's
// compressed form once, on first use, at a high level (gzip and zstd best,
// brotli's default: its best takes seconds on the docs page), rather than
// per request on a route that needs no key.
type staticBody struct {
	body []byte
	base string // `"` + hash, as finishWire's tag base
	once [len(codings) + 1]sync.Once
	enc  [len(codings) + 1][]byte
}

func newStaticBody(b []byte) *staticBody {
	return &staticBody{body: b, base: pagecache.ETag(b)}
}

func (sb *staticBody) encoded(cd coding) []byte {
	sb.once[cd].Do(func() {
		switch cd {
		case zstdCoding:
			sb.enc[cd] = fasthttp.AppendZstdBytesLevel(nil, sb.body, fasthttp.CompressZstdBestCompression)
		case brCoding:
			sb.enc[cd] = fasthttp.AppendBrotliBytesLevel(nil, sb.body, fasthttp.CompressBrotliDefaultCompression)
		case gzipCoding:
			sb.enc[cd] = fasthttp.AppendGzipBytesLevel(nil, sb.body, fasthttp.CompressBestCompression)
		}
	})
	return sb.enc[cd]
}

// compress replaces the response body by its compressed form, built in a
// pooled buffer and copied into the response's own (no allocation per
// request in steady state; fasthttp pools the encoders).
func compress(resp *fasthttp.Response, cd coding, body []byte) {
	bp := bufs.Get().(*[]byte)
	var b []byte
	var name string
	switch cd {
	case zstdCoding:
		name, b = "zstd", fasthttp.AppendZstdBytesLevel((*bp)[:0], body, fasthttp.CompressZstdBestSpeed)
	case brCoding:
		name, b = "br", fasthttp.AppendBrotliBytesLevel((*bp)[:0], body, fasthttp.CompressBrotliBestSpeed)
	default:
		name, b = "gzip", fasthttp.AppendGzipBytesLevel((*bp)[:0], body, fasthttp.CompressBestSpeed)
	}
	resp.SetBody(b)
	resp.Header.Set(fiber.HeaderContentEncoding, name)
	if cap(b) <= 4<<20 {
		*bp = b[:0]
		bufs.Put(bp)
	}
}

func codingSuffix(cd coding) string {
	for _, c := range codings {
		if c.c == cd {
			return c.suffix
		}
	}
	return ""
}

// noneMatch reports whether an If-None-Match header names the response's
// tag base (its hash), by weak comparison: W/ ignored, any coding's suffix
// accepted, "*" matching any current representation.
func noneMatch(header, base []byte) bool {
	for _, t := range bytes.Split(header, []byte(",")) {
		t = bytes.TrimSpace(t)
		if bytes.Equal(t, []byte("*")) {
			return true
		}
		t = bytes.TrimPrefix(t, []byte("W/"))
		t = bytes.Trim(t, `"`)
		for _, c := range codings {
			t = bytes.TrimSuffix(t, []byte(c.suffix))
		}
		if bytes.Equal(t, base) {
			return true
		}
	}
	return false
}
