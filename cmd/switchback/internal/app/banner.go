package app

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/demo"
	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/ops"
)

// printBanner tells the person who started the process where everything is
// and how to use it. It prints no secret except the fixed, documented demo
// ones (demo mode only).
func printBanner(w io.Writer, cfg config.Config, opts Options, tiers []string, d *deps, ep Endpoints) {
	if w == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nSwitchback %s is up (%s)\n\n", opts.Version, strings.Join(tiers, ", "))
	if ep.HTTP != "" {
		fmt.Fprintf(&b, "  API         http://%s   (/v1.2 /v1.3 /channel/v1.2 /registry/v1.1 /operator/v2 /admin/v1)\n", ep.HTTP)
		fmt.Fprintf(&b, "  API docs    http://%s/docs   (OpenAPI 3.1: /openapi/{reseller,channel,registry,operator,admin}.json)\n", ep.HTTP)
	}
	fmt.Fprintf(&b, "  Ops         http://%s   (/metrics /healthz /readyz)\n", ep.Ops)
	fmt.Fprintf(&b, "  Kafka       %s (%s)\n", strings.Join(d.brokers, ","), d.kafkaMode)
	fmt.Fprintf(&b, "  Redis       %s (%s, %s)\n", d.redisAddr, d.redisMode, d.redisKind)
	switch {
	case !needsClickHouse(tiers):
	case d.chMode == ops.ModeParked:
		fmt.Fprintf(&b, "  ClickHouse  parked: no clickhouse-server on PATH and SWITCHBACK_CLICKHOUSE_URL unset;\n              history waits on its topic until one is configured\n")
	default:
		fmt.Fprintf(&b, "  ClickHouse  %s (%s)\n", config.RedactURL(d.chURL), d.chMode)
		if cmd := clickhouseClient(d.chURL); cmd != "" {
			fmt.Fprintf(&b, "  Analysts    %s   # tables and queries: docs/analytics.md\n", cmd)
		}
	}
	fmt.Fprintf(&b, "  Data dir    %s\n", cfg.DataDir)
	if cfg.Demo {
		b.WriteString("\nDemo mode (SWITCHBACK_DEMO=true): fixed, publicly known credentials; never use in production.\n")
		b.WriteString("  role      X-API-Key        X-API-Secret\n")
		for _, p := range DemoPrincipals() {
			fmt.Fprintf(&b, "  %-9s %-16s %s\n", p.Role, p.Key, p.Secret)
		}
		if ep.HTTP != "" {
			fmt.Fprintf(&b, "  Web console http://%s/console: sign in with a reseller's or an operator's key and secret above.\n", ep.HTTP)
		}
		if cfg.OutboundAllowHTTP || cfg.OutboundAllowPrivate {
			b.WriteString("  Outbound calls (webhooks, partners, booking systems) to http:// and private/loopback addresses are ALLOWED (SWITCHBACK_OUTBOUND_ALLOW_HTTP/PRIVATE).\n")
		}
		if len(cfg.DemoSet) > 0 {
			fmt.Fprintf(&b, "  The demo data turned on %s (not given): its sink and simulators are on http://127.0.0.1.\n", strings.Join(cfg.DemoSet, ", "))
		}
		if ep.HTTP != "" {
			writeTry(&b, ep)
		}
	}
	if cfg.AdminKey != "" {
		fmt.Fprintf(&b, "\nBootstrap admin principal: key %s (secret from SWITCHBACK_ADMIN_SECRET)\n", cfg.AdminKey)
	}
	b.WriteString("\nCtrl-C stops everything this process started.\n\n")
	_, _ = io.WriteString(w, b.String())
}

// clickhouseClient is the clickhouse-client command that opens the
// history database of chURL (native protocol), without its password.
func clickhouseClient(chURL string) string {
	u, err := url.Parse(chURL)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "9000"
	}
	cmd := "clickhouse-client --host " + host + " --port " + port
	if u.User != nil && u.User.Username() != "" && u.User.Username() != "default" {
		cmd += " --user " + u.User.Username()
	}
	if _, ok := u.User.Password(); ok {
		cmd += " --password <password>"
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "default" {
		cmd += " --database " + db
	}
	return cmd
}

// SettingsMarkdown renders the configuration table for the README.
func SettingsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	for _, s := range config.Settings() {
		def := s.Default
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s |\n", s.Env, s.Flag, def, s.Usage)
	}
	return b.String()
}

// writeTry prints copy-paste commands: list suppliers, read availability,
// create a rule at the demo sink, trigger a test notification (its
// placeholder is the id the previous answer gave), read the delivery log;
// and where the operators' and analysts' way in is. Every line runs as
// pasted (TestREADME_EveryShellBlockAndBannerLineRuns); notes are shell
// comments.
func writeTry(b *strings.Builder, ep Endpoints) {
	api := "http://" + ep.HTTP
	r := "-H 'X-API-Key: demo-reseller' -H 'X-API-Secret: demo-reseller-secret'"
	tomorrow := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	if ep.DemoSink == "" {
		return // without the demo data, no sink to point a rule at
	}
	fmt.Fprintf(b, "\nDemo data: supplier %s, products %s and %s; a rule of every type (subscriber demo-sink)\n", demo.SupplierID, demo.ProductGlacier, demo.ProductCanyon)
	fmt.Fprintf(b, "  Webhook sink %s verifies every notification (switchback_demo_sink_received_total) and logs the first of each type\n", ep.DemoSink)
	if ep.DemoBookingSystem != "" {
		fmt.Fprintf(b, "  Booking system simulator %s (spec doc 3; bearer token demo-booking-token; suppliers S1, connected by the demo, and S2, free for you)\n", ep.DemoBookingSystem)
	}
	fmt.Fprintf(b, "  OCTO supplier endpoint %s/octo/%s with bearer token demo-reseller:demo-reseller-secret (README, \"Selling through OCTO\")\n", api, demo.SupplierID)
	b.WriteString("\nTry (as the demo reseller; one rule per notification type per subscriber: a second POST of a type is 409, change it with PUT):\n")
	fmt.Fprintf(b, "  curl -s %s %s/v1.2/suppliers\n", r, api)
	fmt.Fprintf(b, "  curl -s %s '%s/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s'\n", r, api, demo.SupplierID, demo.ProductGlacier,
		tomorrow.Format(time.RFC3339), tomorrow.AddDate(0, 0, 2).Format(time.RFC3339))
	// The product type: the README's walk-through takes the supplier type,
	// so a newcomer who follows both gets no 409.
	fmt.Fprintf(b, "  curl -s %s -X POST -d '{\"url\":\"%s/yours\"}' %s/registry/v1.1/product\n", r, ep.DemoSink, api)
	fmt.Fprintf(b, "  curl -s %s -X POST -d '{\"supplierID\":\"%s\",\"productID\":\"%s\",\"operation\":\"updated\"}' %s/registry/v1.1/product/test/<rule id>\n", r, demo.SupplierID, demo.ProductGlacier, api)
	fmt.Fprintf(b, "  curl -s -H 'Authorization: Bearer demo-reseller:demo-reseller-secret' %s/octo/%s/products   # the same supplier to an OCTO client\n", api, demo.SupplierID)
	fmt.Fprintf(b, "  curl -s -H 'X-API-Key: demo-sink' -H 'X-API-Secret: demo-sink-secret' '%s/registry/v1.1/deliveries?limit=10'   # the demo's deliveries (needs ClickHouse)\n", api)
}
