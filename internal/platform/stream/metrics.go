package stream

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
)

// Metrics are the producer and consumer metrics. Labels are topics, groups
// and partition numbers only: never keys or ids, whose cardinality is
// unbounded. A nil *Metrics records nothing.
type Metrics struct {
	consumed        *prometheus.CounterVec
	handlerFailures *prometheus.CounterVec
	deadLettered    *prometheus.CounterVec
	fenced          *prometheus.CounterVec
	handlerSeconds  *prometheus.HistogramVec
	recordAge       *prometheus.HistogramVec
	lag             *prometheus.GaugeVec
	produced        *prometheus.CounterVec
	produceErrors   *prometheus.CounterVec
	produceSeconds  prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered). Calling it again with the same registry returns collectors
// bound to the ones already registered, because `switchback run` starts
// every tier in one process and each tier builds its own Metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_consumed_total",
			Help: "Messages fetched by a consumer group, before handling.",
		}, []string{"topic", "group"}),
		handlerFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_handler_failures_total",
			Help: "Handler attempts that returned an error (each retry counts).",
		}, []string{"topic", "group"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_dead_lettered_total",
			Help: "Messages published to the dead-letter topic after the last attempt failed.",
		}, []string{"topic", "group"}),
		fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_fenced_total",
			Help: "Handler calls (or batches) done again because the Redis views were lost or rebuilt meanwhile (not attempts).",
		}, []string{"topic", "group"}),
		handlerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_stream_handler_seconds",
			Help:    "Duration of one handler attempt.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs .. ~26s
		}, []string{"topic", "group"}),
		recordAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_stream_record_age_seconds",
			Help:    "How old a record is when its consumer group takes it (now minus the record's timestamp): the time it waited in the topic, plus the stages before it on the change path.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"topic", "group"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchback_stream_lag_messages",
			Help: "Records behind the partition's high watermark after the last fetched message.",
		}, []string{"topic", "partition", "group"}),
		produced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_produced_total",
			Help: "Messages acknowledged by the brokers (acks=all).",
		}, []string{"topic"}),
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_stream_produce_errors_total",
			Help: "Messages that could not be produced.",
		}, []string{"topic"}),
		produceSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_stream_produce_seconds",
			Help:    "Duration of one Publish call, batching delay included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
		}),
	}
	if reg == nil {
		return m
	}
	m.consumed = instrument.Register(reg, m.consumed)
	m.handlerFailures = instrument.Register(reg, m.handlerFailures)
	m.deadLettered = instrument.Register(reg, m.deadLettered)
	m.fenced = instrument.Register(reg, m.fenced)
	m.handlerSeconds = instrument.Register(reg, m.handlerSeconds)
	m.recordAge = instrument.Register(reg, m.recordAge)
	m.lag = instrument.Register(reg, m.lag)
	m.produced = instrument.Register(reg, m.produced)
	m.produceErrors = instrument.Register(reg, m.produceErrors)
	m.produceSeconds = instrument.Register(reg, m.produceSeconds)
	return m
}

// declareConsumer creates a consumer's per-topic counters at 0 when it
// starts, so that a rate or an increase over them (dashboards, the
// SwitchbackDeadLettered alert) reads 0 rather than no data until the
// first failure.
func (m *Metrics) declareConsumer(topics []string, group string) {
	if m == nil {
		return
	}
	for _, t := range topics {
		m.consumed.WithLabelValues(t, group)
		m.handlerFailures.WithLabelValues(t, group)
		m.deadLettered.WithLabelValues(t, group)
		m.fenced.WithLabelValues(t, group)
	}
}

// DeclareTopics creates the producer counters of topics at 0 (the app
// calls it with every topic it creates), for the same reason.
func (m *Metrics) DeclareTopics(topics []string) {
	if m == nil {
		return
	}
	for _, t := range topics {
		m.produced.WithLabelValues(t)
		m.produceErrors.WithLabelValues(t)
	}
}

func (m *Metrics) observeConsumed(topic, group string, partition int, lag int64, written time.Time) {
	if m == nil {
		return
	}
	m.consumed.WithLabelValues(topic, group).Inc()
	if !written.IsZero() {
		m.recordAge.WithLabelValues(topic, group).Observe(max(0, time.Since(written).Seconds()))
	}
	if lag < 0 {
		lag = 0
	}
	m.lag.WithLabelValues(topic, strconv.Itoa(partition), group).Set(float64(lag))
}

func (m *Metrics) observeHandler(topic, group string, seconds float64, failed bool) {
	if m == nil {
		return
	}
	m.handlerSeconds.WithLabelValues(topic, group).Observe(seconds)
	if failed {
		m.handlerFailures.WithLabelValues(topic, group).Inc()
	}
}

func (m *Metrics) observeDeadLettered(topic, group string) {
	if m == nil {
		return
	}
	m.deadLettered.WithLabelValues(topic, group).Inc()
}

func (m *Metrics) observeFenced(topic, group string) {
	if m == nil {
		return
	}
	m.fenced.WithLabelValues(topic, group).Inc()
}

func (m *Metrics) observeProduced(topic string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.produced.WithLabelValues(topic).Add(float64(n))
}

func (m *Metrics) observeProduceErrors(topic string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.produceErrors.WithLabelValues(topic).Add(float64(n))
}

func (m *Metrics) observePublish(seconds float64) {
	if m == nil {
		return
	}
	m.produceSeconds.Observe(seconds)
}
