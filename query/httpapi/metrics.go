package httpapi

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
)

// unmatchedRoute labels requests that matched no route (404, 405, and those
// fasthttp rejected before routing): the raw path must never be a label
// value, or a scanner would create a series per probed path.
const unmatchedRoute = "unmatched"

// metrics are the query tier's request metrics, labelled by route PATTERN
// and method (never the raw path, never an id).
type metrics struct {
	requests *prometheus.CounterVec   // route, method, status
	seconds  *prometheus.HistogramVec // route, method
	limited  *prometheus.CounterVec   // group

	mu       sync.RWMutex
	byMethod map[string]*routeMetrics // unmatched requests, by method label
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_query_requests_total",
			Help: "API requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchback_query_request_seconds",
			Help: "Time from routing to response of API requests, by route pattern and method.",
			// From cache hits (sub-millisecond) to partner fetches (seconds).
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		// Labelled by route group only: never the key or the address
		// (secrets must stay out of metrics, and a label per key would be
		// a series per key of a random-key flood).
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_query_rate_limited_total",
			Help: "API requests refused with 429 by the per-key rate limit, by route group (API base path).",
		}, []string{"group"}),
		byMethod: map[string]*routeMetrics{},
	}
	if reg != nil {
		m.requests = instrument.Register(reg, m.requests)
		m.seconds = instrument.Register(reg, m.seconds)
		m.limited = instrument.Register(reg, m.limited)
	}
	return m
}

// routeMetrics caches the series of one route and method, so that the hot
// path does no label hashing: the histogram observer is resolved at
// registration, counters once per status seen.
type routeMetrics struct {
	parent  *metrics
	pattern string
	method  string
	seconds prometheus.Observer
	// ok is the series of status 200, most answers: resolved once, then
	// read without the lock.
	ok atomic.Pointer[prometheus.Counter]

	mu       sync.RWMutex
	byStatus map[int]prometheus.Counter
}

func (m *metrics) route(pattern, method string) *routeMetrics {
	return &routeMetrics{
		parent: m, pattern: pattern, method: method,
		seconds:  m.seconds.WithLabelValues(pattern, method),
		byStatus: map[int]prometheus.Counter{},
	}
}

// unmatched returns the series of unrouted requests of a method; unknown
// methods share one "OTHER" series.
func (m *metrics) unmatched(method []byte) *routeMetrics {
	label := methodLabel(method)
	m.mu.RLock()
	rm := m.byMethod[label]
	m.mu.RUnlock()
	if rm != nil {
		return rm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm = m.byMethod[label]; rm == nil {
		rm = m.route(unmatchedRoute, label)
		m.byMethod[label] = rm
	}
	return rm
}

func (rm *routeMetrics) observe(status int, d time.Duration) {
	rm.seconds.Observe(d.Seconds())
	if status == 200 {
		if c := rm.ok.Load(); c != nil {
			(*c).Inc()
			return
		}
	}
	rm.mu.RLock()
	c := rm.byStatus[status]
	rm.mu.RUnlock()
	if c == nil {
		rm.mu.Lock()
		if c = rm.byStatus[status]; c == nil {
			c = rm.parent.requests.WithLabelValues(rm.pattern, rm.method, strconv.Itoa(status))
			rm.byStatus[status] = c
			if status == 200 {
				ok := c // its own variable: &c would move c to the heap on every call
				rm.ok.Store(&ok)
			}
		}
		rm.mu.Unlock()
	}
	c.Inc()
}

// methodLabel maps a request method to a label value from a fixed set, so
// that a client sending made-up methods cannot create series.
func methodLabel(m []byte) string {
	switch string(m) { // no allocation: switch on a converted []byte
	case "GET":
		return "GET"
	case "HEAD":
		return "HEAD"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "DELETE":
		return "DELETE"
	case "OPTIONS":
		return "OPTIONS"
	case "CONNECT":
		return "CONNECT"
	case "TRACE":
		return "TRACE"
	}
	return "OTHER"
}

// otherGroup labels routes registered outside the Base* paths.
const otherGroup = "other"

// routeGroup is the group label of a route pattern: the API base path it
// is under (the longest of the Base* constants that prefixes it), so that
// the label set is fixed by the code, whatever is requested.
func routeGroup(pattern string) string {
	group := otherGroup
	for _, base := range []string{BaseResellerV12, BaseResellerV13, BaseChannelV12, BaseRegistryV11, BaseOperatorV2, BaseAdminV1} {
		if (pattern == base || strings.HasPrefix(pattern, base+"/")) && (group == otherGroup || len(base) > len(group)) {
			group = base
		}
	}
	return group
}
