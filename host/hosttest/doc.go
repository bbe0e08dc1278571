// Package hosttest helps plugin authors test their plugins against the
// host's contract.
//
// [Conformance] loads a plugin into a fresh host, checks that it reaches
// Active, disposes it and checks that it left nothing behind: no listener,
// service, fiber or effect, and no goroutine.
//
//	func TestConformance(t *testing.T) {
//		hosttest.Conformance(t, tools.Plugin, tools.Config{},
//			hosttest.WithService("approval", fakeApproval{}))
//	}
package hosttest
