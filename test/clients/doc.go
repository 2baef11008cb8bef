// Package clients holds acceptance tests that drive paddock with real ZooKeeper clients
// other than the Go one the unit tests use: Python kazoo and its recipes (run under the
// Debian python3-kazoo package), the Java command-line client zkCli.sh (Debian zookeeper
// package), and the recipes and four-letter-word helpers of github.com/go-zookeeper/zk.
//
// Every test starts its own paddock in-process on 127.0.0.1 with all four-letter words
// allowed. The external clients are installed by `make test` (test/deps.sh); a test whose
// client is missing fails and says so rather than skipping. The package has no non-test
// code beyond this comment.
package clients
