// Package lineproto speaks vkgrad's JSON-lines protocol with the programs it starts.
//
// The programs are long-lived (reward programs, environments): one JSON object a line each way,
// requests on the program's standard input, replies on its standard output. The rules that keep
// every reply paired with its request:
//
//   - Each request carries "id": n, counting 1, 2, 3, ... from the program's start.
//   - The program answers each request with exactly one line. A reply may echo "id"; one that
//     does must carry its request's id, and once a program has echoed an id, every later reply
//     must echo one too. Echoing makes the pairing exact; programs are asked to.
//   - Anything else the program has to say goes to standard error. A line that arrives with no
//     request waiting for it (a banner, a reply written twice) is an error naming the line.
//
// A program that never echoes ids still works: for it the check of stray lines is what holds
// the replies in step, and it catches an extra line once it has arrived before the next request
// (or before the program is closed; see Leftover).
//
// Start runs such a program the same way for every user: by the shell, in a process group of
// its own killed whole when it stops, with its standard error forwarded line by line.
package lineproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MaxLine is the longest reply line read.
const MaxLine = 64 << 20

var (
	// ErrEnded: the program's output ended, or its input could not be written (it exited).
	ErrEnded = errors.New("the program ended")
	// ErrTimeout: no reply came within the time allowed.
	ErrTimeout = errors.New("no reply in time")
)

// Conn pairs requests with replies over one program's standard input and output. It is not
// safe for concurrent use; a program answers one request at a time.
type Conn struct {
	w       io.Writer
	lines   chan string
	readErr error // why the output ended; set before lines is closed
	last    int64 // id of the last request sent
	echoes  bool  // the program has echoed an id
	broken  error // a protocol error: every later call fails with it
}

// NewConn reads r's lines in the background and writes requests to w.
func NewConn(w io.Writer, r io.Reader) *Conn {
	c := &Conn{w: w, lines: make(chan string, 16)}
	go c.read(r)
	return c
}

func (c *Conn) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		c.lines <- sc.Text()
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		c.readErr = fmt.Errorf("it wrote a line over %d MiB", MaxLine>>20)
	} else if err != nil {
		c.readErr = err
	}
	close(c.lines)
}

// Call sends req, a value that marshals to a JSON object without an "id" field, with the next
// id and returns the reply line; timeout bounds the whole exchange. Errors wrap ErrEnded or
// ErrTimeout, or are protocol errors; after a timeout or a protocol error the pairing is lost
// and the connection refuses every call.
func (c *Conn) Call(req any, timeout time.Duration) ([]byte, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	if err := c.checkQuiet(); err != nil {
		return nil, err
	}
	line, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if err := c.write(line, timer.C); err != nil {
		return nil, err
	}
	select {
	case reply, ok := <-c.lines:
		if !ok {
			return nil, c.ended(fmt.Sprintf("before answering request %d", c.last))
		}
		if err := c.checkID(reply); err != nil {
			c.broken = err
			return nil, err
		}
		return []byte(reply), nil
	case <-timer.C:
		c.broken = fmt.Errorf("%w: request %d unanswered after %s", ErrTimeout, c.last, timeout)
		return nil, c.broken
	}
}

// write sends a request line, giving up when timeout fires: a program that stops reading its
// input would otherwise block the write once the pipe is full.
func (c *Conn) write(line []byte, timeout <-chan time.Time) error {
	done := make(chan error, 1)
	go func() {
		_, err := c.w.Write(line)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w: writing request %d: %v", ErrEnded, c.last, err)
		}
		return nil
	case <-timeout:
		c.broken = fmt.Errorf("%w: request %d not read", ErrTimeout, c.last)
		return c.broken
	}
}

// checkQuiet fails if the program wrote a line since the last reply: no request asked for it.
func (c *Conn) checkQuiet() error {
	select {
	case line, ok := <-c.lines:
		if !ok {
			return c.ended(fmt.Sprintf("after request %d", c.last))
		}
		when := "before the first request"
		if c.last > 0 {
			when = fmt.Sprintf("after the reply to request %d", c.last)
		}
		c.broken = fmt.Errorf("the program wrote %s with no request waiting (%s): write one line per request and anything else to standard error", Quote(line), when)
		return c.broken
	default:
		return nil
	}
}

// ended is the error of an output that closed; say is when.
func (c *Conn) ended(when string) error {
	if c.readErr != nil {
		return fmt.Errorf("%w %s: %v", ErrEnded, when, c.readErr)
	}
	return fmt.Errorf("%w %s", ErrEnded, when)
}

// encode marshals req with "id" as its first field, as one line.
func (c *Conn) encode(req any) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("encoding request: %s is not a JSON object", Quote(string(body)))
	}
	c.last++
	line := append([]byte(`{"id":`), strconv.FormatInt(c.last, 10)...)
	if rest := body[1:]; !bytes.Equal(rest, []byte("}")) {
		line = append(line, ',')
		line = append(line, rest...)
	} else {
		line = append(line, '}')
	}
	return append(line, '\n'), nil
}

// checkID holds a reply to the id rule: an echoed id is the request's, and a program that
// echoed once echoes always. Lines that are not JSON objects are left to the caller's parser.
func (c *Conn) checkID(reply string) error {
	var r struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal([]byte(reply), &r) != nil {
		return nil
	}
	if len(r.ID) == 0 || string(r.ID) == "null" {
		if c.echoes {
			return fmt.Errorf("reply %s to request %d carries no \"id\", though earlier replies did: the replies are out of step", Quote(reply), c.last)
		}
		return nil
	}
	if n, err := strconv.ParseInt(string(r.ID), 10, 64); err != nil || n != c.last {
		return fmt.Errorf("reply %s carries \"id\": %s while request %d waits: the replies are out of step (a line written twice, or a banner on standard output?)", Quote(reply), r.ID, c.last)
	}
	c.echoes = true
	return nil
}

// Leftover returns the lines the program wrote after its last reply, reading until its output
// ends or wait passes: call it once the program has been told to stop. Any line is one no
// request asked for, and a sign that replies of a program that does not echo ids were out of
// step.
func (c *Conn) Leftover(wait time.Duration) []string {
	var out []string
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return out
			}
			out = append(out, line)
		case <-timer.C:
			return out
		}
	}
}

// Discard drops the rest of the program's output in the background, so that the reader
// finishes once the output ends: call it when the connection is given up.
func (c *Conn) Discard() {
	go func() {
		for range c.lines {
		}
	}()
}

// Quote quotes a line for an error message, cut to 200 bytes.
func Quote(line string) string {
	if len(line) > 200 {
		return strconv.Quote(line[:200]) + fmt.Sprintf(" (%d bytes)", len(line))
	}
	return strconv.Quote(line)
}
