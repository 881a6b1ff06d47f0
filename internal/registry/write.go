package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Create registers the subscriber's rule of the type. The id is generated
// when in.ID is empty; the securityKey is always generated. A second rule
// of a type is ErrConflict (spec doc 1, Behaviour rule 2), also when two
// creates race: the slot is reserved in Redis first.
//
// Order: reserve the slot (pending marker) -> publish the rule (acks=all)
// -> commit it to Redis and drop the marker. A failed publish releases the
// marker and returns ErrUnavailable; a crash in between leaves only the
// expiring marker.
func (r *Registry) Create(ctx context.Context, subscriber, typ string, in RuleInput) (Rule, error) {
	if err := checkSubscriber(subscriber); err != nil {
		return Rule{}, err
	}
	rule, err := r.ValidateRule(typ, in)
	if err != nil {
		return Rule{}, err
	}
	if rule.ID == "" {
		rule.ID = uuid.NewString()
	}
	rule.SecurityKey = newSecurityKey()

	l, err := r.lock(ctx, subscriber, typ, modeCreate)
	if err != nil {
		return Rule{}, err
	}
	now := r.timestamp()
	rule.CreatedOn, rule.UpdatedOn = now, now
	return r.writeRule(ctx, subscriber, l, schemas.RegistryRuleCreated, rule, now)
}

// Update replaces url, disabled and config of the subscriber's rule of the
// type; in.ID is required and must be that rule's id (else ErrNotFound).
// securityKey and createdOn are kept.
func (r *Registry) Update(ctx context.Context, subscriber, typ string, in RuleInput) (Rule, error) {
	if err := checkSubscriber(subscriber); err != nil {
		return Rule{}, err
	}
	if in.ID == "" {
		return Rule{}, invalid("id", "is required on update")
	}
	rule, err := r.ValidateRule(typ, in)
	if err != nil {
		return Rule{}, err
	}
	l, cur, err := r.lockRule(ctx, subscriber, typ, rule.ID)
	if err != nil {
		return Rule{}, err
	}
	now := r.timestamp()
	rule.SecurityKey, rule.CreatedOn, rule.UpdatedOn = cur.SecurityKey, cur.CreatedOn, now
	return r.writeRule(ctx, subscriber, l, schemas.RegistryRuleUpdated, rule, now)
}

// Delete removes the subscriber's rule of the type with that id (else
// ErrNotFound). The dispatcher checks the rule at send time, so no further
// notification of the type is sent (spec doc 1, Behaviour rule 3).
func (r *Registry) Delete(ctx context.Context, subscriber, typ, id string) error {
	if err := checkSubscriber(subscriber); err != nil {
		return err
	}
	l, _, err := r.lockRule(ctx, subscriber, typ, id)
	if err != nil {
		return err
	}
	now := r.timestamp()
	version := nextVersion(l.version, now)
	ev := schemas.RuleEvent{Subscriber: subscriber, Type: typ, RuleID: id}
	if err := r.publish(ctx, l, schemas.TopicRules, schemas.RuleKey(subscriber, typ), schemas.RegistryRuleDeleted, version, now, true, ev); err != nil {
		r.release(ctx, subscriber, l)
		return err
	}
	r.commitOwn(ctx, subscriber, l, kindRule, version, "")
	return nil
}

// lockRule locks the slot of an existing rule and checks its id.
func (r *Registry) lockRule(ctx context.Context, subscriber, typ, id string) (slotLock, Rule, error) {
	if !ValidType(typ) {
		return slotLock{}, Rule{}, fmt.Errorf("rule type %q: %w", typ, ErrNotFound)
	}
	l, err := r.lock(ctx, subscriber, typ, modeExisting)
	if err != nil {
		return slotLock{}, Rule{}, err
	}
	cur, err := r.decodeStored(subscriber, typ, l.current)
	if err != nil {
		r.release(ctx, subscriber, l)
		return slotLock{}, Rule{}, err
	}
	if cur.ID != id {
		r.release(ctx, subscriber, l)
		return slotLock{}, Rule{}, fmt.Errorf("%s rule %s: %w", typ, id, ErrNotFound)
	}
	return l, cur, nil
}

func (r *Registry) writeRule(ctx context.Context, subscriber string, l slotLock, event string, rule Rule, now time.Time) (Rule, error) {
	version := nextVersion(l.version, now)
	sr, err := r.sealed(subscriber, rule)
	if err != nil {
		r.release(ctx, subscriber, l)
		return Rule{}, err
	}
	ev := schemas.RuleEvent{Subscriber: subscriber, Type: rule.Type, RuleID: rule.ID, Rule: &sr}
	if err := r.publish(ctx, l, schemas.TopicRules, schemas.RuleKey(subscriber, rule.Type), event, version, now, false, ev); err != nil {
		r.release(ctx, subscriber, l)
		return Rule{}, err
	}
	value, err := json.Marshal(sr)
	if err != nil {
		return Rule{}, fmt.Errorf("encode %s rule: %w", rule.Type, err)
	}
	r.commitOwn(ctx, subscriber, l, kindRule, version, string(value))
	return rule, nil
}

// UpdateMetadata changes the subscriber's metadata: fields of in that are
// nil keep their value. The first change creates it (createdOn).
func (r *Registry) UpdateMetadata(ctx context.Context, subscriber string, in MetadataInput) (Metadata, error) {
	if err := checkSubscriber(subscriber); err != nil {
		return Metadata{}, err
	}
	if err := in.validate(); err != nil {
		return Metadata{}, err
	}
	return r.writeMetadata(ctx, subscriber, "", func(md *Metadata) bool {
		if in.ThrottleDelay != nil {
			md.ThrottleDelay = *in.ThrottleDelay
		}
		if in.DisableAll != nil {
			md.DisableAll = *in.DisableAll
		}
		return true
	})
}

// SetDisableAll sets the subscriber's disableAll, Kafka first like every
// write; reason goes on the event (the dispatcher's auto-disable says why:
// spec doc 1, "the subscriber's backend queue has reached its maximum
// size"). Setting the value it already has changes nothing.
func (r *Registry) SetDisableAll(ctx context.Context, subscriber string, disable bool, reason string) error {
	if err := checkSubscriber(subscriber); err != nil {
		return err
	}
	_, err := r.writeMetadata(ctx, subscriber, reason, func(md *Metadata) bool {
		if md.DisableAll == disable {
			return false
		}
		md.DisableAll = disable
		return true
	})
	return err
}

// writeMetadata locks the metadata, lets change edit it (false: nothing
// to do), publishes and commits.
func (r *Registry) writeMetadata(ctx context.Context, subscriber, reason string, change func(*Metadata) bool) (Metadata, error) {
	l, err := r.lock(ctx, subscriber, metadataField, modeMetadata)
	if err != nil {
		return Metadata{}, err
	}
	now := r.timestamp()
	md := DefaultMetadata()
	if l.current != "" {
		if md, err = decodeMetadata(l.current); err != nil {
			r.release(ctx, subscriber, l)
			return Metadata{}, err
		}
	}
	if !change(&md) {
		r.release(ctx, subscriber, l)
		return md, nil
	}
	if md.CreatedOn.IsZero() {
		md.CreatedOn = now
	}
	md.UpdatedOn = now
	version := nextVersion(l.version, now)
	ev := schemas.MetadataEvent{Subscriber: subscriber, Metadata: schemas.MetadataState(md), Reason: reason}
	if err := r.publish(ctx, l, schemas.TopicMetadata, subscriber, schemas.RegistryMetadataUpdated, version, now, false, ev); err != nil {
		r.release(ctx, subscriber, l)
		return Metadata{}, err
	}
	value, err := json.Marshal(md)
	if err != nil {
		return Metadata{}, fmt.Errorf("encode metadata: %w", err)
	}
	r.commitOwn(ctx, subscriber, l, kindMetadata, version, string(value))
	return md, nil
}

// publish writes one event and waits for the acknowledgement (bounded by
// publishTimeout, well under the marker's lifetime), unless the views were
// lost since l was reserved (Fence).
func (r *Registry) publish(ctx context.Context, l slotLock, topic, key, typ string, version int64, now time.Time, deleted bool, data any) error {
	if r.pub == nil {
		return fmt.Errorf("publish %s: no publisher: %w", typ, ErrUnavailable)
	}
	if err := r.checkFence(ctx, l); err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	env := schemas.Envelope{ID: uuid.NewString(), Type: typ, Key: key, Version: version, Time: now,
		Source: r.source, Deleted: deleted, Data: raw}
	value, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode %s envelope: %w", typ, err)
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := r.pub.Publish(ctx, stream.Message{Topic: topic, Key: []byte(key), Value: value, Time: now}); err != nil {
		return fmt.Errorf("publish %s %s: %w: %w", typ, key, ErrUnavailable, err)
	}
	return nil
}

// timestamp is the clock in UTC at millisecond precision: what a JSON round
// trip through the topic preserves, so replayed rules compare equal.
func (r *Registry) timestamp() time.Time { return r.now().UTC().Truncate(time.Millisecond) }

// checkSubscriber guards the Redis key layout: the subscriber is a
// principal id, never empty, never containing the hash-tag braces.
func checkSubscriber(s string) error {
	if s == "" || len(s) > 256 {
		return fmt.Errorf("subscriber %q: must be 1 to 256 characters", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' || s[i] == '/' || s[i] < 0x21 || s[i] > 0x7e {
			return fmt.Errorf("subscriber %q: invalid character", s)
		}
	}
	return nil
}
