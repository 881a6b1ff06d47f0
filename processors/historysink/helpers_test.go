package historysink

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/shopspring/decimal"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/schemas"
)

// One clickhouse-server for the package, a database per test.
func TestMain(m *testing.M) { testharness.Main(m) }

// env is a broker with the history topic, a migrated ClickHouse database
// and a producer.
type env struct {
	brokers []string
	conn    driver.Conn
	pub     *stream.Producer
	topic   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{conn: openClickHouse(t, testharness.ClickHouse(t))}
	e.brokers, e.topic = startBroker(t)
	e.pub = newProducer(t, e.brokers)
	return e
}

func newProducer(t *testing.T, brokers []string) *stream.Producer {
	t.Helper()
	p := stream.NewProducer(stream.ProducerConfig{Brokers: brokers})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// startBroker starts an embedded broker with a history topic of 3
// partitions (several partitions, so commits per partition are exercised).
func startBroker(t *testing.T) ([]string, string) {
	t.Helper()
	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := stream.EnsureTopics(ctx, brokers, []schemas.Topic{{Name: schemas.TopicHistory, Partitions: 3, RetentionHours: 24}}); err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
	return brokers, schemas.TopicHistory
}

func openClickHouse(t *testing.T, url string) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := warehouse.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := warehouse.Migrate(ctx, conn, schemas.ClickHouseFS()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return conn
}

// publish writes envelopes keyed by their Key, and raw records as they are.
func (e *env) publish(t *testing.T, envs []schemas.Envelope, raw ...[]byte) {
	t.Helper()
	msgs := make([]stream.Message, 0, len(envs)+len(raw))
	for _, ev := range envs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, stream.Message{Topic: e.topic, Key: []byte(ev.Key), Value: b})
	}
	for i, r := range raw {
		msgs = append(msgs, stream.Message{Topic: e.topic, Key: []byte("raw" + strconv.Itoa(i)), Value: r})
	}
	if err := e.pub.Publish(t.Context(), msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// running is a sink running in the background.
type running struct {
	sink *Sink
	reg  *prometheus.Registry
	stop func() error
}

// runSink starts a sink on e (opts may override anything but the
// essentials) and stops it when the test ends.
func runSink(t *testing.T, brokers []string, conn driver.Conn, opts Options) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Brokers, opts.Conn, opts.Registerer = brokers, conn, reg
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = testharness.Logger(t)
	}
	s := NewSink(opts)
	stop := testharness.RunInBackground(t, "sink", 30*time.Second, s.Run)
	return &running{sink: s, reg: reg, stop: stop}
}

// waitCommitted waits until the group has committed everything on the
// topic: every event published so far is inserted.
func waitCommitted(t *testing.T, brokers []string, group, topic string, timeout time.Duration) {
	t.Helper()
	testharness.Eventually(t, timeout, "group "+group+" to commit the whole topic", func() bool {
		end, committed := offsets(t, brokers, group, topic)
		for p, o := range end {
			// An empty partition has nothing to commit.
			if committed[p] != o && !(o == 0 && committed[p] < 0) {
				return false
			}
		}
		return true
	})
}

// offsets returns the end offset and the group's committed offset (-1 when
// none) of each partition.
func offsets(t *testing.T, brokers []string, group, topic string) (end, committed map[int]int64) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr, Timeout: 5 * time.Second}
	md, err := c.Metadata(t.Context(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	var parts []int
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		parts = append(parts, p.ID)
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
	}
	lo, err := c.ListOffsets(t.Context(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	end = map[int]int64{}
	for _, p := range lo.Topics[topic] {
		end[p.Partition] = p.LastOffset
	}
	of, err := c.OffsetFetch(t.Context(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	committed = map[int]int64{}
	for _, p := range of.Topics[topic] {
		committed[p.Partition] = p.CommittedOffset
	}
	return end, committed
}

// committedTotal is how many records the group has committed in all.
func committedTotal(t *testing.T, brokers []string, group, topic string) int64 {
	_, committed := offsets(t, brokers, group, topic)
	var n int64
	for _, o := range committed {
		n += max(o, 0)
	}
	return n
}

// query runs q and returns its rows as strings (see cell).
func query(t *testing.T, conn driver.Conn, q string, args ...any) [][]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out [][]string
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("scan %q: %v", q, err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			row[i] = cell(reflect.ValueOf(d).Elem().Interface())
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	return out
}

// cell renders a scanned value the way the expectations are written:
// times as "2006-01-02 15:04:05" (UTC; dates without the time), NULL as
// "NULL", numbers without exponent.
func cell(v any) string {
	switch x := v.(type) {
	case *time.Time:
		if x == nil {
			return "NULL"
		}
		return cell(*x)
	case time.Time:
		u := x.UTC()
		if u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 {
			return u.Format("2006-01-02")
		}
		return u.Format("2006-01-02 15:04:05")
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case decimal.Decimal:
		return x.String()
	case *string:
		if x == nil {
			return "NULL"
		}
		return *x
	case *float64:
		if x == nil {
			return "NULL"
		}
		return cell(*x)
	}
	return fmt.Sprint(v)
}

func ev(t *testing.T, typ, key string, at time.Time, data any) schemas.Envelope {
	t.Helper()
	e, err := schemas.NewHistoryEvent(typ, key, data, at)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// march is a time in March 2026 (UTC): day, hour, minute.
func march(day, hour, minute int) time.Time {
	return time.Date(2026, 3, day, hour, minute, 0, 0, time.UTC)
}

func joinRows(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, " | "))
		b.WriteByte('\n')
	}
	return b.String()
}

// counterValue reads a counter or gauge of reg (summed over label values
// matching labels).
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}
