package principals

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Event types on schemas.TopicPrincipals. Every event carries the full
// state of the principal (a record, below), so Apply treats them alike: the
// type says why the state changed, for people reading the topic.
const (
	EventCreated = "principal.created"
	EventUpdated = "principal.updated" // EnsureFixed changed a fixed principal
	EventRevoked = "principal.revoked"
)

// record is the event payload (Envelope.Data): the principal with its
// secret material hashed; the secret itself is never on the topic.
type record struct {
	ID         string     `json:"id"`
	Role       Role       `json:"role"`
	Name       string     `json:"name,omitempty"`
	ChannelID  string     `json:"channelId,omitempty"`
	Key        string     `json:"key"`
	HashAlg    string     `json:"hashAlg"` // "sha256-salted": lets a later scheme coexist
	SecretHash []byte     `json:"secretHash"`
	Salt       []byte     `json:"salt"`
	CreatedAt  time.Time  `json:"createdAt"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

const hashAlgSHA256 = "sha256-salted"

// table is one immutable generation of the principals. Readers load it with
// one atomic load and never lock: authentication is on every request, while
// writes (an admin creating or revoking a credential) are rare, so copying
// the maps on write is the right trade.
type table struct {
	byID  map[string]*Principal
	byKey map[string]*Principal
	// gone remembers the version of deleted ids (tombstones), so that an
	// older record redelivered after a tombstone does not resurrect it.
	gone map[string]int64
}

// Store is the principals table of one process. It is safe for concurrent
// use. Build it with NewStore, feed it every record of the topic through
// Apply, and write through Create, Revoke and EnsureFixed.
type Store struct {
	pub    stream.Publisher
	source string
	now    func() time.Time

	cur atomic.Pointer[table]
	// applyMu serialises Apply's copy-on-write; writeMu serialises the
	// writers' read-version/publish/apply sequences so that two writes in
	// this process never publish the same version of one principal.
	applyMu sync.Mutex
	writeMu sync.Mutex
}

// NewStore returns an empty store that publishes its writes through pub
// (to schemas.TopicPrincipals). pub may be nil for a read-only store, whose
// writes then fail with ErrUnavailable.
func NewStore(pub stream.Publisher) *Store {
	s := &Store{pub: pub, source: "query", now: time.Now}
	s.cur.Store(&table{byID: map[string]*Principal{}, byKey: map[string]*Principal{}, gone: map[string]int64{}})
	return s
}

// Apply applies one event of schemas.TopicPrincipals. It is idempotent:
// a record whose Version is not newer than the principal's current version
// is ignored, so redelivery and replays converge on the same table.
// A Deleted envelope (tombstone) removes the principal; with Version 0 (a
// Kafka tombstone, which has no payload) it removes whatever version is
// there. Switchback itself never deletes: revocation keeps the record.
func (s *Store) Apply(env schemas.Envelope) error {
	if env.Key == "" {
		return fmt.Errorf("%w: empty key (event %s)", ErrInvalidEvent, env.ID)
	}
	if env.Version < 0 || (env.Version == 0 && !env.Deleted) {
		return fmt.Errorf("%w: principal %s: version %d, want > 0", ErrInvalidEvent, env.Key, env.Version)
	}
	var next *Principal
	if !env.Deleted {
		switch env.Type {
		case EventCreated, EventUpdated, EventRevoked:
		default:
			return fmt.Errorf("%w: principal %s: unknown type %q", ErrInvalidEvent, env.Key, env.Type)
		}
		p, err := decodeRecord(env)
		if err != nil {
			return err
		}
		next = &p
	}

	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	old := s.cur.Load()
	if env.Deleted && env.Version == 0 {
		// A Kafka tombstone (nil value) carries no version: it deletes
		// whatever is there, and remembers that version as deleted.
		cur, ok := old.byID[env.Key]
		if !ok {
			return nil
		}
		env.Version = cur.Version
	} else if cur, ok := old.byID[env.Key]; ok && cur.Version >= env.Version {
		return nil
	}
	if v, ok := old.gone[env.Key]; ok && v >= env.Version {
		return nil
	}
	nt := &table{
		byID:  make(map[string]*Principal, len(old.byID)+1),
		byKey: make(map[string]*Principal, len(old.byKey)+1),
		gone:  make(map[string]int64, len(old.gone)),
	}
	for id, p := range old.byID {
		nt.byID[id] = p
	}
	for k, p := range old.byKey {
		nt.byKey[k] = p
	}
	for id, v := range old.gone {
		nt.gone[id] = v
	}
	if prev, ok := nt.byID[env.Key]; ok && nt.byKey[prev.Key] == prev {
		delete(nt.byKey, prev.Key)
	}
	if next == nil {
		delete(nt.byID, env.Key)
		nt.gone[env.Key] = env.Version
	} else {
		delete(nt.gone, env.Key)
		nt.byID[next.ID] = next
		// Keys are unique by construction (128 random bits, or a fixed key
		// whose id is derived from it); should two ids ever share a key,
		// the last applied wins, deterministically under replay.
		nt.byKey[next.Key] = next
	}
	s.cur.Store(nt)
	return nil
}

func decodeRecord(env schemas.Envelope) (Principal, error) {
	var r record
	if err := json.Unmarshal(env.Data, &r); err != nil {
		return Principal{}, fmt.Errorf("%w: principal %s: %v", ErrInvalidEvent, env.Key, err)
	}
	switch {
	case r.ID != env.Key:
		return Principal{}, fmt.Errorf("%w: data id %q differs from key %q", ErrInvalidEvent, r.ID, env.Key)
	case !r.Role.Valid():
		return Principal{}, fmt.Errorf("%w: principal %s: role %q", ErrInvalidEvent, r.ID, r.Role)
	case r.Key == "":
		return Principal{}, fmt.Errorf("%w: principal %s: empty key", ErrInvalidEvent, r.ID)
	case r.HashAlg != hashAlgSHA256:
		return Principal{}, fmt.Errorf("%w: principal %s: hash algorithm %q", ErrInvalidEvent, r.ID, r.HashAlg)
	case len(r.SecretHash) != sha256.Size || len(r.Salt) != saltLen:
		return Principal{}, fmt.Errorf("%w: principal %s: hash or salt of wrong length", ErrInvalidEvent, r.ID)
	}
	p := Principal{
		ID: r.ID, Role: r.Role, Name: r.Name, ChannelID: r.ChannelID, Key: r.Key,
		CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt, Version: env.Version,
	}
	copy(p.SecretHash[:], r.SecretHash)
	copy(p.Salt[:], r.Salt)
	return p, nil
}

func (p Principal) record() record {
	return record{
		ID: p.ID, Role: p.Role, Name: p.Name, ChannelID: p.ChannelID, Key: p.Key,
		HashAlg: hashAlgSHA256, SecretHash: p.SecretHash[:], Salt: p.Salt[:],
		CreatedAt: p.CreatedAt, RevokedAt: p.RevokedAt,
	}
}

// dummySalt keeps the unknown-key path as expensive as the known-key one,
// so response time does not tell which keys exist.
var dummySalt [saltLen]byte

// Authenticate returns the principal whose key and secret these are. It
// fails for an unknown key, a wrong secret and a revoked principal alike
// (the caller answers 401 in every case and must not say which).
//
// It is on every API request: one atomic load, one map lookup, one SHA-256
// over a stack buffer and a constant-time compare; it does not allocate.
func (s *Store) Authenticate(key, secret []byte) (Principal, bool) {
	if len(key) == 0 || len(secret) == 0 || len(secret) > MaxSecretLen {
		return Principal{}, false
	}
	p, ok := s.cur.Load().byKey[string(key)] // no allocation: map index by converted []byte
	salt := &dummySalt
	if ok {
		salt = &p.Salt
	}
	sum := hashSecretBytes(salt, secret)
	if !ok || subtle.ConstantTimeCompare(sum[:], p.SecretHash[:]) != 1 || p.Revoked() {
		return Principal{}, false
	}
	return *p, true
}

// Get returns the principal with that id, revoked or not.
func (s *Store) Get(id string) (Principal, error) {
	if p, ok := s.cur.Load().byID[id]; ok {
		return *p, nil
	}
	return Principal{}, fmt.Errorf("principal %s: %w", id, ErrNotFound)
}

// List returns every principal, revoked ones included, oldest first (ties
// by id) so that listings are stable.
func (s *Store) List() []Principal {
	t := s.cur.Load()
	out := make([]Principal, 0, len(t.byID))
	for _, p := range t.byID {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Len is the number of principals, revoked ones included.
func (s *Store) Len() int { return len(s.cur.Load().byID) }
