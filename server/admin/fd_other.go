//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package admin

// fileDescriptors is not reported off Unix, as in ZooKeeper.
func fileDescriptors() (open, limit int64, ok bool) { return 0, 0, false }
