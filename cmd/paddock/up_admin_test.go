package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// TestUpAdminAuth replays issue 31's attack on paddock up: any local user asked the
// admin port's guarded commands (cons, dump, envi: sessions, ephemeral paths, client
// addresses, the environment) and got them. paddock up turns admin.auth on with its
// admin credential: without it, with a made-up admin digest and with another role's
// credential those commands are refused (401, 403); the admin's file opens them, as
// the README says; the open ones (ruok, mntr) still answer anyone; and the console,
// which lists sessions from cons and wchc, still does.
func TestUpAdminAuth(t *testing.T) {
	var ports [3]int
	for i := range ports {
		p, err := testutil.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	admin := fmt.Sprintf("127.0.0.1:%d", ports[1])
	up, err := testutil.StartChild(t, filepath.Join(dir, "up.log"), nil, binary, "up", "--data-dir", data,
		"--client-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--admin-addr", admin,
		"--console-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--metrics-port", "0", "--workers", "1")
	if err != nil {
		t.Fatal(err)
	}
	var consoleURL, consolePassword string
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		log := up.LogTail(1000)
		if m := regexp.MustCompile(`password (\S+) \(shown once`).FindStringSubmatch(log); m != nil {
			consolePassword = m[1]
		}
		if m := regexp.MustCompile(`"console serving" url=(\S+)`).FindStringSubmatch(log); m != nil {
			consoleURL = m[1]
		}
		return consoleURL != "" && consolePassword != ""
	}, "paddock up never served its console:\n%s", up.LogTail(40))

	credential := func(role string) string { // "user:password", as the README's cut gives it
		b, err := os.ReadFile(filepath.Join(data, "credentials", role))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(strings.TrimSpace(string(b)), "digest:")
	}
	ask := func(command, authorization string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/commands/"+command, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, command := range []string{"cons", "dump", "envi", "wchc", "conf"} {
		for _, tc := range []struct {
			who, authorization string
			want               int
		}{
			{"nobody", "", http.StatusUnauthorized},
			{"a made-up admin", "digest admin:guess", http.StatusForbidden},
			{"the console role", "digest " + credential("console"), http.StatusForbidden},
			{"the worker role", "digest " + credential("worker"), http.StatusForbidden},
			{"the admin", "digest " + credential("admin"), http.StatusOK},
		} {
			if got := ask(command, tc.authorization); got != tc.want {
				t.Errorf("%s as %s: %d, want %d", command, tc.who, got, tc.want)
			}
		}
	}
	for _, command := range []string{"ruok", "mntr", "srvr"} {
		if got := ask(command, ""); got != http.StatusOK {
			t.Errorf("%s, open, without credentials: %d", command, got)
		}
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Post(consoleURL+"/api/v1/login", "application/json",
		strings.NewReader(`{"user":"admin","password":"`+consolePassword+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console login: %s", resp.Status)
	}
	var sessions struct {
		Connections []struct {
			Console bool `json:"console"`
		} `json:"connections"`
	}
	resp, err = browser.Get(consoleURL + "/api/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&sessions)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || len(sessions.Connections) == 0 {
		t.Fatalf("the console's sessions under admin.auth: %s, %v, %d connections", resp.Status, err, len(sessions.Connections))
	}
	if err := up.Stop(20 * time.Second); err != nil {
		t.Fatalf("paddock up after SIGTERM: %v\n%s", err, up.LogTail(20))
	}
	log := up.LogTail(100000)
	for _, role := range []string{"admin", "console", "worker"} {
		if _, pw, _ := strings.Cut(credential(role), ":"); strings.Contains(log, pw) {
			t.Errorf("paddock up's log holds the %s password", role)
		}
	}
}
