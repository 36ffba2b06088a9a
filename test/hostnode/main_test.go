package hostnode

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the init helper of the processes
// its tests start (Options.InitPath defaults to the running executable).
func TestMain(m *testing.M) {
	InitMain()
	os.Exit(m.Run())
}
