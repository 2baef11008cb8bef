package metricsserver

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestServesRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "paddock_test_gauge", Help: "A test gauge."})
	reg.MustRegister(g)
	g.Set(42)
	s, err := Listen("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(slog.New(slog.DiscardHandler))
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "paddock_test_gauge 42") {
		t.Fatalf("/metrics: %s", b)
	}
	s.Close()
	if _, err := http.Get("http://" + s.Addr().String() + "/metrics"); err == nil {
		t.Fatal("still serving after Close")
	}
	// Closing one that never served releases its port too.
	s2, err := Listen("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}
