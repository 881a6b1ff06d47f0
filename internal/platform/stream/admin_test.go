package stream_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestEnsureTopics_CreatesMissingTopicsWithConfigsAndIsIdempotent(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	compacted := schemas.Topic{Name: topicName(t, "entities"), Partitions: 4, Compacted: true}
	retained := schemas.Topic{Name: topicName(t, "events"), Partitions: 2, RetentionHours: 48}
	existing := schemas.Topic{Name: topicName(t, "existing"), Partitions: 3, Compacted: true}

	// Created earlier with other settings: EnsureTopics must leave it be.
	ensureTopics(t, brokers, schemas.Topic{Name: existing.Name, Partitions: 1})
	for range 2 {
		ensureTopics(t, brokers, compacted, retained, existing)
	}

	tests := []struct {
		topic      string
		partitions int
		config     map[string]string
	}{
		{compacted.Name, 4, map[string]string{"cleanup.policy": "compact"}},
		{retained.Name, 2, map[string]string{"cleanup.policy": "delete", "retention.ms": strconv.Itoa(48 * 3600 * 1000)}},
		{existing.Name, 1, map[string]string{"cleanup.policy": "delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			parts, configs := describeTopic(t, brokers, tt.topic)
			if parts != tt.partitions {
				t.Errorf("partitions = %d, want %d", parts, tt.partitions)
			}
			for k, want := range tt.config {
				if got := configs[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestEnsureTopics_CreatesEveryTopicOfTheSchema(t *testing.T) {
	b := startBroker(t, "")
	ensureTopics(t, []string{b.Addr()}, schemas.Topics()...)
	for _, topic := range schemas.Topics() {
		parts, configs := describeTopic(t, []string{b.Addr()}, topic.Name)
		if parts != topic.Partitions {
			t.Errorf("%s: partitions = %d, want %d", topic.Name, parts, topic.Partitions)
		}
		if got := configs["cleanup.policy"] == "compact"; got != topic.Compacted {
			t.Errorf("%s: compacted = %v, want %v", topic.Name, got, topic.Compacted)
		}
	}
}

func TestEnsureTopics_RetriesUntilTheContextEndsWhileBrokerIsUnreachable(t *testing.T) {
	addr := testharness.FreeAddr(t)
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := stream.EnsureTopics(ctx, []string{addr}, []schemas.Topic{{Name: "t", Partitions: 1}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed < 600*time.Millisecond {
		t.Errorf("gave up after %v: it should retry until the context ends", elapsed)
	}
}

func TestEnsureTopics_KeepsRetryingUntilALateBrokerStarts(t *testing.T) {
	// Something that accepts and drops connections stands where the broker
	// will be, so we can see EnsureTopics fail at least once before it is up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	tried := make(chan struct{})
	go func() {
		var once sync.Once
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			once.Do(func() { close(tried) })
		}
	}()

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		done <- stream.EnsureTopics(ctx, []string{addr}, []schemas.Topic{{Name: "late", Partitions: 2}})
	}()
	select {
	case <-tried:
	case <-time.After(10 * time.Second):
		t.Fatal("EnsureTopics never tried to connect")
	}
	ln.Close()

	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: addr})
	if err != nil {
		t.Fatalf("start broker on %s: %v", addr, err)
	}
	defer b.Close()
	if err := <-done; err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
	if parts, _ := describeTopic(t, []string{addr}, "late"); parts != 2 {
		t.Errorf("partitions = %d, want 2", parts)
	}
}

func TestPing_ReportsWhetherABrokerAnswers(t *testing.T) {
	b := startBroker(t, "")
	down := testharness.FreeAddr(t)
	tests := []struct {
		name    string
		brokers []string
		wantErr bool
	}{
		{"broker up", []string{b.Addr()}, false},
		{"one of two up", []string{down, b.Addr()}, false},
		{"broker down", []string{down}, true},
		{"no brokers", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := stream.Ping(ctx, tt.brokers); (err != nil) != tt.wantErr {
				t.Fatalf("Ping() = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

// describeTopic reads a topic's partition count and configs from the broker.
func describeTopic(t *testing.T, brokers []string, topic string) (int, map[string]string) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	md, err := c.Metadata(t.Context(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	parts := -1
	for _, tp := range md.Topics {
		if tp.Name == topic && tp.Error == nil {
			parts = len(tp.Partitions)
		}
	}
	resp, err := c.DescribeConfigs(t.Context(), &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic},
	}})
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	configs := map[string]string{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			t.Fatalf("describe configs of %s: %v", topic, r.Error)
		}
		for _, e := range r.ConfigEntries {
			configs[e.ConfigName] = e.ConfigValue
		}
	}
	return parts, configs
}
