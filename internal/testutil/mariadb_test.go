package testutil

import (
	"strconv"
	"strings"
	"testing"
)

// TestMariaDB starts a binlog source and a plain server, checks what each was started
// with, and exercises Stop, Restart and Kill.
func TestMariaDB(t *testing.T) {
	src := StartMariaDB(t, MariaDBOptions{Binlog: true})
	plain := StartMariaDB(t, MariaDBOptions{})
	if src.ServerID == plain.ServerID {
		t.Fatalf("two instances got server id %d", src.ServerID)
	}
	checkVar(t, src, "log_bin", "1")
	checkVar(t, src, "binlog_format", "ROW")
	checkVar(t, plain, "log_bin", "0")
	checkVar(t, src, "server_id", itoa(src.ServerID))

	db := src.Open(t, "")
	if _, err := db.Exec("CREATE DATABASE kept"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := src.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := src.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	var name string
	if err := src.Open(t, "").QueryRow("SHOW DATABASES LIKE 'kept'").Scan(&name); err != nil {
		t.Fatalf("the database made before the restart: %v", err)
	}
	src.Kill()
	if err := src.Restart(); err != nil {
		t.Fatalf("restart after kill: %v", err)
	}
	checkVar(t, src, "log_bin", "1")
	if err := src.Restart(); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("restart of a running server: got %v, want an error saying it still runs", err)
	}
}

// TestMariaDBOptions checks that the binlog format and extra arguments reach the server.
func TestMariaDBOptions(t *testing.T) {
	m := StartMariaDB(t, MariaDBOptions{Binlog: true, BinlogFormat: "STATEMENT", ServerID: 4242,
		Args: []string{"--binlog-row-image=MINIMAL"}})
	checkVar(t, m, "binlog_format", "STATEMENT")
	checkVar(t, m, "binlog_row_image", "MINIMAL")
	checkVar(t, m, "server_id", "4242")
	if !strings.HasPrefix(m.DSN("x"), "root@tcp(127.0.0.1:") || !strings.HasSuffix(m.DSN("x"), ")/x") {
		t.Fatalf("DSN %q", m.DSN("x"))
	}
}

func checkVar(t *testing.T, m *MariaDB, name, want string) {
	t.Helper()
	var got string
	if err := m.Open(t, "").QueryRow("SELECT @@GLOBAL." + name).Scan(&got); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got != want {
		t.Fatalf("@@%s = %q, want %q", name, got, want)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
