package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// tierProc is one `switchback <command>` process of a test.
type tierProc struct {
	name           string
	cmd            *exec.Cmd
	ops            string
	stdout, stderr *lockedBuffer
	exited         chan error
}

// startTier starts `switchback <command>` with env added to this test's
// environment; it is stopped (SIGINT, then killed) at cleanup.
func startTier(t *testing.T, name, command string, env ...string) *tierProc {
	t.Helper()
	p := &tierProc{name: name, ops: freeAddr(t), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(buildBinary(t), command)
	p.cmd.Env = append(os.Environ(), append([]string{"SWITCHBACK_OPS_ADDR=" + p.ops}, env...)...)
	spawn(t, p.cmd, p.stdout, p.stderr, p.exited)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(os.Interrupt)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("%s stderr (tail):\n%s", p.name, tail(p.stderr.String(), 4000))
			keepLog(t, p.name, p.stderr.String())
		}
	})
	return p
}

// keepLog writes a failed test's whole log of one process to
// $SWITCHBACK_TEST_LOGDIR (when set): the tail printed above is often not
// enough to see what a process did minutes before the failure.
func keepLog(t *testing.T, name, log string) {
	t.Helper()
	dir := os.Getenv("SWITCHBACK_TEST_LOGDIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keep log: %v", err)
		return
	}
	f, err := os.CreateTemp(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"."+name+".*.log")
	if err != nil {
		t.Logf("keep log: %v", err)
		return
	}
	defer f.Close()
	_, _ = f.WriteString(log)
	t.Logf("%s log kept in %s", name, f.Name())
}

// waitHealthy polls url until it answers 200.
func (p *tierProc) waitHealthy(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-p.exited:
			t.Fatalf("%s exited: %v\n%s", p.name, err, p.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy at %s within 60s\n%s", p.name, url, p.stderr.String())
		}
	}
}

// TestTiersApart_SameJobAsRunAndNoDuplicateNotifications: `switchback
// broker` and a real redis-server, then ingest, process (two instances),
// query and dispatch as separate processes. An operator's binding
// lifecycle over the query tier reaches the subscriber's sink as exactly
// one channelbinding created, updated and removed: the two process
// instances split the partitions and no notification is produced twice
// for one change.
func TestTiersApart_SameJobAsRunAndNoDuplicateNotifications(t *testing.T) {
	redisURL := testharness.Redis(t)
	kafka := freeAddr(t)
	broker := startTier(t, "broker", "broker", "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+kafka, "SWITCHBACK_DATA_DIR="+filepath.Join(t.TempDir(), "var"))
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(broker.stdout.String(), "Kafka-protocol broker on") {
		select {
		case err := <-broker.exited:
			t.Fatalf("broker exited: %v\n%s", err, broker.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker not up within 60s\n%s", broker.stderr.String())
		}
	}
	common := []string{"SWITCHBACK_KAFKA_BROKERS=" + kafka, "SWITCHBACK_REDIS_URL=" + redisURL,
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true", "SWITCHBACK_DEMO=true", "SWITCHBACK_DEMO_DATA=false"}
	api := freeAddr(t)
	watchAPI(t, api)
	var tiers []*tierProc
	for _, tier := range []struct{ name, command string }{
		{"ingest", "ingest"}, {"process-1", "process"}, {"process-2", "process"}, {"query", "query"}, {"dispatch", "dispatch"},
	} {
		env := common
		if tier.command == "query" {
			env = append(append([]string{}, common...), "SWITCHBACK_HTTP_ADDR="+api)
		}
		tiers = append(tiers, startTier(t, tier.name, tier.command, env...))
	}
	for _, p := range tiers {
		p.waitHealthy(t, "http://"+p.ops+"/readyz")
	}

	// /readyz is about the dependencies; the API listener opens after.
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get("http://" + api + "/v1.2/nothing")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("query tier API not up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	sk := newSink(t)
	base := "http://" + api
	operator := client{t, base, "demo-operator", "demo-operator-secret"}
	reseller := client{t, base, "demo-reseller", "demo-reseller-secret"}
	rule := reseller.must("POST", "/registry/v1.1/channelbindings", fmt.Sprintf(`{"url":%q}`, sk.url+"/cb"), 201)
	key := rule["securityKey"].(string)
	const sup, prod = "sup-apart", "prod-apart"
	pbase := createProduct(operator, sup, prod, catalogtest.SupplierBody(sup, "Apart Tours", "AP", "k", "s"), catalogtest.ProductBody(prod, "Ridge walk", "A walk"),
		catalogtest.RateBody("rate-a", "Adult"), catalogtest.RateBody("rate-b", "Child"))
	steps := []struct {
		method, path, body string
		want               int
		op                 string
	}{
		{"POST", pbase + "/channels/" + app.DemoChannelID, `{"rateIds":["rate-a"]}`, 201, "created"},
		{"PUT", "/operator/v2/suppliers/" + sup + "/products/" + prod + "/bindings/" + app.DemoChannelID, `{"optionIds":["rate-a","rate-b"]}`, 200, "updated"},
		{"DELETE", pbase + "/channels/" + app.DemoChannelID, ``, 204, "removed"},
	}
	for i, s := range steps {
		if status, body, _ := operator.do(s.method, s.path, s.body); status != s.want {
			t.Fatalf("%s %s: %d %v", s.method, s.path, status, body)
		}
		got := sk.waitFor(t, "/cb", i+1, 30*time.Second)
		specVerify(t, key, got[i])
		if got[i].body["operation"] != s.op {
			t.Fatalf("notification %d = %s, want %s", i+1, got[i].raw, s.op)
		}
	}
	// A duplicate would come from the other process instance or a
	// redelivery: give it time to show, then count.
	time.Sleep(time.Second)
	ids := map[string]int{}
	for _, r := range sk.on("/cb") {
		ids[r.deliveryID]++
	}
	if n := len(sk.on("/cb")); n != 3 || len(ids) != 3 {
		t.Errorf("sink got %d POSTs with %d distinct delivery ids, want exactly 3 and 3", n, len(ids))
	}
	for _, p := range tiers {
		if strings.Contains(p.stderr.String(), "level=ERROR") {
			t.Errorf("%s logged an error:\n%s", p.name, tail(p.stderr.String(), 2000))
		}
	}
}
