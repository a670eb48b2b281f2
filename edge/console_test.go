package edge

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// The console and the favicon are served without a key (a browser asks for
// /favicon.ico on its own: a 404 there is a console error on every page).
// The console's Content-Security-Policy lets its own inline script run (by
// the script's hash) and allows no other host: no source but 'self', data:
// and blob:. (cmd/eo's TestConsoleInABrowser runs the page.)
func TestConsoleAndFaviconNeedNoKey(t *testing.T) {
	ts := newTestServer(t)
	resp, body := appGet(t, ts.App(), "/")
	if resp.StatusCode != 200 || !bytes.Equal(body, consoleHTML) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	_, script, _ := strings.Cut(string(consoleHTML), "<script>")
	script, _, _ = strings.Cut(script, "</script>")
	sum := sha256.Sum256([]byte(script))
	if !strings.Contains(csp, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("the CSP %q does not name the page's script", csp)
	}
	for _, directive := range strings.Split(csp, ";") {
		for _, src := range strings.Fields(directive)[1:] {
			if !strings.HasPrefix(src, "'") && src != "data:" && src != "blob:" {
				t.Errorf("the CSP allows %s (%s)", src, strings.TrimSpace(directive))
			}
		}
	}
	resp, body = appGet(t, ts.App(), "/favicon.ico")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" || !bytes.Equal(body, faviconICO) {
		t.Fatalf("GET /favicon.ico: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.HasPrefix(faviconICO, []byte{0, 0, 1, 0}) {
		t.Error("favicon.ico is not an ICO file")
	}
}
