package availability

import (
	"sync/atomic"
	"testing"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/query/availapi"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// TestRoutes_RegisterNextToTheResellerCatalog: the availability routes
// share the reseller prefix (/suppliers/{supplier_id}/products/{product_id})
// with query/reseller on one server without a router conflict.
func TestRoutes_RegisterNextToTheResellerCatalog(t *testing.T) {
	var st atomic.Pointer[catalogredis.Store]
	var rec catalogtest.Recorder
	e := querytest.Start(t, querytest.Options{Quiet: true, Routes: func(s *httpapi.Server) {
		// Redis is only touched by reads; the catalog pointer is set below.
		availapi.Register(s, availcache.New(availcache.Options{Redis: redisPlaceholder(), Catalog: lazyCatalog{&st},
			Partner: partner.NewClient(partner.Options{Outbound: allowLoopback}), Publisher: &rec}))
	}})
	st.Store(e.Store)
	status, _ := e.Do(t, "GET", "/v1.3/suppliers/s1/products/p1/availabilities", e.Reseller1, "")
	if status != 400 {
		t.Fatalf("status %d, want 400 (start missing)", status)
	}
}
