package task

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Labels describe a worker (WorkerInfo.Labels, "key=value" entries of the worker's
// configuration); a task's Selector names the labels a worker must have to run it.
// Both follow the same rules, here, so that what a worker can say a task can ask for.

// labelKeyPattern is what a label's key may be: it travels as a JSON key and is meant
// to be matched by name.
var labelKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)

// CheckLabel reports what is wrong with a label, in words, or nil.
func CheckLabel(key, value string) error {
	switch {
	case !labelKeyPattern.MatchString(key):
		return errors.New("want a key of 1 to 128 letters, digits, '.', '_', '/' or '-', starting with a letter or digit")
	case strings.ContainsRune(value, 0):
		return errors.New("the value contains a NUL byte")
	}
	return nil
}

// ParseLabel reads one label, "key=value", spaces around the key and the value
// trimmed. The value may be empty and may hold '=' (the first one separates).
func ParseLabel(entry string) (key, value string, err error) {
	k, v, ok := strings.Cut(entry, "=")
	if !ok {
		return "", "", errors.New("want key=value")
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if err := CheckLabel(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// FormatLabels renders labels as sorted "key=value" entries joined by commas.
func FormatLabels(labels map[string]string) string {
	out := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return strings.Join(out, ",")
}

// Selector is the labels a worker must all have, with these values, to be given a
// task; an empty one selects every worker. In JSON it is an object of strings; its
// text form is "key=value" entries joined by commas ("os=linux,gpu=true").
type Selector map[string]string

// ParseSelector reads a selector's text form: "key=value" entries separated by commas,
// spaces around each key and value trimmed. Empty or blank text is no selector (nil).
// It reports every bad entry: without '=', with a bad key or value, empty (",,"), or
// a key given twice.
func ParseSelector(text string) (Selector, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var errs []error
	sel := Selector{}
	for e := range strings.SplitSeq(text, ",") {
		if strings.TrimSpace(e) == "" {
			errs = append(errs, fmt.Errorf("selector %q: an empty entry", text))
			continue
		}
		k, v, err := ParseLabel(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("selector entry %q: %w", strings.TrimSpace(e), err))
			continue
		}
		if _, dup := sel[k]; dup {
			errs = append(errs, fmt.Errorf("selector entry %q: key %s given twice", strings.TrimSpace(e), k))
			continue
		}
		sel[k] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return sel, nil
}

// Matches says whether a worker with these labels has every label of s, with its value.
func (s Selector) Matches(labels map[string]string) bool {
	for k, v := range s {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	return true
}

// String is s's text form, its entries sorted by key: the same selector always reads
// the same.
func (s Selector) String() string { return FormatLabels(s) }

// check reports each bad label of s.
func (s Selector) check() []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if err := CheckLabel(k, s[k]); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", k+"="+s[k], err))
		}
	}
	return errs
}
