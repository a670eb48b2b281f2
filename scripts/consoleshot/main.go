// Command consoleshot takes the README's screenshot of the console
// (docs/console.png): it runs `eo up` as make run does, on a fresh store in a
// temporary folder, opens the console link it prints in a headless Chromium,
// charts a completed match with both match-winner lines and the closing
// line marked while the live matches move, and saves what the browser
// window shows.
//
//	make build && go run ./scripts/consoleshot [-eo bin/eo] [-out docs/console.png]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eodata/eo/internal/testkit/chromium"
)

func main() {
	eo := flag.String("eo", "bin/eo", "the eo binary (make build)")
	out := flag.String("out", "docs/console.png", "the PNG to write")
	width := flag.Int("width", 1280, "browser window width")
	height := flag.Int("height", 1000, "browser window height")
	flag.Parse()
	if err := shoot(*eo, *out, *width, *height); err != nil {
		log.Fatal(err)
	}
}

func shoot(eo, out string, width, height int) error {
	bin, err := chromium.Find()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "consoleshot")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	link, stop, err := up(eo, dir)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := chromium.New(context.Background(), bin, filepath.Join(dir, "chromium"), width, height)
	defer cancel()
	ctx, timeout := context.WithTimeout(ctx, 5*time.Minute)
	defer timeout()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height)), chromedp.Navigate(link)); err != nil {
		return err
	}
	// Once matches are live and the first one's line is charted, chart a
	// completed match with both lines and its closing line marked, if one
	// is listed.
	ready := `document.querySelector("#matches tr[data-status=live]") !== null &&
		+(document.querySelector("#chart path.line.eo_market")?.dataset.points || 0) > 0`
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](ready))
		if err != nil {
			return fmt.Errorf("waiting for live matches and a line: %w", err)
		}
		if ok {
			break
		}
		time.Sleep(time.Second)
	}
	const pick = `(async () => {
		for (const tr of document.querySelectorAll("#matches tr[data-status=completed]")) {
			tr.querySelector("button").click();
			await new Promise((ok) => setTimeout(ok, 2000));
			const rows = [...S.points.values()];
			if (rows.some((r) => r.source === "eo_model") && rows.some((r) => r.is_closing)) return true;
		}
		document.querySelector("#matches tr[data-status=live] button").click();
		await new Promise((ok) => setTimeout(ok, 2000));
		return false;
	})()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](pick, chromedp.EvalAwaitPromise)); err != nil {
		return err
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}

// up starts `eo up` on a store and work folder under dir and a free port,
// and returns the console link it prints and how to stop it.
func up(eo, dir string) (link string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logs, err := os.Create(filepath.Join(dir, "eo-up.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(eo, "up", "--store", filepath.Join(dir, "store"), "--work", filepath.Join(dir, "work"), "--addr", addr)
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		logs.Close()
	}
	fmt.Println("eo up: generating the world, running the pipeline (about a minute)")
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "console: "); ok {
			link = strings.Fields(rest)[0]
			break
		}
	}
	if link == "" {
		stop()
		return "", nil, errors.New("eo up printed no console link (its log: " + logs.Name() + ")")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return link, stop, nil
}
