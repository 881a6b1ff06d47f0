package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Stored slot kinds of commit.
const (
	kindRule     = "rule"
	kindMetadata = "metadata"
)

// Apply materializes one event of schemas.TopicRules or
// schemas.TopicMetadata into Redis. It is idempotent and order-insensitive:
// the versioned upsert ignores an event whose version is not newer than
// the slot's. An event it cannot use is ErrInvalidEvent; a Redis failure
// is ErrUnavailable (retry).
func (r *Registry) Apply(ctx context.Context, env schemas.Envelope) error {
	if env.Version <= 0 {
		return fmt.Errorf("event %s: version %d: %w", env.ID, env.Version, ErrInvalidEvent)
	}
	switch env.Type {
	case schemas.RegistryRuleCreated, schemas.RegistryRuleUpdated, schemas.RegistryRuleDeleted:
		var ev schemas.RuleEvent
		if err := json.Unmarshal(env.Data, &ev); err != nil {
			return fmt.Errorf("event %s: %w: %w", env.ID, ErrInvalidEvent, err)
		}
		if checkSubscriber(ev.Subscriber) != nil || !ValidType(ev.Type) || env.Key != schemas.RuleKey(ev.Subscriber, ev.Type) {
			return fmt.Errorf("event %s: subscriber %q, type %q, key %q: %w", env.ID, ev.Subscriber, ev.Type, env.Key, ErrInvalidEvent)
		}
		value := ""
		if deleted := env.Deleted || env.Type == schemas.RegistryRuleDeleted; !deleted {
			if ev.Rule == nil || ev.Rule.Type != ev.Type || ev.Rule.ID == "" {
				return fmt.Errorf("event %s: no usable rule: %w", env.ID, ErrInvalidEvent)
			}
			b, err := json.Marshal(ev.Rule)
			if err != nil {
				return fmt.Errorf("event %s: %w: %w", env.ID, ErrInvalidEvent, err)
			}
			value = string(b)
		}
		_, err := r.commit(ctx, ev.Subscriber, ev.Type, kindRule, env.Version, value, "", false)
		return err
	case schemas.RegistryMetadataUpdated:
		var ev schemas.MetadataEvent
		if err := json.Unmarshal(env.Data, &ev); err != nil {
			return fmt.Errorf("event %s: %w: %w", env.ID, ErrInvalidEvent, err)
		}
		if checkSubscriber(ev.Subscriber) != nil || env.Key != ev.Subscriber {
			return fmt.Errorf("event %s: subscriber %q, key %q: %w", env.ID, ev.Subscriber, env.Key, ErrInvalidEvent)
		}
		if _, err := ParseThrottleDelay(ev.Metadata.ThrottleDelay); err != nil {
			return fmt.Errorf("event %s: throttleDelay %q: %w", env.ID, ev.Metadata.ThrottleDelay, ErrInvalidEvent)
		}
		b, err := json.Marshal(ev.Metadata)
		if err != nil {
			return fmt.Errorf("event %s: %w: %w", env.ID, ErrInvalidEvent, err)
		}
		_, err = r.commit(ctx, ev.Subscriber, metadataField, kindMetadata, env.Version, string(b), "", false)
		return err
	}
	return fmt.Errorf("event %s: unknown type %q: %w", env.ID, env.Type, ErrInvalidEvent)
}

// HandleMessage applies one record of the two topics; it is a
// stream.Handler. A Kafka tombstone (no value) removes the slot its key
// names whatever the version (nothing in Switchback writes one; an
// operator cleaning a topic might).
func (r *Registry) HandleMessage(ctx context.Context, m stream.Message) error {
	if len(m.Value) == 0 {
		return r.applyTombstone(ctx, m)
	}
	var env schemas.Envelope
	if err := json.Unmarshal(m.Value, &env); err != nil {
		return fmt.Errorf("%s offset %d: %w: %w", m.Topic, m.Offset, ErrInvalidEvent, err)
	}
	return r.Apply(ctx, env)
}

func (r *Registry) applyTombstone(ctx context.Context, m stream.Message) error {
	key := string(m.Key)
	switch m.Topic {
	case schemas.TopicRules:
		sub, typ, ok := strings.Cut(key, "/")
		if !ok || checkSubscriber(sub) != nil || !ValidType(typ) {
			return fmt.Errorf("tombstone key %q: %w", key, ErrInvalidEvent)
		}
		_, err := r.commit(ctx, sub, typ, kindRule, 0, "", "", true)
		return err
	case schemas.TopicMetadata:
		if checkSubscriber(key) != nil {
			return fmt.Errorf("tombstone key %q: %w", key, ErrInvalidEvent)
		}
		_, err := r.commit(ctx, key, metadataField, kindMetadata, 0, "", "", true)
		return err
	}
	return fmt.Errorf("tombstone on topic %q: %w", m.Topic, ErrInvalidEvent)
}

// Topics are the topics the registry is materialized from.
func Topics() []string { return []string{schemas.TopicRules, schemas.TopicMetadata} }

// Rebuild applies every record of Topics() up to their current end: what
// a process runs at start against a fresh (or flushed) Redis. Invalid
// records are logged and skipped.
func (r *Registry) Rebuild(ctx context.Context, brokers []string) error {
	for _, topic := range Topics() {
		if err := stream.ReadAll(ctx, brokers, topic, stream.Retrying(ctx, r.log, "registry", ErrInvalidEvent, r.HandleMessage)); err != nil {
			return fmt.Errorf("rebuild registry: %w", err)
		}
	}
	return nil
}

// Follow applies every record of Topics() from the start and keeps
// following until ctx ends (it returns nil then). It is what makes Redis
// catch up with a write whose publish succeeded but whose commit did not
// (crash, Redis blip), and with writes of other instances. Invalid records
// are logged and skipped; Redis failures are retried; broker failures are
// ridden out (stream.Follow), so the registry keeps following after a
// broker restart (it used to stop for good).
func (r *Registry) Follow(ctx context.Context, brokers []string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(Topics()))
	apply := stream.Retrying(ctx, r.log, "registry", ErrInvalidEvent, r.HandleMessage) // safe for concurrent use
	for i, topic := range Topics() {
		wg.Go(func() { errs[i] = stream.Follow(ctx, brokers, topic, apply, stream.FollowLogger(r.log)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
