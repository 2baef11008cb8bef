package admin

import (
	"bytes"
	"encoding/binary"
)

// command is one admin command: its four-letter word, its AdminServer names and its two
// renderings.
type command struct {
	word string
	// names are the AdminServer name first, then its aliases (ZooKeeper's Commands.java);
	// the four-letter word is always among them.
	names []string
	// text writes the four-letter word's answer, byte for byte as ZooKeeper 3.8 words it.
	text func(*Admin, *bytes.Buffer)
	// json returns the AdminServer response without its "command" and "error" keys.
	json func(*Admin) object
	// needsServing words answer notServing while the server does not serve clients.
	needsServing bool
}

// commands lists what paddock answers. ZooKeeper's gtmk, stmk, hash and its quorum-only
// AdminServer commands are left out; the telnet close sequence is not a word here either.
var commands = []command{
	{"ruok", []string{"ruok"}, (*Admin).ruokText, (*Admin).emptyJSON, false},
	{"srvr", []string{"server_stats", "srvr"}, (*Admin).srvrText, (*Admin).srvrJSON, true},
	{"stat", []string{"stats", "stat"}, (*Admin).statText, (*Admin).statJSON, true},
	{"conf", []string{"configuration", "conf", "config"}, (*Admin).confText, (*Admin).confJSON, false},
	{"cons", []string{"connections", "cons"}, (*Admin).consText, (*Admin).consJSON, true},
	{"crst", []string{"connection_stat_reset", "crst"}, (*Admin).crstText, (*Admin).crstJSON, false},
	{"dump", []string{"dump"}, (*Admin).dumpText, (*Admin).dumpJSON, true},
	{"envi", []string{"environment", "env", "envi"}, (*Admin).enviText, (*Admin).enviJSON, false},
	{"mntr", []string{"monitor", "mntr"}, (*Admin).mntrText, (*Admin).mntrJSON, true},
	{"wchs", []string{"watch_summary", "wchs"}, (*Admin).wchsText, (*Admin).wchsJSON, true},
	{"wchc", []string{"watches", "wchc"}, (*Admin).wchcText, (*Admin).wchcJSON, true},
	{"wchp", []string{"watches_by_path", "wchp"}, (*Admin).wchpText, (*Admin).wchpJSON, true},
	{"dirs", []string{"dirs"}, (*Admin).dirsText, (*Admin).dirsJSON, false},
	{"isro", []string{"is_read_only", "isro"}, (*Admin).isroText, (*Admin).isroJSON, false},
	{"srst", []string{"stat_reset", "srst"}, (*Admin).srstText, (*Admin).srstJSON, false},
}

var (
	byWord = index(func(c *command) []string { return []string{c.word} })
	byName = index(func(c *command) []string { return c.names })
	byCode = codes()
)

func index(keys func(*command) []string) map[string]*command {
	m := make(map[string]*command)
	for i := range commands {
		for _, k := range keys(&commands[i]) {
			m[k] = &commands[i]
		}
	}
	return m
}

// codes maps each word's four bytes, read as a big-endian int32 frame length, to the word.
func codes() map[int32]string {
	m := make(map[int32]string, len(commands))
	for _, c := range commands {
		m[int32(binary.BigEndian.Uint32([]byte(c.word)))] = c.word
	}
	return m
}
