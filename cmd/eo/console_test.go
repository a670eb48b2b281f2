package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/internal/testkit/chromium"
)

// TestConsoleInABrowser opens the console with the link make run prints, in
// a real headless Chromium, against `eo up` with the replay moving matches
// (at the standard plan's real limits): the page loads with no console error
// and no request to another host, takes the key out of the address bar,
// shows a live match's team names, charts a match-winner line and draws
// each ranked team's rating history from the one /rankings request, and a
// score on the page changes with no REST read in between (the WebSocket
// carried it). After a dropped connection it subscribes again with
// since_seq and keeps moving. An internal-plan key opens the model report.
// Then /docs loads with no console error and no request to another host
// (its logo and /favicon.ico included).
func TestConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole system and a browser")
	}
	bin, err := chromium.Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v (.ci/run installs it)", err)
		}
		t.Skipf("no browser test: %v", err)
	}
	up := startUp(t, []string{access.PlanStandard, access.PlanInternal}, "--matches", "300", "--schedule", "off",
		"--live-speed", "10", "--live-matches", "2")
	host := strings.TrimPrefix(up.base, "http://")
	ctx, closeBrowser := chromium.New(context.Background(), bin, t.TempDir(), 1280, 900)
	defer closeBrowser()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	rec, err := chromium.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seenErrors, seenElsewhere := 0, 0
	clean := func(page string) { // what the page did since the last clean
		t.Helper()
		errs, elsewhere := rec.Errors(), rec.Elsewhere(host)
		for _, e := range errs[seenErrors:] {
			t.Errorf("%s: console error: %s", page, e)
		}
		for _, u := range elsewhere[seenElsewhere:] {
			t.Errorf("%s: a request to another host: %s", page, u)
		}
		seenErrors, seenElsewhere = len(errs), len(elsewhere)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(consoleLink(host, up.keys[0]))); err != nil {
		t.Fatal(err)
	}
	teams := evalUntil[string](t, ctx, `document.querySelector("#matches tr[data-status=live] .teams")?.textContent`)
	if !liveTeams(t, up, up.keys[0])[teams] {
		t.Errorf("the page shows %q as live; REST has no live match between those teams", teams)
	}
	if hash := eval[string](t, ctx, `location.hash`); hash != "" {
		t.Errorf("the key stays in the address bar: %q", hash)
	}
	if n := evalUntil[int](t, ctx, `+(document.querySelector("#chart path.line.eo_market")?.dataset.points || 0)`); n < 1 {
		t.Errorf("the chart has %d points", n)
	}
	sparklines(t, ctx, rec, up)
	scoreMoves(t, ctx, rec)

	// A dropped connection: the page mints a ticket, resumes every target
	// from the seq it holds, and the scores keep moving.
	before := len(rec.Sent())
	eval[bool](t, ctx, `S.ws.close(), true`)
	resumed := false
	for deadline := time.Now().Add(30 * time.Second); !resumed && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, f := range rec.Sent()[before:] {
			var sub struct {
				Type     string  `json:"type"`
				SinceSeq *uint64 `json:"since_seq"`
			}
			resumed = resumed || json.Unmarshal([]byte(f), &sub) == nil && sub.Type == "subscribe" && sub.SinceSeq != nil
		}
	}
	if !resumed {
		t.Fatalf("after the drop the page sent no subscribe with since_seq: %q", rec.Sent()[before:])
	}
	scoreMoves(t, ctx, rec)
	clean("the console")

	// An internal-plan key: the model report opens in the page.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(consoleLink(host, up.keys[1]))); err != nil {
		t.Fatal(err)
	}
	evalUntil[string](t, ctx, `document.querySelector("#matches tr th")?.textContent`)
	eval[bool](t, ctx, `document.querySelector("#report").click(), true`)
	if !evalUntil[bool](t, ctx, `document.querySelector("#report-dialog").open`) {
		t.Errorf("the model report did not open: %s", eval[string](t, ctx, `document.querySelector("#status").textContent`))
	}
	clean("the model report")

	if err := chromedp.Do(ctx, chromedp.Navigate(up.base+"/docs")); err != nil {
		t.Fatal(err)
	}
	// Redoc draws its sidebar (and the attribution logo) after the load.
	if !evalUntil[bool](t, ctx, `document.querySelector('img[alt="redocly logo"]')?.complete`) {
		t.Error("the docs page did not render")
	}
	clean("/docs")
}

// sparklines: the rankings table draws every team's rating history, as
// many points as /rankings?include=rating_history serves it, from that one
// request (no request per team).
func sparklines(t *testing.T, ctx context.Context, rec *chromium.Record, up upStack) {
	t.Helper()
	b, code := up.get(t, "/v1/cs2/rankings?type=team&limit=20&include=rating_history", up.keys[0])
	var board struct {
		Data []struct {
			Name    string `json:"name"`
			History []any  `json:"rating_history"`
		}
	}
	if code != 200 || json.Unmarshal(b, &board) != nil || len(board.Data) == 0 {
		t.Fatalf("/rankings: %d %s", code, b)
	}
	want := make([]int, len(board.Data))
	for i, r := range board.Data {
		if want[i] = len(r.History); want[i] < 2 {
			want[i] = 0 // drawn as words, not a line
		}
	}
	evalUntil[int](t, ctx, `document.querySelectorAll("#rankings tbody tr").length`)
	var got []int
	if err := json.Unmarshal([]byte(eval[string](t, ctx, `JSON.stringify([...document.querySelectorAll("#rankings tbody tr")].map(
		(tr) => +(tr.querySelector("svg.spark")?.dataset.points || 0)))`)), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || slices.Max(got) < 2 {
		t.Errorf("the sparklines have %v points; the board's rating histories %v", got, want)
	}
	if label := eval[string](t, ctx, `document.querySelector("#rankings svg.spark")?.getAttribute("aria-label") || ""`); !strings.HasPrefix(label, "Rating ") {
		t.Errorf("a sparkline is labelled %q, not in words", label)
	}
	boards := 0
	for _, u := range rec.Requests() {
		switch {
		case strings.Contains(u, "/v1/cs2/rankings"):
			boards++
		case strings.Contains(u, "/ratings"):
			t.Errorf("the page read a team's rating history on its own: %s", u)
		}
	}
	if boards != 1 {
		t.Errorf("the page read the rankings %d times, want once", boards)
	}
}

// scoreMoves waits for a live score on the page to change while the page
// sends no REST request: the change came over the WebSocket.
func scoreMoves(t *testing.T, ctx context.Context, rec *chromium.Record) {
	t.Helper()
	const scores = `JSON.stringify([...document.querySelectorAll("#matches tr[data-status=live]")].map(
		(tr) => [tr.dataset.match, tr.querySelector(".score").textContent + " " + tr.querySelector(".maps").textContent]))`
	rest := func() int {
		n := 0
		for _, u := range rec.Requests() {
			if strings.Contains(u, "/v1/cs2/") && !strings.Contains(u, "/ws-token") {
				n++
			}
		}
		return n
	}
	read := func() map[string]string {
		var pairs [][2]string
		if err := json.Unmarshal([]byte(eval[string](t, ctx, scores)), &pairs); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, p := range pairs {
			m[p[0]] = p[1]
		}
		return m
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		reads, was := rest(), read()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			now := read()
			for id, s := range was {
				if now[id] != "" && now[id] != s && rest() == reads {
					return // moved, with no REST read in between
				}
			}
		}
	}
	t.Fatal("no live score on the page changed over the WebSocket")
}

// liveTeams are the live matches' "A vs B" as REST serves them.
func liveTeams(t *testing.T, up upStack, key string) map[string]bool {
	t.Helper()
	b, code := up.get(t, "/v1/cs2/matches?status=live,completed&limit=200", key)
	var page struct {
		Data []struct {
			TeamA string `json:"team_a_name"`
			TeamB string `json:"team_b_name"`
		}
	}
	if code != 200 || json.Unmarshal(b, &page) != nil {
		t.Fatalf("/matches: %d %s", code, b)
	}
	out := map[string]bool{}
	for _, m := range page.Data {
		out[m.TeamA+" vs "+m.TeamB] = true
	}
	return out
}

// eval evaluates expr in the page (DevTools evaluation: the page's CSP does
// not apply to it, as it does to chromedp.Poll's new Function).
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// evalUntil evaluates expr until it gives a value other than T's zero (null
// and undefined count as zero), for up to 30 seconds.
func evalUntil[T comparable](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	var zero T
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[*T](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if p != nil && *p != zero {
			return *p
		}
	}
	t.Errorf("%s: nothing after 30 s", expr)
	return zero
}
