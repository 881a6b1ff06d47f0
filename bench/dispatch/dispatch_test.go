// Package dispatch benchmarks the webhook send path: signed deliveries per
// second through webhook.Sender to a loopback fasthttp sink, against the raw
// fasthttp client POST rate to the same sink at the same concurrency, in
// the same run. Target (issue 3): signed >= 0.5 x raw.
//
//	go test -run '^$' -bench . -benchtime 200000x ./bench/dispatch/
package dispatch_test

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// workers is the number of concurrent senders in both phases.
const workers = 64

func startSink(b *testing.B) (url string, received *atomic.Int64) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	received = &atomic.Int64{}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			received.Add(1)
			ctx.SetStatusCode(fasthttp.StatusOK)
		},
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String() + "/availability", received
}

// run makes n calls of fn from workers goroutines and returns the elapsed time.
func run(b *testing.B, n int, fn func() error) time.Duration {
	b.Helper()
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if fn() != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d requests failed", f, n)
	}
	return elapsed
}

func BenchmarkSignedVsRawPOST(b *testing.B) {
	url, received := startSink(b)
	payload, _ := json.Marshal(schemas.AvailabilityPayload{
		SupplierID: "S1", ProductID: "P1", RateID: "R1",
		Start: "2026-12-01T00:00:00Z", End: "2026-12-08T00:00:00Z",
	})
	n := schemas.Notification{ID: "0b8f5b0e-8d0a-4a53-9d7b-4f3c0e1a2b3c", Subscriber: "sub", Type: schemas.TypeAvailability, Payload: payload}
	target := webhook.Target{URL: url, SecurityKey: "c2VjdXJpdHkta2V5LW9mLXRoZS1ydWxl"}

	// Raw: the same body bytes and headers, prebuilt, straight through a
	// fasthttp.Client configured like webhook.Client's.
	rawBody, _ := webhook.Body(n, webhook.NewSignature(target.SecurityKey, time.Now().Unix()))
	raw := &fasthttp.Client{MaxConnsPerHost: workers, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	rawPOST := func() error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.SetContentType("application/json")
		req.Header.Set(schemas.HeaderDeliveryID, n.ID)
		req.Header.Set(webhook.HeaderNotificationType, n.Type)
		req.SetBodyRaw(rawBody)
		if err := raw.DoTimeout(req, resp, 10*time.Second); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fasthttp.ErrConnectionClosed
		}
		return nil
	}

	// Signed: what the dispatcher does per attempt: new token, HMAC,
	// body built from the payload, url checked, SSRF-checking dialer.
	sender := webhook.NewSender(webhook.NewClient(webhook.Options{
		AllowHTTP: true, AllowPrivate: true, MaxConnsPerHost: workers,
	}), nil)
	ctx := context.Background()
	signedPOST := func() error {
		res := sender.Send(ctx, target, n)
		if !res.Delivered() {
			if res.Err != nil {
				return res.Err
			}
			return fasthttp.ErrConnectionClosed
		}
		return nil
	}

	// Warm both connection pools, then alternate short rounds so that both
	// phases see the same machine (this box is shared and noisy).
	run(b, workers*20, rawPOST)
	run(b, workers*20, signedPOST)
	b.ResetTimer()
	const rounds = 10
	per := max(b.N/rounds, workers)
	var rawT, signedT time.Duration
	for range rounds {
		rawT += run(b, per, rawPOST)
		signedT += run(b, per, signedPOST)
	}
	b.StopTimer()

	rawRate := float64(rounds*per) / rawT.Seconds()
	signedRate := float64(rounds*per) / signedT.Seconds()
	b.ReportMetric(rawRate, "raw-req/s")
	b.ReportMetric(signedRate, "signed-req/s")
	b.ReportMetric(signedRate/rawRate, "signed/raw")
	b.ReportMetric(0, "ns/op")
	if received.Load() == 0 {
		b.Fatal("sink received nothing")
	}
}

// BenchmarkSigningOverhead is the CPU a signed delivery adds to a raw POST
// (token, HMAC, body), without the network: the figure that the ratio
// above reflects, and one that does not depend on how busy the box is.
func BenchmarkSigningOverhead(b *testing.B) {
	payload, _ := json.Marshal(schemas.AvailabilityPayload{
		SupplierID: "S1", ProductID: "P1", RateID: "R1",
		Start: "2026-12-01T00:00:00Z", End: "2026-12-08T00:00:00Z",
	})
	buf := make([]byte, 0, 512)
	ts := time.Now().Unix()
	b.ReportAllocs()
	for b.Loop() {
		sig := webhook.NewSignature("c2VjdXJpdHkta2V5LW9mLXRoZS1ydWxl", ts)
		buf, _ = webhook.AppendBody(buf[:0], payload, sig)
	}
}
