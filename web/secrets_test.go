package web

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/paddock/paddock/task"
)

func TestMaskSecrets(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"task JSON", `{"source":"repl:S3cretSrcPw@tcp(127.0.0.1:3306)/","target":"app:T@rget:pw@tcp(db:3306)/x?parseTime=true","enabled":true}`,
			`{"source":"repl:****@tcp(127.0.0.1:3306)/","target":"app:****@tcp(db:3306)/x?parseTime=true","enabled":true}`},
		{"layout kept", "{\n  \"source\": \"u:p@tcp(h:1)/\",\n  \"n\": 1.50\n}", "{\n  \"source\": \"u:****@tcp(h:1)/\",\n  \"n\": 1.50\n}"},
		{"password field", `{"user":"repl","password":"hunter2","password_file":"/etc/pw"}`,
			`{"user":"repl","password":"****","password_file":"/etc/pw"}`},
		{"nested", `{"db":{"Passwd":"x"},"list":["a:b@unix(/s)/d"]}`, `{"db":{"Passwd":"****"},"list":["a:****@unix(/s)/d"]}`},
		{"URL", "dsn = mysql://root:pw@db.example:3306/app", "dsn = mysql://root:****@db.example:3306/app"},
		{"param", "host=db user=repl password=S3cret sslmode=off", "host=db user=repl password=**** sslmode=off"},
		{"query param", `"postgres://db/app?user=u&password=S3cret&x=1"`, `"postgres://db/app?user=u&password=****&x=1"`},
		{"yaml line", "user: repl\npassword: S3cret\n", "user: repl\npassword: ****\n"},
		{"e-mail kept", "contact ops:team@example.com", "contact ops:team@example.com"},
		{"no user info", `{"source":"tcp(h:1)/db"}`, `{"source":"tcp(h:1)/db"}`},
		{"audit record in JSON string", `{"after":{"data":"{\"source\":\"repl:S3cretSrcPw@tcp(h:1)/\"}"}}`,
			`{"after":{"data":"{\"source\":\"repl:****@tcp(h:1)/\"}"}}`},
		{"escaped quote in password", `{"s":"u:a\"b@tcp(h)/"}`, `{"s":"u:****@tcp(h)/"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(maskSecrets([]byte(tt.in))); got != tt.want {
				t.Errorf("maskSecrets(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestRestoreSecrets(t *testing.T) {
	old := []byte(`{"source":"repl:S3cretSrcPw@tcp(127.0.0.1:3306)/","target":"app:TgtPw@tcp(db:3306)/","enabled":true}`)
	masked := maskSecrets(old)
	t.Run("unchanged DSNs keep their passwords", func(t *testing.T) {
		edited := strings.Replace(string(masked), `"enabled":true`, `"enabled":false`, 1)
		got, err := restoreSecrets([]byte(edited), old)
		want := strings.Replace(string(old), `"enabled":true`, `"enabled":false`, 1)
		if err != nil || string(got) != want {
			t.Fatalf("restore = %s, %v; want %s", got, err, want)
		}
	})
	t.Run("a new password is taken", func(t *testing.T) {
		edited := strings.Replace(string(masked), "repl:****@", "repl:NewPw@", 1)
		got, err := restoreSecrets([]byte(edited), old)
		if err != nil || !strings.Contains(string(got), "repl:NewPw@") || !strings.Contains(string(got), "app:TgtPw@") {
			t.Fatalf("restore = %s, %v", got, err)
		}
	})
	t.Run("a mask with a changed host is refused", func(t *testing.T) {
		edited := strings.Replace(string(masked), "127.0.0.1:3306", "10.0.0.9:3306", 1)
		_, err := restoreSecrets([]byte(edited), old)
		var re *requestError
		if !errors.As(err, &re) || re.status != http.StatusBadRequest || !strings.Contains(re.msg, "masked password") {
			t.Fatalf("restore of an unexplained mask: %v, want a 400 naming the masked password", err)
		}
		if strings.Contains(err.Error(), "S3cret") {
			t.Errorf("error shows the password: %v", err)
		}
	})
	t.Run("a new node cannot hold the mask", func(t *testing.T) {
		if _, err := restoreSecrets(masked, nil); err == nil {
			t.Fatal("create with a masked DSN: no error")
		}
	})
}

func TestLogName(t *testing.T) {
	long := strings.Repeat("a", 5000)
	if got := logName(long); len(got) > 100 || !strings.HasSuffix(got, "...(5000 bytes)") {
		t.Errorf("logName(5000 a) = %q: want 64 bytes and the length", got)
	}
	if got := logName("ad\nmin\x1b[31m\u202e"); got != `ad\nmin\x1b[31m\u202e` {
		t.Errorf("logName(control characters) = %q", got)
	}
}

// TestMaskSpecShardParam: a shard item's parameter is masked as a value of its own, in
// a copy: the spec masked does not change the caller's shard.
func TestMaskSpecShardParam(t *testing.T) {
	orig := &task.Shard{Item: 1, Total: 2, Param: "app:pw-9@tcp(db:3306)/orders"}
	s := task.Spec{Command: "x", Shard: orig}
	maskSpec(&s)
	if s.Shard.Param != "app:****@tcp(db:3306)/orders" || s.Shard.Item != 1 || s.Shard.Total != 2 {
		t.Errorf("masked shard %+v", *s.Shard)
	}
	if orig.Param != "app:pw-9@tcp(db:3306)/orders" {
		t.Errorf("the caller's shard was changed: %+v", *orig)
	}
}
