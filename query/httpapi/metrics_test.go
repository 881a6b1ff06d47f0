package httpapi

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRouteMetrics_ObserveCountsAndAllocatesNothing: observe runs on every
// request; once a status's series exists it allocates nothing, and every
// call is counted (status 200's series is read without the lock).
func TestRouteMetrics_ObserveCountsAndAllocatesNothing(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	rm := m.route("/v1.2/suppliers/{supplier_id}", "GET")
	for _, status := range []int{200, 404} {
		rm.observe(status, time.Millisecond) // creates the series
		if n := testing.AllocsPerRun(100, func() { rm.observe(status, time.Millisecond) }); n != 0 {
			t.Errorf("observe(%d) allocates %v times", status, n)
		}
	}
	for status, want := range map[string]float64{"200": 102, "404": 102} { // 1 + AllocsPerRun's warm-up run + 100
		if got := testutil.ToFloat64(m.requests.WithLabelValues("/v1.2/suppliers/{supplier_id}", "GET", status)); got != want {
			t.Errorf("status %s counted %v times, want %v", status, got, want)
		}
	}
}
