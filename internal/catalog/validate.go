package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // timezones validate the same on every host

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
)

// Limits of operator input (the spec gives only the id length of doc 3).
const (
	// MaxIDLen bounds supplier, product, rate and channel ids (spec doc 3:
	// at most 1024 characters).
	MaxIDLen = 1024
	// MaxBulk bounds the items of one bulk request.
	MaxBulk = 1000
	// MaxAvailabilities bounds the availabilities of one rate in one PUT.
	MaxAvailabilities = 5000
	maxNameLen        = 1000
)

// SupplierInput is the operator's supplier body (POST /supplier, PUT
// /suppliers/{id}): the public supplier fields, the connection, and
// optionally the version the operator last read (a mismatch is 409).
type SupplierInput struct {
	SupplierData
	Version    *int64           `json:"version,omitempty"`
	Connection *ConnectionInput `json:"connection,omitempty"`
}

// ConnectionInput is how to reach the supplier's system. On PUT, an
// absent connection keeps the stored one, and absent credentials (or
// {"set": true}, what a GET shows) keep the stored credentials.
type ConnectionInput struct {
	Kind        string            `json:"kind"`
	BaseURL     string            `json:"baseUrl"`
	Credentials *CredentialsInput `json:"credentials,omitempty"`
}

// CredentialsInput: apiKey + apiSecret, or bearerToken; or {"set": true}
// to keep the stored ones.
type CredentialsInput struct {
	APIKey      string `json:"apiKey,omitempty"`
	APISecret   string `json:"apiSecret,omitempty"`
	BearerToken string `json:"bearerToken,omitempty"`
	Set         *bool  `json:"set,omitempty"`
}

// ProductInput is the operator's product body. supplierId, when present,
// must be the supplier of the path (a GET body can be sent back as is).
type ProductInput struct {
	SupplierID string `json:"supplierId,omitempty"`
	ProductData
	Version *int64 `json:"version,omitempty"`
}

// RateInput is the operator's rate body; supplierId and productId, when
// present, must be those of the path.
type RateInput struct {
	SupplierID string `json:"supplierId,omitempty"`
	ProductID  string `json:"productId,omitempty"`
	RateData
	Version *int64 `json:"version,omitempty"`
}

// ProductRates are rates of one product, one item of a supplier-wide
// bulk rate write (catalogredis.Store.UpsertSupplierRates).
type ProductRates struct {
	ProductID string
	Rates     []RateInput
}

// BindingInput is the channel v1.2 binding body (spec doc 2: meta,
// priceAt, priceTags, rateIds, valid). rateIds empty: the whole product.
type BindingInput struct {
	Meta      json.RawMessage `json:"meta,omitempty"`
	PriceAt   string          `json:"priceAt,omitempty"`
	PriceTags []string        `json:"priceTags,omitempty"`
	RateIDs   []string        `json:"rateIds,omitempty"`
	Valid     *Validity       `json:"valid,omitempty"`
}

// ChannelInput is the admin's channel body. id is generated when absent.
type ChannelInput struct {
	ID              string            `json:"id,omitempty"`
	Name            string            `json:"name"`
	CompanyName     string            `json:"companyName"`
	ActivationDelay string            `json:"activationDelay,omitempty"`
	Config          map[string]string `json:"config,omitempty"`
	Ext             map[string]string `json:"ext,omitempty"`
	LogoURL         string            `json:"logoUrl,omitempty"`
	URL             string            `json:"url,omitempty"`
	Version         *int64            `json:"version,omitempty"`
}

// ValidID reports whether s can be an id: 1 to MaxIDLen characters of
// letters, digits and - . _ ~ (URL-unreserved: ids are path segments and
// parts of Redis keys, so no '/', ':' or braces).
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func checkID(field, s string, required bool) error {
	if s == "" {
		if required {
			return Invalid(field, "is required")
		}
		return nil
	}
	if !ValidID(s) {
		return Invalidf(field, "must be 1 to %d letters, digits, '-', '.', '_' or '~'", MaxIDLen)
	}
	return nil
}

func checkName(field, s string, required bool) error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return Invalid(field, "is required")
	case len(s) > maxNameLen:
		return Invalidf(field, "must be at most %d characters", maxNameLen)
	}
	return nil
}

func oneOf(field, s string, allowed ...string) error {
	if s == "" || slices.Contains(allowed, s) {
		return nil
	}
	return Invalidf(field, "must be one of %s, not %q", strings.Join(allowed, ", "), s)
}

func allOf(field string, ss []string, allowed ...string) error {
	for i, s := range ss {
		if !slices.Contains(allowed, s) {
			return Invalidf(field+"["+strconv.Itoa(i)+"]", "must be one of %s, not %q", strings.Join(allowed, ", "), s)
		}
	}
	return nil
}

func idx(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// checkObject accepts an absent value, null or a JSON object.
func checkObject(field string, raw *json.RawMessage) error {
	t := bytes.TrimSpace(*raw)
	if len(t) == 0 || string(t) == "null" {
		*raw = nil
		return nil
	}
	if t[0] != '{' {
		return Invalid(field, "must be an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, t); err != nil {
		return Invalid(field, "must be an object")
	}
	*raw = buf.Bytes()
	return nil
}

// checkURL accepts an absolute http(s) URL without credentials in it.
func checkURL(field, s string, required bool) error {
	if s == "" {
		if required {
			return Invalid(field, "is required")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Invalid(field, "must be an absolute http or https URL")
	}
	if u.User != nil {
		return Invalid(field, "must not carry credentials; use connection.credentials")
	}
	return nil
}

var (
	reHHMM    = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$`)
	reAlpha3  = regexp.MustCompile(`^[A-Z]{3}$`)
	reLocale  = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)
	reDate    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	reCountry = reAlpha3
)

func checkNumber(field string, n json.Number, lo, hi float64) error {
	if n == "" {
		return Invalid(field, "is required")
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < lo || f > hi {
		return Invalidf(field, "must be a number from %g to %g", lo, hi)
	}
	return nil
}

func checkValidity(field string, v *Validity) error {
	if v == nil {
		return nil
	}
	v.From, v.Until = utc(v.From), utc(v.Until)
	// A validity is a contract's span: the years 2000 to 2099
	// (internal/bounds). This also keeps out what JSON cannot write back
	// (a year outside 0000-9999 once in UTC, e.g.
	// "0000-01-01T00:00:00+01:00" is year -1, found by FuzzBindingBody)
	// and what a DateTime column cannot hold.
	for _, f := range []struct {
		name string
		t    time.Time
	}{{".from", v.From}, {".until", v.Until}} {
		if !f.t.IsZero() {
			if err := bounds.Validity(field+f.name, f.t); err != nil {
				return err
			}
		}
	}
	if !v.From.IsZero() && !v.Until.IsZero() && !v.From.Before(v.Until) {
		return Invalid(field+".until", "must be after from")
	}
	return nil
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func checkHours(field string, hs []Hours) error {
	for i := range hs {
		h := &hs[i]
		f := idx(field, i)
		for j, d := range h.Dates {
			t, err := time.Parse(time.DateOnly, d)
			if err != nil || !reDate.MatchString(d) {
				return Invalid(idx(f+".dates", j), "must be a date YYYY-MM-DD")
			}
			if err := bounds.Validity(idx(f+".dates", j), t); err != nil {
				return err
			}
		}
		for j, d := range h.DaysOfWeek {
			if d < 1 || d > 7 {
				return Invalid(idx(f+".daysOfWeek", j), "must be 1 (Monday) to 7 (Sunday)")
			}
		}
		for j, t := range h.Times {
			if !reHHMM.MatchString(t.Open) {
				return Invalid(idx(f+".times", j)+".open", "must be HH:mm (24-hour)")
			}
			if !reHHMM.MatchString(t.Close) {
				return Invalid(idx(f+".times", j)+".close", "must be HH:mm (24-hour)")
			}
		}
		if h.Timezone != "" {
			if h.Timezone == "Local" {
				return Invalid(f+".timezone", "must be an IANA time zone name")
			}
			if _, err := time.LoadLocation(h.Timezone); err != nil {
				return Invalid(f+".timezone", "must be an IANA time zone name")
			}
		}
		if err := checkValidity(f+".valid", h.Valid); err != nil {
			return err
		}
	}
	return nil
}

func checkLocation(field string, l *Location) error {
	if l == nil {
		return nil
	}
	if a := l.Address; a != nil && a.CountryCode != "" && !reCountry.MatchString(a.CountryCode) {
		return Invalid(field+".address.countryCode", "must be an ISO 3166-1 alpha-3 code")
	}
	if ll := l.LongLat; ll != nil {
		if err := checkNumber(field+".longLat.latitude", ll.Latitude, -90, 90); err != nil {
			return err
		}
		if err := checkNumber(field+".longLat.longitude", ll.Longitude, -180, 180); err != nil {
			return err
		}
	}
	if err := checkURL(field+".website", l.Website, false); err != nil {
		return err
	}
	if l.Order < 0 {
		return Invalid(field+".order", "must be 1 or more")
	}
	for i, r := range l.References {
		if err := checkURL(idx(field+".references", i)+".url", r.URL, false); err != nil {
			return err
		}
	}
	return nil
}

func checkLocalized(field string, ts []LocalizedText) error {
	for i, t := range ts {
		if t.Locale != "" && !reLocale.MatchString(t.Locale) {
			return Invalid(idx(field, i)+".locale", "must be a BCP 47 language tag")
		}
	}
	return nil
}

func checkConstraints(field string, cs []Constraint) error {
	for i, c := range cs {
		f := idx(field, i)
		if c.Type == "" {
			return Invalid(f+".type", "is required")
		}
		if c.Pattern != "" {
			if _, err := regexp.Compile(c.Pattern); err != nil {
				return Invalid(f+".pattern", "must be a valid regular expression")
			}
		}
		if c.Min != nil {
			if err := checkNumber(f+".min", *c.Min, -1e15, 1e15); err != nil {
				return err
			}
		}
		if c.Max != nil {
			if err := checkNumber(f+".max", *c.Max, -1e15, 1e15); err != nil {
				return err
			}
		}
		if err := checkLocalized(f+".message", c.Message); err != nil {
			return err
		}
	}
	return nil
}

func checkAges(field string, minAge, maxAge *int32) error {
	if minAge != nil {
		if err := bounds.Int(field+".minAge", int64(*minAge), 0, bounds.MaxAge); err != nil {
			return err
		}
	}
	if maxAge != nil {
		if err := bounds.Int(field+".maxAge", int64(*maxAge), 0, bounds.MaxAge); err != nil {
			return err
		}
	}
	if minAge != nil && maxAge != nil && *minAge > *maxAge {
		return Invalid(field+".maxAge", "must be at least minAge")
	}
	return nil
}

func checkContent(field string, c *Content) error {
	if c == nil {
		return nil
	}
	for _, lt := range []struct {
		name string
		ts   []LocalizedText
	}{{"title", c.Title}, {"subtitle", c.Subtitle}, {"description", c.Description}, {"shortDescription", c.ShortDescription}} {
		if err := checkLocalized(field+"."+lt.name, lt.ts); err != nil {
			return err
		}
	}
	for i, cat := range c.Categories {
		if err := checkLocalized(idx(field+".categories", i), cat); err != nil {
			return err
		}
	}
	if d := c.Duration; d != nil {
		if d.Length != "" {
			if err := checkNumber(field+".duration.length", d.Length, 0, 1e9); err != nil {
				return err
			}
		}
		if err := checkLocalized(field+".duration.description", d.Description); err != nil {
			return err
		}
	}
	for i, q := range c.FAQs {
		if err := checkLocalized(idx(field+".faqs", i)+".question", q.Question); err != nil {
			return err
		}
		if err := checkLocalized(idx(field+".faqs", i)+".answer", q.Answer); err != nil {
			return err
		}
	}
	for i, m := range c.Media {
		if err := checkURL(idx(field+".media", i)+".url", m.URL, true); err != nil {
			return err
		}
	}
	for i, r := range c.Ratings {
		if r.Average != nil {
			if err := checkNumber(idx(field+".ratings", i)+".average.value", r.Average.Value, -1e9, 1e9); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTravelerTypes(field string, ts []TravelerType) error {
	for i := range ts {
		t := &ts[i]
		f := idx(field, i)
		if err := checkObject(f+".extensions", &t.Extensions); err != nil {
			return err
		}
		if err := checkAges(f, t.MinAge, t.MaxAge); err != nil {
			return err
		}
		if err := checkConstraints(f+".constraints", t.Constraints); err != nil {
			return err
		}
		for j := range t.AddOns {
			a := &t.AddOns[j]
			af := idx(f+".addOns", j)
			if a.ID == "" {
				return Invalid(af+".id", "is required")
			}
			if err := checkConstraints(af+".constraints", a.Constraints); err != nil {
				return err
			}
			if a.Policy != nil && (a.Policy.CutOffTime < 0 || a.Policy.HoldablePeriod < 0) {
				return Invalid(af+".policy", "cutOffTime and holdablePeriod must be 0 or more")
			}
			if err := checkContent(af+".content", a.Content); err != nil {
				return err
			}
		}
	}
	return nil
}

// Product enumerations (spec doc 3, "Product").
var (
	availabilityTypes = []string{"START_TIME", "OPENING_HOURS"}
	// deliveryFormats are doc 3's, then the OCTO standard's that doc 3
	// lacks (OCTO's QRCODE is doc 3's QR_CODE and is stored so; the OCTO
	// dialect maps it): a product of an OCTO booking system keeps its
	// formats (docs/decisions.md, "OCTO dialect").
	deliveryFormats   = []string{"QR_CODE", "EAN13", "CODE128", "UPCA", "TEXT", "CODE39", "AZTECCODE", "PDF_URL", "PKPASS_URL"}
	deliveryMethods   = []string{"TICKET", "VOUCHER"}
	redemptionMethods = []string{"MANIFEST", "DIGITAL", "PRINT"}
	priceAts          = []string{PriceAtRedemption, PriceAtSale, PriceAtUnknown}
	connectionKinds   = []string{ConnectionPartner, ConnectionBookingSystem, ConnectionOCTO}
)

// ValidateSupplier checks the public data; prefix is "" or "suppliers[i].".
func ValidateSupplier(prefix string, d *SupplierData) error {
	if err := checkID(prefix+"id", d.ID, false); err != nil {
		return err
	}
	if err := checkName(prefix+"name", d.Name, true); err != nil {
		return err
	}
	if err := checkName(prefix+"title", d.Title, false); err != nil {
		return err
	}
	if strings.TrimSpace(d.Code) == "" {
		return Invalid(prefix+"code", "is required")
	}
	if err := checkName(prefix+"code", d.Code, true); err != nil {
		return err
	}
	if err := checkObject(prefix+"extensions", &d.Extensions); err != nil {
		return err
	}
	if err := checkLocation(prefix+"mainLocation", d.MainLocation); err != nil {
		return err
	}
	for i := range d.OtherLocations {
		if err := checkLocation(idx(prefix+"otherLocations", i), &d.OtherLocations[i]); err != nil {
			return err
		}
	}
	if err := checkHours(prefix+"hours", d.Hours); err != nil {
		return err
	}
	if err := checkTravelerTypes(prefix+"travelerTypes", d.TravelerTypes); err != nil {
		return err
	}
	return checkContent(prefix+"content", d.Content)
}

// ResolveConnection turns the input into the connection to store; cur is
// the stored one (nil on create). The baseUrl must be admitted by the
// outbound policy as far as the url alone tells (a literal loopback,
// private, link-local or metadata address, localhost or plain http are
// refused on the default settings): refused at registration rather than
// at the first synchronization, whose report would otherwise be the
// operator's probe of our network. The clients check again at every call,
// on the address they connect to.
func ResolveConnection(policy outbound.Policy, in *ConnectionInput, cur *Connection) (Connection, error) {
	if in == nil {
		if cur == nil {
			return Connection{}, Invalid("connection", "is required: {kind, baseUrl, credentials}")
		}
		return *cur, nil
	}
	if in.Kind == "" {
		return Connection{}, Invalid("connection.kind", "is required ("+strings.Join(connectionKinds, ", ")+")")
	}
	if !slices.Contains(connectionKinds, in.Kind) {
		// No echo of the value: nothing of a connection is ever repeated.
		return Connection{}, Invalid("connection.kind", "must be one of "+strings.Join(connectionKinds, ", "))
	}
	if err := checkURL("connection.baseUrl", in.BaseURL, true); err != nil {
		return Connection{}, err
	}
	u, _ := url.Parse(in.BaseURL)
	if u.RawQuery != "" || u.Fragment != "" {
		return Connection{}, Invalid("connection.baseUrl", "must not have a query or fragment")
	}
	if err := policy.CheckURL(in.BaseURL); err != nil {
		// The reason names the rule, never the url.
		var ue *outbound.URLError
		if errors.As(err, &ue) && errors.Is(err, outbound.ErrRefused) {
			return Connection{}, Invalid("connection.baseUrl", outbound.ErrRefused.Error()+": "+ue.Reason)
		}
		if errors.As(err, &ue) {
			return Connection{}, Invalid("connection.baseUrl", ue.Reason)
		}
		return Connection{}, Invalid("connection.baseUrl", "must be an absolute https URL")
	}
	// Doc 3: the endpoint SHOULD NOT end with '/'; every path is appended.
	out := Connection{Kind: in.Kind, BaseURL: strings.TrimRight(in.BaseURL, "/")}
	c := in.Credentials
	keep := c == nil || (c.Set != nil && *c.Set && c.APIKey == "" && c.APISecret == "" && c.BearerToken == "")
	switch {
	case keep:
		if cur != nil {
			out.Credentials = cur.Credentials
		}
	case c.Set != nil && !*c.Set && c.APIKey == "" && c.APISecret == "" && c.BearerToken == "":
		// {"set": false}: remove the stored credentials.
	case c.BearerToken != "" && (c.APIKey != "" || c.APISecret != ""):
		return Connection{}, Invalid("connection.credentials", "must be apiKey and apiSecret, or bearerToken, not both")
	case c.BearerToken != "":
		out.Credentials = Credentials{BearerToken: c.BearerToken}
	case c.APIKey == "" || c.APISecret == "":
		return Connection{}, Invalid("connection.credentials", "needs both apiKey and apiSecret (or a bearerToken)")
	default:
		out.Credentials = Credentials{APIKey: c.APIKey, APISecret: c.APISecret}
	}
	return out, nil
}

func ValidateProduct(prefix string, d *ProductData) error {
	if err := checkID(prefix+"id", d.ID, false); err != nil {
		return err
	}
	if err := checkName(prefix+"name", d.Name, true); err != nil {
		return err
	}
	if err := checkName(prefix+"title", d.Title, false); err != nil {
		return err
	}
	if d.Locale != "" && !reLocale.MatchString(d.Locale) {
		return Invalid(prefix+"locale", "must be a BCP 47 language tag")
	}
	if d.TimeZone != "" {
		if _, err := time.LoadLocation(d.TimeZone); err != nil || d.TimeZone == "Local" {
			return Invalid(prefix+"timeZone", "must be an IANA time zone name")
		}
	}
	if err := oneOf(prefix+"availabilityType", d.AvailabilityType, availabilityTypes...); err != nil {
		return err
	}
	if err := allOf(prefix+"deliveryFormats", d.DeliveryFormats, deliveryFormats...); err != nil {
		return err
	}
	if err := allOf(prefix+"deliveryMethods", d.DeliveryMethods, deliveryMethods...); err != nil {
		return err
	}
	if err := oneOf(prefix+"redemptionMethod", d.RedemptionMethod, redemptionMethods...); err != nil {
		return err
	}
	if err := checkHours(prefix+"hours", d.Hours); err != nil {
		return err
	}
	for i := range d.Locations {
		if err := checkLocation(idx(prefix+"locations", i), &d.Locations[i]); err != nil {
			return err
		}
	}
	return checkObject(prefix+"extensions", &d.Extensions)
}

func checkMoney(field string, m *Money) error {
	if m == nil {
		return nil
	}
	if err := checkNumber(field+".amount", m.Amount, -bounds.MaxMoney, bounds.MaxMoney); err != nil {
		return err
	}
	if !reAlpha3.MatchString(m.Currency) {
		return Invalid(field+".currency", "must be an ISO 4217 code")
	}
	return nil
}

func ValidateRate(prefix string, d *RateData) error {
	if err := checkID(prefix+"id", d.ID, false); err != nil {
		return err
	}
	if d.OptionID != "" && d.OptionID != d.ID {
		return Invalid(prefix+"optionId", "is the rate id (options are rates); omit it or repeat id")
	}
	if err := checkName(prefix+"name", d.Name, true); err != nil {
		return err
	}
	for _, n := range []struct {
		field  string
		v, max int
	}{{"cutoff", d.Cutoff, bounds.MaxPeriodSeconds}, {"holdablePeriod", d.HoldablePeriod, bounds.MaxPeriodSeconds},
		{"minTravelers", d.MinTravelers, bounds.MaxTravelers}, {"maxTravelers", d.MaxTravelers, bounds.MaxTravelers}} {
		if err := bounds.Int(prefix+n.field, int64(n.v), 0, int64(n.max)); err != nil {
			return err
		}
	}
	if d.MaxTravelers > 0 && d.MaxTravelers < d.MinTravelers {
		return Invalid(prefix+"maxTravelers", "must be at least minTravelers")
	}
	if err := checkHours(prefix+"hours", d.Hours); err != nil {
		return err
	}
	if err := checkValidity(prefix+"valid", d.Valid); err != nil {
		return err
	}
	if err := validatePrices(prefix+"prices", d.Prices, "in the rate"); err != nil {
		return err
	}
	if d.Prices == nil {
		d.Prices = []Price{}
	}
	return nil
}

// validatePrices checks a list of prices (spec doc 2, "Price"): ids
// unique within scope, money and taxes well formed, ages ordered.
func validatePrices(field string, ps []Price, scope string) error {
	seen := make(map[string]bool, len(ps))
	for i := range ps {
		p := &ps[i]
		f := idx(field, i)
		if err := checkID(f+".id", p.ID, true); err != nil {
			return err
		}
		if seen[p.ID] {
			return Invalid(f+".id", "is not unique "+scope)
		}
		seen[p.ID] = true
		for _, m := range []struct {
			name string
			m    *Money
		}{{"net", p.Net}, {"original", p.Original}, {"retail", p.Retail}} {
			if err := checkMoney(f+"."+m.name, m.m); err != nil {
				return err
			}
		}
		for j, t := range p.IncludedTaxes {
			tf := idx(f+".includedTaxes", j)
			if !reAlpha3.MatchString(t.Currency) {
				return Invalid(tf+".currency", "must be an ISO 4217 code")
			}
			if t.Net != "" {
				if err := checkNumber(tf+".net", t.Net, -bounds.MaxMoney, bounds.MaxMoney); err != nil {
					return err
				}
			}
			if t.Retail != "" {
				if err := checkNumber(tf+".retail", t.Retail, -bounds.MaxMoney, bounds.MaxMoney); err != nil {
					return err
				}
			}
		}
		if tt := p.TravelerType; tt != nil {
			if err := checkAges(f+".travelerType", tt.MinAge, tt.MaxAge); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateAvailabilities checks a rate's availabilities: unique ids, each
// within one year back and two years ahead of now, capacities within
// bounds.MaxCapacity (internal/bounds).
func ValidateAvailabilities(as []Availability, now time.Time) error {
	if len(as) > MaxAvailabilities {
		return Invalidf("availabilities", "must have at most %d items", MaxAvailabilities)
	}
	from, until := bounds.Window(now)
	seen := make(map[string]struct{}, len(as))
	for i := range as {
		a := &as[i]
		_, dup := seen[a.ID]
		if dup || !availabilityOK(a, from, until) {
			if err := availabilityError(i, a, now, dup); err != nil {
				return err
			}
		}
		seen[a.ID] = struct{}{}
	}
	return nil
}

// availabilityOK is availabilityError's checks without naming a field,
// which allocates: the path of every valid item, on the operator's
// availability push and every booking-system refresh.
// FuzzAvailabilityOK holds the two to the same answer.
func availabilityOK(a *Availability, from, until time.Time) bool {
	inWindow := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && !t.After(until) }
	return ValidID(a.ID) && inWindow(a.Start) && inWindow(a.End) && a.Start.Before(a.End) &&
		a.Capacity >= 0 && a.Capacity <= bounds.MaxCapacity &&
		(a.MaxCapacity == nil || (*a.MaxCapacity >= a.Capacity && *a.MaxCapacity <= bounds.MaxCapacity)) &&
		len(a.SystemID) <= MaxIDLen
}

// availabilityError is what is wrong with availability i, named by its
// field (nil: nothing); dup: its id was seen before.
func availabilityError(i int, a *Availability, now time.Time, dup bool) error {
	f := idx("availabilities", i)
	if err := checkID(f+".id", a.ID, true); err != nil {
		return err
	}
	if dup {
		return Invalid(f+".id", "is not unique")
	}
	if a.Start.IsZero() {
		return Invalid(f+".start", "is required (RFC 3339)")
	}
	if a.End.IsZero() {
		return Invalid(f+".end", "is required (RFC 3339)")
	}
	if err := bounds.Time(f+".start", a.Start, now); err != nil {
		return err
	}
	if err := bounds.Time(f+".end", a.End, now); err != nil {
		return err
	}
	if !a.Start.Before(a.End) {
		return Invalid(f+".end", "must be after start")
	}
	if err := bounds.Int(f+".capacity", int64(a.Capacity), 0, bounds.MaxCapacity); err != nil {
		return err
	}
	if a.MaxCapacity != nil {
		if err := bounds.Int(f+".maxCapacity", int64(*a.MaxCapacity), int64(a.Capacity), bounds.MaxCapacity); err != nil {
			return err
		}
	}
	if len(a.SystemID) > MaxIDLen {
		return Invalidf(f+".systemId", "must be at most %d characters", MaxIDLen)
	}
	return nil
}

// NormalizeIDs checks a list of ids, drops duplicates and sorts it: a
// binding's rate set is a set, stored in one canonical order so that the
// same set always compares (and renders) equal.
func NormalizeIDs(field string, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if !ValidID(id) {
			return nil, Invalid(idx(field, i), "is not a valid id")
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func NormalizeTags(field string, tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for i, t := range tags {
		if t == "" || len(t) > maxNameLen {
			return nil, Invalidf(idx(field, i), "must be 1 to %d characters", maxNameLen)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func ValidateChannel(in *ChannelInput) error {
	if err := checkID("id", in.ID, false); err != nil {
		return err
	}
	if err := checkName("name", in.Name, true); err != nil {
		return err
	}
	if err := checkName("companyName", in.CompanyName, true); err != nil {
		return err
	}
	if err := checkURL("logoUrl", in.LogoURL, false); err != nil {
		return err
	}
	return checkURL("url", in.URL, false)
}

// NormalizeBinding checks a binding write and gives the binding it
// stores: priceAt defaults to unknown, tags and rate ids normalized.
func NormalizeBinding(in BindingInput) (Binding, error) {
	b := Binding{PriceAt: in.PriceAt}
	if b.PriceAt == "" {
		b.PriceAt = PriceAtUnknown
	}
	if err := oneOf("priceAt", b.PriceAt, priceAts...); err != nil {
		return b, err
	}
	var err error
	if b.PriceTags, err = NormalizeTags("priceTags", in.PriceTags); err != nil {
		return b, err
	}
	if b.RateIDs, err = NormalizeIDs("rateIds", in.RateIDs); err != nil {
		return b, err
	}
	if in.Valid != nil {
		if err := checkValidity("valid", in.Valid); err != nil {
			return b, err
		}
		b.Valid = *in.Valid
	}
	return b, nil
}
