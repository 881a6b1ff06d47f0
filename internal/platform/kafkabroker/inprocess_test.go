package kafkabroker_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
)

// TestBroker_DialConnectsThisProcessInProcess: Dial to the broker's address
// is an in-process pipe, not a TCP connection, and a client over it
// produces to the protected topic as this process does over TCP (it is
// this process); what it wrote is what TCP clients read.
func TestBroker_DialConnectsThisProcessInProcess(t *testing.T) {
	b := start(t, kafkabroker.Options{Protected: []string{protectedTopic}, Trust: kafkabroker.TrustProcess})
	createTopic(t, b.Addr(), protectedTopic, 1)

	c, err := b.Dial(t.Context(), "tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LocalAddr().Network(); got != "pipe" {
		t.Errorf("Dial(broker's address) is a %q connection, want an in-process pipe", got)
	}
	_ = c.Close()

	var dials atomic.Int32
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: protectedTopic, RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond,
		Transport: &kafka.Transport{Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dials.Add(1)
			return b.Dial(ctx, network, address)
		}}}
	defer w.Close()
	for _, key := range []string{"in-process-1", "in-process-2"} {
		if err := w.WriteMessages(t.Context(), kafka.Message{Key: []byte(key), Value: []byte(`{}`)}); err != nil {
			t.Fatalf("produce over Dial: %v", err)
		}
	}
	if dials.Load() == 0 {
		t.Fatal("the writer never used Dial")
	}
	if got := keysOf(t, b.Addr(), protectedTopic); !slices.Equal(got, []string{"in-process-1", "in-process-2"}) {
		t.Fatalf("read over TCP: %v, want the two records written in-process", got)
	}
}

// TestBroker_DialElsewhereIsTCPAndClosedBrokerRefuses: an address that is
// not the broker's is dialled over TCP; after Close, Dial to the broker
// fails at once rather than waiting for an Accept that never comes.
func TestBroker_DialElsewhereIsTCPAndClosedBrokerRefuses(t *testing.T) {
	b := start(t, kafkabroker.Options{})
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	accepted := make(chan struct{})
	go func() {
		if c, err := other.Accept(); err == nil {
			_ = c.Close()
			close(accepted)
		}
	}()
	c, err := b.Dial(t.Context(), "tcp", other.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if got := c.LocalAddr().Network(); got != "tcp" {
		t.Errorf("Dial(another address) is a %q connection, want tcp", got)
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the other listener never saw the connection")
	}

	b.Close()
	done := make(chan error, 1)
	go func() {
		c, err := b.Dial(t.Context(), "tcp", b.Addr())
		if err == nil {
			_ = c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Dial after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Dial after Close did not return")
	}
}
