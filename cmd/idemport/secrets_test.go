//go:build unix

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
)

// secretRE matches every secret the secrets test hands the command: each
// is SECRET-<name>, so that one search finds them all.
var secretRE = regexp.MustCompile(`SECRET-[a-z0-9]+`)

// TestSecretsNeverShownOrStored hands the command secrets in every place a
// user puts them (the password and the query of a remote input's URL, of
// a --notify URL, of a PostgreSQL URL, of a libpq key=value string, quoted
// or not; an exec: sink's VAR=secret; a webhook token in a URL path, from
// the environment as ${VAR}) and in the errors where such strings are
// echoed (a bad %-escape, sslmode=bogus, a missing object, a sink that is
// down), then runs every command that shows what it recorded, in text and
// JSON, with logs at debug level and a metrics file. No secret appears in
// any output, in the metrics, or in any table of the target database, the
// ledger included; the secrets still reach where they are needed (the
// input's server, the webhook's path, the exec command's environment).
func TestSecretsNeverShownOrStored(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		into := tg.Args
		if tg.IsPostgres() { // trust authentication: any password does
			u, err := url.Parse(tg.Args[1])
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(u.User.Username(), "SECRET-pgpassword")
			q := u.Query()
			q.Set("application_name", "SECRET-pgquery")
			u.RawQuery = q.Encode()
			into = []string{"--into", u.String(), tg.Args[2], tg.Args[3]}
		}
		withInto := func(args ...string) []string { return append(append([]string{args[0]}, into...), args[1:]...) }

		data := remotetest.NewHTTP(t)
		data.Put(t, "", "orders.csv", []byte("id,v\n1,a\n2,b\n3,c\n"), time.Now().Add(-time.Hour))
		host := strings.TrimPrefix(data.URL, "http://")
		input := "http://alice:SECRET-inputpassword@" + host + "/orders.csv?code=SECRET-inputcode&X-Amz-Signature=SECRET-signature"

		var mu sync.Mutex
		var hookPaths []string
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			user, pass, _ := r.BasicAuth()
			mu.Lock()
			hookPaths = append(hookPaths, user+":"+pass+" "+r.URL.RequestURI())
			mu.Unlock()
		}))
		defer hook.Close()
		stream := newStream(t)
		tokenFile := filepath.Join(dir, "exec-token")
		notify := []string{
			"--notify", strings.Replace(hook.URL, "http://", "http://hook:SECRET-hookpassword@", 1) + "/hooks/${HOOK_TOKEN}?token=SECRET-hookquery",
			"--notify", "exec:API_TOKEN=SECRET-exectoken sh -c 'printf %s \"$API_TOKEN\" > " + tokenFile + "'",
			"--notify", "http://down:SECRET-downpassword@127.0.0.1:1/x?key=SECRET-downquery",
			"--notify", strings.Replace(stream.url(), "nats://", "nats://natsuser:SECRET-natspassword@", 1),
			"--notify-timeout", "2s",
		}
		env := append(data.Env(dir), "HOOK_TOKEN=SECRET-hookpath")
		metrics := filepath.Join(dir, "metrics.prom")

		type shownText struct{ what, text string }
		var shown []shownText // every output and file the user sees
		run := func(what string, codes []int, args ...string) testkit.Run {
			t.Helper()
			r := testkit.Exec(t, dir, env, args...)
			what = secretRE.ReplaceAllString(what, "SECRET") // the label shows no secret
			shown = append(shown, shownText{what + " stdout", r.Stdout}, shownText{what + " stderr", r.Stderr})
			for _, c := range codes {
				if r.Code == c {
					return r
				}
			}
			t.Errorf("%s: exit %d, want %v\n%s\n%s", what, r.Code, codes, r.Stdout, r.Stderr)
			return r
		}
		ok := []int{0}
		for _, output := range []string{"text", "json"} {
			args := append(withInto("import", "--output", output, "--log-level", "debug", "--metrics-file", metrics, "--table", "orders"), notify...)
			run("import "+output, ok, append(args, input)...)
			m, err := os.ReadFile(metrics)
			if err != nil {
				t.Fatal(err)
			}
			shown = append(shown, shownText{"metrics", string(m)})
			run("import --dry-run "+output, ok, append(withInto("import", "--dry-run", "--output", output, "--table", "orders"), input)...)
			run("plan "+output, ok, append(withInto("plan", "--output", output, "--table", "orders"), input)...)
			run("status "+output, ok, withInto("status", "--output", output)...)
			run("history "+output, ok, append(withInto("history", "--output", output), input)...)
			run("verify "+output, ok, append(withInto("verify", "--output", output, "--table", "orders"), input)...)
			run("outbox list "+output, ok, withInto("outbox", "list", "--output", output)...)
			run("outbox deliver "+output, []int{0, 1}, append(withInto("outbox", "deliver", "--output", output), notify...)...)
		}
		// Errors that echo what they were given.
		run("a bad %-escape", []int{1, 2}, append(withInto("import", "--table", "orders"), "http://bob:SECRET-escapepassword@"+host+"/a%zz.csv?code=SECRET-escapequery")...)
		run("a missing object", []int{1, 2}, append(withInto("import", "--table", "orders"), "http://bob:SECRET-missingpassword@"+host+"/missing.csv?code=SECRET-missingquery")...)
		run("a bad --notify", []int{2}, append(withInto("import", "--table", "orders", "--notify", "http://u:SECRET-notifypassword@h/%zz?t=SECRET-notifyquery"), input)...)
		run("a bad --notify variable", []int{2}, append(withInto("import", "--table", "orders", "--notify", "http://h/${NO_SUCH_VARIABLE}?t=SECRET-unsetquery"), input)...)
		for _, dsn := range []string{
			"postgres://postgres@127.0.0.1:5432/test?sslmode=bogus&password=SECRET-bogusquery",
			"postgres://postgres:SECRET-bogususer@127.0.0.1:5432/te%zzst",
			"host=127.0.0.1 password=SECRET-kvpassword sslmode=bogus",
			"host=127.0.0.1 password='quoted SECRET-kvquoted' sslmode=bogus",
			"host=127.0.0.1 sslmode=bogus password = SECRET-kvspaced",
		} {
			run("--into "+dsn, []int{2}, "status", "--into", dsn)
			run("import --into "+dsn, []int{2}, "import", "--into", dsn, input)
		}

		// The secrets reached where they were needed.
		mu.Lock()
		paths := append([]string(nil), hookPaths...)
		mu.Unlock()
		if len(paths) == 0 || paths[0] != "hook:SECRET-hookpassword /hooks/SECRET-hookpath?token=SECRET-hookquery" {
			t.Errorf("the webhook received %q", paths)
		}
		if b, err := os.ReadFile(tokenFile); err != nil || string(b) != "SECRET-exectoken" {
			t.Errorf("the exec sink's environment: %q %v", b, err)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 3 {
			t.Errorf("orders holds %d rows, want 3", n)
		}

		// Nowhere shown, nowhere stored.
		for _, o := range shown {
			if at := secretRE.FindStringIndex(o.text); at != nil {
				t.Errorf("%s shows %v: …%s…", o.what, secretRE.FindAllString(o.text, -1), o.text[max(0, at[0]-80):min(len(o.text), at[1]+20)])
			}
		}
		snap := tg.Snapshot(t)
		names := make([]string, 0, len(snap))
		for table := range snap {
			names = append(names, table)
		}
		sort.Strings(names)
		for _, table := range names {
			if at := secretRE.FindStringIndex(snap[table]); at != nil {
				v := snap[table]
				t.Errorf("table %s stores %v: …%s…", table, secretRE.FindAllString(v, -1), v[max(0, at[0]-80):min(len(v), at[1]+20)])
			}
		}
	})
}
