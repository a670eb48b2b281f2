package edge

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listenTestServer serves ts on a real loopback listener (hostile clients
// speak raw TCP) and returns its address.
func listenTestServer(t *testing.T, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ts.App().Listener(ln) }()
	t.Cleanup(func() { _ = ts.App().ShutdownWithTimeout(2 * time.Second) })
	return ln.Addr().String()
}

// rawExchange writes raw bytes on a new connection and returns every
// response the server sends before it closes the connection (or 5 s pass).
func rawExchange(t *testing.T, addr, req string) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	go func() { _, _ = io.WriteString(conn, req) }()
	br := bufio.NewReader(conn)
	var out []*http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
}

// wantRawError asserts status, the error code and that the body's
// request_id is the X-Request-Id header (never empty).
func wantRawError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d", resp.StatusCode, status)
	}
	var body errorBody
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("not the error envelope: %v: %s", err, b)
	}
	id := resp.Header.Get("X-Request-Id")
	if id == "" || body.Error.RequestID != id {
		t.Fatalf("request id: header %q, body %q", id, body.Error.RequestID)
	}
	if body.Error.Code != code {
		t.Fatalf("code %q, want %q", body.Error.Code, code)
	}
}

// TestRequestSmugglingIsRejected: a request framed by both Content-Length
// and Transfer-Encoding is answered 400 and the connection closed, so the
// request smuggled after its chunked body is never answered (RFC 9112
// §6.1). Both header orders.
func TestRequestSmugglingIsRejected(t *testing.T) {
	addr := listenTestServer(t, newTestServer(t))
	smuggled := "GET /v1/cs2/matches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodKey + "\r\n\r\n"
	chunked := "0\r\n\r\n" + smuggled
	for _, hdr := range []string{
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"transfer-encoding: chunked\r\ncontent-length: 5\r\n",
	} {
		resps := rawExchange(t, addr, "POST /v1/cs2/ws-token HTTP/1.1\r\nHost: x\r\n"+hdr+"\r\n"+chunked)
		if len(resps) != 1 {
			t.Fatalf("%q: %d responses, want 1 (the smuggled request was answered)", hdr, len(resps))
		}
		wantRawError(t, resps[0], 400, "invalid_parameter")
		if !resps[0].Close {
			t.Fatalf("%q: connection not closed", hdr)
		}
	}
	// A chunked request alone is still served (it carries no smuggling).
	resps := rawExchange(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n")
	if len(resps) != 1 || resps[0].StatusCode != 200 {
		t.Fatalf("plain chunked request: %d responses", len(resps))
	}
}

// TestRejectedBeforeRoutingCarryARequestID: errors fasthttp raises before
// any middleware runs (431 headers too large, 413 body too large) carry the
// error envelope with a request id like every other error.
func TestRejectedBeforeRoutingCarryARequestID(t *testing.T) {
	addr := listenTestServer(t, newTestServer(t))
	big := strings.Repeat("a", 64<<10)
	resps := rawExchange(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: "+big+"\r\n\r\n")
	if len(resps) != 1 {
		t.Fatalf("431: %d responses", len(resps))
	}
	wantRawError(t, resps[0], 431, "invalid_parameter")

	body := strings.Repeat("b", 5<<20)
	resps = rawExchange(t, addr, "POST /v1/cs2/ws-token HTTP/1.1\r\nHost: x\r\nContent-Length: "+
		itoa(len(body))+"\r\n\r\n"+body)
	if len(resps) != 1 {
		t.Fatalf("413: %d responses", len(resps))
	}
	wantRawError(t, resps[0], 413, "invalid_parameter")
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// emfileListener fails its first n accepts with EMFILE.
type emfileListener struct {
	net.Listener
	n int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesDescriptorExhaustion: EMFILE from accept is waited
// out and counted, not returned (fasthttp stops serving on it).
func TestAcceptSurvivesDescriptorExhaustion(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	var errs atomic.Uint64
	gl := &guardListener{Listener: &emfileListener{Listener: inner, n: 3}, log: quietLog, errs: &errs}
	go func() {
		if c, err := net.Dial("tcp", inner.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(2 * time.Second)
		}
	}()
	c, err := gl.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v, want a connection after the EMFILEs", err)
	}
	c.Close()
	if errs.Load() != 3 {
		t.Fatalf("counted %d accept errors, want 3", errs.Load())
	}
	inner.Close()
	if _, err := gl.Accept(); err == nil {
		t.Fatal("Accept on a closed listener must fail")
	}
}

// TestMalformedRequestsNeitherEchoNorShareAnID: a request fasthttp cannot
// parse is answered without the bytes it read (they hold the API key), and
// every such answer has an id of its own. An unknown or lowercase method
// gets the envelope (405 with Allow on a path the API serves, else 404),
// and a path with an empty segment is not taken for the route it would be
// without it.
func TestMalformedRequestsNeitherEchoNorShareAnID(t *testing.T) {
	addr := listenTestServer(t, newTestServer(t))
	ids := map[string]bool{}
	for range 3 {
		resps := rawExchange(t, addr, "GET /v1/cs2/coverage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+goodKey+
			"\r\ngarbage\r\nConnection: close\r\n\r\n")
		if len(resps) != 1 {
			t.Fatalf("%d responses", len(resps))
		}
		id := resps[0].Header.Get("X-Request-Id")
		b, _ := io.ReadAll(resps[0].Body)
		resps[0].Body = io.NopCloser(strings.NewReader(string(b)))
		wantRawError(t, resps[0], 400, "invalid_parameter")
		if strings.Contains(string(b), goodKey[8:]) || strings.Contains(string(b), "coverage") {
			t.Fatalf("the error echoes the request: %s", b)
		}
		if ids[id] {
			t.Fatalf("two malformed requests share the id %s", id)
		}
		ids[id] = true
	}
	for _, c := range []struct {
		req    string
		status int
		code   string
	}{
		{"FOO /v1/cs2/matches HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "method_not_allowed"},
		{"FOO /v1/cs2/matches HTTP/1.1\r\nHost: x\r\nX-Request-Id: client-id-1\r\nConnection: close\r\n\r\n", 405, "method_not_allowed"},
		{"get /v1/cs2/matches HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "method_not_allowed"},
		{"PROPFIND /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "not_found"},
		{"GET //health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "not_found"},
		{"GET //v1/cs2/matches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + goodKey + "\r\nConnection: close\r\n\r\n", 404, "not_found"},
	} {
		resps := rawExchange(t, addr, c.req)
		if len(resps) != 1 {
			t.Fatalf("%q: %d responses", c.req, len(resps))
		}
		wantRawError(t, resps[0], c.status, c.code)
		if strings.Contains(c.req, "client-id-1") && resps[0].Header.Get("X-Request-Id") != "client-id-1" {
			t.Fatalf("%q: X-Request-Id %q, want the client's", c.req, resps[0].Header.Get("X-Request-Id"))
		}
		if c.status == 405 && resps[0].Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%q: Allow %q", c.req, resps[0].Header.Get("Allow"))
		}
	}
}
