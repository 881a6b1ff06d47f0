package schemas

// Topic describes one Kafka topic that Switchback owns. Every topic is created
// explicitly at start from Topics(): auto-created topics can be lost on a
// crash of the embedded broker, and a kafka-go writer that cached metadata
// before a topic existed fails until its next refresh.
type Topic struct {
	Name       string
	Partitions int
	// Compacted entity topics keep the latest record per key forever, so
	// that Redis can be rebuilt from them; event topics are retained by time.
	Compacted bool
	// Retention for non-compacted topics, in hours (0 means broker default).
	RetentionHours int
	Purpose        string
}

// Topic names. Keys: entity topics are keyed by entity id so that all events
// of one entity land on one partition in order.
const (
	TopicPrincipals    = "switchback.principals"
	TopicChannels      = "switchback.channels"
	TopicSuppliers     = "switchback.suppliers"
	TopicProducts      = "switchback.products"
	TopicRates         = "switchback.rates"
	TopicBindings      = "switchback.bindings"
	TopicRules         = "switchback.rules"
	TopicMetadata      = "switchback.metadata"
	TopicAvailability  = "switchback.availability.snapshots"
	TopicPrices        = "switchback.prices"
	TopicBookings      = "switchback.bookings"
	TopicHolds         = "switchback.holds"
	TopicChangeRequest = "switchback.changerequests"
	TopicCronSync      = "switchback.cronsync.requests"
	TopicCronReports   = "switchback.cronreports"
	TopicNotifications = "switchback.notifications"
	TopicDeliveries    = "switchback.deliveries"
	TopicHistory       = "switchback.history"
	TopicDeadLetter    = "switchback.deadletter"
)

// DefaultPartitions is the partition count of the event topics; enough for a
// few processor instances to split the work.
const DefaultPartitions = 6

// Topics is the one list of topics created at start, in the embedded broker
// and against an external cluster alike.
func Topics() []Topic {
	return []Topic{
		{Name: TopicPrincipals, Partitions: 1, Compacted: true, Purpose: "API principals (hashed secrets), keyed by principal id"},
		{Name: TopicChannels, Partitions: 1, Compacted: true, Purpose: "sales channels, keyed by channel id"},
		{Name: TopicSuppliers, Partitions: DefaultPartitions, Compacted: true, Purpose: "supplier records, keyed by supplier id"},
		{Name: TopicProducts, Partitions: DefaultPartitions, Compacted: true, Purpose: "product records, keyed by supplier/product"},
		{Name: TopicRates, Partitions: DefaultPartitions, Compacted: true, Purpose: "rate records, keyed by supplier/product/rate"},
		{Name: TopicBindings, Partitions: DefaultPartitions, Compacted: true, Purpose: "channel bindings, keyed by supplier/product/channel"},
		{Name: TopicRules, Partitions: DefaultPartitions, Compacted: true, Purpose: "notification rules, keyed by subscriber/type (compacted: one record per rule)"},
		{Name: TopicMetadata, Partitions: DefaultPartitions, Compacted: true, Purpose: "subscriber delivery metadata, keyed by subscriber"},
		{Name: TopicAvailability, Partitions: DefaultPartitions, Compacted: true, Purpose: "availability snapshots, keyed by product and rate"},
		{Name: TopicPrices, Partitions: DefaultPartitions, Compacted: true, Purpose: "price schedules, keyed by supplier/product/rate"},
		{Name: TopicBookings, Partitions: DefaultPartitions, Compacted: true, Purpose: "bookings, keyed by booking id"},
		{Name: TopicHolds, Partitions: DefaultPartitions, Compacted: true, Purpose: "holds, keyed by hold id"},
		{Name: TopicChangeRequest, Partitions: 1, RetentionHours: 24 * 60, Purpose: "operator change-notification requests, first in first out"},
		// One partition: a cron report's id is its request's offset + 1
		// (ingest/cronsync), unique and stable only on one partition.
		{Name: TopicCronSync, Partitions: 1, RetentionHours: 24 * 7, Purpose: "scheduled full synchronization requests, one per supplier per run, first in first out"},
		// Reports are written once each and kept 60 days (spec doc 3,
		// Limits): time-retained rather than compacted, so that the topic
		// holds exactly what a rebuild of the view needs; one day more so a
		// report at the edge of the window is still there.
		{Name: TopicCronReports, Partitions: 1, RetentionHours: 24 * 61, Purpose: "cron reports of the scheduled full synchronizations, keyed by report id"},
		{Name: TopicNotifications, Partitions: DefaultPartitions, RetentionHours: 24 * 7, Purpose: "notification events for the dispatcher, keyed by subscriber"},
		{Name: TopicDeliveries, Partitions: DefaultPartitions, RetentionHours: 24 * 7, Purpose: "scheduled webhook retries, keyed by subscriber"},
		{Name: TopicHistory, Partitions: DefaultPartitions, RetentionHours: 24 * 30, Purpose: "history events for the ClickHouse sink"},
		{Name: TopicDeadLetter, Partitions: 1, RetentionHours: 24 * 30, Purpose: "messages a consumer failed to handle, with the error"},
	}
}

// TopicNames returns the names of Topics(), in order.
func TopicNames() []string {
	ts := Topics()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}
