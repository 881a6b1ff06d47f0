package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// TestBinary_DemoShowsEveryNotificationTypeWithin30s is `make run` as a
// user sees it: with the demo data on, within 30 seconds of the API
// answering, the built-in sink has received a verified notification of
// every type, /metrics counts them, no signature failed, and the banner
// shows the sink and the five commands.
func TestBinary_DemoShowsEveryNotificationTypeWithin30s(t *testing.T) {
	p := startBinary(t, "SWITCHBACK_DEMO_DATA=true", "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true")
	start := time.Now()
	banner := p.stdout.String()
	for _, want := range []string{"Webhook sink http://127.0.0.1:", "/v1.2/suppliers", "/availabilities?start=", "/registry/v1.1/product/test/", "/registry/v1.1/deliveries?limit=10", "demo-sink-secret", "Booking system simulator http://127.0.0.1:"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	series := regexp.MustCompile(`switchback_demo_sink_received_total\{type="([a-z-]+)",verified="(true|false|unchecked)"\} ([0-9.e+]+)`)
	var got map[string]float64
	for {
		raw := p.metrics(t)
		got = map[string]float64{}
		for _, m := range series.FindAllStringSubmatch(string(raw), -1) {
			v, _ := strconv.ParseFloat(m[3], 64)
			if m[2] == "false" && v > 0 {
				t.Fatalf("the sink saw %v notifications of type %s whose signature did not verify", v, m[1])
			}
			if m[2] == "true" {
				got[m[1]] = v
			}
		}
		missing := []string{}
		for _, typ := range schemas.NotificationTypes() {
			if got[typ] == 0 {
				missing = append(missing, typ)
			}
		}
		if len(missing) == 0 {
			t.Logf("every type verified at the sink %s after the API answered: %v", time.Since(start).Round(time.Second), got)
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("after 30 s the sink has verified %v; missing %v", got, missing)
		}
		time.Sleep(250 * time.Millisecond)
	}
	p.stop(t)
}
