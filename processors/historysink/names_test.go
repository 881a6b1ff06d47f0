package historysink

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func publishNames(t *testing.T, brokers []string, msgs ...stream.Message) {
	t.Helper()
	p := newProducer(t, brokers)
	if err := p.Publish(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
}

func envelopeMsg(t *testing.T, topic string, env schemas.Envelope) stream.Message {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return stream.Message{Topic: topic, Key: []byte(env.Key), Value: b}
}

func principalEnv(t *testing.T, typ, id, role, name, channel string, version int64, revoked bool) schemas.Envelope {
	t.Helper()
	rec := map[string]any{"id": id, "role": role, "name": name, "channelId": channel, "key": "key-of-" + id,
		"hashAlg": "sha256-salted", "secretHash": []byte("hash-of-" + id), "salt": []byte("salt"), "createdAt": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if revoked {
		rec["revokedAt"] = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	}
	data, _ := json.Marshal(rec)
	return schemas.Envelope{ID: id + "-" + typ, Type: typ, Key: id, Version: version, Time: time.Now(), Data: data}
}

func channelEnv(t *testing.T, id, name, company string, version int64, deleted bool) schemas.Envelope {
	t.Helper()
	env := schemas.Envelope{ID: id + "-v" + string(rune('0'+version)), Key: id, Version: version, Time: time.Now(), Deleted: deleted}
	ev := map[string]any{"kind": "channel", "channelId": id}
	if deleted {
		env.Type = "catalog.channel.deleted"
	} else {
		env.Type = "catalog.channel.upserted"
		ev["channel"] = map[string]any{"id": id, "name": name, "companyName": company, "version": version}
	}
	env.Data, _ = json.Marshal(ev)
	return env
}

// TestNames_LoadsTheLatestStateOfPrincipalsAndChannelsWithoutSecrets: the
// names of principals and channels reach ClickHouse from their topics, a
// later state (renamed, revoked, deleted) wins over an earlier one under
// FINAL, reading the topics again doubles nothing, and no key or secret
// hash is copied.
func TestNames_LoadsTheLatestStateOfPrincipalsAndChannelsWithoutSecrets(t *testing.T) {
	conn := openClickHouse(t, testharness.ClickHouse(t))
	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := stream.EnsureTopics(ctx, brokers, []schemas.Topic{
		{Name: schemas.TopicPrincipals, Partitions: 1, Compacted: true}, {Name: schemas.TopicChannels, Partitions: 1, Compacted: true}}); err != nil {
		t.Fatal(err)
	}
	publishNames(t, brokers,
		envelopeMsg(t, schemas.TopicPrincipals, principalEnv(t, "principal.created", "p-1", "reseller", "Acme Travel", "ch-1", 1, false)),
		envelopeMsg(t, schemas.TopicPrincipals, principalEnv(t, "principal.created", "p-2", "operator", "Alpine Tours", "", 1, false)),
		envelopeMsg(t, schemas.TopicPrincipals, principalEnv(t, "principal.revoked", "p-2", "operator", "Alpine Tours", "", 2, true)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch-1", "Acme web shop", "Acme Travel Ltd", 1, false)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch-1", "Acme shop", "Acme Travel Ltd", 2, false)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch-2", "Gone", "Gone Ltd", 1, false)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch-2", "", "", 2, true)),
	)

	wantPrincipals := "p-1 | reseller | Acme Travel | ch-1 | 2026-01-02 03:04:05 | 0 | 1\np-2 | operator | Alpine Tours |  | 2026-01-02 03:04:05 | 1 | 2\n"
	wantChannels := "ch-1 | Acme shop | Acme Travel Ltd | 0 | 2\nch-2 |  |  | 1 | 2\n"
	for run := 1; run <= 2; run++ { // the second run reads the topics again, as a restart does
		rctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		n := NewNames(NamesOptions{Brokers: brokers, Conn: conn, FlushInterval: 50 * time.Millisecond, Logger: testharness.Logger(t)})
		go func() { done <- n.Run(rctx) }()
		var gotP, gotC string
		deadline := time.Now().Add(30 * time.Second)
		for {
			gotP = joinRows(query(t, conn, "SELECT id, role, name, channel_id, created_at, revoked, version FROM principals FINAL ORDER BY id"))
			gotC = joinRows(query(t, conn, "SELECT id, name, company_name, deleted, version FROM channels FINAL ORDER BY id"))
			if gotP == wantPrincipals && gotC == wantChannels {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: after 30 s principals\n%swant\n%schannels\n%swant\n%s", run, gotP, wantPrincipals, gotC, wantChannels)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := query(t, conn, "SELECT count() FROM principals FINAL")[0][0]; n != "2" {
			t.Errorf("run %d: %s principals under FINAL, want 2", run, n)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	cols := joinRows(query(t, conn, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table IN ('principals', 'channels') ORDER BY name"))
	for _, secret := range []string{"key", "secret", "salt", "hash"} {
		if strings.Contains(cols, secret) {
			t.Errorf("a names table has a %q column:\n%s", secret, cols)
		}
	}
}
