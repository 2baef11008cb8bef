// Package browser holds the console's browser tests: a real in-process paddock server,
// a coordinator.Session on it, a web.Console on 127.0.0.1:0 and headless Chromium
// (Debian package chromium, /usr/bin/chromium; test/deps.sh installs it) driven through
// the pages with chromedp, the way a user clicks through them. The package has only
// tests. The task test also runs a master and a worker ("w1") in this process
// (harness.startCluster); the replication and logs tests write the nodes a replicator
// instance and a log collector would, since those pages only read them.
//
// Run them with
//
//	go test ./test/browser/
//	PADDOCK_ARTIFACTS=$PWD/artifacts go test ./test/browser/   # keep the screenshots
//
// Every test ends with a full-page screenshot, <TestName>.png, written to the
// directory PADDOCK_ARTIFACTS names (made if missing, files kept, for CI to upload),
// else to the test's temp dir (removed with it). A failing test also logs the page's
// URL, text and HTML. PADDOCK_CHROMIUM overrides the browser's path; PADDOCK_TEST_LOG
// turns on the server's and the console's debug logs and Chromium's output.
//
// Chromium runs with the flags of TESTING.md (no background networking, no component
// updates, no sync, no QUIC), a fresh user-data-dir per test, and talks to chromedp over
// a pipe, not a debugging port: the only sockets are the console's and the paddock
// server's, both on 127.0.0.1.
package browser
