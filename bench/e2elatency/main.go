// Command e2elatency measures the change path end to end, as a reseller
// sees it: from a change entering Switchback (an operator's PUT of a
// rate's availabilities) to the signed availability webhook received at
// the subscriber's sink (issue 17's figures).
//
//	go build -o bin/switchback ./cmd/switchback
//	go run ./bench/e2elatency -bin bin/switchback -rate 5000 -duration 60s
//	go run ./bench/e2elatency -bin bin/switchback -ramp 500,1000,2000,5000,10000 -step 30s -chart bench/e2e-knee.svg
//	go run ./bench/e2elatency -bin bin/switchback -suppliers 1 -rates-per-supplier 4000 -rate 2000
//	go run ./bench/e2elatency -bin bin/switchback -writes 20s -suppliers 1 -rates-per-supplier 4000
//	go run ./bench/e2elatency -bin bin/switchback -rate 1000 -outage 10m
//
// It starts the built binary itself as `make run` does (`switchback run`,
// embedded broker, redis-server and clickhouse-server children when
// installed, demo principals without demo data, its data in a temp dir,
// free loopback ports), sets up suppliers with one product each and their
// rates bound to the demo channel, one availability rule of the demo
// reseller (throttleDelay 0) pointing at its own fasthttp sink, pushes every
// rate's baseline, then sends changes open-loop: each a PUT moving one
// rate's only window tomorrow to a new capacity, so every change is one
// notification for that rate. A webhook is matched to the oldest unmatched
// change of its rate (per-entity order is the dispatcher's guarantee).
//
// For each step it reports: changes asked and sent per second, webhooks,
// missing after the drain, duplicates by delivery id, bad signatures,
// latency percentiles, the subscriber's disableAll, and the memory and CPU
// of the binary and its children. It talks to loopback only.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/switchback", "the switchback binary to start")
	flag.IntVar(&o.rate, "rate", 1000, "changes per second (one step)")
	flag.DurationVar(&o.step, "duration", 60*time.Second, "how long each step sends changes")
	flag.DurationVar(&o.step, "step", 60*time.Second, "alias of -duration")
	ramp := flag.String("ramp", "", "comma-separated rates: one step each, in order (overrides -rate)")
	flag.IntVar(&o.suppliers, "suppliers", 100, "suppliers")
	flag.IntVar(&o.ratesPer, "rates-per-supplier", 40, "rates of each supplier (one product each)")
	flag.IntVar(&o.workers, "workers", 512, "concurrent operator requests at most")
	flag.DurationVar(&o.drain, "drain", 60*time.Second, "longest wait for the webhooks after a step")
	flag.DurationVar(&o.outage, "outage", 0, "the sink answers 503 for this long from the start of the step (a subscriber outage)")
	flag.DurationVar(&o.writes, "writes", 0, "instead of steps: send PUTs as fast as accepted (closed loop, -workers at once) for this long and report writes/s")
	flag.StringVar(&o.chart, "chart", "", "write an SVG chart of the steps here")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "save a CPU profile of the binary taken during the (last) step here")
	flag.StringVar(&o.allocprofile, "allocprofile", "", "save a profile of the binary's allocations during the (last) step here")
	flag.DurationVar(&o.watch, "watch", 0, "print the consumer lags and the dispatcher's backlog this often during steps")
	flag.BoolVar(&o.keep, "keep", false, "keep the binary's data dir and log (printed)")
	flag.StringVar(&o.extraEnv, "env", "", "extra environment for the binary, comma-separated NAME=value")
	flag.Parse()
	o.rates = []int{o.rate}
	if *ramp != "" {
		o.rates = nil
		for _, f := range strings.Split(*ramp, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				log.Fatalf("-ramp: %q is not a positive rate", f)
			}
			o.rates = append(o.rates, n)
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "e2elatency:", err)
		os.Exit(1)
	}
}

type options struct {
	bin                         string
	rate                        int
	rates                       []int
	step, drain, outage         time.Duration
	writes                      time.Duration
	suppliers, ratesPer         int
	workers                     int
	keep                        bool
	watch                       time.Duration
	chart, cpuprofile, extraEnv string
	allocprofile                string
}
