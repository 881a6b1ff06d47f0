package historysink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Tables of the names loader (schemas/clickhouse/0003).
const (
	TablePrincipals = "principals"
	TableChannels   = "channels"
)

// NameTables lists the tables Names writes. They are not history: retention
// does not drop them.
func NameTables() []string { return []string{TablePrincipals, TableChannels} }

// NamesOptions configure NewNames.
type NamesOptions struct {
	Brokers []string
	// Conn is the ClickHouse connection (warehouse.Open), migrated.
	Conn driver.Conn
	// FlushInterval bounds how long a state waits before it is inserted.
	// Default 1 s.
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// Names loads the names of principals and channels into ClickHouse, so
// that analysts see who a subscriber id or a channel id is: it follows the
// compacted topics switchback.principals and switchback.channels from
// their start (every process start re-reads them: they are small) and
// inserts every state it reads, with its version. The tables are
// ReplacingMergeTree(version), so a state read again collapses with the
// one already there, and FINAL reads the latest. It copies names, roles and
// channels only, never keys, secret hashes or credentials.
type Names struct {
	opts NamesOptions
	log  *slog.Logger

	mu         sync.Mutex
	principals []principalRow
	channels   []channelRow
}

type principalRow struct {
	id, role, name, channelID string
	createdAt                 time.Time
	revoked                   uint8
	version                   int64
}

type channelRow struct {
	id, name, companyName string
	deleted               uint8
	version               int64
}

// NewNames creates the loader; Run runs it.
func NewNames(opts NamesOptions) *Names {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Names{opts: opts, log: opts.Logger}
}

// Run follows both topics and inserts what it read every FlushInterval
// until ctx ends, then inserts what it holds. A failed insert is retried at
// the next flush (the rows are kept); it returns an error only for a
// misconfiguration.
func (n *Names) Run(ctx context.Context) error {
	if len(n.opts.Brokers) == 0 || n.opts.Conn == nil {
		return errors.New("names: brokers and a ClickHouse connection are required")
	}
	var wg sync.WaitGroup
	for topic, apply := range map[string]func(stream.Message) error{
		schemas.TopicPrincipals: n.applyPrincipal,
		schemas.TopicChannels:   n.applyChannel,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Follow rides out broker failures; it stops early only on
			// an error of apply (then the names of this topic stop).
			if err := stream.Follow(ctx, n.opts.Brokers, topic, apply, stream.FollowLogger(n.log)); err != nil {
				n.log.Error("following for analysts' names stopped", "topic", topic, "err", err)
			}
		}()
	}
	t := time.NewTicker(n.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := n.flush(fctx); err != nil {
				n.log.Warn("names not inserted at shutdown; they are read again at the next start", "err", err)
			}
			return nil
		case <-t.C:
			if err := n.flush(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("inserting analysts' names failed; retrying", "err", err)
			}
		}
	}
}

// principalState is what Names reads of a principal record
// (internal/principals: the topic's payload); the secret material is not
// decoded at all.
type principalState struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	Name      string     `json:"name"`
	ChannelID string     `json:"channelId"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

func (n *Names) applyPrincipal(m stream.Message) error {
	var env schemas.Envelope
	if len(m.Value) == 0 || json.Unmarshal(m.Value, &env) != nil || env.Deleted {
		return nil // tombstones and unreadable records name nobody
	}
	var p principalState
	if err := json.Unmarshal(env.Data, &p); err != nil || p.ID == "" {
		return nil
	}
	row := principalRow{id: p.ID, role: p.Role, name: p.Name, channelID: p.ChannelID, createdAt: p.CreatedAt.UTC(), version: env.Version}
	if p.RevokedAt != nil {
		row.revoked = 1
	}
	n.mu.Lock()
	n.principals = append(n.principals, row)
	n.mu.Unlock()
	return nil
}

// channelEvent is what Names reads of a catalog channel event
// (internal/catalog: Event with its Channel).
type channelEvent struct {
	ChannelID string `json:"channelId"`
	Channel   *struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		CompanyName string `json:"companyName"`
	} `json:"channel"`
}

func (n *Names) applyChannel(m stream.Message) error {
	var env schemas.Envelope
	if len(m.Value) == 0 || json.Unmarshal(m.Value, &env) != nil {
		return nil
	}
	var ev channelEvent
	_ = json.Unmarshal(env.Data, &ev)
	row := channelRow{id: env.Key, version: env.Version}
	switch {
	case env.Deleted:
		row.deleted = 1
		if ev.ChannelID != "" {
			row.id = ev.ChannelID
		}
	case ev.Channel != nil && ev.Channel.ID != "":
		row.id, row.name, row.companyName = ev.Channel.ID, ev.Channel.Name, ev.Channel.CompanyName
	default:
		return nil
	}
	if row.id == "" {
		return nil
	}
	n.mu.Lock()
	n.channels = append(n.channels, row)
	n.mu.Unlock()
	return nil
}

// flush inserts what was read since the last flush; on failure the rows
// are kept for the next one.
func (n *Names) flush(ctx context.Context) error {
	n.mu.Lock()
	ps, cs := n.principals, n.channels
	n.principals, n.channels = nil, nil
	n.mu.Unlock()
	err := n.insertPrincipals(ctx, ps)
	if err != nil {
		n.requeue(ps, nil)
	}
	if cerr := n.insertChannels(ctx, cs); cerr != nil {
		n.requeue(nil, cs)
		err = errors.Join(err, cerr)
	}
	return err
}

func (n *Names) requeue(ps []principalRow, cs []channelRow) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.principals = append(ps, n.principals...)
	n.channels = append(cs, n.channels...)
}

func (n *Names) insertPrincipals(ctx context.Context, rows []principalRow) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := n.opts.Conn.PrepareBatch(ctx, "INSERT INTO "+TablePrincipals+" (id, role, name, channel_id, created_at, revoked, version)")
	if err != nil {
		return fmt.Errorf("insert %s: %w", TablePrincipals, err)
	}
	for _, r := range rows {
		if err := b.Append(r.id, r.role, r.name, r.channelID, r.createdAt, r.revoked, r.version); err != nil {
			_ = b.Abort()
			return fmt.Errorf("insert %s: %w", TablePrincipals, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %s: %w", TablePrincipals, err)
	}
	return nil
}

func (n *Names) insertChannels(ctx context.Context, rows []channelRow) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := n.opts.Conn.PrepareBatch(ctx, "INSERT INTO "+TableChannels+" (id, name, company_name, deleted, version)")
	if err != nil {
		return fmt.Errorf("insert %s: %w", TableChannels, err)
	}
	for _, r := range rows {
		if err := b.Append(r.id, r.name, r.companyName, r.deleted, r.version); err != nil {
			_ = b.Abort()
			return fmt.Errorf("insert %s: %w", TableChannels, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %s: %w", TableChannels, err)
	}
	return nil
}
