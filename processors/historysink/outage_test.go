package historysink

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/embedded"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// TestSink_ClickHouseOutageLosesNothingAndCatchesUp stops the
// clickhouse-server while events keep coming, checks that the sink commits
// nothing meanwhile, starts a new server on the same data directory and
// checks that every event arrives exactly once.
//
// The sink reaches ClickHouse through a TCP proxy with a fixed address: a
// restarted embedded server listens on a new port, and the proxy is what
// keeps the sink's URL valid (as a Service address would in Kubernetes).
func TestSink_ClickHouseOutageLosesNothingAndCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	dir := t.TempDir()
	start := func() *embedded.ClickHouse {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		ch, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir, Logger: testharness.Logger(t)})
		testharness.SkipIfNotInstalled(t, "clickhouse-server", err)
		if err != nil {
			t.Fatalf("start clickhouse-server: %v", err)
		}
		t.Cleanup(func() { _ = ch.Close() })
		return ch
	}
	ch := start()
	proxy := newProxy(t, ch.Addr())
	conn := openClickHouse(t, "clickhouse://"+proxy.addr()+"/default?dial_timeout=1s&read_timeout=5s")
	brokers, topic := startBroker(t)
	e := &env{brokers: brokers, conn: conn, topic: topic}
	e.pub = newProducer(t, brokers)

	run := runSink(t, brokers, conn, Options{RetryDelay: 50 * time.Millisecond, MaxRetryDelay: 300 * time.Millisecond})
	events := func(n, from int) []schemas.Envelope {
		var evs []schemas.Envelope
		for i := range n {
			evs = append(evs, ev(t, schemas.HistoryDeliveryAttempt, "sub"+string(rune('a'+i%5)), march(1, 0, 0).Add(time.Duration(from+i)*time.Second),
				schemas.DeliveryAttempt{DeliveryID: "d", Subscriber: "sub", Type: "availability", Attempt: 1, Status: 200, LatencyMs: int64(i), Outcome: "delivered"}))
		}
		return evs
	}
	before, during := events(40, 0), events(60, 40)

	e.publish(t, before)
	waitCommitted(t, brokers, GroupID, topic, 30*time.Second)

	// Outage: the server stops; the proxy refuses and cuts connections.
	proxy.setBackend("")
	if err := ch.Close(); err != nil {
		t.Fatalf("stop clickhouse-server: %v", err)
	}
	e.publish(t, during)
	testharness.Eventually(t, 30*time.Second, "failed inserts during the outage", func() bool {
		return counterValue(t, run.reg, "switchback_history_insert_errors_total", nil) >= 3
	})
	if got := committedTotal(t, brokers, GroupID, topic); got != int64(len(before)) {
		t.Fatalf("committed %d records during the outage, want %d (only what was inserted before)", got, len(before))
	}
	if got := counterValue(t, run.reg, "switchback_history_oldest_pending_timestamp_seconds", nil); got <= 0 {
		t.Errorf("oldest pending timestamp = %v during the outage, want the fetch time of the waiting batch", got)
	}

	// Recovery: a new server on the same data, behind the same address.
	ch = start()
	proxy.setBackend(ch.Addr())
	waitCommitted(t, brokers, GroupID, topic, 60*time.Second)

	want := map[string]bool{}
	for _, ev := range append(before, during...) {
		want[ev.ID] = true
	}
	rows := query(t, conn, "SELECT event_id FROM history_deliveries FINAL")
	got := map[string]bool{}
	for _, r := range rows {
		got[r[0]] = true
	}
	if len(rows) != len(want) || len(got) != len(want) {
		t.Fatalf("history_deliveries has %d rows (%d distinct), want %d", len(rows), len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Errorf("event %s lost", id)
		}
	}
	if got := counterValue(t, run.reg, "switchback_history_oldest_pending_timestamp_seconds", nil); got != 0 {
		t.Errorf("oldest pending timestamp = %v after catching up, want 0", got)
	}
}

// proxy forwards TCP connections to a backend that can be switched off
// (connections refused and cut) and on again at another address.
type proxy struct {
	ln net.Listener

	mu      sync.Mutex
	backend string
	conns   map[net.Conn]bool
}

func newProxy(t *testing.T, backend string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, backend: backend, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setBackend("")
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// setBackend switches the target; "" refuses new connections. Open
// connections are cut either way: they belong to the old server.
func (p *proxy) setBackend(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend = addr
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *proxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backend
		p.mu.Unlock()
		if backend == "" {
			_ = client.Close()
			continue
		}
		server, err := net.DialTimeout("tcp", backend, time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client], p.conns[server] = true, true
		p.mu.Unlock()
		go pipe(client, server)
		go pipe(server, client)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}
