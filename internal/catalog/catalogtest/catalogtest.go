// Package catalogtest is the catalog's store fixture for tests and
// benchmarks: a real redis-server (internal/platform/testharness), the catalog store
// publishing to an in-memory recorder or to the embedded Kafka broker, a
// principals table with fixed test principals, the test channels, the
// JSON bodies of the channel interface, and Writer, which makes the
// catalog writes the API's handlers make, as a principal, straight on the
// store. It starts no server: query/querytest adds the HTTP API on top.
//
// It must not import ingest/, processors/, query/, dispatcher/, bench/ or
// cmd/ (deps_test.go checks it): ingest and processor tests set up their
// catalog through it without the query tier. It is imported by _test.go
// files and bench/ only.
package catalogtest

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// Cred is a test principal's credential and id, and the principal it
// authenticates as: what the API's handlers pass to the store.
type Cred struct {
	Key, Secret, ID string
	Principal       principals.Principal
}

// Test channels: resellers R1 and R1b sell on ChannelA, R2 on ChannelB.
const (
	ChannelA = "chan-a"
	ChannelB = "chan-b"
)

// Recorder is an in-memory stream.Publisher; SetFail makes Publish fail as
// an unreachable broker does (testharness's, named here for the fixture's
// users).
type Recorder = testharness.Recorder

// SyncBuffer is a bytes.Buffer safe for concurrent writes (captured logs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *SyncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Options of Start.
type Options struct {
	// Kafka starts the embedded broker and publishes to it; else the
	// store publishes to a Recorder.
	Kafka bool
	// RedisURL reuses a running redis-server (benchmarks); empty starts one.
	RedisURL string
	// Quiet drops the logs instead of capturing them (benchmarks).
	Quiet bool
}

// Env is a running catalog store.
type Env struct {
	Store      *catalogredis.Store
	Redis      redis.UniversalClient
	Rec        *Recorder // nil with Kafka
	Brokers    []string  // nil without Kafka
	Producer   *stream.Producer
	Principals *principals.Store
	Logs       *SyncBuffer
	Logger     *slog.Logger
	// Keyring seals the catalog's credentials (a key of this test's own).
	Keyring *keyring.Keyring

	Admin, Operator, Operator2, Reseller1, Reseller1b, Reseller2 Cred
}

// NewKeyring is a keyring with a random key, for tests that store secrets
// (testharness.Keyring, named here for the fixture's users).
func NewKeyring(t testing.TB) *keyring.Keyring { return testharness.Keyring(t) }

// Start starts everything and registers its stop with t.Cleanup.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e := &Env{Logs: &SyncBuffer{}}
	if opts.Quiet {
		e.Logger = slog.New(slog.DiscardHandler)
	} else {
		e.Logger = slog.New(slog.NewTextHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.RedisURL == "" {
		// A redis-server, or the shared Redis Cluster with
		// SWITCHBACK_TEST_REDIS=cluster.
		e.Redis = testharness.RedisClient(t, 64)
	} else {
		ropts, err := redis.ParseURL(opts.RedisURL)
		if err != nil {
			t.Fatal(err)
		}
		ropts.PoolSize = 64
		c := redis.NewClient(ropts)
		t.Cleanup(func() { _ = c.Close() })
		e.Redis = c
	}

	var pub stream.Publisher
	if opts.Kafka {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := kafkabroker.Start(ctx, kafkabroker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		e.Brokers = []string{b.Addr()}
		if err := stream.EnsureTopics(ctx, e.Brokers, schemas.Topics()); err != nil {
			t.Fatal(err)
		}
		e.Producer = stream.NewProducer(stream.ProducerConfig{Brokers: e.Brokers, BatchTimeout: time.Millisecond})
		t.Cleanup(func() { _ = e.Producer.Close() })
		pub = e.Producer
	} else {
		e.Rec = &Recorder{}
		pub = e.Rec
	}
	// The tests' simulated partners and booking systems listen on
	// loopback over http: the outbound policy is relaxed explicitly.
	// Credentials are sealed at rest with a key of the test's own.
	e.Keyring = NewKeyring(t)
	e.Store = catalogredis.NewStore(catalogredis.Options{Redis: e.Redis, Publisher: pub, Logger: e.Logger,
		Outbound: outbound.Policy{AllowHTTP: true, AllowPrivate: true}, Secrets: e.Keyring})

	e.Principals = principals.NewStore(&Recorder{})
	mk := func(key string, role principals.Role, ch string) Cred {
		secret := key + "-secret-0123456789"
		p, err := e.Principals.EnsureFixed(context.Background(), key, secret, role, key, ch)
		if err != nil {
			t.Fatal(err)
		}
		return Cred{Key: key, Secret: secret, ID: p.ID, Principal: p}
	}
	e.Admin = mk("t-admin", principals.RoleAdmin, "")
	e.Operator = mk("t-operator", principals.RoleOperator, "")
	e.Operator2 = mk("t-operator2", principals.RoleOperator, "")
	e.Reseller1 = mk("t-reseller1", principals.RoleReseller, ChannelA)
	e.Reseller1b = mk("t-reseller1b", principals.RoleReseller, ChannelA)
	e.Reseller2 = mk("t-reseller2", principals.RoleReseller, ChannelB)

	for _, c := range []catalog.Channel{
		{ID: ChannelA, Name: "Channel A", CompanyName: "A Travel"},
		{ID: ChannelB, Name: "Channel B", CompanyName: "B Tours"},
	} {
		if _, err := e.Store.EnsureChannel(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// SupplierBody is a valid supplier body with the given id, name and code
// and a partner connection with credentials apiKey/apiSecret.
func SupplierBody(id, name, code, apiKey, apiSecret string) string {
	return `{"id":"` + id + `","name":"` + name + `","code":"` + code + `","partnerId":"p-` + code + `",
"title":"` + name + ` title","description":"About ` + name + `",
"contacts":[{"email":"ops@example.com","name":"Ops","phone":"+100","primary":true,"title":"manager"}],
"mainLocation":{"name":"HQ","title":"Head office","address":{"countryCode":"FRA","locality":"Paris"},"longLat":{"latitude":48.85,"longitude":2.35},"type":"MEETING_POINT","city":"Paris"},
"hours":[{"daysOfWeek":[1,2,3],"times":[{"open":"09:00","close":"17:00"}],"timezone":"Europe/Paris"}],
"travelerTypes":[{"ageBand":"ADULT","minAge":18,"maxAge":99,"name":"Adult","title":"Grown-up"}],
"content":{"name":"c","title":[{"text":"Hello","locale":"en"}],"media":[{"url":"https://img.example.com/a.jpg","relationship":"cover"}]},
"connection":{"kind":"partner","baseUrl":"https://partner.example.com/api/","credentials":{"apiKey":"` + apiKey + `","apiSecret":"` + apiSecret + `"}}}`
}

// ProductBody is a valid product body.
func ProductBody(id, name, description string) string {
	return `{"id":"` + id + `","name":"` + name + `","description":"` + description + `","timeZone":"Europe/Paris",
"availabilityType":"START_TIME","deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL",
"instantConfirmation":true,"locations":[{"name":"Start","type":"START","order":1}]}`
}

// RateBody is a valid rate body with two prices: "p-std" labelled
// "public", and "p-net" labelled "public" and "b2b".
func RateBody(id, name string) string {
	return `{"id":"` + id + `","name":"` + name + `","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,
"prices":[{"id":"p-std","labels":["public"],"name":"Standard","retail":{"amount":10.5,"currency":"EUR"}},
{"id":"p-net","labels":["public","b2b"],"name":"Net","net":{"amount":8,"currency":"EUR"},"retail":{"amount":10,"currency":"EUR"}}]}`
}
