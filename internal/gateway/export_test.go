package gateway

// For the tests of package gateway_test.
var (
	TestGrant = testGrant
	ErrNoNode = errNoNode
)
