package app

import (
	"context"
	"github.com/prometheus/client_golang/prometheus"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/contract"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apidocs"
	"github.com/switchbackhq/switchback/query/httpapi"
)

type noPublish struct{}

func (noPublish) Publish(context.Context, ...stream.Message) error { return nil }

// routerParam is a router parameter with a kind, {path:*}: the OpenAPI
// template of it is {path}.
var routerParam = regexp.MustCompile(`\{([^}:]+):[^}]*\}`)

// TestRegisterAPI_ServesWhatTheDocumentsList holds the route table of the
// API listener to the OpenAPI documents (schemas/openapi): every route the
// binary serves is documented, and every documented operation is served,
// but for the known unserved ones of internal/contract (each naming its
// issue), which must still be unserved: an entry whose route appeared is
// stale and fails too.
func TestRegisterAPI_ServesWhatTheDocumentsList(t *testing.T) {
	srv := httpapi.New(httpapi.Options{Principals: principals.NewStore(noPublish{})})
	// Registration keeps references and reaches no server: a Redis client
	// that is never used and empty shared parts do.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := registerAPI(srv, &deps{redis: rdb}, &shared{}, nil, prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range srv.Routes() {
		pattern := routerParam.ReplaceAllString(r.Pattern, "{$1}")
		if pattern == apidocs.DocumentRoute { // one segment in the router (apidocs.Register)
			pattern = "/openapi/{family}.{format}"
		}
		served[r.Method+" "+pattern] = true
	}
	c, err := contract.New()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, r := range c.Routes() {
		documented[r[0]+" "+r[1]] = true
	}
	unserved := map[string]string{}
	for _, u := range contract.KnownUnserved {
		unserved[u.Method+" "+u.Route] = u.Issue
	}

	var undocumented, missing, stale []string
	for r := range served {
		if !documented[r] {
			undocumented = append(undocumented, r)
		}
	}
	for r := range documented {
		if !served[r] {
			if _, known := unserved[r]; !known {
				missing = append(missing, r)
			}
		}
	}
	for r, issue := range unserved {
		if served[r] || !documented[r] {
			stale = append(stale, r+" ("+issue+")")
		}
	}
	for _, l := range [][]string{undocumented, missing, stale} {
		slices.Sort(l)
	}
	if len(undocumented) > 0 {
		t.Errorf("served but in no document:\n  %s", strings.Join(undocumented, "\n  "))
	}
	if len(missing) > 0 {
		t.Errorf("documented but not served:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("known unserved entries that no longer hold (remove them from contract.KnownUnserved):\n  %s", strings.Join(stale, "\n  "))
	}
	t.Logf("%d routes served, %d operations documented, %d documented but known unserved", len(served), len(documented), len(unserved))
}
