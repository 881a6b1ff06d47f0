package schemas

import "time"

// Registry events: the notification registry's state (spec doc 1,
// "Notification rule", "Metadata"), which internal/registry publishes and
// materializes into Redis. Rule events go to TopicRules keyed by RuleKey
// (one key per rule slot: the topic is compacted, and a key per subscriber
// would compact away all but one of its rules); metadata events go to
// TopicMetadata keyed by subscriber. Every event carries the full new
// state, so applying one needs nothing but the event. Each is an Envelope
// with a Version (newer wins) and one of the types below.
const (
	// RegistryRuleCreated and RegistryRuleUpdated: Data is a RuleEvent with
	// its Rule.
	RegistryRuleCreated = "registry.rule.created"
	RegistryRuleUpdated = "registry.rule.updated"
	// RegistryRuleDeleted: Envelope.Deleted, Data a RuleEvent without Rule.
	RegistryRuleDeleted = "registry.rule.deleted"
	// RegistryMetadataUpdated: Data is a MetadataEvent.
	RegistryMetadataUpdated = "registry.metadata.updated"
)

// RuleKey is the Kafka key (and Envelope.Key) of a rule slot: one rule per
// subscriber and notification type.
func RuleKey(subscriber, typ string) string { return subscriber + "/" + typ }

// RuleEvent is Envelope.Data of rule events.
type RuleEvent struct {
	Subscriber string     `json:"subscriber"`
	Type       string     `json:"type"`
	RuleID     string     `json:"ruleId"`
	Rule       *RuleState `json:"rule,omitempty"` // nil when deleted
}

// RuleState is a rule with every field explicit, independent of the API's
// per-type rendering: the form of a rule in events and in Redis.
// SecurityKey is as internal/registry stores it (sealed when the registry
// has a keyring), never the key in clear on the topic.
type RuleState struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	URL         string     `json:"url"`
	Disabled    bool       `json:"disabled"`
	SecurityKey string     `json:"securityKey"`
	CreatedOn   time.Time  `json:"createdOn"`
	UpdatedOn   time.Time  `json:"updatedOn"`
	Config      RuleConfig `json:"config"`
}

// RuleConfig is the type-specific part of a rule (spec doc 1, "Config by
// rule type"); fields the type does not have are left out.
type RuleConfig struct {
	Operations       []string `json:"operations,omitempty"`
	SupplierIDs      []string `json:"supplierIDs,omitempty"`
	ProductIDs       []string `json:"productIDs,omitempty"`
	RateIDs          []string `json:"rateIDs,omitempty"`
	MaxLookAheadDays int      `json:"maxLookAheadDays,omitempty"`
	VacanciesUnder   int      `json:"vacanciesUnder,omitempty"`
}

// MetadataEvent is Envelope.Data of metadata events.
type MetadataEvent struct {
	Subscriber string        `json:"subscriber"`
	Metadata   MetadataState `json:"metadata"`
	// Reason says why the service changed it (auto-disable); empty for a
	// subscriber's own change.
	Reason string `json:"reason,omitempty"`
}

// MetadataState is a subscriber's global delivery settings (spec doc 1,
// "Metadata") as events carry them; timestamps are left out while zero (a
// subscriber that never set any).
type MetadataState struct {
	ThrottleDelay string    `json:"throttleDelay"`
	DisableAll    bool      `json:"disableAll"`
	CreatedOn     time.Time `json:"createdOn,omitzero"`
	UpdatedOn     time.Time `json:"updatedOn,omitzero"`
}
