package conformance

import "testing"

// TestMain, the targets and how to run the suite: main_test.go and targets_test.go.

// TestConformance runs every scenario against the reference and the subject and compares
// their transcripts. Scenarios run one after another: each reads zxids from reply headers,
// so a concurrent scenario's writes on the same server would change them.
func TestConformance(t *testing.T) {
	ref, sub := targets(t)
	t.Logf("reference: %v; subject: %v", ref, sub)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { compare(t, ref, sub, sc.fn) })
	}
}

var scenarios = []struct {
	name string
	fn   func(*Scenario)
}{
	{"initial_tree", scenarioInitialTree},
	{"connect", scenarioConnect},
	{"create", scenarioCreate},
	{"sequential", scenarioSequential},
	{"read_write", scenarioReadWrite},
	{"ephemerals", scenarioEphemerals},
	{"acl", scenarioACL},
	{"multi", scenarioMulti},
	{"watches", scenarioWatches},
	{"persistent_watches", scenarioPersistentWatches},
	{"set_watches", scenarioSetWatches},
	{"containers", scenarioContainers},
	{"ttl", scenarioTTL},
	{"malformed", scenarioMalformed},
	{"four_letter_words", scenarioFourLetterWords},
	{"go_zookeeper_client", scenarioGoZK},
}
