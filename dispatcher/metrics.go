package dispatcher

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/schemas"
)

// backlogBuckets are the upper bounds of switchback_dispatcher_subscribers_by_backlog.
var backlogBuckets = []int64{0, 10, 100, 1000, 10000, 100000}

// lagBuckets are the bounds of the lag histograms (seconds): the change
// path's target is 250 ms end to end (issue 17), a lag of minutes is an
// outage.
var lagBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// Steps of switchback_dispatcher_step_seconds.
const (
	stepIntake  = "intake"
	stepClaim   = "claim"
	stepPublish = "publish"
	stepApply   = "apply"
)

// observeStep records how long a step that started at start took.
func (m *metrics) observeStep(step string, start time.Time) {
	m.stepSeconds.WithLabelValues(step).Observe(time.Since(start).Seconds())
}

// laggingSeries bounds the per-subscriber lag series: the subscribers
// furthest behind, at most this many at a time.
const laggingSeries = 20

// metrics of the dispatcher. Labels are types and outcomes, and delivery
// ids never. Per-subscriber backlog is exposed as a distribution (how many
// subscribers have a backlog up to N) and a maximum, which is what an
// alert on the bound needs; our own lag per subscriber (how late its
// oldest due delivery is, and its pending count) for the subscribers
// furthest behind only, so the series stay bounded whatever the number of
// subscribers.
type metrics struct {
	deliveries     *prometheus.CounterVec
	attemptSeconds *prometheus.HistogramVec
	firstSend      *prometheus.HistogramVec
	intakeAge      prometheus.Histogram
	stepSeconds    *prometheus.HistogramVec
	retries        *prometheus.CounterVec
	intake         *prometheus.CounterVec
	autoDisabled   prometheus.Counter
	autoDisabledG  prometheus.Gauge
	backlog        prometheus.Gauge
	backlogMax     prometheus.Gauge
	backlogLimit   prometheus.Gauge
	byBacklog      *prometheus.GaugeVec
	inflight       prometheus.Gauge
	claimedAhead   prometheus.Gauge
	lanes          prometheus.Gauge
	rebuilds       prometheus.Counter
	lagMax         prometheus.Gauge
	subLag         *prometheus.GaugeVec
	subPending     *prometheus.GaugeVec
	behind         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_dispatcher_deliveries_total",
			Help: "Attempts and non-attempts by outcome: delivered, retry, failed, suppressed (disableAll or backlog bound), dropped (rule disabled or deleted).",
		}, []string{"type", "outcome"}),
		attemptSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_dispatcher_attempt_seconds",
			Help:    "Duration of one webhook POST, connect included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12), // 5ms .. ~10s
		}, []string{"type"}),
		firstSend: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_dispatcher_first_send_delay_seconds",
			Help:    "From a notification's createdAt (the time of the change it reports) to the start of its first POST: the lag a subscriber sees after the change, throttleDelay included.",
			Buckets: lagBuckets,
		}, []string{"type"}),
		intakeAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_dispatcher_intake_age_seconds",
			Help:    "How old a notification record is when the dispatcher takes it from its topic (now minus the record's timestamp).",
			Buckets: lagBuckets,
		}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_dispatcher_step_seconds",
			Help:    "Duration of the dispatcher's round trips, by step: intake (a batch made durable: publish and schedule), claim (a lane's claim of due deliveries), publish and apply (a lane's batch of outcomes: to the topics, then to the schedule).",
			Buckets: lagBuckets,
		}, []string{"step"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_dispatcher_retries_total",
			Help: "Retries scheduled after a failed attempt.",
		}, []string{"type"}),
		intake: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_dispatcher_intake_total",
			Help: "Notifications read from the notifications topic, by what happened: scheduled, duplicate, suppressed, invalid.",
		}, []string{"result"}),
		autoDisabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_dispatcher_auto_disabled_total",
			Help: "Times a subscriber's backlog bound was reached and disableAll was set by the service.",
		}),
		autoDisabledG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_auto_disabled_subscribers",
			Help: "Subscribers this instance disabled whose backlog is still at the bound.",
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_backlog",
			Help: "Pending deliveries of all subscribers (queued, being retried or in flight).",
		}),
		backlogMax: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_backlog_max",
			Help: "Largest backlog of a single subscriber.",
		}),
		backlogLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_backlog_limit",
			Help: "Configured per-subscriber backlog bound (alert on backlog_max / backlog_limit).",
		}),
		byBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_subscribers_by_backlog",
			Help: "Subscribers with a pending backlog of at most max_backlog deliveries (cumulative, like histogram buckets; not named le, which is reserved for histograms).",
		}, []string{"max_backlog"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_inflight",
			Help: "Webhook POSTs in flight.",
		}),
		claimedAhead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_claimed_ahead",
			Help: "Deliveries claimed by the lanes and waiting for a free slot (at most 3x the lane concurrency per lane).",
		}),
		lanes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_lanes",
			Help: "Subscribers being sent to by this instance.",
		}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_dispatcher_schedule_rebuilds_total",
			Help: "Times the Redis schedule was rebuilt from the deliveries topic.",
		}),
		lagMax: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_lag_seconds_max",
			Help: "How late the most overdue delivery of any subscriber is: our own lag (a delivery waiting for a retry is not overdue).",
		}),
		subLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_subscriber_lag_seconds",
			Help: "How late the subscriber's oldest due delivery is, for the 20 subscribers furthest behind.",
		}, []string{"subscriber"}),
		subPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_subscriber_pending",
			Help: "Pending deliveries of the subscriber, for the 20 subscribers furthest behind.",
		}, []string{"subscriber"}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_dispatcher_subscribers_past_bound",
			Help: "Subscribers whose backlog is at or past the bound (disabled only when failing).",
		}),
	}
	if reg == nil {
		return m
	}
	m.deliveries = instrument.Register(reg, m.deliveries)
	m.attemptSeconds = instrument.Register(reg, m.attemptSeconds)
	m.firstSend = instrument.Register(reg, m.firstSend)
	m.intakeAge = instrument.Register(reg, m.intakeAge)
	m.stepSeconds = instrument.Register(reg, m.stepSeconds)
	m.retries = instrument.Register(reg, m.retries)
	m.intake = instrument.Register(reg, m.intake)
	m.autoDisabled = instrument.Register(reg, m.autoDisabled)
	m.autoDisabledG = instrument.Register(reg, m.autoDisabledG)
	m.backlog = instrument.Register(reg, m.backlog)
	m.backlogMax = instrument.Register(reg, m.backlogMax)
	m.backlogLimit = instrument.Register(reg, m.backlogLimit)
	m.byBacklog = instrument.Register(reg, m.byBacklog)
	m.inflight = instrument.Register(reg, m.inflight)
	m.claimedAhead = instrument.Register(reg, m.claimedAhead)
	m.lanes = instrument.Register(reg, m.lanes)
	m.rebuilds = instrument.Register(reg, m.rebuilds)
	m.lagMax = instrument.Register(reg, m.lagMax)
	m.subLag = instrument.Register(reg, m.subLag)
	m.subPending = instrument.Register(reg, m.subPending)
	m.behind = instrument.Register(reg, m.behind)
	for _, st := range []string{stepIntake, stepClaim, stepPublish, stepApply} {
		m.stepSeconds.WithLabelValues(st)
	}
	for _, t := range schemas.NotificationTypes() { // at 0 from the start, for rates and ratios
		m.retries.WithLabelValues(t)
		for _, o := range []string{schemas.OutcomeDelivered, schemas.OutcomeRetry, schemas.OutcomeFailed, schemas.OutcomeSuppressed, schemas.OutcomeDropped} {
			m.deliveries.WithLabelValues(t, o)
		}
	}
	return m
}

// observeLags sets the backlog distribution, the lag gauges and the
// per-subscriber series of the subscribers furthest behind.
func (m *metrics) observeLags(lags []subscriberLag, limit int) {
	backlogs := make(map[string]int64, len(lags))
	var lagMax float64
	past := 0
	for _, l := range lags {
		backlogs[l.sub] = l.pending
		lagMax = max(lagMax, l.late.Seconds())
		if l.pending >= int64(limit) {
			past++
		}
	}
	m.observeBacklogs(backlogs)
	m.lagMax.Set(lagMax)
	m.behind.Set(float64(past))
	top := slices.Clone(lags)
	slices.SortFunc(top, func(a, b subscriberLag) int {
		if c := cmp.Compare(b.late, a.late); c != 0 {
			return c
		}
		return cmp.Compare(b.pending, a.pending)
	})
	top = top[:min(len(top), laggingSeries)]
	m.subLag.Reset()
	m.subPending.Reset()
	for _, l := range top {
		m.subLag.WithLabelValues(l.sub).Set(l.late.Seconds())
		m.subPending.WithLabelValues(l.sub).Set(float64(l.pending))
	}
}

func (m *metrics) observeBacklogs(backlogs map[string]int64) {
	var total, largest int64
	counts := make([]int, len(backlogBuckets))
	for _, n := range backlogs {
		total += n
		largest = max(largest, n)
		for i, le := range backlogBuckets {
			if n <= le {
				counts[i]++
			}
		}
	}
	m.backlog.Set(float64(total))
	m.backlogMax.Set(float64(largest))
	for i, le := range backlogBuckets {
		m.byBacklog.WithLabelValues(strconv.FormatInt(le, 10)).Set(float64(counts[i]))
	}
	m.byBacklog.WithLabelValues("+Inf").Set(float64(len(backlogs)))
}
