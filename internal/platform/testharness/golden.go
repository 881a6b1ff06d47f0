package testharness

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/uuid"
)

// Golden compares got with the golden file at path, after writing got
// there when update is set (each package's `-update` flag): wire formats
// are pinned by files under testdata/ (STYLE.md), so a change of the bytes
// shows in review as a change of the file. It answers the file's bytes.
func Golden(t testing.TB, path string, got []byte, update bool) (want []byte) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n got %s\nwant %s", path, got, want)
	}
	return want
}

// GoldenID stands for an envelope's id (a new UUID per record) in golden
// records.
const GoldenID = "00000000-0000-0000-0000-000000000000"

// WithGoldenID is an envelope record with its id (a UUID, the first key, as
// schemas.Envelope writes it) replaced by GoldenID, so that golden files
// can pin the rest of its bytes.
func WithGoldenID(t testing.TB, value []byte) []byte {
	t.Helper()
	const head = `{"id":"`
	if len(value) < len(head)+36 || string(value[:len(head)]) != head {
		t.Fatalf("record does not start with its id: %s", value)
	}
	if _, err := uuid.Parse(string(value[len(head) : len(head)+36])); err != nil {
		t.Fatalf("envelope id: %v", err)
	}
	return append([]byte(head+GoldenID), value[len(head)+36:]...)
}
