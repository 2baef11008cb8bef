package conformance

import (
	"fmt"
	"strings"
)

// Diff returns a unified-style line diff of a (the reference) and b (the subject) with
// context lines around each change, or "" if they are equal. Lines only in a start with
// "-", lines only in b with "+".
func Diff(a, b string, context int) string {
	if a == b {
		return ""
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	ops := lcsDiff(x, y)
	show := make([]bool, len(ops)) // context lines to print
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(0, i-context); j <= min(len(ops)-1, i+context); j++ {
				show[j] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for i, op := range ops {
		if !show[i] {
			skipped = true
			continue
		}
		if skipped {
			out.WriteString("   ...\n")
			skipped = false
		}
		fmt.Fprintf(&out, "%c %s\n", op.kind, op.line)
	}
	if skipped {
		out.WriteString("   ...\n")
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// lcsDiff computes an edit script from the longest common subsequence; transcripts are a
// few hundred lines, so the quadratic table is fine.
func lcsDiff(x, y []string) []diffOp {
	n, m := len(x), len(y)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i]})
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			ops = append(ops, diffOp{'-', x[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', x[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', y[j]})
	}
	return ops
}
