package historysink

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
)

// metrics of the sink. Labels are table names, partition numbers and fixed
// reasons: never ids.
type metrics struct {
	rowsInserted  *prometheus.CounterVec // table
	insertErrors  *prometheus.CounterVec // table
	unrouted      *prometheus.CounterVec // reason
	batchSeconds  prometheus.Histogram   // one flush: every table of a batch
	batchEvents   prometheus.Histogram   // events per flush
	lag           *prometheus.GaugeVec   // partition
	pendingEvents prometheus.Gauge       // fetched, not yet committed
	oldestPending prometheus.Gauge       // unix seconds, 0 when none
	lastFlush     prometheus.Gauge       // unix seconds of the last successful flush
	commitErrors  prometheus.Counter     //
	dropped       prometheus.Counter     // partitions dropped by retention
	retentionErrs prometheus.Counter     //

	lagByPar []prometheus.Gauge // by partition; used by the fetch loop only
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rowsInserted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_history_rows_inserted_total",
			Help: "Rows the history sink inserted into ClickHouse, by table (a replayed event counts again; queries deduplicate).",
		}, []string{"table"}),
		insertErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_history_insert_errors_total",
			Help: "Failed batch inserts into ClickHouse, by table; the batch is retried and nothing is committed meanwhile.",
		}, []string{"table"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_history_unrouted_total",
			Help: "History records stored in the generic history_events table instead of a table of their type, by reason (unknown_type, bad_payload, invalid_envelope).",
		}, []string{"reason"}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_history_batch_seconds",
			Help:    "Duration of one successful flush of a batch into ClickHouse (all its tables), retries excluded.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1ms .. ~16s
		}),
		batchEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_history_batch_events",
			Help:    "Events in one flushed batch (bounded by the batch size; smaller when the flush interval ended it).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10), // 1 .. 262144
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchback_history_lag_messages",
			Help: "Records of the history topic behind the partition's high watermark after the last fetched record.",
		}, []string{"partition"}),
		pendingEvents: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_history_pending_events",
			Help: "Events fetched by the history sink and not yet inserted and committed.",
		}),
		oldestPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_history_oldest_pending_timestamp_seconds",
			Help: "When the oldest event not yet inserted and committed was fetched (unix seconds); 0 when none is pending.",
		}),
		lastFlush: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_history_last_flush_timestamp_seconds",
			Help: "When the history sink last inserted a batch successfully (unix seconds).",
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_history_commit_errors_total",
			Help: "Offset commits that failed after a successful insert (the events are inserted again later; queries deduplicate).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_history_partitions_dropped_total",
			Help: "Month partitions dropped by retention.",
		}),
		retentionErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_history_retention_errors_total",
			Help: "Retention runs that failed.",
		}),
	}
	if reg != nil {
		m.rowsInserted = instrument.Register(reg, m.rowsInserted)
		m.insertErrors = instrument.Register(reg, m.insertErrors)
		m.unrouted = instrument.Register(reg, m.unrouted)
		m.batchSeconds = instrument.Register(reg, m.batchSeconds)
		m.batchEvents = instrument.Register(reg, m.batchEvents)
		m.lag = instrument.Register(reg, m.lag)
		m.pendingEvents = instrument.Register(reg, m.pendingEvents)
		m.oldestPending = instrument.Register(reg, m.oldestPending)
		m.lastFlush = instrument.Register(reg, m.lastFlush)
		m.commitErrors = instrument.Register(reg, m.commitErrors)
		m.dropped = instrument.Register(reg, m.dropped)
		m.retentionErrs = instrument.Register(reg, m.retentionErrs)
	}
	// Every series exists from the start, so that rate() and "no inserts
	// for 10 minutes" see a zero rather than nothing.
	for _, t := range Tables() {
		m.rowsInserted.WithLabelValues(t)
		m.insertErrors.WithLabelValues(t)
	}
	for _, r := range []string{reasonUnknownType, reasonBadPayload, reasonInvalidEnvelope} {
		m.unrouted.WithLabelValues(r)
	}
	return m
}

// observeLag records a partition's lag; gauges are cached by partition so
// the per-record path does no label hashing. Only the fetch loop calls it.
func (m *metrics) observeLag(partition int, lag int64) {
	if partition < 0 {
		return
	}
	for len(m.lagByPar) <= partition {
		m.lagByPar = append(m.lagByPar, m.lag.WithLabelValues(strconv.Itoa(len(m.lagByPar))))
	}
	m.lagByPar[partition].Set(float64(max(lag, 0)))
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
