package testenv

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	none := func(string) string { return "" }
	old := func(vars ...string) func(string) string {
		return func(v string) string {
			for _, w := range vars {
				if v == w {
					return "1"
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		list   string
		getenv func(string) string
		want   []Service
		err    string
	}{
		{"", none, nil, ""},
		{"postgres,nats,node_exporter", none, []Service{Postgres, NATS, NodeExporter}, ""},
		{" Postgres , mariadb,,postgres", none, []Service{Postgres, MariaDB}, ""},
		{"", old("IDEMPORT_REQUIRE_POSTGRES", "IDEMPORT_REQUIRE_NATS"), []Service{Postgres, NATS}, ""},
		{"nats", old("IDEMPORT_REQUIRE_NATS"), []Service{NATS}, ""},
		{"node_exporter", old("IDEMPORT_REQUIRE_POSTGRES"), []Service{NodeExporter, Postgres}, ""},
		{"", func(string) string { return "0" }, nil, ""},
		{"postgres,postgresql", none, nil, `"postgresql" is not a service; the services are postgres, nats, mariadb, node_exporter`},
	} {
		got, err := parse(c.list, c.getenv)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.list, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.list, got, err, c.want)
		}
	}
}

// TestThisRunNamesKnownServices fails a run whose IDEMPORT_REQUIRE names a
// service that does not exist (a typo would otherwise require nothing).
func TestThisRunNamesKnownServices(t *testing.T) {
	req, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("required: %v", req)
}

// ended records how a test that called Unavailable ended.
type ended struct {
	testing.TB
	skipped, failed string
}

func (e *ended) Helper() {}
func (e *ended) Skipf(format string, args ...any) {
	e.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (e *ended) Fatalf(format string, args ...any) {
	e.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (e *ended) Fatal(args ...any) {
	e.failed = fmt.Sprint(args...)
	runtime.Goexit()
}

// unavailable calls Unavailable in a goroutine of its own and returns how
// the test ended.
func unavailable(t *testing.T, s Service, why string) *ended {
	e := &ended{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Unavailable(e, s, why)
	}()
	<-done
	return e
}

// TestUnavailable: a service the run does not require skips, one it
// requires fails, and a list with a name that is not a service fails
// whatever is asked.
func TestUnavailable(t *testing.T) {
	for _, v := range []string{Env, "IDEMPORT_REQUIRE_POSTGRES", "IDEMPORT_REQUIRE_NATS"} {
		t.Setenv(v, "")
	}
	why := "node_exporter is not installed"
	if e := unavailable(t, NodeExporter, why); e.failed != "" || e.skipped != "SKIP: node_exporter is not installed; set IDEMPORT_REQUIRE=node_exporter to fail instead" {
		t.Errorf("not required: skipped %q, failed %q", e.skipped, e.failed)
	}
	t.Setenv(Env, "postgres,node_exporter")
	if e := unavailable(t, NodeExporter, why); e.skipped != "" || e.failed != "this run requires node_exporter (IDEMPORT_REQUIRE=postgres,node_exporter), but node_exporter is not installed" {
		t.Errorf("required: skipped %q, failed %q", e.skipped, e.failed)
	}
	if e := unavailable(t, NATS, "no server"); e.failed != "" || e.skipped == "" {
		t.Errorf("another service required: skipped %q, failed %q", e.skipped, e.failed)
	}
	t.Setenv("IDEMPORT_REQUIRE_NATS", "1")
	if e := unavailable(t, NATS, "no server"); e.skipped != "" || e.failed != "this run requires nats (IDEMPORT_REQUIRE_NATS=1), but no server" {
		t.Errorf("required by IDEMPORT_REQUIRE_NATS=1: skipped %q, failed %q", e.skipped, e.failed)
	}
	t.Setenv(Env, "node-exporter")
	if e := unavailable(t, MariaDB, "no server"); e.skipped != "" || !strings.Contains(e.failed, `"node-exporter" is not a service`) {
		t.Errorf("a name that is not a service: skipped %q, failed %q", e.skipped, e.failed)
	}
}
