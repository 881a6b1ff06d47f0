package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/config"
	"github.com/switchbackhq/switchback/internal/demo"
	"github.com/switchbackhq/switchback/internal/ops"
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
	}
	fmt.Fprintf(&b, "  Ops         http://%s   (/metrics /healthz /readyz)\n", ep.Ops)
	fmt.Fprintf(&b, "  Kafka       %s (%s)\n", strings.Join(d.brokers, ","), d.kafkaMode)
	fmt.Fprintf(&b, "  Redis       %s (%s, %s)\n", config.RedactURL(d.redisURL), d.redisMode, d.redisKind)
	switch {
	case !needsClickHouse(tiers):
	case d.chMode == ops.ModeParked:
		fmt.Fprintf(&b, "  ClickHouse  parked: no clickhouse-server on PATH and SWITCHBACK_CLICKHOUSE_URL unset;\n              history waits on its topic until one is configured\n")
	default:
		fmt.Fprintf(&b, "  ClickHouse  %s (%s)\n", config.RedactURL(d.chURL), d.chMode)
	}
	fmt.Fprintf(&b, "  Data dir    %s\n", cfg.DataDir)
	if cfg.Demo {
		b.WriteString("\nDemo mode (SWITCHBACK_DEMO=true): fixed, publicly known credentials; never use in production.\n")
		b.WriteString("  role      X-API-Key        X-API-Secret\n")
		for _, p := range DemoPrincipals() {
			fmt.Fprintf(&b, "  %-9s %-16s %s\n", p.Role, p.Key, p.Secret)
		}
		if cfg.OutboundAllowHTTP || cfg.OutboundAllowPrivate {
			b.WriteString("  Outbound calls (webhooks, partners, booking systems) to http:// and private/loopback addresses are ALLOWED (SWITCHBACK_OUTBOUND_ALLOW_HTTP/PRIVATE).\n")
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

// writeTry prints five copy-paste commands: list suppliers, read
// availability, create a rule, trigger a test notification, read the
// delivery log.
func writeTry(b *strings.Builder, ep Endpoints) {
	api := "http://" + ep.HTTP
	r := "-H 'X-API-Key: demo-reseller' -H 'X-API-Secret: demo-reseller-secret'"
	tomorrow := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	hook := "http://127.0.0.1:9999/supplier"
	if ep.DemoSink != "" {
		fmt.Fprintf(b, "\nDemo data: supplier %s, products %s and %s; a rule of every type (subscriber demo-sink)\n", demo.SupplierID, demo.ProductGlacier, demo.ProductCanyon)
		fmt.Fprintf(b, "  Webhook sink %s verifies and logs every notification (switchback_demo_sink_received_total)\n", ep.DemoSink)
		hook = ep.DemoSink + "/yours"
	}
	b.WriteString("\nTry (as the demo reseller):\n")
	fmt.Fprintf(b, "  curl -s %s %s/v1.2/suppliers\n", r, api)
	fmt.Fprintf(b, "  curl -s %s '%s/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s'\n", r, api, demo.SupplierID, demo.ProductGlacier,
		tomorrow.Format(time.RFC3339), tomorrow.AddDate(0, 0, 2).Format(time.RFC3339))
	fmt.Fprintf(b, "  curl -s %s -X POST -d '{\"url\":\"%s\"}' %s/registry/v1.1/supplier\n", r, hook, api)
	fmt.Fprintf(b, "  curl -s %s -X POST -d '{\"supplierID\":\"%s\",\"operation\":\"updated\"}' %s/registry/v1.1/supplier/test/<rule id from above>\n", r, demo.SupplierID, api)
	fmt.Fprintf(b, "  curl -s -H 'X-API-Key: demo-sink' -H 'X-API-Secret: demo-sink-secret' '%s/registry/v1.1/deliveries?limit=10'   (needs ClickHouse)\n", api)
}
