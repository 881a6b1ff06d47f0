package availchange

import (
	"encoding/json"
	"testing"
	"time"
)

func TestStateEncoding_RoundTripsBothFormats(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   stored
	}{
		{"empty", stored{Versions: map[string]int64{}}},
		{"slots, coverage and both sources", stored{
			State: State{
				Slots: []Slot{
					{Start: at, End: at.Add(2 * time.Hour), Vacancies: 5},
					{Start: at.Add(24 * time.Hour), End: at.Add(26 * time.Hour), Vacancies: 0},
					{Start: at.Add(48*time.Hour + 123456789), End: at.Add(49 * time.Hour), Vacancies: -1},
				},
				Coverage: []Span{{From: at.Add(-time.Hour), To: at.Add(72 * time.Hour)}},
			},
			Versions: map[string]int64{"partner": at.UnixNano(), "push": 3},
		}},
		{"everything scope (year 9999) and times before 1970", stored{
			State:    State{Slots: []Slot{{Start: time.Unix(-86400, 5).UTC(), End: time.Unix(0, 0).UTC(), Vacancies: 1}}, Coverage: []Span{Everything}},
			Versions: map[string]int64{"push": 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, err := json.Marshal(tt.st)
			if err != nil {
				t.Fatal(err)
			}
			for format, raw := range map[string][]byte{"compact": encodeState(nil, tt.st), "json": js} {
				got, err := decodeState(raw)
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				// Both formats decode to the same compact bytes.
				if a, b := encodeState(nil, got), encodeState(nil, tt.st); string(a) != string(b) {
					t.Errorf("%s: round trip\n got %+v\nwant %+v", format, got, tt.st)
				}
				if len(got.Slots) != len(tt.st.Slots) {
					t.Fatalf("%s: %d slots", format, len(got.Slots))
				}
				for i := range got.Slots {
					if !got.Slots[i].Start.Equal(tt.st.Slots[i].Start) || !got.Slots[i].End.Equal(tt.st.Slots[i].End) {
						t.Errorf("%s: slot %d times differ", format, i)
					}
				}
			}
		})
	}
}

func TestDecodeState_RejectsCorruptValues(t *testing.T) {
	good := encodeState(nil, stored{State: State{Slots: []Slot{{Start: time.Unix(100, 0), End: time.Unix(200, 0), Vacancies: 2}}}, Versions: map[string]int64{"partner": 9}})
	tests := []struct {
		name string
		raw  []byte
	}{
		{"unknown format", []byte{0x02, 0}},
		{"truncated", good[:len(good)-2]},
		{"trailing bytes", append(append([]byte(nil), good...), 0)},
		{"huge count", []byte{stateFormatV1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"bad json", []byte("{nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeState(tt.raw); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// FuzzDecodeState: whatever is in Redis, decoding does not panic, and
// what it accepts in the compact form encodes back to the same bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(encodeState(nil, stored{State: State{Slots: []Slot{{Start: time.Unix(100, 0), End: time.Unix(200, 0), Vacancies: 2}},
		Coverage: []Span{Everything}}, Versions: map[string]int64{"partner": 9}}))
	f.Add([]byte(`{"slots":[],"ver":{"push":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, err := decodeState(raw)
		if err != nil || len(raw) == 0 || raw[0] != stateFormatV1 {
			return
		}
		if again := encodeState(nil, st); string(again) != string(raw) {
			// Non-minimal varints decode to the same values: compare those.
			st2, err := decodeState(again)
			if err != nil || len(st2.Slots) != len(st.Slots) || len(st2.Coverage) != len(st.Coverage) {
				t.Fatalf("re-encoding changed the state: %v", err)
			}
		}
	})
}
