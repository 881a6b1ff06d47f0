package schemas

import "testing"

func TestParseCatalogEventType_ReadsKindAndOperation(t *testing.T) {
	tests := []struct {
		name        string
		typ         string
		wantKind    CatalogKind
		wantDeleted bool
		wantOK      bool
	}{
		{"upsert", CatalogEventType(CatalogKindRate, false), CatalogKindRate, false, true},
		{"delete", CatalogEventType(CatalogKindBinding, true), CatalogKindBinding, true, true},
		{"unknown kind is left to the payload's checks", "catalog.widget.upserted", "widget", false, true},
		{"another domain", "availability.snapshot", "", false, false},
		{"unknown operation", "catalog.rate.renamed", "", false, false},
		{"no operation", "catalog.rate", "", false, false},
		{"empty", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, deleted, ok := ParseCatalogEventType(tt.typ)
			if kind != tt.wantKind || deleted != tt.wantDeleted || ok != tt.wantOK {
				t.Fatalf("ParseCatalogEventType(%q) = %q, %t, %t; want %q, %t, %t", tt.typ, kind, deleted, ok, tt.wantKind, tt.wantDeleted, tt.wantOK)
			}
		})
	}
}

func TestCatalogKind_EveryKindHasItsTopicAndKey(t *testing.T) {
	tests := []struct {
		kind  CatalogKind
		topic string
		key   string
	}{
		{CatalogKindChannel, TopicChannels, "c"},
		{CatalogKindSupplier, TopicSuppliers, "s"},
		{CatalogKindProduct, TopicProducts, "s/p"},
		{CatalogKindRate, TopicRates, "s/p/r"},
		{CatalogKindBinding, TopicBindings, "s/p/c"},
		{CatalogKindAvailability, TopicAvailability, "s/p/r"},
		{CatalogKindPriceSchedule, TopicPrices, "s/p/r"},
		{"widget", "", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			if got := tt.kind.Topic(); got != tt.topic {
				t.Errorf("topic %q, want %q", got, tt.topic)
			}
			if got := CatalogEntityKey(tt.kind, "s", "p", "r", "c"); got != tt.key {
				t.Errorf("key %q, want %q", got, tt.key)
			}
		})
	}
}
