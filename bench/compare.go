package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Unit says how a metric's values are printed.
type Unit int

// Units of comparison metrics.
const (
	UnitRate     Unit = iota // per second
	UnitDuration             // nanoseconds, printed in ms or s
	UnitBytes                // printed in MiB
	UnitCount
	UnitSmallBytes // bytes, printed as they are: a size per znode
)

// Goal is what paddock must achieve on a metric, compared with ZooKeeper.
type Goal int

// Goals of the comparison.
const (
	GoalNone          Goal = iota // informational
	GoalTwiceAsHigh               // paddock ≥ 2 × ZooKeeper (throughput)
	GoalHalfOrLess                // paddock ≤ ½ × ZooKeeper (latency, memory)
	GoalLower                     // paddock < ZooKeeper
	GoalUnder3s                   // paddock < 3 s, whatever ZooKeeper does
	GoalZero                      // both 0 (errors)
	GoalQuarterOrLess             // paddock ≤ ¼ × ZooKeeper (memory)
	GoalUnder2GB                  // paddock ≤ 2 GB (10⁹ bytes), whatever ZooKeeper does
	GoalUnder15s                  // paddock ≤ 15 s, whatever ZooKeeper does
)

// The absolute limits of GoalUnder2GB and GoalUnder15s.
const (
	limit2GB = 2e9
	limit15s = float64(15 * time.Second)
)

func (g Goal) String() string {
	switch g {
	case GoalTwiceAsHigh:
		return "≥ 2×"
	case GoalHalfOrLess:
		return "≤ ½"
	case GoalLower:
		return "< ZK"
	case GoalUnder3s:
		return "paddock < 3 s"
	case GoalZero:
		return "0"
	case GoalQuarterOrLess:
		return "≤ ¼"
	case GoalUnder2GB:
		return "paddock ≤ 2 GB"
	case GoalUnder15s:
		return "paddock ≤ 15 s"
	}
	return ""
}

// Row is one metric of the comparison: the median over the runs of each server.
type Row struct {
	Metric    string
	Unit      Unit
	ZooKeeper float64
	Paddock   float64
	Goal      Goal
	// ZooKeeperRuns and PaddockRuns are the values of the single runs, in run order.
	ZooKeeperRuns []float64
	PaddockRuns   []float64
}

// NewRow returns the row of a metric from the values of each server's runs.
func NewRow(metric string, unit Unit, goal Goal, zk, paddock []float64) Row {
	return Row{Metric: metric, Unit: unit, Goal: goal, ZooKeeper: Median(zk), Paddock: Median(paddock),
		ZooKeeperRuns: slices.Clone(zk), PaddockRuns: slices.Clone(paddock)}
}

// Ratio returns paddock / ZooKeeper, NaN if ZooKeeper's value is 0.
func (r Row) Ratio() float64 {
	if r.ZooKeeper == 0 {
		return math.NaN()
	}
	return r.Paddock / r.ZooKeeper
}

// PairedRatio returns the median over runs of paddock's run i / ZooKeeper's run i. The
// runs of a pair ran one after the other, so what slowed the machine for both cancels out;
// NaN if the runs do not pair up.
func (r Row) PairedRatio() float64 {
	if len(r.ZooKeeperRuns) != len(r.PaddockRuns) || len(r.PaddockRuns) == 0 {
		return math.NaN()
	}
	ratios := make([]float64, len(r.PaddockRuns))
	for i := range ratios {
		ratios[i] = r.PaddockRuns[i] / r.ZooKeeperRuns[i]
	}
	return Median(ratios)
}

// MetPaired is Met judged by PairedRatio instead of the ratio of the medians, for the
// goals that are ratios; ok is false for the others.
func (r Row) MetPaired() (met, ok bool) {
	q := r.PairedRatio()
	if math.IsNaN(q) {
		return false, false
	}
	switch r.Goal {
	case GoalTwiceAsHigh:
		return q >= 2, true
	case GoalHalfOrLess:
		return q <= 0.5, true
	case GoalQuarterOrLess:
		return q <= 0.25, true
	case GoalLower:
		return q < 1, true
	}
	return false, false
}

// Met reports whether paddock meets the row's goal; ok is false for rows without one.
func (r Row) Met() (met, ok bool) {
	switch r.Goal {
	case GoalTwiceAsHigh:
		return r.Paddock >= 2*r.ZooKeeper && r.Paddock > 0, true
	case GoalHalfOrLess:
		return r.Paddock <= r.ZooKeeper/2 && r.ZooKeeper > 0, true
	case GoalLower:
		return r.Paddock < r.ZooKeeper, true
	case GoalUnder3s:
		return r.Paddock > 0 && r.Paddock < float64(3*time.Second), true
	case GoalZero:
		return r.Paddock == 0 && r.ZooKeeper == 0, true
	case GoalQuarterOrLess:
		return r.Paddock <= r.ZooKeeper/4 && r.ZooKeeper > 0, true
	case GoalUnder2GB:
		return r.Paddock > 0 && r.Paddock <= limit2GB, true
	case GoalUnder15s:
		return r.Paddock > 0 && r.Paddock <= limit15s, true
	}
	return false, false
}

// Shortfall says by how much paddock misses the row's goal ("1.79×: 10 % short of
// 2×", the part of the goal missing), or "" if it meets it or the row has none.
func (r Row) Shortfall() string {
	met, ok := r.Met()
	if !ok || met {
		return ""
	}
	q := r.Ratio()
	switch r.Goal {
	case GoalTwiceAsHigh:
		return fmt.Sprintf("%s: %.0f %% short of 2×", formatRatio(q), 100*(1-q/2))
	case GoalHalfOrLess:
		return fmt.Sprintf("%s: %.0f %% above half of ZooKeeper's", formatRatio(q), 100*(q/0.5-1))
	case GoalQuarterOrLess:
		return fmt.Sprintf("%s: %.0f %% above a quarter of ZooKeeper's", formatRatio(q), 100*(q/0.25-1))
	case GoalUnder2GB:
		return fmt.Sprintf("%s: %.0f %% above 2 GB", FormatValue(r.Paddock, r.Unit), 100*(r.Paddock/limit2GB-1))
	case GoalUnder15s:
		return fmt.Sprintf("%s, not within 15 s", FormatValue(r.Paddock, r.Unit))
	case GoalLower:
		return fmt.Sprintf("%s: not below ZooKeeper's", formatRatio(q))
	case GoalUnder3s:
		return fmt.Sprintf("%s, not under 3 s", FormatValue(r.Paddock, r.Unit))
	}
	return fmt.Sprintf("%s against %s for ZooKeeper", FormatValue(r.Paddock, r.Unit), FormatValue(r.ZooKeeper, r.Unit))
}

// Median returns the median of vs (the mean of the middle two for an even count), or NaN
// for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// FormatValue prints v in unit u.
func FormatValue(v float64, u Unit) string {
	if math.IsNaN(v) {
		return "—"
	}
	switch u {
	case UnitRate:
		return thousands(int64(math.Round(v))) + "/s"
	case UnitDuration:
		if v >= float64(time.Second) {
			return fmt.Sprintf("%.2f s", v/float64(time.Second))
		}
		return ms(time.Duration(v))
	case UnitBytes:
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	case UnitSmallBytes:
		return fmt.Sprintf("%.0f B", v)
	}
	return thousands(int64(math.Round(v)))
}

// thousands prints n with comma separators: 12,345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// MarkdownTable renders rows as a Markdown table: the metric, ZooKeeper's and paddock's
// medians, the ratio paddock/ZooKeeper, the goal and ✓ or ✗.
func MarkdownTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| metric | ZooKeeper 3.8 | paddock | paddock / ZK | goal | |\n")
	b.WriteString("|---|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		ratio := formatRatio(r.Ratio())
		mark := ""
		if met, ok := r.Met(); ok {
			mark = "✗"
			if met {
				mark = "✓"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Metric,
			FormatValue(r.ZooKeeper, r.Unit), FormatValue(r.Paddock, r.Unit), ratio, r.Goal, mark)
	}
	return b.String()
}

// MarkdownRuns renders every run's value of each row, to show the spread behind the
// medians, and the ratio of each pair of runs with their median.
func MarkdownRuns(rows []Row) string {
	var b strings.Builder
	b.WriteString("| metric | ZooKeeper runs | paddock runs | paddock / ZK by pair | median |\n|---|---|---|---|---:|\n")
	for _, r := range rows {
		f := func(vs []float64) string {
			parts := make([]string, len(vs))
			for i, v := range vs {
				parts[i] = FormatValue(v, r.Unit)
			}
			return strings.Join(parts, ", ")
		}
		var pairs []string
		if len(r.ZooKeeperRuns) == len(r.PaddockRuns) {
			for i := range r.PaddockRuns {
				pairs = append(pairs, formatRatio(r.PaddockRuns[i]/r.ZooKeeperRuns[i]))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Metric, f(r.ZooKeeperRuns), f(r.PaddockRuns),
			strings.Join(pairs, ", "), formatRatio(r.PairedRatio()))
	}
	return b.String()
}

// formatRatio prints a ratio as 1.23×, or — if it is not a number.
func formatRatio(q float64) string {
	if math.IsNaN(q) || math.IsInf(q, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", q)
}
