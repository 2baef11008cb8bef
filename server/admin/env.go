package admin

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// environment returns envi's keys in ZooKeeper's order (Environment.list). There is no JVM,
// so the java.* keys carry the nearest Go fact:
//
//	java.version       the Go runtime version (runtime.Version, e.g. "go1.26.8")
//	java.vendor        "The Go Authors"
//	java.home          the directory of the running executable
//	java.class.path    the running executable (a Go binary is its whole class path)
//	java.library.path  $LD_LIBRARY_PATH (what the dynamic loader searches)
//	java.compiler      the Go compiler that built the binary (runtime.Compiler, "gc")
//	os.memory.*        the Go heap: free = committed heap holding no objects, total = memory
//	                   the runtime holds from the OS, max = the memory limit (GOMEMLIMIT;
//	                   math.MaxInt64 bytes when unset)
//
// host.name is os.Hostname, without Java's reverse DNS lookup for the canonical name.
func (a *Admin) environment() object {
	exe, _ := os.Executable()
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	host, _ := os.Hostname()
	free, total := heapMemory()
	return object{
		{"zookeeper.version", a.version},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "The Go Authors"},
		{"java.home", filepath.Dir(exe)},
		{"java.class.path", exe},
		{"java.library.path", os.Getenv("LD_LIBRARY_PATH")},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", runtime.Compiler},
		{"os.name", osName()},
		{"os.arch", osArch()},
		{"os.version", osVersion()},
		{"user.name", userName()},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", megabytes(free)},
		{"os.memory.max", megabytes(uint64(debug.SetMemoryLimit(-1)))},
		{"os.memory.total", megabytes(total)},
	}
}

// megabytes formats as ZooKeeper does: whole MiB and "MB".
func megabytes(n uint64) string { return strconv.FormatUint(n/(1<<20), 10) + "MB" }

// heapMemory reads the runtime's memory classes without stopping the world.
func heapMemory() (free, total uint64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	total = v(2) - min(v(3), v(2)) // released memory is back with the OS
	return v(0) + v(1), total
}

// osName and osArch use the JVM's names for the common platforms.
func osName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	case "openbsd":
		return "OpenBSD"
	case "netbsd":
		return "NetBSD"
	case "solaris", "illumos":
		return "SunOS"
	}
	return runtime.GOOS
}

func osArch() string {
	switch runtime.GOARCH {
	case "arm64":
		return "aarch64"
	case "386":
		return "x86"
	}
	return runtime.GOARCH
}

// osVersion is the kernel release (uname -r) where the OS exposes it as a file.
func osVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// absPath is File.getAbsolutePath: no symlink resolution, and the path as given on error.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// dirSize sums the sizes of the files under dir, as ZooKeeper's getDirSize; unreadable
// entries count as 0 and a missing directory is 0.
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
