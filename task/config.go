package task

import (
	"fmt"
	"net"
	"time"
)

// CheckConnection reports what is wrong with how a service of the cluster reaches it:
// its servers (key zk), session timeout and root. Each error reads "key = value: what
// is allowed", in the keys of the services' configuration sections, which is what
// package configs expects of a Validate.
func CheckConnection(servers []string, sessionTimeout time.Duration, root string) []error {
	var errs []error
	if len(servers) == 0 {
		errs = append(errs, fmt.Errorf(`zk = "": want the coordination servers, host:port[,host:port…]`))
	}
	for _, s := range servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			errs = append(errs, fmt.Errorf("zk = %s: want host:port", s))
		}
	}
	if sessionTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("session_timeout = %v: want at least 100ms", sessionTimeout))
	}
	if _, err := NewLayout(root); err != nil {
		errs = append(errs, fmt.Errorf("root = %s: want an absolute path such as / or /paddock", root))
	}
	return errs
}

// CheckListenAddr reports a bad address to serve on under key: host:port, or empty
// for none.
func CheckListenAddr(key, addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s = %s: want host:port, or empty for none", key, addr)
	}
	return nil
}
