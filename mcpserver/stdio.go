package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of one stdio line (one JSON-RPC message).
const (
	// MaxLineBytes bounds one line; a longer line is answered with a parse
	// error and skipped to its end (the SDK's own bound is 16 MiB too).
	MaxLineBytes = 16 << 20
	// MaxNesting bounds how deeply a line's arrays and objects nest (tool
	// arguments are shallow; the bound keeps decoding cheap and
	// non-recursive input from reaching a recursive decoder).
	MaxNesting = 128
)

// NewLineTransport is the stdio transport over r and w (os.Stdin and
// os.Stdout): newline-delimited JSON-RPC, one object per line, as the SDK's
// StdioTransport, except that nothing a client sends ends the session. A
// line that is not one JSON-RPC message — not JSON, not an object (null, a
// number, a batch array: batching is gone from MCP since 2025-06-18),
// nested deeper than MaxNesting, longer than MaxLineBytes, with an id that
// is neither a string nor a number — is answered with a JSON-RPC error
// (-32700 parse error or -32600 invalid request, id null) and skipped. The
// session ends when r ends (or fails) or the server closes it.
//
// As with the SDK's transport, a read of r blocked when the session is
// closed returns only when r does (stdin cannot be unblocked portably); the
// reader then stops.
func NewLineTransport(r io.Reader, w io.Writer) mcp.Transport {
	return &lineTransport{r: r, w: w}
}

type lineTransport struct {
	r io.Reader
	w io.Writer
}

var _ mcp.Transport = (*lineTransport)(nil)

// Connect starts the reader of one session.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{w: t.w, msgs: make(chan jsonrpc.Message), ended: make(chan struct{}), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.r, 64<<10))
	return c, nil
}

// lineConn is one stdio session.
type lineConn struct {
	writeMu sync.Mutex // guards w: replies and the reader's error answers are whole lines
	w       io.Writer

	msgs      chan jsonrpc.Message // valid messages, from readLoop to Read
	ended     chan struct{}        // closed by readLoop when r ends; readErr is set before
	readErr   error
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
}

var _ mcp.Connection = (*lineConn)(nil)

// readLoop reads lines until r ends or the connection is closed, handing
// valid messages to Read and answering the others itself.
func (c *lineConn) readLoop(br *bufio.Reader) {
	defer close(c.ended)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || errors.Is(err, errLineTooLong) {
			msg, perr := parseLine(line, err)
			if perr != nil {
				if werr := c.writeRaw(perr); werr != nil {
					c.readErr = werr
					return
				}
			} else {
				select {
				case c.msgs <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			c.readErr = err
			return
		}
	}
}

var errLineTooLong = fmt.Errorf("a line is longer than %d bytes", MaxLineBytes)

// readLine reads one line without its newline. A line longer than
// MaxLineBytes is read to its end and dropped: errLineTooLong.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLineBytes+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && len(line) == 0 && !tooLong:
			return nil, err
		case tooLong:
			if err == nil {
				err = errLineTooLong
			}
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// parseLine decodes one line; a line that is not one JSON-RPC message gives
// the error reply to send instead.
func parseLine(line []byte, readErr error) (jsonrpc.Message, []byte) {
	if errors.Is(readErr, errLineTooLong) {
		return nil, errorReply(jsonrpc.CodeParseError, errLineTooLong.Error())
	}
	line = bytes.TrimSpace(line)
	if d := nesting(line); d > MaxNesting {
		return nil, errorReply(jsonrpc.CodeParseError, fmt.Sprintf("arrays and objects nest deeper than %d", MaxNesting))
	}
	if !json.Valid(line) {
		return nil, errorReply(jsonrpc.CodeParseError, "parse error: a line must be one JSON-RPC message (valid JSON, UTF-8)")
	}
	if line[0] != '{' {
		return nil, errorReply(jsonrpc.CodeInvalidRequest, "invalid request: a line must be one JSON-RPC object (batches are not supported)")
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorReply(jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return msg, nil
}

// nesting is the deepest nesting of arrays and objects in b (strings
// skipped), counted without recursion.
func nesting(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case inString && ch == '"':
			inString = false
		case inString:
		case ch == '"':
			inString = true
		case ch == '[' || ch == '{':
			depth++
			deepest = max(deepest, depth)
		case ch == ']' || ch == '}':
			depth--
		}
	}
	return deepest
}

// errorReply is a JSON-RPC error response with id null (the id of a
// message that could not be read is unknown).
func errorReply(code int, message string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   any    `json:"error"`
	}{"2.0", nil, map[string]any{"code": code, "message": message}})
	return b
}

func (c *lineConn) writeRaw(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(line, '\n'))
	return err
}

// Read returns the next valid message; io.EOF once the input ended.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.msgs:
		return m, nil
	case <-c.ended:
		if c.readErr != nil && !errors.Is(c.readErr, io.EOF) {
			return nil, c.readErr
		}
		return nil, io.EOF
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends one message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpserver: encoding a message: %w", err)
	}
	return c.writeRaw(data)
}

// Close ends the session (idempotent). It does not close r or w: they are
// the caller's (stdin and stdout).
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is "" (stdio has one session).
func (c *lineConn) SessionID() string { return "" }
