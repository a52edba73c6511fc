// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema on the server named by the environment variable
// IDEMPORT_TEST_POSTGRES, dropped when the test ends, so that tests run in
// parallel never see each other's tables.
//
// The variable holds a connection string in URL form such as
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. When it is unset,
// every PostgreSQL test skips with a message saying so, and the first skip
// of a go test run also says on the terminal, once for all packages, how to
// run them (go test shows a passing package's output only with -v) — unless the
// run requires PostgreSQL (IDEMPORT_REQUIRE=postgres, read by internal/testenv),
// as CI does: then a missing IDEMPORT_TEST_POSTGRES fails each PostgreSQL test
// instead, so that a CI job cannot pass by silently skipping them. This
// package is the only place that reads IDEMPORT_TEST_POSTGRES.
package pgtest
