package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/schemas"
)

// Config field names, spelled as in spec doc 1 ("Config by rule type").
const (
	fieldOperations       = "operations"
	fieldSupplierIDs      = "supplierIDs"
	fieldProductIDs       = "productIDs"
	fieldRateIDs          = "rateIDs"
	fieldMaxLookAheadDays = "maxLookAheadDays"
	fieldVacanciesUnder   = "vacanciesUnder"
)

// Operations (spec doc 1, "Config by rule type" and "Webhook payloads").
const (
	OpCreated      = "created"
	OpRemoved      = "removed"
	OpUpdated      = "updated"
	OpCanceled     = "canceled"
	OpTicketsAdded = "tickets-added"
)

// Limits of rule fields. The spec gives only the default of
// maxLookAheadDays; the bounds are ours (docs/decisions.md).
const (
	DefaultMaxLookAheadDays = 7
	MaxMaxLookAheadDays     = 365
	MaxIDLen                = 128  // rule ids and filter ids
	MaxFilterIDs            = 1000 // per filter array
	MaxURLLen               = 2048
)

// typeSpec is what the config of one rule type holds.
type typeSpec struct {
	// operations allowed, in canonical order; nil: the type has none.
	operations                       []string
	supplierIDs, productIDs, rateIDs bool
	lookAhead                        bool // maxLookAheadDays
	vacancies                        bool // vacanciesUnder
}

// typeSpecs is spec doc 1's "Config by rule type", with the gaps filled:
// the rate rule is the product rule plus rateIDs, and the availability
// rule filters on supplierIDs, productIDs and rateIDs like the
// priceschedule rule (docs/decisions.md).
var typeSpecs = map[string]typeSpec{
	schemas.TypeChannelBinding: {operations: []string{OpCreated, OpRemoved, OpUpdated}, supplierIDs: true, productIDs: true},
	schemas.TypeSupplier:       {operations: []string{OpUpdated}, supplierIDs: true},
	schemas.TypeProduct:        {operations: []string{OpUpdated}, supplierIDs: true, productIDs: true},
	schemas.TypeRate:           {operations: []string{OpUpdated}, supplierIDs: true, productIDs: true, rateIDs: true},
	schemas.TypeAvailability:   {supplierIDs: true, productIDs: true, rateIDs: true, lookAhead: true, vacancies: true},
	schemas.TypePriceSchedule:  {supplierIDs: true, productIDs: true, rateIDs: true, lookAhead: true},
	schemas.TypeBooking:        {operations: []string{OpCanceled, OpTicketsAdded}, supplierIDs: true, productIDs: true, rateIDs: true},
}

// fields lists the config fields of the type, in a fixed order.
func (s typeSpec) fields() []string {
	var f []string
	if s.operations != nil {
		f = append(f, fieldOperations)
	}
	if s.supplierIDs {
		f = append(f, fieldSupplierIDs)
	}
	if s.productIDs {
		f = append(f, fieldProductIDs)
	}
	if s.rateIDs {
		f = append(f, fieldRateIDs)
	}
	if s.lookAhead {
		f = append(f, fieldMaxLookAheadDays)
	}
	if s.vacancies {
		f = append(f, fieldVacanciesUnder)
	}
	return f
}

// Operations returns the operations a rule of the type may subscribe to,
// nil for types without operations.
func Operations(typ string) []string { return slices.Clone(typeSpecs[typ].operations) }

// RuleInput is a rule body as a client sends it (spec doc 1: "Rule body
// means the fields id, url, disabled, config"). securityKey, createdOn and
// updatedOn are the service's and never come in.
type RuleInput struct {
	ID       string
	URL      string
	Disabled bool
	// Config is the config object as sent; nil or JSON null means every
	// field takes its default.
	Config json.RawMessage
}

// URLPolicy says which webhook urls registration admits.
type URLPolicy struct {
	AllowHTTP    bool
	AllowPrivate bool
}

// ValidateRule checks in against the rules of the type and returns the
// rule it describes, normalised (defaults filled, operations in canonical
// order, duplicate ids dropped). ID may be empty; securityKey and the
// timestamps are not set. It does no I/O, so it is safe to fuzz.
func ValidateRule(typ string, in RuleInput, p URLPolicy) (Rule, error) {
	if !ValidType(typ) {
		return Rule{}, invalid("type", fmt.Sprintf("must be one of %s", strings.Join(typesList(), ", ")))
	}
	if in.ID != "" {
		if err := checkID("id", in.ID); err != nil {
			return Rule{}, err
		}
	}
	if err := p.Check(in.URL); err != nil {
		return Rule{}, err
	}
	cfg, err := parseConfig(typ, in.Config)
	if err != nil {
		return Rule{}, err
	}
	return Rule{ID: in.ID, Type: typ, URL: in.URL, Disabled: in.Disabled, Config: cfg}, nil
}

// ValidateRule is the package function with the registry's URL policy.
func (r *Registry) ValidateRule(typ string, in RuleInput) (Rule, error) {
	return ValidateRule(typ, in, r.policy)
}

func typesList() []string { return schemas.NotificationTypes() }

// checkID admits what can travel unescaped in a path segment: the rule id
// is the {id} of DELETE and test paths.
func checkID(field, id string) error {
	if len(id) > MaxIDLen {
		return invalid(field, fmt.Sprintf("must be at most %d characters", MaxIDLen))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~', c == ':':
		default:
			return invalid(field, "may contain only letters, digits and - _ . ~ :")
		}
	}
	return nil
}

// parseConfig decodes the config object of the type strictly: a field the
// type does not have is refused, so a misspelled filter fails loudly rather
// than silently matching everything.
func parseConfig(typ string, raw json.RawMessage) (Config, error) {
	spec := typeSpecs[typ]
	fields, err := decodeConfigFields(typ, spec, raw)
	if err != nil {
		return Config{}, err
	}
	var c Config
	if spec.operations != nil {
		c.Operations = slices.Clone(spec.operations) // default: every operation of the type
		if v, ok := fields.present(fieldOperations); ok {
			if c.Operations, err = parseOperations(typ, spec.operations, v); err != nil {
				return Config{}, err
			}
		}
	}
	for _, f := range []struct {
		on   bool
		name string
		dst  *[]string
	}{
		{spec.supplierIDs, fieldSupplierIDs, &c.SupplierIDs},
		{spec.productIDs, fieldProductIDs, &c.ProductIDs},
		{spec.rateIDs, fieldRateIDs, &c.RateIDs},
	} {
		v, ok := fields.present(f.name)
		if !f.on || !ok {
			continue
		}
		if *f.dst, err = parseIDs("config."+f.name, v); err != nil {
			return Config{}, err
		}
	}
	if spec.lookAhead {
		if c.MaxLookAheadDays, err = fields.maxLookAheadDays(); err != nil {
			return Config{}, err
		}
	}
	if spec.vacancies {
		if c.VacanciesUnder, err = fields.vacanciesUnder(); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// configFields are the fields of a config object, undecoded.
type configFields map[string]json.RawMessage

// decodeConfigFields reads the config object (absent or null: no field)
// and refuses a field the type does not have, naming the first in name
// order (the same one on every request).
func decodeConfigFields(typ string, spec typeSpec, raw json.RawMessage) (configFields, error) {
	var fields configFields
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return nil, invalid("config", "must be an object")
		}
		if err := json.Unmarshal(trimmed, &fields); err != nil {
			return nil, invalid("config", "must be an object")
		}
	}
	allowed := spec.fields()
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			return nil, invalid("config."+name, fmt.Sprintf("is not a field of the %s config (allowed: %s)", typ, strings.Join(allowed, ", ")))
		}
	}
	return fields, nil
}

// present returns the field's value, unless it is absent or null (which
// mean the same: the default).
func (fields configFields) present(name string) (json.RawMessage, bool) {
	v, ok := fields[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

// maxLookAheadDays is the config's look-ahead in days, by default
// DefaultMaxLookAheadDays.
func (fields configFields) maxLookAheadDays() (int, error) {
	v, ok := fields.present(fieldMaxLookAheadDays)
	if !ok {
		return DefaultMaxLookAheadDays, nil
	}
	n, err := parseInt("config."+fieldMaxLookAheadDays, v)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > MaxMaxLookAheadDays {
		return 0, invalid("config."+fieldMaxLookAheadDays, fmt.Sprintf("must be between 1 and %d days", MaxMaxLookAheadDays))
	}
	return n, nil
}

// vacanciesUnder is the config's vacancies threshold, by default 0.
func (fields configFields) vacanciesUnder() (int, error) {
	v, ok := fields.present(fieldVacanciesUnder)
	if !ok {
		return 0, nil
	}
	n, err := parseInt("config."+fieldVacanciesUnder, v)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > bounds.MaxCapacity {
		return 0, invalid("config."+fieldVacanciesUnder, fmt.Sprintf("must be from 0 (every change) to %d", bounds.MaxCapacity))
	}
	return n, nil
}

func parseOperations(typ string, allowed []string, v json.RawMessage) ([]string, error) {
	const field = "config." + fieldOperations
	var ops []string
	if err := json.Unmarshal(v, &ops); err != nil {
		return nil, invalid(field, "must be an array of strings")
	}
	if len(ops) == 0 {
		return nil, invalid(field, fmt.Sprintf("must not be empty; omit it to subscribe to every operation (%s)", strings.Join(allowed, ", ")))
	}
	for _, op := range ops {
		if !slices.Contains(allowed, op) {
			if len(allowed) == 1 {
				// Spec doc 1, Behaviour rule 1: only updated exists.
				return nil, invalid(field, fmt.Sprintf("of a %s rule cannot be changed: only %q exists", typ, allowed[0]))
			}
			return nil, invalid(field, fmt.Sprintf("may contain only %s, not %q", strings.Join(allowed, ", "), op))
		}
	}
	// Canonical order, duplicates dropped.
	out := make([]string, 0, len(allowed))
	for _, op := range allowed {
		if slices.Contains(ops, op) {
			out = append(out, op)
		}
	}
	return out, nil
}

func parseIDs(field string, v json.RawMessage) ([]string, error) {
	var ids []string
	if err := json.Unmarshal(v, &ids); err != nil {
		return nil, invalid(field, "must be an array of strings")
	}
	if len(ids) > MaxFilterIDs {
		return nil, invalid(field, fmt.Sprintf("must have at most %d ids", MaxFilterIDs))
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if id == "" || len(id) > MaxIDLen || !printableASCII(id) {
			return nil, invalid(field, fmt.Sprintf("element %d must be 1 to %d printable characters", i, MaxIDLen))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func parseInt(field string, v json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, invalid(field, "must be an integer")
	}
	return n, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Check validates a webhook url (spec doc 1: "Public HTTPS webhook
// endpoint"): present, at most MaxURLLen characters, no fragment, and
// admitted by the outbound policy (internal/platform/outbound: absolute, https
// unless AllowHTTP, a valid host, no credentials, and without
// AllowPrivate neither localhost nor a non-public literal address). It is
// the dispatcher's client's rule, so that registration admits exactly
// the urls deliveries will be sent to: with a rule of its own the registry
// once stored a zoned IPv6 literal whose every delivery the client refused
// (R6, docs/reliability.md). Names are not resolved here: the client
// checks the address it connects to.
func (p URLPolicy) Check(raw string) error {
	const field = "url"
	if raw == "" {
		return invalid(field, "is required")
	}
	if len(raw) > MaxURLLen {
		return invalid(field, fmt.Sprintf("must be at most %d characters", MaxURLLen))
	}
	if strings.Contains(raw, "#") {
		return invalid(field, "must not contain a fragment")
	}
	if err := (outbound.Policy{AllowHTTP: p.AllowHTTP, AllowPrivate: p.AllowPrivate}).CheckURL(raw); err != nil {
		var ue *outbound.URLError
		if errors.As(err, &ue) {
			return invalid(field, ue.Reason)
		}
		return invalid(field, "must be an absolute https URL")
	}
	return nil
}
