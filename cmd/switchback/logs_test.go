package main

import (
	"strings"
	"testing"
	"time"
)

// expectedWarnings are the WARN lines a healthy start may print, with why.
var expectedWarnings = map[string]string{
	"demo mode: the fixed demo principals are enabled": "demo mode on purpose: the publicly known credentials must stand out in any log",
}

// TestBinary_NormalRestartLogsNoWarning is `make run`, Ctrl-C and `make
// run` again, the demo running both times: neither start nor the minute
// of demo after it logs a warning or an error (but the demo-mode warning
// itself), and the API's per-request lines stay at debug
// (SWITCHBACK_ACCESS_LOG's default), out of an info log.
func TestBinary_NormalRestartLogsNoWarning(t *testing.T) {
	p := startBinary(t, "SWITCHBACK_DEMO_DATA=true", "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true")
	waitDemoEveryType(t, p, 90*time.Second)
	p.stop(t)
	first := p.stderr.String()

	p = restartBinary(t, p)
	waitDemoEveryType(t, p, 90*time.Second)
	time.Sleep(10 * time.Second) // a few rounds of the demo after it is complete
	p.stop(t)
	second := p.stderr.String()

	for run, log := range map[string]string{"first start": first, "restart": second} {
		var lines, requests int
		for _, l := range strings.Split(log, "\n") {
			if l == "" {
				continue
			}
			lines++
			if strings.Contains(l, "msg=request ") {
				requests++
			}
			if !strings.Contains(l, "level=WARN") && !strings.Contains(l, "level=ERROR") {
				continue
			}
			expected := false
			for prefix := range expectedWarnings {
				if strings.Contains(l, `msg="`+prefix) {
					expected = true
				}
			}
			if !expected {
				t.Errorf("%s logged: %s", run, l)
			}
		}
		if requests > 0 {
			t.Errorf("%s: %d per-request lines at the default level (want them at debug)", run, requests)
		}
		t.Logf("%s: %d log lines", run, lines)
	}
}
