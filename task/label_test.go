package task

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		text string
		want Selector
		errs []string // substrings of the error; none when it parses
	}{
		{"", nil, nil},
		{"  ", nil, nil},
		{"os=linux", Selector{"os": "linux"}, nil},
		{" os = linux , gpu=true ", Selector{"os": "linux", "gpu": "true"}, nil},
		{"zone=", Selector{"zone": ""}, nil},
		{"k8s.io/role=batch=x", Selector{"k8s.io/role": "batch=x"}, nil},
		{"os", nil, []string{`"os": want key=value`}},
		{"=linux", nil, []string{`"=linux": want a key of 1 to 128`}},
		{"os=linux,,gpu=true", nil, []string{"an empty entry"}},
		{"os=linux,", nil, []string{"an empty entry"}},
		{"os=linux,os=mac", nil, []string{`"os=mac": key os given twice`}},
		{"o s=linux", nil, []string{`"o s=linux": want a key`}},
		{"-os=linux", nil, []string{"starting with a letter or digit"}},
		{"os=li\x00nux", nil, []string{"NUL"}},
		{"gpu,os=linux,os=mac", nil, []string{`"gpu": want key=value`, "os given twice"}}, // every problem
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.text)
		if len(tt.errs) == 0 {
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("ParseSelector(%q) = %v, %v; want %v", tt.text, got, err, tt.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseSelector(%q) = %v; want an error", tt.text, got)
			continue
		}
		for _, w := range tt.errs {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSelector(%q): %q; want it to contain %q", tt.text, err, w)
			}
		}
	}
}

func TestSelectorMatches(t *testing.T) {
	worker := map[string]string{"os": "linux", "gpu": "true", "zone": ""}
	tests := []struct {
		sel  Selector
		want bool
	}{
		{nil, true},
		{Selector{}, true},
		{Selector{"os": "linux"}, true},
		{Selector{"os": "linux", "gpu": "true"}, true},
		{Selector{"zone": ""}, true},
		{Selector{"os": "Linux"}, false}, // values are compared exactly
		{Selector{"os": "linux", "gpu": "false"}, false},
		{Selector{"arch": ""}, false}, // an empty value still wants the label
		{Selector{"os": "linux", "arch": "arm64"}, false},
	}
	for _, tt := range tests {
		if got := tt.sel.Matches(worker); got != tt.want {
			t.Errorf("%v.Matches(%v) = %v; want %v", tt.sel, worker, got, tt.want)
		}
	}
	if (Selector{"os": "linux"}).Matches(nil) {
		t.Error("a selector matched a worker without labels")
	}
}

func TestSelectorTextAndJSON(t *testing.T) {
	sel, err := ParseSelector("zone=a, os=linux ,gpu=true")
	if err != nil {
		t.Fatal(err)
	}
	if got := sel.String(); got != "gpu=true,os=linux,zone=a" {
		t.Errorf("String() = %q; want the entries sorted", got)
	}
	back, err := ParseSelector(sel.String())
	if err != nil || !maps.Equal(back, sel) {
		t.Errorf("ParseSelector(String()) = %v, %v; want %v", back, err, sel)
	}
	b, _ := json.Marshal(Spec{Command: "x", Selector: sel})
	if !strings.Contains(string(b), `"selector":{"gpu":"true","os":"linux","zone":"a"}`) {
		t.Errorf("marshalled %s; want the selector as an object", b)
	}
	if b, _ := json.Marshal(Spec{Command: "x"}); strings.Contains(string(b), "selector") {
		t.Errorf("marshalled %s; want no selector when there is none", b)
	}
	var s Spec
	if err := json.Unmarshal([]byte(`{"command":"x","selector":{"os":"linux"}}`), &s); err != nil || s.Selector["os"] != "linux" {
		t.Errorf("unmarshalled %+v, %v", s, err)
	}
}
