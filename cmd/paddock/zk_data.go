package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
)

// zkData is where create and set take a node's data from: the DATA argument, a file
// (--file F), or stdin (--stdin, or DATA "-"). A file or stdin is read up to
// --max-buffer bytes, the servers' jute.maxbuffer: a request carrying more would be
// refused by the server, so more is refused here, before anything is sent.
type zkData struct {
	file      string
	stdin     bool
	maxBuffer int
}

// addFlags adds --file, --stdin and --max-buffer to cmd.
func (d *zkData) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&d.file, "file", "", "read the data from `FILE` (at most --max-buffer bytes)")
	f.BoolVar(&d.stdin, "stdin", false, "read the data from stdin, to its end (also DATA \"-\"; at most --max-buffer bytes)")
	f.IntVar(&d.maxBuffer, "max-buffer", coordinator.DefaultMaxBuffer,
		"the servers' jute.maxbuffer in `bytes`: the largest request (path, data and header) they take")
}

// read returns the data: args[0] if given (not "-"), else the file's or stdin's. It
// returns nil, nil when there is none. z's session then sizes its requests by
// --max-buffer.
func (d *zkData) read(cmd *cobra.Command, z *zkCLI, args []string) ([]byte, error) {
	given := 0
	for _, b := range []bool{len(args) > 0, d.file != "", d.stdin} {
		if b {
			given++
		}
	}
	if given > 1 {
		return nil, usageError("give the data once: as DATA (\"-\" for stdin), --file or --stdin")
	}
	if d.maxBuffer < 1024 || d.maxBuffer > 512<<20 {
		return nil, usageError("--max-buffer %d: want the servers' jute.maxbuffer, 1024 bytes to 512 MiB", d.maxBuffer)
	}
	z.maxBuffer = &d.maxBuffer
	var r io.Reader
	var from string
	switch {
	case len(args) > 0 && args[0] != "-":
		return []byte(args[0]), nil
	case len(args) > 0 || d.stdin:
		r, from = cmd.InOrStdin(), "stdin"
	case d.file != "":
		f, err := os.Open(d.file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		defer f.Close()
		r, from = f, "--file "+d.file
	default:
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(d.maxBuffer)+1))
	if err != nil {
		return nil, fmt.Errorf("reading the data from %s: %w", from, err)
	}
	if len(data) > d.maxBuffer {
		return nil, fmt.Errorf("the data from %s is larger than %d bytes, the most one request carries "+
			"(the servers' jute.maxbuffer; --max-buffer if theirs is larger)", from, d.maxBuffer)
	}
	return data, nil
}
