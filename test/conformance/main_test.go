package conformance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// How to run (from the module root):
//
//	go test ./test/conformance/                        reference: Apache ZooKeeper, subject: paddock in-process
//	CONFORMANCE_SUBJECT=zookeeper go test ./test/conformance/   self-check: two Apache ZooKeepers must compare equal
//	go test ./test/conformance/ -args -reference 127.0.0.1:2181 -subject 127.0.0.1:2182
//	go test ./test/conformance/ -run 'TestConformance/multi' -v -args -transcripts /tmp/tr
//
// -reference and -subject (or CONFORMANCE_REFERENCE / CONFORMANCE_SUBJECT) take
// "zookeeper" (start an Apache ZooKeeper 3.8 from the Debian package, configured as in
// targets_test.go), "paddock" (subject only: start paddock in-process) or host:port (use a
// running server, which must be configured like referenceOptions). Scenarios work under
// fresh top-level paths, so running servers may be reused. -transcripts DIR writes every
// transcript to DIR/<scenario>.<reference|subject>.txt.
var (
	flagReference   = flag.String("reference", envOr("CONFORMANCE_REFERENCE", "zookeeper"), "reference target: zookeeper or host:port")
	flagSubject     = flag.String("subject", envOr("CONFORMANCE_SUBJECT", "paddock"), "subject target: zookeeper, paddock or host:port")
	flagTranscripts = flag.String("transcripts", os.Getenv("CONFORMANCE_TRANSCRIPTS"), "directory to write transcripts to")
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// The targets resolved by TestMain; a paddock subject has no address until a test starts it.
var reference, subject target

// runID makes each run's root paths unique, so that a long-running server can be reused.
var runID = strconv.FormatInt(time.Now().UnixNano()%(1<<40), 36)

func TestMain(m *testing.M) {
	flag.Parse()
	stop, err := startTargets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startTargets starts the Apache ZooKeepers the flags ask for, in parallel (a JVM takes a
// second or more to start), and returns a function that stops them.
func startTargets() (stop func(), err error) {
	var mu sync.Mutex
	var started []*testutil.ZooKeeper
	var errs []error
	var wg sync.WaitGroup
	resolve := func(tg *target, spec string) {
		tg.kind, tg.addr = spec, ""
		switch spec {
		case "paddock":
			if tg.name == "reference" {
				errs = append(errs, fmt.Errorf("conformance: the reference cannot be paddock"))
			}
		case "zookeeper":
			wg.Add(1)
			go func() {
				defer wg.Done()
				zk, err := testutil.StartZooKeeper(nil, referenceOptions)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("conformance: start %s: %w", tg.name, err))
					return
				}
				started = append(started, zk)
				tg.addr = zk.Addr
			}()
		default:
			tg.kind, tg.addr = "address", spec
		}
	}
	reference.name, subject.name = "reference", "subject"
	resolve(&reference, *flagReference)
	resolve(&subject, *flagSubject)
	wg.Wait()
	stop = func() {
		for _, zk := range started {
			zk.Stop()
		}
	}
	if len(errs) > 0 {
		stop()
		return nil, fmt.Errorf("%v", errs)
	}
	return stop, nil
}

// targets returns the two targets for a test, starting paddock for it if it is the subject.
func targets(t *testing.T) (ref, sub target) {
	t.Helper()
	ref, sub = reference, subject
	if sub.kind == "paddock" {
		sub.addr = startPaddock(t, configurePaddock)
	}
	return ref, sub
}

var nonName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// compare runs fn against both targets at once, each under its own fresh root path, and
// fails t with a diff if the normalised transcripts differ.
func compare(t *testing.T, ref, sub target, fn func(*Scenario)) {
	t.Helper()
	refRoot, subRoot := roots(t)
	compareAt(t, ref, sub, refRoot, subRoot, fn, fn)
}

// roots returns the fresh root paths of the test's scenario on the reference and the
// subject.
func roots(t *testing.T) (ref, sub string) {
	name := testName(t)
	return fmt.Sprintf("/cf-%s-r-%s", runID, name), fmt.Sprintf("/cf-%s-s-%s", runID, name)
}

func testName(t *testing.T) string {
	return nonName.ReplaceAllString(t.Name()[strings.LastIndex(t.Name(), "/")+1:], "-")
}

// compareAt is compare with the roots given, and a scenario function for each target
// (the same scenario, holding what differs between the targets' set-ups).
func compareAt(t *testing.T, ref, sub target, refRoot, subRoot string, refFn, subFn func(*Scenario)) {
	t.Helper()
	name := testName(t)
	var refText, subText string
	var refErr, subErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		refText, refErr = Run(ref.addr, refRoot, refFn)
	}()
	go func() {
		defer wg.Done()
		subText, subErr = Run(sub.addr, subRoot, subFn)
	}()
	wg.Wait()
	if *flagTranscripts != "" {
		writeTranscript(t, name+".reference.txt", refText)
		writeTranscript(t, name+".subject.txt", subText)
	}
	if testing.Verbose() {
		t.Logf("reference transcript:\n%s", refText)
	}
	if refErr != nil {
		t.Errorf("the scenario failed against the reference %v, so the test itself is wrong: %v\n%s", ref, refErr, refText)
		return
	}
	if d := Diff(refText, subText, 4); d != "" {
		t.Errorf("transcripts differ (-reference +subject):\n%s", d)
	}
	if subErr != nil {
		t.Errorf("subject: %v", subErr)
	}
}

func writeTranscript(t *testing.T, name, text string) {
	if err := os.MkdirAll(*flagTranscripts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*flagTranscripts, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
