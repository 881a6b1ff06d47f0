package catalogredis

import (
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

func TestCheckBulk_ChecksCountItemsAndIDsAndFillsMissingIDs(t *testing.T) {
	type item struct{ ID, Name string }
	many := make([]item, catalog.MaxBulk+1)
	tests := []struct {
		name      string
		ins       []item
		wantField string // "" for no error
	}{
		{"none", nil, "things"},
		{"too many", many, "things"},
		{"an invalid item, named by its index", []item{{ID: "a", Name: "x"}, {ID: "b"}}, "things[1].name"},
		{"an id twice", []item{{ID: "a", Name: "x"}, {Name: "y"}, {ID: "a", Name: "z"}}, "things[2].id"},
		{"valid, ids filled", []item{{ID: "a", Name: "x"}, {Name: "y"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkBulk("things", tt.ins, func(it *item) *string { return &it.ID }, func(prefix string, it *item) error {
				if it.Name == "" {
					return catalog.Invalid(prefix+"name", "must not be empty")
				}
				return nil
			})
			var fe *domainerr.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Fatalf("checkBulk = %v, want nil", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Fatalf("checkBulk = %v, want a field error on %s", err, tt.wantField)
			}
			if tt.wantField == "" && (tt.ins[0].ID != "a" || tt.ins[1].ID == "" || tt.ins[1].ID == "a") {
				t.Fatalf("ids %q and %q, want a kept and a new one", tt.ins[0].ID, tt.ins[1].ID)
			}
		})
	}
}
