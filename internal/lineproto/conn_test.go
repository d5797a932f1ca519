package lineproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestEncodePutsTheIDFirst(t *testing.T) {
	c := &Conn{}
	for _, tc := range []struct {
		req  any
		want string
	}{
		{struct{}{}, `{"id":1}`},
		{map[string]int{"a": 1}, `{"id":2,"a":1}`},
	} {
		got, err := c.encode(tc.req)
		if err != nil || string(got) != tc.want+"\n" {
			t.Errorf("%v: %q, %v; want %q", tc.req, got, err, tc.want)
		}
	}
	if _, err := c.encode([]int{1}); err == nil {
		t.Error("a request that is not an object must be refused")
	}
}

// TestForwardCutsLongLinesAndGoesOn: a line over the limit is cut with its length noted, the
// lines after it arrive, a last line without a newline too, and a failing writer does not stop
// the reading.
func TestForwardCutsLongLinesAndGoesOn(t *testing.T) {
	in := "a\r\n" + strings.Repeat("x", 100<<10) + "\n\n0123456789\ntail"
	var out bytes.Buffer
	Forward(iotest.HalfReader(strings.NewReader(in)), &out, "p: ", 10)
	want := "p: a\np: xxxxxxxxxx ... (a line of 102400 bytes, cut to 10)\np: \np: 0123456789\np: tail\n"
	if out.String() != want {
		t.Errorf("forwarded %q, want %q", out.String(), want)
	}
	r := strings.NewReader(in)
	Forward(r, failingWriter{}, "p: ", 10)
	if r.Len() != 0 {
		t.Errorf("%d bytes left unread after the writer failed", r.Len())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

// FuzzCheckID: any reply line is accepted or refused without a panic, and a JSON object whose
// "id" is another integer than the request's is always refused.
func FuzzCheckID(f *testing.F) {
	f.Add(`{"id": 3, "rewards": [1]}`, int64(3))
	f.Add(`{"id": 2, "rewards": [1]}`, int64(3))
	f.Add(`{"id": "3"}`, int64(3))
	f.Add(`{"id": 3.0}`, int64(3))
	f.Add(`{"rewards": [1]}`, int64(1))
	f.Add(`loading model...`, int64(1))
	f.Fuzz(func(t *testing.T, line string, last int64) {
		c := &Conn{last: last}
		err := c.checkID(line)
		var r struct {
			ID *int64 `json:"id"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.ID != nil && *r.ID != last && err == nil {
			t.Fatalf("%q accepted for request %d", line, last)
		}
	})
}

// TestConnRefusesAStrayLine: a line waiting when a request is to be sent is an error naming
// it, and the connection refuses every later call.
func TestConnRefusesAStrayLine(t *testing.T) {
	for _, tc := range []struct {
		replies []string // written on each request
		calls   int      // that succeed
		want    string
	}{
		{[]string{"{\"ok\":1}\nbanner\n"}, 1, `"banner" with no request waiting (after the reply to request 1)`},
		{[]string{"banner\n"}, 0, `"banner" with no request waiting (before the first request)`},
	} {
		pr, pw := io.Pipe()
		prog := &scripted{w: pw, replies: tc.replies}
		c := NewConn(prog, pr)
		if tc.calls == 0 {
			prog.Write(nil) // the program speaks first
		}
		for i := range tc.calls {
			if _, err := c.Call(struct{}{}, time.Minute); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		for len(c.lines) == 0 { // the stray line has been read
			time.Sleep(time.Millisecond)
		}
		_, err := c.Call(struct{}{}, time.Minute)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v, want %q", err, tc.want)
		}
		if _, again := c.Call(struct{}{}, time.Minute); again == nil || again.Error() != err.Error() {
			t.Errorf("a later call: %v", again)
		}
		pw.Close()
	}
}

// scripted plays a program: each request written to it is answered with its next reply.
type scripted struct {
	w       *io.PipeWriter
	replies []string
}

func (s *scripted) Write(p []byte) (int, error) {
	if len(s.replies) > 0 {
		go s.w.Write([]byte(s.replies[0]))
		s.replies = s.replies[1:]
	}
	return len(p), nil
}
