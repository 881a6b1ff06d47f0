package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findChromium finds Debian's chromium (or another Chrome on PATH); the
// browser tests skip without one unless SWITCHBACK_REQUIRE_INTEGRATION=1.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
		t.Fatal("chromium not installed (Debian package chromium) and SWITCHBACK_REQUIRE_INTEGRATION=1")
	}
	t.Skip("chromium not installed (Debian package chromium)")
	return ""
}

// chromiumAllocator runs headless Chromium at chrome with a fresh profile
// and none of its own traffic (no QUIC, background networking, component
// updates, sync or default apps), its window width×height; extra adds
// flags.
func chromiumAllocator(ctx context.Context, t *testing.T, chrome string, width, height int, extra ...chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc) {
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}, extra...)
	return chromedp.NewExecAllocator(ctx, opts...)
}

// openTab starts the browser of alloc (if not yet) and attaches a tab
// whose events go to listen, with the network and log domains on.
func openTab(t *testing.T, alloc context.Context, listen func(ev any)) (context.Context, context.CancelFunc) {
	t.Helper()
	tab, cancel := chromedp.NewContext(alloc, chromedp.WithListener(listen))
	if err := chromedp.Do(tab); err != nil { // starts the browser, attaches the tab
		cancel()
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		cancel()
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, log.Enable, cdp.Empty{}); err != nil {
		cancel()
		t.Fatal(err)
	}
	return tab, cancel
}

// browserLog is what a page did, from the browser's events.
type browserLog struct {
	mu         sync.Mutex
	requests   map[network.RequestID]string // request id -> URL
	blocked    map[network.RequestID]string // request id -> why the browser blocked it before the network
	failed     []string
	exceptions []string
	console    []string
}

func (b *browserLog) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests[ev.RequestID] = ev.Request.URL
	case *network.EventLoadingFailed:
		if ev.BlockedReason != "" {
			b.blocked[ev.RequestID] = string(ev.BlockedReason)
		} else {
			b.failed = append(b.failed, b.requests[ev.RequestID]+": "+ev.ErrorText)
		}
	case *runtime.EventExceptionThrown:
		b.exceptions = append(b.exceptions, ev.ExceptionDetails.Text+" "+describeException(ev.ExceptionDetails))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			b.console = append(b.console, ev.Entry.Text)
		}
	}
}

func describeException(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

// TestBinary_DocsRenderTheResellerAPIInChromium opens /docs of the running
// binary in headless Chromium (Debian's chromium) and checks that the
// vendored Redoc rendered the reseller API: the page says it loaded the
// document, its visible text has the API's title and operations, the
// registry page shows the webhooks, the OCTO page its reservation and
// confirmation, nothing was asked of any address but
// the binary's (the one outside image Redoc has is blocked by the page's
// Content-Security-Policy before any request), and no script failed. The
// screenshots are kept in the test output directory
// (SWITCHBACK_TEST_OUTDIR, default bin/test-output). Skipped without
// chromium unless SWITCHBACK_REQUIRE_INTEGRATION=1.
func TestBinary_DocsRenderTheResellerAPIInChromium(t *testing.T) {
	chrome := findChromium(t)
	p := startBinary(t)
	base := "http://" + p.api

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromiumAllocator(ctx, t, chrome, 1400, 1000)
	defer cancelAlloc()

	pages := []struct {
		path, shot string
		want       []string // visible text
	}{
		{"/docs", "docs-reseller.png", []string{
			"Switchback API reference", "Switchback reseller API", "Version 1.3", "Version 1.2",
			"List the suppliers visible to the channel", "Acquire a hold", "Create a booking from a hold",
		}},
		{"/docs/registry", "docs-registry.png", []string{
			"Switchback notification registry API and webhooks", "Webhooks", "The availability notification",
			"Create the supplier rule",
		}},
		{"/docs/octo", "docs-octo.png", []string{
			"Switchback OCTO API", "Make a reservation", "Confirm a reservation", "Availability by day",
		}},
	}
	for _, pg := range pages {
		t.Run(strings.TrimPrefix(pg.path, "/"), func(t *testing.T) {
			bl := &browserLog{requests: map[network.RequestID]string{}, blocked: map[network.RequestID]string{}}
			tab, closeTab := openTab(t, allocCtx, bl.listen)
			defer closeTab()
			if err := chromedp.Do(tab, chromedp.Navigate(base+pg.path), chromedp.WaitReady(chromedp.CSS(`body[data-redoc]`))); err != nil {
				t.Fatalf("the page never said Redoc loaded: %v", err)
			}
			state, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.getAttribute('data-redoc') + ' ' + (document.body.getAttribute('data-redoc-error') || '')`))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(state) != "ready" {
				t.Fatalf("Redoc: %s", state)
			}
			text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range pg.want {
				// innerText applies CSS text-transform (Redoc's group
				// titles are upper case).
				if !strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
					t.Errorf("the rendered page does not show %q", w)
				}
			}
			shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if len(shot) < 10_000 {
				t.Errorf("screenshot of %d bytes: a blank page?", len(shot))
			}
			if err := writeTestOutput(pg.shot, shot); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot of %s: %s (%d bytes)", pg.path, filepath.Join(testOutputDir(), pg.shot), len(shot))

			bl.mu.Lock()
			defer bl.mu.Unlock()
			for id, u := range bl.requests {
				pu, err := url.Parse(u)
				local := err == nil && (pu.Scheme == "data" || pu.Scheme == "blob" || pu.Host == p.api)
				if _, isBlocked := bl.blocked[id]; !local && !isBlocked {
					t.Errorf("the page asked the network for %s", u)
				}
			}
			for id, why := range bl.blocked {
				t.Logf("blocked before the network (%s): %s", why, bl.requests[id])
			}
			for _, f := range bl.failed {
				t.Errorf("a request of the page failed: %s", f)
			}
			for _, e := range bl.exceptions {
				t.Errorf("uncaught exception in the page: %s", e)
			}
			for _, c := range bl.console {
				// The blocked Redocly logo is the one expected refusal.
				if strings.Contains(c, "cdn.redoc.ly") && strings.Contains(c, "Content Security Policy") {
					continue
				}
				t.Errorf("console error: %s", c)
			}
		})
	}
}
