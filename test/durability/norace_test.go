//go:build !race

package durability

// raceEnabled says this test binary was built with -race; the paddock binary under test
// is then built with it too.
const raceEnabled = false
