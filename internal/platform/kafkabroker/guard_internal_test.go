package kafkabroker

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

// recordingConn records what is written to it.
type recordingConn struct {
	net.Conn
	out bytes.Buffer
}

func (r *recordingConn) Write(p []byte) (int, error) { return r.out.Write(p) }

func frame(s string) []byte {
	b := make([]byte, 4+len(s))
	binary.BigEndian.PutUint32(b, uint32(len(s)))
	copy(b[4:], s)
	return b
}

// TestGuardedConn_AnswersInRequestOrder: a refusal due after answers of
// kfake waits for them; one due first goes at once; kfake's frames may
// arrive in pieces.
func TestGuardedConn_AnswersInRequestOrder(t *testing.T) {
	rc := &recordingConn{}
	c := &guardedConn{Conn: rc}
	c.queueRefusal(frame("R0")) // nothing due before it: written now
	c.expect(true)              // request 1: kfake's
	c.expect(true)              // request 2: kfake's
	c.queueRefusal(frame("R3")) // request 3: refused
	c.expect(true)              // request 4: kfake's
	if got := rc.out.String(); got != string(frame("R0")) {
		t.Fatalf("before kfake answered: %q", got)
	}
	k1, k2, k4 := frame("K1"), frame("K2"), frame("K4")
	all := append(append(append([]byte{}, k1...), k2...), k4...)
	for i := 0; i < len(all); i += 3 { // in pieces
		if _, err := c.Write(all[i:min(i+3, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	want := string(frame("R0")) + string(k1) + string(k2) + string(frame("R3")) + string(k4)
	if got := rc.out.String(); got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

func TestParseProcAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0100007F:DA01", "127.0.0.1:55809"},
		{"00000000000000000000000001000000:1F90", "[::1]:8080"},
		{"0000000000000000FFFF00000100007F:0050", "[::ffff:127.0.0.1]:80"},
	}
	for _, tt := range tests {
		got, err := parseProcAddr(tt.in)
		if err != nil || got != netip.MustParseAddrPort(tt.want) {
			t.Errorf("parseProcAddr(%s) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
