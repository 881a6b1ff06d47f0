package stream

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// TestReaderErrorLogger_RoutineRecoveriesAtDebugTroubleAtWarn feeds the
// logger the lines kafka-go writes (their format strings and argument
// types, reader.go and consumergroup.go) and checks each line's level.
func TestReaderErrorLogger_RoutineRecoveriesAtDebugTroubleAtWarn(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name   string
		format string
		args   []any
		want   string
	}{
		{"idle fetch answered late", "the kafka reader got an unknown error reading partition %d of %s at offset %d: %s",
			[]any{3, "switchback.history", int64(42), readTimeout}, "DEBUG"},
		{"group rebalancing while syncing", "Failed to sync group %s: %v", []any{"switchback-history", kafka.RebalanceInProgress}, "DEBUG"},
		{"group rebalancing, next generation", "%v", []any{kafka.RebalanceInProgress}, "DEBUG"},
		{"broker unreachable at dial", "error initializing the kafka reader for partition %d of %s: %s", []any{0, "switchback.history", dialTimeout}, "WARN"},
		{"join failed on timeout", "Failed to join group %s: %v", []any{"g", dialTimeout}, "WARN"},
		{"fetch failed otherwise", "the kafka reader got an unknown error reading partition %d of %s at offset %d: %s",
			[]any{3, "t", int64(1), errors.New("connection reset by peer")}, "WARN"},
		{"member unknown after a session expiry", "Failed to sync group %s: %v", []any{"g", kafka.UnknownMemberId}, "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ReaderErrorLogger(log).Printf(tt.format, tt.args...)
			line := buf.String()
			if !strings.Contains(line, "level="+tt.want) {
				t.Errorf("logged %q, want level %s", line, tt.want)
			}
			if !strings.Contains(line, "kafka reader: ") || !strings.Contains(line, fmt.Sprint(tt.args[len(tt.args)-1])[:10]) {
				t.Errorf("logged %q: want the line with its error", line)
			}
		})
	}
}

func TestReaderErrorLogger_DebugLinesAreDroppedAtInfo(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ReaderErrorLogger(log).Printf("Failed to sync group %s: %v", "g", kafka.RebalanceInProgress)
	if buf.Len() != 0 {
		t.Errorf("at info, a routine rebalance logged %q", buf.String())
	}
}

// TestMetrics_DeclaredSeriesExistAtZero: the counters that dashboards and
// alerts rate over exist from the consumer's start and the topics'
// creation, before any failure.
func TestMetrics_DeclaredSeriesExistAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.declareConsumer([]string{"a", "b"}, "g")
	m.DeclareTopics([]string{"a", "b", "c"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			if s.GetCounter().GetValue() != 0 {
				t.Errorf("%s %v = %v, want 0", mf.GetName(), s.GetLabel(), s.GetCounter().GetValue())
			}
			got[mf.GetName()]++
		}
	}
	want := map[string]int{
		"switchback_stream_consumed_total":         2,
		"switchback_stream_handler_failures_total": 2,
		"switchback_stream_dead_lettered_total":    2,
		"switchback_stream_fenced_total":           2,
		"switchback_stream_produced_total":         3,
		"switchback_stream_produce_errors_total":   3,
	}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: %d series, want %d", name, got[name], n)
		}
	}
}
