package catalogwire

import "github.com/switchbackhq/switchback/internal/catalog"

// BoundProduct is a binding with what its views name: the channel, the
// supplier's and product's names and every rate of the product.
type BoundProduct struct {
	Binding      catalog.Binding
	Channel      catalog.Channel
	SupplierName string
	ProductName  string
	// Rates are every rate id of the product, sorted: the options of a
	// whole-product binding.
	Rates []string
}

// ChannelRate is the channel v1.2 view.
func (b BoundProduct) ChannelRate() ChannelRate {
	return ChannelRate{Channel: ChannelOf(b.Channel), PriceAt: b.Binding.PriceAt, PriceTags: orEmpty(b.Binding.PriceTags),
		RateIDs: orEmpty(b.Binding.RateIDs), Valid: b.Binding.Valid}
}

// V2 is the operator v2 view: optionIds are the bound rates (all of them
// for a whole-product binding).
func (b BoundProduct) V2() BindingV2 {
	opts := b.Binding.RateIDs
	if b.Binding.Whole() {
		opts = b.Rates
	}
	return BindingV2{ChannelID: b.Channel.ID, ChannelName: b.Channel.Name, OptionIDs: orEmpty(opts),
		ProductID: b.Binding.ProductID, ProductName: b.ProductName, SupplierID: b.Binding.SupplierID, SupplierName: b.SupplierName}
}

// orEmpty is s, or an empty list for nil (the JSON is [] rather than null).
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
