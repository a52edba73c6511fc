// Package testenv says whether a test run requires the outside services
// some tests need: PostgreSQL, NATS JetStream, MariaDB and node_exporter.
// On a laptop each is optional: a test that cannot reach one skips, saying
// what it did not test. In CI each is required: the environment variable
// IDEMPORT_REQUIRE lists them, comma-separated, and a test that cannot
// reach one fails instead, so that a CI job cannot pass by skipping them:
//
//	IDEMPORT_REQUIRE=postgres,nats,node_exporter go test ./...
//
// This package is the only place that reads IDEMPORT_REQUIRE. The older
// IDEMPORT_REQUIRE_POSTGRES=1 and IDEMPORT_REQUIRE_NATS=1 still count, as
// postgres and nats. Where each service is found (IDEMPORT_TEST_POSTGRES,
// for one) is the business of the tests that use it.
package testenv

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Env is the environment variable that lists the required services.
const Env = "IDEMPORT_REQUIRE"

// Service is an outside service that some tests need.
type Service string

// The services, by the names IDEMPORT_REQUIRE lists them.
const (
	Postgres     Service = "postgres"
	NATS         Service = "nats"
	MariaDB      Service = "mariadb"
	NodeExporter Service = "node_exporter"
)

// Services returns every service, in the order the documentation lists
// them.
func Services() []Service { return []Service{Postgres, NATS, MariaDB, NodeExporter} }

// aliases are the older variables, each of which, set to 1, requires one
// service.
var aliases = map[Service]string{
	Postgres: "IDEMPORT_REQUIRE_POSTGRES",
	NATS:     "IDEMPORT_REQUIRE_NATS",
}

// Required returns the services the run requires, from IDEMPORT_REQUIRE and
// the older variables, or an error naming a service it does not know.
func Required() ([]Service, error) { return parse(os.Getenv(Env), os.Getenv) }

// parse reads list, the value of IDEMPORT_REQUIRE, and the older variables
// through getenv.
func parse(list string, getenv func(string) string) ([]Service, error) {
	var req []Service
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		s := Service(strings.ToLower(name))
		if !slices.Contains(Services(), s) {
			return nil, fmt.Errorf("%s=%s: %q is not a service; the services are %s", Env, list, name, names())
		}
		if !slices.Contains(req, s) {
			req = append(req, s)
		}
	}
	for _, s := range Services() {
		if v, ok := aliases[s]; ok && getenv(v) == "1" && !slices.Contains(req, s) {
			req = append(req, s)
		}
	}
	return req, nil
}

// names returns the services' names, comma-separated.
func names() string {
	var n []string
	for _, s := range Services() {
		n = append(n, string(s))
	}
	return strings.Join(n, ", ")
}

// IsRequired reports whether the run requires s. It fails t when
// IDEMPORT_REQUIRE names a service this package does not know.
func IsRequired(t testing.TB, s Service) bool {
	t.Helper()
	req, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(req, s)
}

// Unavailable ends t because s cannot be reached here, for the reason
// why: it skips t, saying what was not tested and how to require s, or
// fails it when the run requires s.
func Unavailable(t testing.TB, s Service, why string) {
	t.Helper()
	if IsRequired(t, s) {
		t.Fatalf("this run requires %s (%s), but %s", s, requiredBy(s), why)
	}
	t.Skipf("SKIP: %s; set %s=%s to fail instead", why, Env, s)
}

// requiredBy returns the setting that requires s: IDEMPORT_REQUIRE, or the
// older variable.
func requiredBy(s Service) string {
	if only, _ := parse(os.Getenv(Env), func(string) string { return "" }); slices.Contains(only, s) {
		return Env + "=" + os.Getenv(Env)
	}
	return aliases[s] + "=1"
}
