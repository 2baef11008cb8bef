package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestGoals(t *testing.T) {
	ms := float64(time.Millisecond)
	for _, tc := range []struct {
		goal        Goal
		zk, paddock float64
		met         bool
	}{
		{GoalTwiceAsHigh, 100, 200, true},
		{GoalTwiceAsHigh, 100, 199, false},
		{GoalTwiceAsHigh, 0, 0, false},
		{GoalHalfOrLess, 10 * ms, 5 * ms, true},
		{GoalHalfOrLess, 10 * ms, 6 * ms, false},
		{GoalHalfOrLess, 0, 0, false},
		{GoalLower, 10, 9, true},
		{GoalLower, 10, 10, false},
		{GoalUnder3s, 0, 2999 * ms, true},
		{GoalUnder3s, 0, 3000 * ms, false},
		{GoalUnder3s, 0, 0, false}, // no measurement is not a pass
		{GoalQuarterOrLess, 400, 100, true},
		{GoalQuarterOrLess, 400, 101, false},
		{GoalQuarterOrLess, 0, 0, false},
		{GoalUnder2GB, math.NaN(), 2e9, true}, // ZooKeeper could not hold them: no matter
		{GoalUnder2GB, 0, 2e9 + 1, false},
		{GoalUnder2GB, 0, 0, false},
		{GoalUnder15s, 0, 15000 * ms, true},
		{GoalUnder15s, 0, 15001 * ms, false},
		{GoalZero, 0, 0, true},
		{GoalZero, 1, 0, false},
	} {
		r := Row{Goal: tc.goal, ZooKeeper: tc.zk, Paddock: tc.paddock}
		if met, ok := r.Met(); !ok || met != tc.met {
			t.Errorf("%v with ZK %v, paddock %v: met %v (ok %v), want %v", tc.goal, tc.zk, tc.paddock, met, ok, tc.met)
		}
	}
	if _, ok := (Row{}).Met(); ok {
		t.Error("a row without a goal has a verdict")
	}
}

func TestMarkdownTable(t *testing.T) {
	rows := []Row{
		NewRow("get ops/s", UnitRate, GoalTwiceAsHigh, []float64{50000, 40000, 45000}, []float64{100000, 95000, 91000}),
		NewRow("get p99", UnitDuration, GoalHalfOrLess, []float64{4e6, 3e6, 5e6}, []float64{3e6, 2e6, 2.5e6}),
		NewRow("RSS", UnitBytes, GoalNone, []float64{500 << 20}, []float64{100 << 20}),
		NewRow("restart", UnitDuration, GoalUnder3s, []float64{4.5e9}, []float64{1.2e9}),
	}
	got := MarkdownTable(rows)
	for _, want := range []string{
		"| get ops/s | 45,000/s | 95,000/s | 2.11× | ≥ 2× | ✓ |",
		"| get p99 | 4.00 ms | 2.50 ms | 0.62× | ≤ ½ | ✗ |",
		"| RSS | 500 MiB | 100 MiB | 0.20× |  |  |",
		"| restart | 4.50 s | 1.20 s | 0.27× | paddock < 3 s | ✓ |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	runs := MarkdownRuns(rows[:1])
	if !strings.Contains(runs, "| get ops/s | 50,000/s, 40,000/s, 45,000/s | 100,000/s, 95,000/s, 91,000/s | 2.00×, 2.38×, 2.02× | 2.02× |") {
		t.Errorf("runs table:\n%s", runs)
	}
}

// A slow moment of the machine hits both runs of a pair; paired ratios cancel it where the
// ratio of the medians does not.
func TestPairedRatio(t *testing.T) {
	r := NewRow("get ops/s", UnitRate, GoalTwiceAsHigh, []float64{100, 50, 100}, []float64{210, 105, 190})
	if got := r.PairedRatio(); got != 2.1 {
		t.Errorf("PairedRatio = %v, want 2.1", got)
	}
	if met, _ := r.Met(); met {
		t.Errorf("ratio of medians %v meets ≥ 2×", r.Ratio())
	}
	if met, ok := r.MetPaired(); !ok || !met {
		t.Error("the paired ratio does not meet ≥ 2×")
	}
	if _, ok := NewRow("x", UnitRate, GoalTwiceAsHigh, []float64{1}, []float64{1, 2}).MetPaired(); ok {
		t.Error("runs that do not pair up have a paired verdict")
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestShortfall(t *testing.T) {
	for _, c := range []struct {
		row  Row
		want string
	}{
		{NewRow("create ops/s", UnitRate, GoalTwiceAsHigh, []float64{100}, []float64{180}), "1.80×: 10 % short of 2×"},
		{NewRow("create ops/s", UnitRate, GoalTwiceAsHigh, []float64{100}, []float64{200}), ""},
		{NewRow("set p99", UnitDuration, GoalHalfOrLess, []float64{4e6}, []float64{2.4e6}), "0.60×: 20 % above half of ZooKeeper's"},
		{NewRow("set p99", UnitDuration, GoalHalfOrLess, []float64{4e6}, []float64{2e6}), ""},
		{NewRow("restart", UnitDuration, GoalUnder3s, []float64{4e9}, []float64{3.5e9}), "3.50 s, not under 3 s"},
		{NewRow("RSS", UnitBytes, GoalNone, []float64{1}, []float64{2}), ""},
		{NewRow("RSS", UnitBytes, GoalQuarterOrLess, []float64{800}, []float64{400}), "0.50×: 100 % above a quarter of ZooKeeper's"},
		{NewRow("RSS", UnitBytes, GoalUnder2GB, nil, []float64{3e9}), "2861 MiB: 50 % above 2 GB"},
		{NewRow("restart", UnitDuration, GoalUnder15s, nil, []float64{20e9}), "20.00 s, not within 15 s"},
		{NewRow("heap per znode", UnitSmallBytes, GoalNone, []float64{450}, []float64{300}), ""},
	} {
		if got := c.row.Shortfall(); got != c.want {
			t.Errorf("%s %v vs %v: Shortfall() = %q, want %q", c.row.Metric, c.row.Paddock, c.row.ZooKeeper, got, c.want)
		}
	}
}
