package kafkabroker

import (
	"bufio"
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

// TestGuardedConn_PassesFramesWrittenInAnyPieces: whole frames are passed
// on from the caller's buffer and a tail is kept as a copy, so a caller
// that reuses its buffer after Write (as kfake may) changes nothing.
func TestGuardedConn_PassesFramesWrittenInAnyPieces(t *testing.T) {
	frames := [][]byte{frame("first"), frame(""), frame("a longer third answer"), frame("4")}
	var all []byte
	for _, f := range frames {
		all = append(all, f...)
	}
	for _, piece := range []int{1, 3, 7, 9, len(frames[0]), len(all)} {
		rc := &recordingConn{}
		c := &guardedConn{Conn: rc}
		for range frames {
			c.expect(true)
		}
		for i := 0; i < len(all); i += piece {
			p := append([]byte(nil), all[i:min(i+piece, len(all))]...)
			if n, err := c.Write(p); err != nil || n != len(p) {
				t.Fatalf("piece %d: Write = %d, %v", piece, n, err)
			}
			for j := range p {
				p[j] = 'X' // the caller reuses its buffer
			}
		}
		if got := rc.out.Bytes(); !bytes.Equal(got, all) {
			t.Errorf("pieces of %d: wrote %q, want %q", piece, got, all)
		}
		if len(c.partial) != 0 || len(c.order) != 0 {
			t.Errorf("pieces of %d: %d bytes and %d answers left over", piece, len(c.partial), len(c.order))
		}
	}
}

// TestGuardedConn_ReadsFramesThroughItsReusedBuffer: frames read one after
// the other through the reused buffer come out whole and unchanged, in
// whatever size kfake reads them, a frame above the reuse limit included.
func TestGuardedConn_ReadsFramesThroughItsReusedBuffer(t *testing.T) {
	body := func(n int, fill byte) string {
		b := bytes.Repeat([]byte{fill}, n)
		binary.BigEndian.PutUint16(b, 3) // Metadata: forwarded as it is
		return string(b)
	}
	frames := [][]byte{frame(body(64, 'a')), frame(body(9000, 'b')), frame(body(16, 'c')), frame(body(reuseFrame+10, 'd')), frame(body(32, 'e'))}
	var in []byte
	for _, f := range frames {
		in = append(in, f...)
	}
	for _, chunk := range []int{5, 4096, 1 << 21} {
		client, server := net.Pipe()
		go func() {
			_, _ = client.Write(in)
			_ = client.Close()
		}()
		c := &guardedConn{Conn: server, r: bufio.NewReaderSize(server, 64<<10)}
		var got []byte
		p := make([]byte, chunk)
		for len(got) < len(in) {
			n, err := c.Read(p)
			if err != nil {
				t.Fatalf("chunk %d: after %d bytes: %v", chunk, len(got), err)
			}
			got = append(got, p[:n]...)
		}
		_ = server.Close()
		if !bytes.Equal(got, in) {
			t.Errorf("reads of %d: frames changed on their way through", chunk)
		}
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
