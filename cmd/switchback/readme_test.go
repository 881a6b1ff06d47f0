package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// notRun are the README's shell blocks this test does not run, by their
// first line, with why.
var notRun = map[string]string{
	"make run    # the whole pipeline in one process, embedded defaults, demo data":                          "the test starts the binary as make run does (SWITCHBACK_DEMO=true, nothing else)",
	"export SWITCHBACK_KAFKA_BROKERS=kafka1:9092,kafka2:9092":                                                "needs a Kafka cluster and servers named kafka1, redis, clickhouse",
	"SWITCHBACK_EMBEDDED_KAFKA_ADDR=127.0.0.1:19092 switchback broker &":                                     "tiers apart on one machine: TestTiersApart runs that topology (it needs a redis-server of its own)",
	"make deps    # apt-get install redis-server clickhouse-server clickhouse-client kafkacat prometheus jq": "the development targets: CI runs them (.ci/run)",
}

var (
	placeholder = regexp.MustCompile(`<([a-z ]+ id)(?: [a-z ]+)?>`)
	firstID     = regexp.MustCompile(`"id":\s*"?([^",}\s]+)`)
	shellBlock  = regexp.MustCompile("(?s)```sh\n(.*?)```")
)

// TestREADME_EveryShellBlockAndBannerLineRuns is a newcomer with the
// README and the banner: `switchback run` in demo mode (SWITCHBACK_DEMO=true
// and nothing else, as make run), then every command of every shell block
// of README.md and every command the banner prints, as pasted, but for the
// addresses (the test's free ports for the defaults) and the placeholders
// (<rule id>, <report id>, <product id>: the first id of the answer
// before). Every command must exit 0 and every HTTP answer be 2xx. The
// blocks it cannot run are listed in notRun with the reason.
func TestREADME_EveryShellBlockAndBannerLineRuns(t *testing.T) {
	requireTool(t, "kcat", "Debian package kafkacat")
	requireTool(t, "jq", "Debian package jq")
	requireTool(t, "clickhouse-client", "Debian package clickhouse-client")
	p := startBinary(t, "SWITCHBACK_DEMO_DATA=true")
	banner := p.stdout.String()
	if !strings.Contains(banner, "The demo data turned on SWITCHBACK_OUTBOUND_ALLOW_HTTP, SWITCHBACK_OUTBOUND_ALLOW_PRIVATE") {
		t.Errorf("the banner does not say the demo turned on what it needs:\n%s", banner)
	}
	waitDemoEveryType(t, p, 90*time.Second)
	sink := regexp.MustCompile(`Webhook sink http://(\S+)`).FindStringSubmatch(banner)
	bsim := regexp.MustCompile(`Booking system simulator http://(\S+)`).FindStringSubmatch(banner)
	if sink == nil || bsim == nil {
		t.Fatalf("the banner names no sink or booking system:\n%s", banner)
	}
	addrs := strings.NewReplacer("localhost:8080", p.api, "localhost:9090", p.ops, "127.0.0.1:19092", p.kafka,
		"127.0.0.1:18081", sink[1], "127.0.0.1:18082", bsim[1], "bin/switchback", buildBinary(t))

	readme := readFile(t, "../../README.md")
	for first := range notRun {
		if !strings.Contains(readme, "```sh\n"+first+"\n") {
			t.Errorf("notRun lists %q, which starts no shell block of README.md", first)
		}
	}
	blocks, run := 0, 0
	for _, m := range shellBlock.FindAllStringSubmatch(readme, -1) {
		blocks++
		first, _, _ := strings.Cut(m[1], "\n")
		if _, skip := notRun[first]; skip {
			continue
		}
		run += runShell(t, "README block "+strconv.Quote(first), addrs.Replace(m[1]), p)
	}
	var lines []string
	for _, l := range strings.Split(banner, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "curl ") {
			lines = append(lines, l)
		}
		if cmd, ok := strings.CutPrefix(l, "Analysts"); ok {
			lines = append(lines, "echo 'SELECT count() FROM principals FINAL' | "+strings.TrimSpace(cmd))
		}
	}
	if len(lines) < 6 {
		t.Fatalf("the banner has %d commands, want the five curl lines and clickhouse-client:\n%s", len(lines), banner)
	}
	run += runShell(t, "banner", strings.Join(lines, "\n"), p)
	t.Logf("README: %d shell blocks, %d not run (%d listed with reasons); %d commands of the README and the banner run as pasted, all exit 0 and 2xx", blocks, len(notRun), len(notRun), run)
	p.stop(t)
}

// runShell runs the commands of a block one by one in bash (variable
// assignments carried over, a command continued over lines while a quote is
// open or after a backslash), filling placeholders from the previous answer, and fails on a
// non-zero exit or a non-2xx answer; a command whose next one needs an id
// the answer lacks yet ("seconds later") is asked again for up to 30 s.
func runShell(t *testing.T, what, block string, p *proc) int {
	t.Helper()
	// curl as pasted; its status goes to stderr, so that a pipe (| jq)
	// sees the body alone.
	prelude := "set -o pipefail\ncurl() { command curl -w '%{stderr}\\n@status=%{http_code}\\n' \"$@\"; }\n"
	var cmds []string
	var cur string
	for _, l := range strings.Split(block, "\n") {
		if cur != "" {
			cur += "\n" + l
		} else {
			cur = l
		}
		if strings.Count(cur, "'")%2 == 1 || strings.HasSuffix(cur, "\\") {
			continue
		}
		if strings.TrimSpace(cur) != "" && !strings.HasPrefix(strings.TrimSpace(cur), "#") {
			cmds = append(cmds, cur)
		}
		cur = ""
	}
	var last string
	n := 0
	for i, c := range cmds {
		if regexp.MustCompile(`^[A-Z]+=`).MatchString(c) {
			prelude += c + "\n"
			continue
		}
		for _, ph := range placeholder.FindAllString(c, -1) {
			id := firstID.FindStringSubmatch(last)
			if id == nil {
				t.Fatalf("%s: %s: no id in the answer before to fill %s:\n%s", what, c, ph, last)
			}
			c = strings.Replace(c, ph, id[1], 1)
		}
		needsID := i+1 < len(cmds) && placeholder.MatchString(cmds[i+1])
		deadline := time.Now().Add(30 * time.Second)
		for {
			cmd := exec.Command("bash", "-c", prelude+c)
			cmd.Env = os.Environ()
			out, err := cmd.CombinedOutput()
			last = string(out)
			bad := err != nil
			for _, s := range regexp.MustCompile(`@status=(\d+)`).FindAllStringSubmatch(last, -1) {
				if code, _ := strconv.Atoi(s[1]); code < 200 || code > 299 {
					bad = true
				}
			}
			if !bad && (!needsID || firstID.MatchString(last)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s\nexit %v, output:\n%s", what, c, err, last)
			}
			time.Sleep(time.Second)
		}
		n++
	}
	return n
}
