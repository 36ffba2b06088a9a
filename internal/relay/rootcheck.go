package relay

import _ "embed"

// RootCheckScript defines the shell function sluice_root_check ROOT UID,
// which both sides of the reverse tunnel run on the node before they make
// a socket directory in ROOT (the job's script, and the tunnel's session
// when it comes first): it fails, naming the path and its owner, unless
// ROOT and every directory above it may be changed by nobody but root and
// the user UID. The rule is written in the script (rootcheck.sh). Its
// variables are named sluice_rc_*; it needs ls, awk, cd -P and pwd -P.
//
//go:embed rootcheck.sh
var RootCheckScript string
