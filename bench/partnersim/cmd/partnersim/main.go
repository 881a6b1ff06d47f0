// Command partnersim serves the simulated partner (internal/simulators/partnersim) for
// demos and load tests:
//
//	go run ./bench/partnersim/cmd/partnersim -addr 127.0.0.1:9090 -latency 50ms -error-rate 0.01 -change-rate 0.2
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address")
	latency := flag.Duration("latency", 0, "latency added to every answer")
	errorRate := flag.Float64("error-rate", 0, "fraction of calls answered 500")
	changeRate := flag.Float64("change-rate", 0.2, "fraction of windows whose capacity changes every -change-every")
	changeEvery := flag.Duration("change-every", time.Minute, "capacity change period")
	key := flag.String("api-key", "", "required X-API-Key (empty: any)")
	secret := flag.String("api-secret", "", "required X-API-Secret")
	flag.Parse()
	s := partnersim.New(partnersim.Config{Latency: *latency, ErrorRate: *errorRate, ChangeRate: *changeRate,
		ChangeEvery: *changeEvery, APIKey: *key, APISecret: *secret})
	srv := &http.Server{Addr: *addr, Handler: s, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("partnersim listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
