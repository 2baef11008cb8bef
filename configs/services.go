package configs

import (
	"fmt"

	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/master"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/web"
	"github.com/paddock/paddock/worker"
)

// The services' sections. Their ZooKeeper servers are the key zk (flag --zk).
var (
	masterSection       = newSection("master", master.Config{}, map[string]string{"Servers": "zk"})
	workerSection       = newSection("worker", worker.Config{}, map[string]string{"Servers": "zk"})
	replicatorSection   = newSection("replicator", replicator.Config{}, map[string]string{"Servers": "zk"})
	logcollectorSection = newSection("logcollector", logcollector.Config{}, map[string]string{"Servers": "zk"})
	webSection          = newSection("web", web.Config{}, map[string]string{"Servers": "zk"})
)

// LoadMaster returns a master's configuration: master.DefaultConfig(), then opts.File's
// master section, PADDOCK_MASTER_* variables and opts.Flags; validated.
func LoadMaster(opts Options) (master.Config, error) {
	return loadSection(opts, masterSection, master.DefaultConfig(), master.Config.Validate)
}

// LoadWorker returns a worker's configuration: worker.DefaultConfig(), then opts.File's
// worker section, PADDOCK_WORKER_* variables and opts.Flags; validated.
func LoadWorker(opts Options) (worker.Config, error) {
	return loadSection(opts, workerSection, worker.DefaultConfig(), worker.Config.Validate)
}

// LoadReplicator returns a replicator process's configuration: replicator.DefaultConfig(),
// then opts.File's replicator section, PADDOCK_REPLICATOR_* variables and opts.Flags;
// validated.
func LoadReplicator(opts Options) (replicator.Config, error) {
	return loadSection(opts, replicatorSection, replicator.DefaultConfig(), replicator.Config.Validate)
}

// LoadLogCollector returns a log collector's configuration: logcollector.DefaultConfig(),
// then opts.File's logcollector section, PADDOCK_LOGCOLLECTOR_* variables and
// opts.Flags; validated.
func LoadLogCollector(opts Options) (logcollector.Config, error) {
	return loadSection(opts, logcollectorSection, logcollector.DefaultConfig(), logcollector.Config.Validate)
}

// LoadWeb returns the console's configuration: web.DefaultConfig(), then opts.File's web
// section, PADDOCK_WEB_* variables and opts.Flags; validated.
func LoadWeb(opts Options) (web.Config, error) {
	return loadSection(opts, webSection, web.DefaultConfig(), web.Config.Validate)
}

// loadSection loads section s over the defaults def and validates the result; errors
// name the section's key, the value and where it came from.
func loadSection[C any](opts Options, s *section, def C, validate func(C) error) (C, error) {
	var zero C
	l, err := newLoader(opts)
	if err != nil {
		return zero, fmt.Errorf("configs: %w", err)
	}
	cfg := def
	if err := l.load(s, &cfg); err != nil {
		return zero, fmt.Errorf("configs: %w", err)
	}
	if err := validate(cfg); err != nil {
		return zero, fmt.Errorf("configs: %w", l.explain(s, err, nil))
	}
	return cfg, nil
}
