package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
)

func ctxBG() context.Context { return context.Background() }

// monitor samples the resident memory of the binary and of its children
// (the embedded redis-server and clickhouse-server) every 250 ms and keeps
// the peaks since the last reset.
type monitor struct {
	pid  int
	mu   sync.Mutex
	rss  float64
	kids float64
	quit chan struct{}
	done chan struct{}
}

func newMonitor(b *demoapi.Binary) *monitor {
	m := &monitor{pid: b.Pid(), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.quit:
				return
			case <-t.C:
			}
			rss := demoapi.VmRSS(m.pid)
			var kids float64
			for _, c := range demoapi.Children(m.pid) {
				kids += demoapi.VmRSS(c)
			}
			m.mu.Lock()
			m.rss, m.kids = max(m.rss, rss), max(m.kids, kids)
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *monitor) reset() {
	m.mu.Lock()
	m.rss, m.kids = 0, 0
	m.mu.Unlock()
}

func (m *monitor) peak() (rss, children float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rss, m.kids
}

func (m *monitor) stop() { close(m.quit); <-m.done }

// watch prints, every interval until stop is closed, where the change path
// queues: each consumer group's lag, the dispatcher's backlog and lag.
func watch(ops string, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		m, err := demoapi.ScrapeSeries(ops)
		if err != nil {
			continue
		}
		var b strings.Builder
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := m[k]
			switch {
			case strings.HasPrefix(k, "switchback_stream_lag_messages") && v > 0:
				g := k[strings.Index(k, "group=")+7:]
				g = g[:strings.IndexByte(g, '"')]
				t := ""
				if i := strings.Index(k, "topic=\""); i >= 0 {
					t = k[i+7:]
					t = t[:strings.IndexByte(t, '"')]
				}
				fmt.Fprintf(&b, " lag[%s %s]=%.0f", strings.TrimPrefix(g, "switchback-"), strings.TrimPrefix(t, "switchback."), v)
			case k == "switchback_dispatcher_backlog", k == "switchback_dispatcher_lag_seconds_max", k == "switchback_dispatcher_inflight",
				k == "switchback_history_lag_messages":
				fmt.Fprintf(&b, " %s=%.1f", strings.TrimPrefix(k, "switchback_"), v)
			}
		}
		fmt.Printf("  [%s]%s\n", time.Now().Format("15:04:05"), b.String())
	}
}
