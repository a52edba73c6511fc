// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema on the server named by the environment variable
// IDEMPORT_TEST_POSTGRES, dropped when the test ends, so that tests run in
// parallel never see each other's tables.
//
// The variable holds a connection string such as
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. When it is unset,
// every PostgreSQL test skips with a message saying so. This package is the
// only place that reads it.
package pgtest
