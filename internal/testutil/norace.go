//go:build !race

package testutil

// RaceEnabled says the test binary was built with -race; a paddock binary that a test
// runs should then be built with it too (BuildPaddock).
const RaceEnabled = false
