// Package catalogwire holds the catalog's renderings: the reseller's
// v1.2 and v1.3 supplier and rate bytes, the operator's and the channel
// interface's views (SupplierView, RateView, ChannelView, ChannelRate,
// BindingV2), and a binding's value in a channel's index. They are pure
// functions of internal/catalog's model: the Redis adapter
// (internal/catalog/catalogredis) stores them when an event is applied,
// and the HTTP handlers answer in them.
//
// It must not read or write storage, nor know HTTP.
package catalogwire

import (
	"encoding/json"
	"strconv"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// Renderings. Reseller renderings are computed once, when an event is
// applied, and stored next to the record, so that a reseller read is
// Redis bytes copied into the response. They are pure functions of the
// record: a rebuild from the topics stores the same bytes.

type contactV12 = catalog.Contact

type contactV13 struct {
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	Phone string `json:"phone,omitempty"`
	Title string `json:"title,omitempty"`
}

type locationV12 struct {
	Address   *catalog.Address `json:"address,omitempty"`
	LongLat   *catalog.LongLat `json:"longLat,omitempty"`
	Name      string           `json:"name,omitempty"`
	Notes     string           `json:"notes,omitempty"`
	Website   string           `json:"website,omitempty"`
	City      string           `json:"city,omitempty"`
	Country   string           `json:"country,omitempty"`
	State     string           `json:"state,omitempty"`
	UTCOffset string           `json:"utcOffset,omitempty"`
}

type locationV13 struct {
	Name        string              `json:"name,omitempty"`
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Address     *catalog.Address    `json:"address,omitempty"`
	LongLat     *catalog.LongLat    `json:"longLat,omitempty"`
	Website     string              `json:"website,omitempty"`
	Notes       string              `json:"notes,omitempty"`
	Type        string              `json:"type,omitempty"`
	Order       int                 `json:"order,omitempty"`
	References  []catalog.Reference `json:"references,omitempty"`
}

type travelerTypeV12 struct {
	AgeBand  string `json:"ageBand,omitempty"`
	MaxAge   *int32 `json:"maxAge,omitempty"`
	MinAge   *int32 `json:"minAge,omitempty"`
	Modifier string `json:"modifier,omitempty"`
	Name     string `json:"name,omitempty"`
}

// supplierV12 is Supplier 1.2 (spec doc 2), fields in the spec's order.
type supplierV12 struct {
	BusinessType   []string          `json:"businessType,omitempty"`
	Code           string            `json:"code"`
	Contacts       []contactV12      `json:"contacts,omitempty"`
	Ext            map[string]string `json:"ext,omitempty"`
	Hours          []catalog.Hours   `json:"hours,omitempty"`
	ID             string            `json:"id"`
	MainLocation   *locationV12      `json:"mainLocation,omitempty"`
	Name           string            `json:"name"`
	OtherLocations []locationV12     `json:"otherLocations,omitempty"`
	PartnerID      string            `json:"partnerId,omitempty"`
	TravelerTypes  []travelerTypeV12 `json:"travelerTypes,omitempty"`
	Version        int64             `json:"version"`
}

// supplierV13 is Supplier 1.3 (spec doc 2); Content only with content=true.
type supplierV13 struct {
	ID             string                 `json:"id"`
	Name           string                 `json:"name"`
	Title          string                 `json:"title,omitempty"`
	Description    string                 `json:"description,omitempty"`
	Code           string                 `json:"code"`
	Version        int64                  `json:"version"`
	Extensions     json.RawMessage        `json:"extensions,omitempty"`
	Ext            map[string]string      `json:"ext,omitempty"`
	BusinessType   []string               `json:"businessType,omitempty"`
	Contacts       []contactV13           `json:"contacts,omitempty"`
	MainLocation   *locationV13           `json:"mainLocation,omitempty"`
	OtherLocations []locationV13          `json:"otherLocations,omitempty"`
	Hours          []catalog.Hours        `json:"hours,omitempty"`
	PartnerID      string                 `json:"partnerId,omitempty"`
	TravelerTypes  []catalog.TravelerType `json:"travelerTypes,omitempty"`
	Content        *catalog.Content       `json:"content,omitempty"`
}

func loc12(l catalog.Location) locationV12 {
	return locationV12{Address: l.Address, LongLat: l.LongLat, Name: l.Name, Notes: l.Notes, Website: l.Website,
		City: l.City, Country: l.Country, State: l.State, UTCOffset: l.UTCOffset}
}

func loc13(l catalog.Location) locationV13 {
	return locationV13{Name: l.Name, Title: l.Title, Description: l.Description, Address: l.Address, LongLat: l.LongLat,
		Website: l.Website, Notes: l.Notes, Type: l.Type, Order: l.Order, References: l.References}
}

func RenderV12(s *catalog.Supplier) []byte {
	v := supplierV12{BusinessType: s.BusinessType, Code: s.Code, Contacts: s.Contacts, Ext: s.Ext, Hours: s.Hours,
		ID: s.ID, Name: s.Name, PartnerID: s.PartnerID, Version: s.Version}
	if s.MainLocation != nil {
		l := loc12(*s.MainLocation)
		v.MainLocation = &l
	}
	for _, l := range s.OtherLocations {
		v.OtherLocations = append(v.OtherLocations, loc12(l))
	}
	for _, t := range s.TravelerTypes {
		v.TravelerTypes = append(v.TravelerTypes, travelerTypeV12{AgeBand: t.AgeBand, MaxAge: t.MaxAge, MinAge: t.MinAge, Modifier: t.Modifier, Name: t.Name})
	}
	return MustJSON(v)
}

func RenderV13(s *catalog.Supplier, content bool) []byte {
	v := supplierV13{ID: s.ID, Name: s.Name, Title: s.Title, Description: s.Description, Code: s.Code, Version: s.Version,
		Extensions: s.Extensions, Ext: s.Ext, BusinessType: s.BusinessType, Hours: s.Hours, PartnerID: s.PartnerID,
		TravelerTypes: s.TravelerTypes}
	for _, c := range s.Contacts {
		v.Contacts = append(v.Contacts, contactV13{Email: c.Email, Name: c.Name, Phone: c.Phone, Title: c.Title})
	}
	if s.MainLocation != nil {
		l := loc13(*s.MainLocation)
		v.MainLocation = &l
	}
	for _, l := range s.OtherLocations {
		v.OtherLocations = append(v.OtherLocations, loc13(l))
	}
	if content {
		v.Content = s.Content
	}
	return MustJSON(v)
}

// RateView is the reseller's and the operator's rate (spec doc 2, Rate
// 1.2): productId, the rate's data, version.
type RateView struct {
	ProductID string `json:"productId"`
	catalog.RateData
	Version int64 `json:"version"`
}

// RateOf is the API rendering of r.
func RateOf(r catalog.Rate) RateView {
	return RateView{ProductID: r.ProductID, RateData: r.RateData, Version: r.Version}
}

func RenderRate(r *catalog.Rate) []byte {
	return MustJSON(RateView{ProductID: r.ProductID, RateData: r.RateData, Version: r.Version})
}

// FilterPrices returns the rate rendering with only the prices that carry
// every tag (spec doc 2, binding rules).
func FilterPrices(raw []byte, tags []string) ([]byte, error) {
	var v RateView
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	kept := v.Prices[:0]
	for _, p := range v.Prices {
		if p.HasLabels(tags) {
			kept = append(kept, p)
		}
	}
	v.Prices = kept
	return json.Marshal(v)
}

// SupplierView is what an operator (or admin) sees of its supplier: the
// supplier, its version and its connection without the credentials.
type SupplierView struct {
	catalog.SupplierData
	Version    int64          `json:"version"`
	Connection ConnectionView `json:"connection"`
}

// ConnectionView is the connection with the credentials masked.
type ConnectionView struct {
	Kind        string          `json:"kind"`
	BaseURL     string          `json:"baseUrl"`
	Credentials CredentialsView `json:"credentials"`
}

// CredentialsView says whether credentials are stored and of which kind
// ("apiKey" or "bearerToken"), never their value.
type CredentialsView struct {
	Set  bool   `json:"set"`
	Kind string `json:"kind,omitempty"`
}

// SupplierOf is the operator's view of s.
func SupplierOf(s catalog.Supplier) SupplierView {
	cv := CredentialsView{Set: s.Connection.Credentials.Set()}
	switch {
	case s.Connection.Credentials.BearerToken != "":
		cv.Kind = "bearerToken"
	case cv.Set:
		cv.Kind = "apiKey"
	}
	return SupplierView{SupplierData: s.SupplierData, Version: s.Version,
		Connection: ConnectionView{Kind: s.Connection.Kind, BaseURL: s.Connection.BaseURL, Credentials: cv}}
}

// ChannelView is Channel 1.2 (spec doc 2) as the channel interface shows it.
type ChannelView struct {
	ActivationDelay string            `json:"activationDelay,omitempty"`
	CompanyName     string            `json:"companyName"`
	Config          map[string]string `json:"config,omitempty"`
	Ext             map[string]string `json:"ext,omitempty"`
	ID              string            `json:"id"`
	LogoURL         string            `json:"logoUrl,omitempty"`
	Name            string            `json:"name"`
	URL             string            `json:"url,omitempty"`
}

// ChannelOf is the channel interface's rendering of c.
func ChannelOf(c catalog.Channel) ChannelView {
	return ChannelView{ActivationDelay: c.ActivationDelay, CompanyName: c.CompanyName, Config: c.Config, Ext: c.Ext,
		ID: c.ID, LogoURL: c.LogoURL, Name: c.Name, URL: c.URL}
}

// ChannelV2 is doc 3's channel: id, name, companyName.
type ChannelV2 struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	CompanyName string `json:"companyName"`
}

// ChannelRate is the channel v1.2 view of a binding (spec doc 2).
type ChannelRate struct {
	Channel   ChannelView      `json:"channel"`
	PriceAt   string           `json:"priceAt"`
	PriceTags []string         `json:"priceTags"`
	RateIDs   []string         `json:"rateIds"`
	Valid     catalog.Validity `json:"valid"`
}

// BindingV2 is the operator v2 view of a binding (spec doc 3).
type BindingV2 struct {
	ChannelID    string   `json:"channelId"`
	ChannelName  string   `json:"channelName"`
	OptionIDs    []string `json:"optionIds"`
	ProductID    string   `json:"productId"`
	ProductName  string   `json:"productName"`
	SupplierID   string   `json:"supplierId"`
	SupplierName string   `json:"supplierName"`
}

// IndexValue is a binding in a channel's index: the window in unix
// milliseconds (0: open) before the JSON, so that listing a channel's
// suppliers reads two integers instead of decoding every binding.
func IndexValue(b *catalog.Binding) string {
	var from, until int64
	if !b.Valid.From.IsZero() {
		from = b.Valid.From.UnixMilli()
	}
	if !b.Valid.Until.IsZero() {
		until = b.Valid.Until.UnixMilli()
	}
	buf := make([]byte, 0, 128)
	buf = strconv.AppendInt(buf, from, 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, until, 10)
	buf = append(buf, ':')
	buf = append(buf, MustJSON(b)...)
	return string(buf)
}

// IndexOpen reports whether the index value's window contains now
// (milliseconds), and returns the binding JSON after the window.
func IndexOpen(v string, nowMs int64) (bool, string) {
	from, until, rest, ok := IndexWindow(v)
	if !ok {
		return false, ""
	}
	open := (from == 0 || nowMs >= from) && (until == 0 || nowMs < until)
	return open, rest
}

// IndexWindow splits an index value into its window (milliseconds, 0 for
// an open end) and the binding JSON after it; ok is false when the value
// is not of that form.
func IndexWindow(v string) (from, until int64, rest string, ok bool) {
	i := 0
	num := func() (int64, bool) {
		var n int64
		start := i
		neg := false
		if i < len(v) && v[i] == '-' {
			neg = true
			i++
		}
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			n = n*10 + int64(v[i]-'0')
			i++
		}
		if i == start || i >= len(v) || v[i] != ':' {
			return 0, false
		}
		i++
		if neg {
			n = -n
		}
		return n, true
	}
	from, ok1 := num()
	until, ok2 := num()
	if !ok1 || !ok2 {
		return 0, 0, "", false
	}
	return from, until, v[i:], true
}

// MustJSON encodes values whose types are ours: plain structs of
// strings, numbers, slices and string maps cannot fail to encode (a
// json.RawMessage is validated before it is stored).
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("catalog: encode " + err.Error())
	}
	return b
}
