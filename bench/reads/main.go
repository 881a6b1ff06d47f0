// Command reads measures reseller reads as a reseller sees them (issue 21):
// the built binary as `make run` starts it (demo mode, demo changes
// flowing every few seconds, rate limit off), driven by wrk with 64
// connections, each route alternating with a bare fasthttp server that
// answers a static 200-byte JSON: the ceiling of the query tier on this
// machine, measured in the same run.
//
//	go build -o bin/switchback ./cmd/switchback
//	go run ./bench/reads -bin bin/switchback -duration 5s -rounds 3 -chart bench/reads.svg
//
// For each route it prints req/s and p99 of the route and of the ceiling
// in each round, the ratios, and whether the targets hold (reads
// >= 0.8x the ceiling with p99 <= 2x the ceiling's; the 20-supplier list
// >= 0.5x). It needs wrk (Debian package wrk) and talks to loopback only.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/switchback", "the switchback binary to start")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each wrk run")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds (each route and the ceiling, alternating)")
	flag.IntVar(&o.conns, "connections", 64, "wrk connections")
	flag.IntVar(&o.threads, "threads", 2, "wrk threads")
	flag.StringVar(&o.only, "only", "", "comma-separated route names to run (default all)")
	flag.StringVar(&o.chart, "chart", "", "write an SVG chart here")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "save a CPU profile of the binary taken during the first route's first round here")
	flag.StringVar(&o.extraEnv, "env", "", "extra environment for the binary, comma-separated NAME=value")
	flag.Parse()
	if _, err := exec.LookPath("wrk"); err != nil {
		fmt.Fprintln(os.Stderr, "reads: wrk not found (apt-get install wrk)")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "reads:", err)
		os.Exit(1)
	}
}

type options struct {
	bin                  string
	duration             time.Duration
	rounds               int
	conns, threads       int
	only, chart          string
	cpuprofile, extraEnv string
}

func (o options) wants(name string) bool {
	if o.only == "" {
		return true
	}
	for _, n := range strings.Split(o.only, ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}
