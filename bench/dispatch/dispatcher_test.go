package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// oneSubscriber is the registry at the dispatcher's seam: one subscriber
// whose availability rule points at the sink, no throttle, enabled.
type oneSubscriber struct{ target webhook.Target }

func (o oneSubscriber) Target(context.Context, string, string) (webhook.Target, bool, error) {
	return o.target, true, nil
}
func (oneSubscriber) Settings(context.Context, string) (time.Duration, bool, error) {
	return 0, false, nil
}
func (oneSubscriber) DisableAll(context.Context, string, string) error { return nil }

// BenchmarkDispatcherVsRawPOST is the dispatcher tier alone (issue 17): fed
// from the notifications topic of the embedded broker, its schedule in a
// real redis-server, a loopback fasthttp sink, one subscriber receiving
// notifications of 4,000 rates of 100 suppliers. Each round publishes a
// block of notifications and times from the first delivery to the last at
// the sink (intake, Redis schedule, claims, signing, POSTs, outcome
// batches: the whole tier at its steady rate); the raw fasthttp client POST
// rate to the same sink with the tier's concurrency is measured between
// rounds, in the same run. Targets: >= 10,000 deliveries/s and >= 0.5x raw.
//
//	go test -run '^$' -bench DispatcherVsRaw -benchtime 3x ./bench/dispatch/
func BenchmarkDispatcherVsRawPOST(b *testing.B) {
	url, received := startSink(b)
	target := webhook.Target{URL: url, SecurityKey: "c2VjdXJpdHkta2V5LW9mLXRoZS1ydWxl"}

	broker, err := kafkabroker.Start(context.Background(), kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(broker.Close)
	brokers := []string{broker.Addr()}
	ctx := context.Background()
	if err := stream.EnsureTopics(ctx, brokers, schemas.Topics()); err != nil {
		b.Fatal(err)
	}
	prod := stream.NewProducer(stream.ProducerConfig{Brokers: brokers})
	b.Cleanup(func() { _ = prod.Close() })
	ropts, err := redis.ParseURL(testharness.Redis(b))
	if err != nil {
		b.Fatal(err)
	}
	ropts.PoolSize = 256
	rdb := redis.NewClient(ropts)
	b.Cleanup(func() { _ = rdb.Close() })

	d, err := dispatcher.New(dispatcher.Options{
		Brokers: brokers, Redis: rdb, Publisher: prod, Subscriptions: oneSubscriber{target},
		Sender: webhook.NewSender(webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true}), nil),
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })

	const block = 40_000
	payload := func(i int) json.RawMessage {
		raw, _ := json.Marshal(schemas.AvailabilityPayload{SupplierID: fmt.Sprintf("s%03d", i%100), ProductID: "p",
			RateID: fmt.Sprintf("r%04d", i%4000), Start: "2026-12-01T09:00:00Z", End: "2026-12-01T11:00:00Z"})
		return raw
	}
	publish := func() error {
		msgs := make([]stream.Message, 0, 1000)
		for i := range block {
			n := schemas.Notification{ID: uuid.NewString(), Subscriber: "sub", Type: schemas.TypeAvailability,
				EntityKey: fmt.Sprintf("s%03d/p/r%04d", i%100, i%4000), Payload: payload(i), CreatedAt: time.Now(), Source: "bench"}
			m, err := dispatcher.NotificationMessage(n)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
			if len(msgs) == cap(msgs) {
				if err := prod.Publish(ctx, msgs...); err != nil {
					return err
				}
				msgs = msgs[:0]
			}
		}
		return prod.Publish(ctx, msgs...)
	}
	// deliver publishes a block and times it at the sink, first delivery
	// to last.
	deliver := func() time.Duration {
		base := received.Load()
		published := make(chan error, 1)
		go func() { published <- publish() }()
		for received.Load() == base {
			select {
			case err := <-published:
				if err != nil {
					b.Fatal(err)
				}
				published = nil
			default:
			}
			time.Sleep(100 * time.Microsecond)
		}
		start := time.Now()
		deadline := start.Add(5 * time.Minute)
		for received.Load() < base+block {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d delivered in 5 minutes", received.Load()-base, block)
			}
			time.Sleep(time.Millisecond)
		}
		took := time.Since(start)
		if published != nil {
			if err := <-published; err != nil {
				b.Fatal(err)
			}
		}
		return took
	}

	rawBody, _ := webhook.Body(schemas.Notification{ID: "x", Type: schemas.TypeAvailability, Payload: payload(1)},
		webhook.NewSignature(target.SecurityKey, time.Now().Unix()))
	raw := &fasthttp.Client{MaxConnsPerHost: dispatcher.DefaultLaneConcurrency, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	rawPOST := func() error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.Header.Set(schemas.HeaderDeliveryID, "0b8f5b0e-8d0a-4a53-9d7b-4f3c0e1a2b3c")
		req.Header.Set(webhook.HeaderNotificationType, schemas.TypeAvailability)
		req.SetBodyRaw(rawBody)
		if err := raw.DoTimeout(req, resp, 10*time.Second); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fasthttp.ErrConnectionClosed
		}
		return nil
	}

	deliver() // warm: the schedule, the connection pools, the topics
	run(b, 10_000, rawPOST)
	b.ResetTimer()
	var rawT, dispT time.Duration
	var rawN, dispN int
	for range b.N {
		rawT += runN(b, block, dispatcher.DefaultLaneConcurrency, rawPOST)
		rawN += block
		dispT += deliver()
		dispN += block
	}
	b.StopTimer()
	rawRate := float64(rawN) / rawT.Seconds()
	dispRate := float64(dispN) / dispT.Seconds()
	b.ReportMetric(rawRate, "raw-req/s")
	b.ReportMetric(dispRate, "deliveries/s")
	b.ReportMetric(dispRate/rawRate, "dispatcher/raw")
	b.ReportMetric(0, "ns/op")
}

// runN is run with its own concurrency.
func runN(b *testing.B, n, conc int, fn func() error) time.Duration {
	b.Helper()
	var (
		next   atomic.Int64
		failed atomic.Int64
		done   = make(chan struct{}, conc)
	)
	start := time.Now()
	for range conc {
		go func() {
			defer func() { done <- struct{}{} }()
			for next.Add(1) <= int64(n) {
				if fn() != nil {
					failed.Add(1)
				}
			}
		}()
	}
	for range conc {
		<-done
	}
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d requests failed", f, n)
	}
	return elapsed
}
