package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBinary_FreshMachineRunsOnGoAlone is `make run` on a machine with only
// Go, as SWITCHBACK_EMBEDDED_CHILDREN=false makes it whatever is installed
// (clickhouse-server is also found outside PATH, in /usr/sbin). The binary serves
// on miniredis with ClickHouse parked (and says so in its banner and
// /readyz); after a restart on the same data directory, what was written
// through the API (a principal, a rule) is rebuilt from the embedded
// broker's log into the fresh miniredis; the admin API revokes a principal
// (the CLI, another process, is refused by the embedded broker).
func TestBinary_FreshMachineRunsOnGoAlone(t *testing.T) {
	noChildren := "SWITCHBACK_EMBEDDED_CHILDREN=false"
	p := startBinary(t, noChildren, "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true")
	if out := p.stdout.String() + p.stderr.String(); !strings.Contains(out, "parked") {
		t.Errorf("banner does not say ClickHouse is parked:\n%s", out)
	}
	checkReady := func(p *proc) {
		t.Helper()
		status, deps, err := p.readyz()
		if err != nil {
			t.Fatal(err)
		}
		if status != 200 {
			t.Fatalf("/readyz %d: %+v", status, deps)
		}
		if r := deps["redis"]; r.Mode != "embedded" || r.Kind != "miniredis" {
			t.Errorf("redis = %+v, want embedded miniredis", r)
		}
		if c := deps["clickhouse"]; c.Mode != "parked" {
			t.Errorf("clickhouse = %+v, want parked", c)
		}
	}
	checkReady(p)

	api := "http://" + p.api
	admin := client{t, api, "demo-admin", "demo-admin-secret"}
	operator, op := admin.principal(`{"role":"operator","name":"Fresh operator"}`)
	reseller := client{t, api, "demo-reseller", "demo-reseller-secret"}
	status, rule, _ := reseller.do("POST", "/registry/v1.1/supplier", `{"url":"http://127.0.0.1:9/supplier"}`)
	if status != 201 {
		t.Fatalf("create rule: %d %v", status, rule)
	}
	p.stop(t)

	// Same data directory and ports: a restart as `make run` twice.
	q := restartBinary(t, p)
	checkReady(q)
	operator.base, reseller.base = "http://"+q.api, "http://"+q.api
	if status, body, _ := operator.do("GET", "/channel/v1.2/suppliers", ""); status != 200 {
		t.Errorf("operator created before the restart: %d %v", status, body)
	}
	_, _, rules := reseller.do("GET", "/registry/v1.1/supplier", "")
	if len(rules) != 1 || rules[0].(map[string]any)["id"] != rule["id"] {
		t.Errorf("rule after the restart = %v, want %v", rules, rule["id"])
	}

	// The CLI is another process: run's embedded broker refuses its
	// principal write (issue 18); the admin API revokes.
	rv := exec.Command(buildBinary(t), "principals", "revoke", op["id"].(string))
	rv.Env = q.env
	if out, err := rv.CombinedOutput(); err == nil || !strings.Contains(string(out), "Topic Authorization Failed") {
		t.Fatalf("principals revoke against run's embedded broker: %v\n%s; want refused", err, out)
	}
	if status, _, _ := operator.do("GET", "/channel/v1.2/suppliers", ""); status != 200 {
		t.Fatalf("the refused revoke took effect: %d", status)
	}
	admin.base = "http://" + q.api
	if status, body, _ := admin.do("DELETE", "/admin/v1/principals/"+op["id"].(string), ""); status != 204 && status != 200 {
		t.Fatalf("revoke through the API: %d %v", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := operator.do("GET", "/channel/v1.2/suppliers", "")
		if status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked operator still answered %d", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	q.stop(t)
	if left := processesUnder(t, q.data); len(left) > 0 {
		t.Errorf("processes left running after stop: %v", left)
	}
}
