// Package chromium drives a headless Chromium (the Debian package chromium,
// which .ci/run installs) through chromedp for the browser tests and the
// console screenshot: one set of flags that works on a CI machine, and a
// Watch that records what a page did (its console errors, and every request
// it sent, WebSockets included) so a test can hold it to no error and no
// other host.
package chromium

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// names are the executables tried, in order: the Debian package's first.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of a Chromium (or Chrome) executable on PATH.
func Find() (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium on PATH (tried %s): apt-get install chromium", strings.Join(names, ", "))
}

// New starts the browser at path with a fresh profile in userDataDir and
// returns a context for one tab; cancel closes the browser. Headless, no
// sandbox (CI runs as root), no GPU, no QUIC, and none of the background
// traffic (component updates, sync, first-run pages) that would reach
// another host on its own.
func New(ctx context.Context, path, userDataDir string, width, height int) (context.Context, context.CancelFunc) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(userDataDir),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tctx, cancelTab := chromedp.NewContext(actx)
	return tctx, func() { cancelTab(); cancelAlloc() }
}

// Record is what a page did while watched.
type Record struct {
	mu       sync.Mutex
	errors   []string
	requests []string
	sent     []string
}

// Watch records, from now on, the console errors of the tab ctx (what the
// DevTools console shows as errors: console.error calls, uncaught exceptions,
// and the browser's own error entries such as a failed resource load) and the
// URL of every request it sends, WebSocket handshakes included, and the
// frames it sends on its WebSockets. It starts the
// browser when ctx has none running yet.
func Watch(ctx context.Context) (*Record, error) {
	r := &Record{}
	err := chromedp.Listen(ctx, func(ev any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			r.requests = append(r.requests, e.Request.URL)
		case *network.EventWebSocketCreated:
			r.requests = append(r.requests, e.URL)
		case *network.EventWebSocketFrameSent:
			r.sent = append(r.sent, string(e.Response.PayloadData))
		}
	})
	if err != nil {
		return nil, err
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				r.mu.Lock()
				r.errors = append(r.errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				r.mu.Unlock()
			}
		}
	}()
	return r, nil
}

// Errors are the console errors seen so far.
func (r *Record) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// Requests are the URLs requested so far.
func (r *Record) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Sent are the WebSocket frames sent so far (their text).
func (r *Record) Sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

// Elsewhere are the requests that left host (host:port): any URL with a
// host, other than host's own (data: and blob: URLs have none).
func (r *Record) Elsewhere(host string) []string {
	var out []string
	for _, u := range r.Requests() {
		p, err := url.Parse(u)
		if err != nil {
			out = append(out, u)
			continue
		}
		if p.Host != "" && p.Host != host {
			out = append(out, u)
		}
	}
	return out
}
