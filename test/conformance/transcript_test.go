package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

func render(root string, add func(t *Transcript)) string {
	t := NewTranscript(root)
	add(t)
	return t.Render()
}

// Two servers whose zxids and times differ in value but not in relation render the same.
func TestTranscriptNormalisesValues(t *testing.T) {
	now := time.Now().UnixMilli()
	record := func(base, sid int64, ms int64) func(*Transcript) {
		return func(tr *Transcript) {
			tr.AddSession("s1", sid, []byte("0123456789abcdef"))
			st := wire.Stat{Czxid: base + 1, Mzxid: base + 3, Ctime: ms, Mtime: ms + 5, EphemeralOwner: sid, Pzxid: base + 1}
			tr.Add("stat %s", FormatStat(&st))
			tr.Add("reply zxid=%s owner=%s passwd=%s", Z(base+3), SID(sid), tr.Password([]byte("0123456789abcdef")))
			tr.Add("event zxid=%s unknown=%s", Z(-1), SID(sid+99))
		}
	}
	a := render("/r-a", record(100, 0x1000001, now))
	b := render("/r-b", record(0x500000000, 0x7700000000002, now+1))
	if a != b {
		t.Fatalf("renders differ:\n%s", Diff(a, b, 2))
	}
	want := "stat {czxid=Z1 mzxid=Z2 ctime=T@Z1 mtime=T@Z2 version=0 cversion=0 aversion=0 owner=s1 dataLength=0 numChildren=0 pzxid=Z1}\n" +
		"reply zxid=Z2 owner=s1 passwd=P(s1)\n" +
		"event zxid=-1 unknown=S?1\n"
	if a != want {
		t.Errorf("render =\n%s\nwant\n%s", a, want)
	}
}

// What normalisation must not hide: a zxid not consumed, an order swapped, a time that is
// not milliseconds, two times for one txn, an owner that is not the session.
func TestTranscriptKeepsDifferences(t *testing.T) {
	now := time.Now().UnixMilli()
	base := func(tr *Transcript) {
		tr.AddSession("s1", 7, nil)
		tr.Add("a %s b %s", Z(10), Z(11))
		st := wire.Stat{Czxid: 10, Mzxid: 11, Ctime: now, Mtime: now + 1, EphemeralOwner: 7}
		tr.Add("%s", FormatStat(&st))
	}
	ref := render("", base)
	for name, variant := range map[string]func(*Transcript){
		"failed write consumed no zxid": func(tr *Transcript) {
			tr.AddSession("s1", 7, nil)
			tr.Add("a %s b %s", Z(10), Z(10))
			st := wire.Stat{Czxid: 10, Mzxid: 11, Ctime: now, Mtime: now + 1, EphemeralOwner: 7}
			tr.Add("%s", FormatStat(&st))
		},
		"order swapped": func(tr *Transcript) {
			tr.AddSession("s1", 7, nil)
			tr.Add("a %s b %s", Z(11), Z(10))
			st := wire.Stat{Czxid: 10, Mzxid: 11, Ctime: now, Mtime: now + 1, EphemeralOwner: 7}
			tr.Add("%s", FormatStat(&st))
		},
		"microseconds": func(tr *Transcript) {
			tr.AddSession("s1", 7, nil)
			tr.Add("a %s b %s", Z(10), Z(11))
			st := wire.Stat{Czxid: 10, Mzxid: 11, Ctime: now * 1000, Mtime: now*1000 + 1, EphemeralOwner: 7}
			tr.Add("%s", FormatStat(&st))
		},
		"one txn, two times": func(tr *Transcript) {
			tr.AddSession("s1", 7, nil)
			tr.Add("a %s b %s", Z(10), Z(11))
			st := wire.Stat{Czxid: 10, Mzxid: 10, Ctime: now, Mtime: now + 1, EphemeralOwner: 7}
			tr.Add("%s", FormatStat(&st))
		},
		"owner is not the session": func(tr *Transcript) {
			tr.AddSession("s1", 7, nil)
			tr.Add("a %s b %s", Z(10), Z(11))
			st := wire.Stat{Czxid: 10, Mzxid: 11, Ctime: now, Mtime: now + 1, EphemeralOwner: 8}
			tr.Add("%s", FormatStat(&st))
		},
	} {
		if got := render("", variant); got == ref {
			t.Errorf("%s: renders the same as the reference:\n%s", name, got)
		}
	}
}

func TestTranscriptRoot(t *testing.T) {
	got := render("/cf-x-r-multi", func(tr *Transcript) { tr.Add("create %q", "/cf-x-r-multi/a-0000000001") })
	if want := "create \"/ROOT/a-0000000001\"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n", 1); d != "" {
		t.Errorf("equal texts: diff %q", d)
	}
	a := "1\n2\n3\n4\n5\n6\n7\n"
	b := "1\n2\n3\nX\n5\n6\n7\n"
	want := "   ...\n  3\n- 4\n+ X\n  5\n   ...\n"
	if d := Diff(a, b, 1); d != want {
		t.Errorf("diff =\n%s\nwant\n%s", d, want)
	}
	if d := Diff("a\n", "a\nb\n", 0); !strings.Contains(d, "+ b") {
		t.Errorf("added line not shown: %q", d)
	}
}

func TestNormaliseFourLetterWords(t *testing.T) {
	sc := &Scenario{T: NewTranscript("")}
	sc.T.AddSession("s1", 0x100000de1fc0000, nil)
	for _, c := range []struct{ word, in, want string }{
		{"srvr", "Zookeeper version: 3.8.0-abc, built on 2024-12-29 17:54 UTC\nLatency min/avg/max: 1/16.4286/79\nReceived: 36\nZxid: 0x3\nMode: standalone\nNode count: 7\n",
			"Zookeeper version: <version>, built on <date>\nLatency min/avg/max: <min>/<avg>/<max>\nReceived: <n>\nZxid: 0x<zxid>\nMode: standalone\nNode count: <n>"},
		{"srvr", "Zookeeper version: paddock, built on 01/02/2026 10:00 GMT\n", "Zookeeper version: paddock, built on 01/02/2026 10:00 GMT"},
		{"wchc", "0x100000de1fc0000\n\t/x/e\n\t/x\n\n", "<s1>\n\t/x\n\t/x/e"},
		{"dirs", "datadir_size: 67109337\nlogdir_size: 1\n", "datadir_size: <n>\nlogdir_size: <n>\n"},
		{"stat", "stat is not executed because it is not in the whitelist.\n", "stat is not executed because it is not in the whitelist.\n"},
		{"envi", "Environment:\nzookeeper.version=3.8.0-x, built on d\njava.version=17\nos.name=Linux\n",
			"Environment:\nzookeeper.version=<version>, built on <date>\nos.name=<value>"},
	} {
		if got := normaliseWord(sc, c.word, c.in); got != c.want {
			t.Errorf("%s %q:\ngot  %q\nwant %q", c.word, c.in, got, c.want)
		}
	}
}
