package worker

import (
	"os"
	"strconv"
	"strings"
)

// processGone reports whether process pid has ended: it is not in /proc, or it is a
// zombie nobody reaped yet (an orphan whose init does not reap).
func processGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
