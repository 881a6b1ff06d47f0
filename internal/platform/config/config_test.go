package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoad_Defaults(t *testing.T) {
	c, err := Load("test", nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.EmbeddedKafka() || c.RedisURL != "" || c.ClickHouseURL != "" {
		t.Errorf("defaults should be embedded: %+v", c)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.OpsAddr != "127.0.0.1:9090" || c.EmbeddedKafkaAddr != "127.0.0.1:19092" ||
		c.EmbeddedClickHouseAddr != "127.0.0.1:19000" || c.EmbeddedClickHousePort() != 19000 || c.AccessLog != "debug" {
		t.Errorf("listener defaults wrong: %+v", c)
	}
	if c.DataDir != "./var" || c.Demo || c.MaxBodyBytes != 1<<20 || c.ShutdownTimeout != 15*time.Second || c.SyncConcurrency != 4 || c.SyncHorizonDays != 90 {
		t.Errorf("defaults wrong: %+v", c)
	}
}

func TestLoad_FlagOverridesEnvironment(t *testing.T) {
	c, err := Load("test", []string{"--http-addr", "127.0.0.1:18080", "--demo=true"},
		env(map[string]string{"SWITCHBACK_HTTP_ADDR": "127.0.0.1:28080", "SWITCHBACK_KAFKA_BROKERS": "k1:9092, k2:9092"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:18080" {
		t.Errorf("HTTPAddr = %q, want the flag's value", c.HTTPAddr)
	}
	if !c.Demo {
		t.Error("Demo flag ignored")
	}
	if len(c.KafkaBrokers) != 2 || c.KafkaBrokers[1] != "k2:9092" {
		t.Errorf("KafkaBrokers = %v", c.KafkaBrokers)
	}
}

func TestLoad_InvalidSettingIsNamed(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"bad broker", map[string]string{"SWITCHBACK_KAFKA_BROKERS": "nohost"}, nil, "SWITCHBACK_KAFKA_BROKERS"},
		{"bad redis url", map[string]string{"SWITCHBACK_REDIS_URL": "http://x"}, nil, "SWITCHBACK_REDIS_URL"},
		{"bad redis mode", map[string]string{"SWITCHBACK_REDIS_MODE": "sharded"}, nil, "SWITCHBACK_REDIS_MODE"},
		{"cluster without seeds", map[string]string{"SWITCHBACK_REDIS_MODE": "cluster"}, nil, "SWITCHBACK_REDIS_URL"},
		{"cluster with a database", map[string]string{"SWITCHBACK_REDIS_MODE": "cluster", "SWITCHBACK_REDIS_URL": "redis://h:7000/3"}, nil, "only database 0"},
		{"sentinel without master", map[string]string{"SWITCHBACK_REDIS_MODE": "sentinel", "SWITCHBACK_REDIS_SENTINEL_ADDRS": "h:26379"}, nil, "SWITCHBACK_REDIS_SENTINEL_MASTER"},
		{"sentinel without sentinels", map[string]string{"SWITCHBACK_REDIS_MODE": "sentinel", "SWITCHBACK_REDIS_SENTINEL_MASTER": "m"}, nil, "SWITCHBACK_REDIS_SENTINEL_ADDRS"},
		{"bad sentinel addr", map[string]string{"SWITCHBACK_REDIS_MODE": "sentinel", "SWITCHBACK_REDIS_SENTINEL_MASTER": "m", "SWITCHBACK_REDIS_SENTINEL_ADDRS": "h"}, nil, "SWITCHBACK_REDIS_SENTINEL_ADDRS"},
		{"sentinel settings in single mode", map[string]string{"SWITCHBACK_REDIS_SENTINEL_MASTER": "m"}, nil, "SWITCHBACK_REDIS_MODE=sentinel"},
		{"bad clickhouse url", map[string]string{"SWITCHBACK_CLICKHOUSE_URL": "http://x:8123"}, nil, "SWITCHBACK_CLICKHOUSE_URL"},
		{"bad http addr", map[string]string{"SWITCHBACK_HTTP_ADDR": "8080"}, nil, "SWITCHBACK_HTTP_ADDR"},
		{"bad bool", map[string]string{"SWITCHBACK_DEMO": "yes please"}, nil, "SWITCHBACK_DEMO"},
		{"bad log level", map[string]string{"SWITCHBACK_LOG_LEVEL": "loud"}, nil, "SWITCHBACK_LOG_LEVEL"},
		{"zero body limit", map[string]string{"SWITCHBACK_MAX_BODY_BYTES": "0"}, nil, "SWITCHBACK_MAX_BODY_BYTES"},
		{"negative timeout", nil, []string{"--shutdown-timeout", "-1s"}, "SWITCHBACK_SHUTDOWN_TIMEOUT"},
		{"admin key without secret", map[string]string{"SWITCHBACK_ADMIN_KEY": "k"}, nil, "SWITCHBACK_ADMIN_KEY"},
		{"short admin secret", map[string]string{"SWITCHBACK_ADMIN_KEY": "k", "SWITCHBACK_ADMIN_SECRET": "short"}, nil, "SWITCHBACK_ADMIN_SECRET"},
		{"same listeners", map[string]string{"SWITCHBACK_OPS_ADDR": "127.0.0.1:8080"}, nil, "SWITCHBACK_OPS_ADDR"},
		{"clickhouse child on a public address", map[string]string{"SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR": "0.0.0.0:19000"}, nil, "SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR"},
		{"clickhouse child without a port", map[string]string{"SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR": "127.0.0.1"}, nil, "SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR"},
		{"bad access log", map[string]string{"SWITCHBACK_ACCESS_LOG": "loud"}, nil, "SWITCHBACK_ACCESS_LOG"},
		{"no sync concurrency", map[string]string{"SWITCHBACK_SYNC_CONCURRENCY": "0"}, nil, "must be a whole number from 1 to 64"},
		{"too much sync concurrency", nil, []string{"--sync-concurrency", "65"}, "SWITCHBACK_SYNC_CONCURRENCY"},
		{"horizon beyond a year", map[string]string{"SWITCHBACK_SYNC_HORIZON_DAYS": "367"}, nil, "must be a whole number of days from 1 to 366"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("test", tt.args, env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestLoad_SecretsNeverInErrors(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		secret string
	}{
		{"admin secret", map[string]string{"SWITCHBACK_ADMIN_KEY": "k", "SWITCHBACK_ADMIN_SECRET": "hunter2"}, "hunter2"},
		{"redis password", map[string]string{"SWITCHBACK_REDIS_URL": "http://u:topsecretpw@h:1"}, "topsecretpw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("test", nil, env(tt.env))
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	got := RedactURL("clickhouse://user:pw@h:9000/db")
	if strings.Contains(got, "pw") || !strings.Contains(got, "user@h:9000") {
		t.Errorf("RedactURL = %q", got)
	}
}

func TestLoad_FormerNamesOfTheOutboundSettingsStillWork(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		args        []string
		http, priv  bool
		wantErrName string
	}{
		{name: "defaults are strict"},
		{name: "current names", env: map[string]string{"SWITCHBACK_OUTBOUND_ALLOW_HTTP": "true", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE": "true"}, http: true, priv: true},
		{name: "former names", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_HTTP": "true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "true"}, http: true, priv: true},
		{name: "former name of one", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "true"}, priv: true},
		{name: "both names agreeing", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_HTTP": "true", "SWITCHBACK_OUTBOUND_ALLOW_HTTP": "true"}, http: true},
		{name: "both names disagreeing", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_HTTP": "true", "SWITCHBACK_OUTBOUND_ALLOW_HTTP": "false"},
			wantErrName: "SWITCHBACK_OUTBOUND_ALLOW_HTTP"},
		{name: "former flag", args: []string{"--webhook-allow-http=true"}, http: true},
		{name: "current flag wins over the former env", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "true"},
			args: []string{"--outbound-allow-private=false"}},
		{name: "bad value under the former name", env: map[string]string{"SWITCHBACK_WEBHOOK_ALLOW_HTTP": "yes please"},
			wantErrName: "SWITCHBACK_OUTBOUND_ALLOW_HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load("test", tt.args, env(tt.env))
			if tt.wantErrName != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrName) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErrName)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.OutboundAllowHTTP != tt.http || c.OutboundAllowPrivate != tt.priv {
				t.Fatalf("http %v private %v, want %v %v", c.OutboundAllowHTTP, c.OutboundAllowPrivate, tt.http, tt.priv)
			}
			if p := c.Outbound(); p.AllowHTTP != tt.http || p.AllowPrivate != tt.priv {
				t.Fatalf("Outbound() = %+v", p)
			}
		})
	}
}

func TestLoad_SecretsKeyIsBase64Of32BytesAndNeverEchoed(t *testing.T) {
	good := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // bytes 0..31
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"unset", nil, ""},
		{"a key", map[string]string{"SWITCHBACK_SECRETS_KEY": good}, ""},
		{"a key and the previous", map[string]string{"SWITCHBACK_SECRETS_KEY": good, "SWITCHBACK_SECRETS_KEY_PREVIOUS": good}, ""},
		{"too short", map[string]string{"SWITCHBACK_SECRETS_KEY": "c2hvcnQtYnV0LXNlY3JldA=="}, "SWITCHBACK_SECRETS_KEY"},
		{"not base64", map[string]string{"SWITCHBACK_SECRETS_KEY": "hunter2 hunter2 hunter2"}, "SWITCHBACK_SECRETS_KEY"},
		{"previous without a key", map[string]string{"SWITCHBACK_SECRETS_KEY_PREVIOUS": good}, "SWITCHBACK_SECRETS_KEY_PREVIOUS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load("test", nil, env(tt.env))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v := tt.env["SWITCHBACK_SECRETS_KEY"]; v != "" && len(c.SecretsKey) != 32 {
					t.Fatalf("key of %d bytes", len(c.SecretsKey))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
			}
			for _, v := range tt.env {
				if strings.Contains(err.Error(), v) {
					t.Fatalf("the error echoes the value: %v", err)
				}
			}
		})
	}
}

func TestLoad_DemoDataTurnsOnWhatItNeedsOrNamesTheSetting(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		wantOn  bool
		wantSet int
	}{
		{"demo data, allow settings not given: turned on", map[string]string{"SWITCHBACK_DEMO": "true"}, "", true, 2},
		{"demo data, given true: kept", map[string]string{"SWITCHBACK_DEMO": "true", "SWITCHBACK_OUTBOUND_ALLOW_HTTP": "true", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE": "true"}, "", true, 0},
		{"demo data, given true under the former names: kept", map[string]string{"SWITCHBACK_DEMO": "true", "SWITCHBACK_WEBHOOK_ALLOW_HTTP": "true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "true"}, "", true, 0},
		{"demo data, one given false: refused, named", map[string]string{"SWITCHBACK_DEMO": "true", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE": "false"}, "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE", false, 0},
		{"demo data, one given false under its former name: refused", map[string]string{"SWITCHBACK_DEMO": "true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "false"}, "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE", false, 0},
		{"demo without data: untouched", map[string]string{"SWITCHBACK_DEMO": "true", "SWITCHBACK_DEMO_DATA": "false"}, "", false, 0},
		{"no demo: untouched", nil, "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load("test", nil, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.OutboundAllowHTTP != tt.wantOn || c.OutboundAllowPrivate != tt.wantOn || len(c.DemoSet) != tt.wantSet {
				t.Errorf("allow http %v, private %v, set by the demo %v; want %v and %d set", c.OutboundAllowHTTP, c.OutboundAllowPrivate, c.DemoSet, tt.wantOn, tt.wantSet)
			}
		})
	}
	// The flag counts as given too, under either name.
	for _, f := range []string{"--outbound-allow-http=false", "--webhook-allow-http=false"} {
		if _, err := Load("test", []string{f}, env(map[string]string{"SWITCHBACK_DEMO": "true"})); err == nil || !strings.Contains(err.Error(), "SWITCHBACK_OUTBOUND_ALLOW_HTTP") {
			t.Errorf("%s with the demo: err = %v", f, err)
		}
	}
}
