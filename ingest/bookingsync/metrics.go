package bookingsync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
)

// metrics of the package. Labels are bounded enumerations (trigger,
// outcome, doc 3 status); never a supplier, product or option id.
type metrics struct {
	refreshes      *prometheus.CounterVec   // option refreshes by trigger, outcome
	refreshSeconds *prometheus.HistogramVec // by trigger
	availabilities *prometheus.CounterVec   // availabilities read, by status
	products       *prometheus.CounterVec   // full-sync products by outcome
	priceSchedules *prometheus.CounterVec   // rates' price schedules written, by outcome
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		refreshes: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_bookingsync_option_refreshes_total",
			Help: "Refreshes of one booking-system option's availability into the catalog, by trigger (changerequest, fullsync, schedule) and outcome (ok, problems: some items rejected by doc 3's data rules, failed, busy: another process was refreshing it).",
		}, []string{"trigger", "outcome"})),
		refreshSeconds: instrument.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_bookingsync_option_refresh_seconds",
			Help:    "Duration of one option's refresh (booking-system reads and the catalog write), by trigger.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"trigger"})),
		availabilities: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_bookingsync_availabilities_total",
			Help: "Availabilities read from booking systems and written to the catalog, by doc 3 status.",
		}, []string{"status"})),
		products: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_bookingsync_products_total",
			Help: "Products met by synchronizations, by outcome (created, updated, unchanged, failed, missing: no longer offered by the booking system).",
		}, []string{"outcome"})),
		priceSchedules: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_bookingsync_price_schedules_total",
			Help: "Rates whose price schedule a price-schedule change notification wrote (ok) or could not (failed).",
		}, []string{"outcome"})),
	}
}

// schedulerMetrics are the Scheduler's.
type schedulerMetrics struct {
	claimed  prometheus.Counter
	lag      prometheus.Histogram
	due      prometheus.Gauge
	size     prometheus.Gauge
	forgot   prometheus.Counter
	rounds   *prometheus.CounterVec
	lastDone prometheus.Gauge
}

func newSchedulerMetrics(reg prometheus.Registerer) *schedulerMetrics {
	return &schedulerMetrics{
		claimed: instrument.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_bookingsync_schedule_claimed_total",
			Help: "Options claimed by this process for a status-based refresh (spec doc 3, booking system rule 8).",
		})),
		lag: instrument.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_bookingsync_schedule_lag_seconds",
			Help:    "How late a claimed option was: claim time minus its earliest due day's due time (options never read are not observed).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		})),
		due: instrument.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_bookingsync_schedule_due",
			Help: "Options due for a refresh at the last round (the backlog).",
		})),
		size: instrument.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_bookingsync_schedule_options",
			Help: "Options on the refresh schedule at the last discovery.",
		})),
		forgot: instrument.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_bookingsync_schedule_forgotten_total",
			Help: "Options taken off the schedule because their supplier, product or rate is gone or no longer a booking system's.",
		})),
		rounds: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_bookingsync_schedule_rounds_total",
			Help: "Scheduler rounds by result (ok, error: Redis or the catalog failed).",
		}, []string{"result"})),
		lastDone: instrument.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchback_bookingsync_schedule_last_round_timestamp_seconds",
			Help: "Unix time of the last scheduler round that completed without error.",
		})),
	}
}
