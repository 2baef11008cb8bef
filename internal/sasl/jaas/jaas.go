// Package jaas reads the Java Authentication and Authorization Service login
// configuration files that ZooKeeper takes its SASL users from
// (-Djava.security.auth.login.config=FILE):
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="adminsecret"
//	    user_alice="alicesecret";
//	};
//
// A file is sections (applications), each a name and a braced list of login modules
// ended by ';'; a module is its class, a flag (required, requisite, sufficient or
// optional) and options name=value, the value a word or a double-quoted string with
// backslash escapes. Comments are // to the end of the line, /* … */ and #. Option
// values can be passwords: no error of this package ever contains one.
package jaas

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxFile is the largest file Parse reads: a login configuration is a few lines.
const MaxFile = 1 << 20

// UserPrefix starts the options that define users in ZooKeeper's Server section, as its
// SaslServerCallbackHandler reads them: user_NAME="password".
const UserPrefix = "user_"

// Module is one login module of a section.
type Module struct {
	Class   string
	Flag    string
	Options map[string]string
	Line    int
}

// Config is a parsed file: its sections by name, each a list of modules.
type Config struct {
	Sections map[string][]Module
}

// ReadFile reads and parses the file at path, refusing one larger than MaxFile.
func ReadFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jaas: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("jaas: %s: %w", path, err)
	}
	n := len(buf)
	if n > MaxFile {
		return nil, fmt.Errorf("jaas: %s: larger than %d bytes", path, MaxFile)
	}
	c, err := Parse(buf[:n])
	if err != nil {
		return nil, fmt.Errorf("jaas: %s:%w", path, err)
	}
	return c, nil
}

// Users returns the users of section: the user_NAME options of every module in it, as
// ZooKeeper reads them whatever the module's class. It fails if the section is missing
// or defines no user.
func (c *Config) Users(section string) (map[string]string, error) {
	mods, ok := c.Sections[section]
	if !ok {
		return nil, fmt.Errorf("jaas: no %s section", section)
	}
	users := map[string]string{}
	for _, m := range mods {
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, UserPrefix); ok && name != "" {
				users[name] = v
			}
		}
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("jaas: section %s defines no user (want options %sNAME=\"password\")", section, UserPrefix)
	}
	return users, nil
}

// Parse parses a login configuration. Errors name the line and what was expected,
// never an option's value.
func Parse(src []byte) (*Config, error) {
	p := &parser{lx: lexer{src: src, line: 1}}
	c := &Config{Sections: map[string][]Module{}}
	for {
		t, err := p.lx.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokEOF {
			return c, nil
		}
		if t.kind != tokWord {
			return nil, p.want(t, "a section name")
		}
		if _, dup := c.Sections[t.text]; dup {
			return nil, fmt.Errorf("%d: section %s given twice", t.line, t.text)
		}
		mods, err := p.section()
		if err != nil {
			return nil, err
		}
		c.Sections[t.text] = mods
	}
}

type parser struct{ lx lexer }

func (p *parser) want(t token, what string) error {
	return fmt.Errorf("%d: want %s, got %s", t.line, what, t.describe())
}

func (p *parser) expect(kind byte, what string) (token, error) {
	t, err := p.lx.next()
	if err != nil {
		return t, err
	}
	if t.kind != kind {
		return t, p.want(t, what)
	}
	return t, nil
}

// section parses `{ module* } ;` after a section name.
func (p *parser) section() ([]Module, error) {
	if _, err := p.expect('{', "{"); err != nil {
		return nil, err
	}
	var mods []Module
	for {
		t, err := p.lx.next()
		if err != nil {
			return nil, err
		}
		if t.kind == '}' {
			_, err := p.expect(';', "; after }")
			return mods, err
		}
		if t.kind != tokWord {
			return nil, p.want(t, "a login module class or }")
		}
		m, err := p.module(t)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
}

// module parses `flag (name=value)* ;` after a module's class.
func (p *parser) module(class token) (Module, error) {
	m := Module{Class: class.text, Line: class.line, Options: map[string]string{}}
	flag, err := p.expect(tokWord, "a flag (required, requisite, sufficient or optional)")
	if err != nil {
		return m, err
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
		m.Flag = strings.ToLower(flag.text)
	default:
		return m, fmt.Errorf("%d: want a flag (required, requisite, sufficient or optional) after %s", flag.line, class.text)
	}
	for {
		t, err := p.lx.next()
		if err != nil {
			return m, err
		}
		if t.kind == ';' {
			return m, nil
		}
		if t.kind != tokWord {
			return m, p.want(t, "an option name or ;")
		}
		if _, err := p.expect('=', "= after option "+t.text); err != nil {
			return m, err
		}
		v, err := p.lx.next()
		if err != nil {
			return m, err
		}
		if v.kind != tokWord && v.kind != tokString {
			return m, fmt.Errorf("%d: want a value for option %s", v.line, t.text)
		}
		if _, dup := m.Options[t.text]; dup {
			return m, fmt.Errorf("%d: option %s given twice", t.line, t.text)
		}
		m.Options[t.text] = v.text
	}
}
