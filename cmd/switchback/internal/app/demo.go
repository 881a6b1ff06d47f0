package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/demo"
	"github.com/switchbackhq/switchback/internal/platform/config"
)

// DemoChannelID is the sales channel of the demo reseller. It is fixed so
// that the README's curl commands and the demo data agree across restarts.
const DemoChannelID = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10"

// DemoPrincipal is one of the fixed, publicly documented demo credentials
// (ARCHITECTURE.md, "Interfaces and conventions"). They exist only when
// SWITCHBACK_DEMO=true.
type DemoPrincipal struct {
	Role, Name, Key, Secret, ChannelID string
}

// DemoPrincipals returns the demo admin, operator and reseller.
func DemoPrincipals() []DemoPrincipal {
	return []DemoPrincipal{
		{Role: "admin", Name: "Demo admin", Key: "demo-admin", Secret: "demo-admin-secret"},
		{Role: "operator", Name: "Demo operator", Key: "demo-operator", Secret: "demo-operator-secret"},
		{Role: "reseller", Name: "Demo reseller", Key: "demo-reseller", Secret: "demo-reseller-secret", ChannelID: DemoChannelID},
		// The demo data's subscriber: its rules point at the built-in sink,
		// so that demo-reseller's rules stay free for the user's own.
		{Role: "reseller", Name: "Demo sink subscriber", Key: "demo-sink", Secret: "demo-sink-secret", ChannelID: DemoChannelID},
	}
}

// startDemo runs the demo data (cmd/switchback/internal/demo) against this process's API
// with the demo operator and the demo sink subscriber.
func startDemo(cfg config.Config, httpAddr string, log *slog.Logger, reg prometheus.Registerer, closers *closeStack) (*demo.Demo, error) {
	if !cfg.OutboundAllowHTTP || !cfg.OutboundAllowPrivate {
		// The outbound policy is never relaxed by demo mode itself: the
		// operator says so (make run does).
		return nil, errors.New("demo data: the simulated partner, booking system and webhook sink listen on loopback over http, " +
			"which the outbound policy refuses; set SWITCHBACK_OUTBOUND_ALLOW_HTTP=true and SWITCHBACK_OUTBOUND_ALLOW_PRIVATE=true " +
			"(make run does), or SWITCHBACK_DEMO_DATA=false")
	}
	cred := func(key string) demo.Cred {
		for _, p := range DemoPrincipals() {
			if p.Key == key {
				return demo.Cred{Key: p.Key, Secret: p.Secret}
			}
		}
		return demo.Cred{}
	}
	d, err := demo.Start(demo.Options{API: "http://" + httpAddr, Operator: cred("demo-operator"), Subscriber: cred("demo-sink"),
		ChannelID: DemoChannelID, SinkAddr: cfg.DemoSinkAddr, BookingSystemAddr: cfg.DemoBookingSystemAddr, PartnerAddr: cfg.DemoPartnerAddr, Logger: log, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("demo data: %w", err)
	}
	// The rounds of changes stop first; the sink and the simulated systems
	// last, after the tiers (which may still be talking to them).
	closers.push("demo changes", d.Stop)
	closers.pushLast("demo sink and simulated partner and booking system", d.Close)
	return d, nil
}
