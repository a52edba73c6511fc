package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/idemport/idemport/internal/config"
)

// runInProcess runs idemport's command line in this process, with env as
// its whole environment, and returns its exit code and output.
func runInProcess(t *testing.T, dir string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	code := run(context.Background(), args, &out, &errb, getenv)
	return code, out.String(), errb.String()
}

// TestFeedsFileRefused: every mistake in idemport.yaml is refused before
// anything runs, exit 2, naming the file, line and column of the mistake:
// the database is not even created, though the feeds before the bad one
// are fine.
func TestFeedsFileRefused(t *testing.T) {
	// Not parallel: runInProcess changes the working directory of the test process.
	const good = "feeds:\n  first:\n    source: a.csv\n    key: id\n"
	for _, tc := range []struct {
		name, yaml string
		want       string // the error, after "idemport: FILE:"
	}{
		{"unknown key", good + "  orders:\n    source: o.csv\n    keyy: id\n",
			`7:5: feed orders: unknown key "keyy"; did you mean "key"?`},
		{"run-level flag in a feed", good + "  orders:\n    source: o.csv\n    output: json\n",
			`7:5: feed orders: unknown key "output"`},
		{"integer wanted", good + "  orders:\n    source: o.csv\n    workers: many\n",
			`7:14: feed orders: workers: want an integer, got a string`},
		{"boolean wanted", good + "  orders:\n    source: o.csv\n    snapshot: \"yes\"\n",
			`7:15: feed orders: snapshot: want true or false, got a string`},
		{"string wanted", good + "  orders:\n    source: o.csv\n    table: true\n",
			`7:12: feed orders: table: want a string, got a boolean`},
		{"list for one value", good + "  orders:\n    source: o.csv\n    table: [a, b]\n",
			`7:12: feed orders: table: want a string, got a list`},
		{"duration the flag refuses", good + "  orders:\n    source: o.csv\n    lease: 10 minutes\n",
			`7:12: feed orders: lease: invalid argument "10 minutes" for "--lease" flag: want a duration such as 30s, 10m, 36h or 90d`},
		{"delete without snapshot", good + "  orders:\n    source: o.csv\n    key: id\n    delete: soft\n",
			`5:3: feed orders: --delete and --snapshot-scope need --snapshot`},
		{"version column without key", good + "  orders:\n    source: o.csv\n    version-col: updated_at\n",
			`5:3: feed orders: a version column needs --key: without a natural key a row only ever comes from one file`},
		{"undefined variable", "defaults:\n  into: postgres://loader:${PGPASS_UNSET}@db/wh\n" + good,
			`2:9: into: ${PGPASS_UNSET} is not set in the environment`},
		{"undefined variable in a list", good + "  orders:\n    source:\n      - /srv/${DROP_UNSET}/orders.csv\n",
			`7:9: source: ${DROP_UNSET} is not set in the environment`},
		{"no source", good + "  orders:\n    table: orders\n",
			`5:3: feed orders: no "source": name the files, directories, globs or URLs it imports`},
		{"key given twice", good + "  orders:\n    source: o.csv\n    key: id\n    key: id2\n",
			`8:5: "key" is given twice (first at line 7)`},
		{"unknown top-level key", "default:\n  trigger: cron\n" + good,
			`1:1: unknown key "default": the file has "defaults" and "feeds"; did you mean "defaults"?`},
		{"source in defaults", "defaults:\n  source: x.csv\n" + good,
			`2:3: defaults has no source: each feed names its own`},
		{"bad feed name", good + "  \"my feed\":\n    source: o.csv\n",
			`5:3: feed name "my feed": want letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{"no feeds", "defaults:\n  trigger: cron\n",
			`1:1: no "feeds": the file declares at least one feed`},
		// The YAML parser names a syntax error's line only, and that of the
		// block around it: the tab is on line 7.
		{"syntax: a tab", good + "  orders:\n    source: o.csv\n\tkey: id\n",
			`6: found a tab character that violates indentation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "idemport.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errb := runInProcess(t, dir, map[string]string{"IDEMPORT_INTO": filepath.Join(dir, "t.db")}, "run")
			if code != exitUsage {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errb)
			}
			want := "idemport: idemport.yaml:" + tc.want + "\n"
			if errb != want {
				t.Fatalf("stderr:\n%s\nwant:\n%s", errb, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "t.db")); !os.IsNotExist(err) {
				t.Fatalf("the database exists (%v): something ran", err)
			}
		})
	}
}

// TestFeedsFileAllMistakes: the whole file is checked, and each mistake
// is named, not only the first.
func TestFeedsFileAllMistakes(t *testing.T) {
	// Not parallel: runInProcess changes the working directory of the test process.
	dir := t.TempDir()
	yaml := "feeds:\n  a:\n    source: a.csv\n    workers: x\n  b:\n    source: b.csv\n    tabel: b\n"
	if err := os.WriteFile(filepath.Join(dir, "feeds.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb := runInProcess(t, dir, nil, "run", "--config", "feeds.yaml")
	want := "idemport: feeds.yaml:4:14: feed a: workers: want an integer, got a string\n" +
		"idemport: feeds.yaml:7:5: feed b: unknown key \"tabel\"; did you mean \"table\"?\n"
	if code != exitUsage || errb != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errb, want)
	}
}

// TestFeedsSchema: the JSON Schema shipped in docs/ is the one derived
// from the flags a feed takes (rewrite it with -update), and it agrees
// with the parser: every key the schema has, the parser takes with a
// value of the schema's type and refuses with one of another type; every
// flag the parser takes is in the schema; a key the schema lacks is
// refused.
func TestFeedsSchema(t *testing.T) {
	t.Parallel()
	e := &env{getenv: func(string) string { return "" }}
	fs, _ := feedFlags(e)
	got, err := config.Schema(fs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "idemport.schema.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shipped, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The keys and types must be the flags'; a flag's reworded help may
	// wait for the next -update.
	if !reflect.DeepEqual(withoutDescriptions(t, got), withoutDescriptions(t, shipped)) {
		t.Fatalf("%s is not the schema of the flags a feed takes: run go test ./cmd/idemport -run TestFeedsSchema -update", path)
	}

	var schema struct {
		Properties struct {
			Defaults struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"defaults"`
			Feeds struct {
				AdditionalProperties struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"additionalProperties"`
			} `json:"feeds"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(shipped, &schema); err != nil {
		t.Fatal(err)
	}
	feedKeys := schema.Properties.Feeds.AdditionalProperties.Properties
	defaultKeys := schema.Properties.Defaults.Properties

	// Every flag the parser takes is in the schema, with its type.
	fs.VisitAll(func(fl *pflag.Flag) {
		for where, keys := range map[string]map[string]json.RawMessage{"feeds": feedKeys, "defaults": defaultKeys} {
			prop, ok := keys[fl.Name]
			if !ok {
				t.Errorf("the parser takes %q, the schema's %s lack it", fl.Name, where)
				continue
			}
			if got, want := schemaType(t, prop), config.TypeOf(fl); got != want {
				t.Errorf("%s.%s: the schema says %+v, the parser %+v", where, fl.Name, got, want)
			}
		}
	})
	if _, ok := defaultKeys[config.SourceKey]; ok {
		t.Errorf("the schema's defaults take %q; the parser refuses it there", config.SourceKey)
	}

	// Every key of the schema, the parser takes with a value of its type
	// and refuses with a value of another.
	var names []string
	for name := range feedKeys {
		names = append(names, name)
	}
	sort.Strings(names)
	wrongType := regexp.MustCompile(`^f\.yaml:3:\d+: feed f: \S+: want .*, got `)
	for _, name := range names {
		if name == config.SourceKey {
			continue
		}
		typ := schemaType(t, feedKeys[name])
		right, wrong := map[string]string{"boolean": "true", "integer": "3", "duration": "5s", "string": "x"}[typ.Scalar],
			map[string]string{"boolean": "x", "integer": "x", "duration": "5", "string": "true"}[typ.Scalar]
		if typ.List {
			if err := applyOne(e, name, "[x, y]"); err != nil {
				t.Errorf("%s: [x, y]: the schema takes a list, the parser refuses it: %v", name, err)
			}
		} else if err := applyOne(e, name, "[x]"); err == nil || !wrongType.MatchString(err.Error()) {
			t.Errorf("%s: [x]: the schema refuses a list, the parser: %v", name, err)
		}
		if err := applyOne(e, name, right); err != nil {
			t.Errorf("%s: %s: the schema takes it, the parser refuses it: %v", name, right, err)
		}
		if err := applyOne(e, name, wrong); err == nil || !wrongType.MatchString(err.Error()) {
			t.Errorf("%s: %s: the schema refuses it, the parser: %v", name, wrong, err)
		}
		if typ.Scalar == "boolean" || typ.Scalar == "integer" { // the schema's ${VAR} pattern
			if err := applyOne(e, name, "${V}"); err != nil {
				t.Errorf("%s: ${V}: the schema takes it, the parser refuses it: %v", name, err)
			}
		}
	}
	for _, name := range []string{"bogus", "output", "dry-run", "config"} {
		if _, ok := feedKeys[name]; ok {
			t.Errorf("the schema has %q", name)
		}
		if err := applyOne(e, name, "x"); err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s: the schema lacks it, the parser: %v", name, err)
		}
	}
}

// withoutDescriptions is a JSON Schema's value without its descriptions.
func withoutDescriptions(t *testing.T, schema []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "description")
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	return v
}

// applyOne parses a file of one feed with key: value and applies it to a
// feed's flags.
func applyOne(e *env, key, value string) error {
	text := "feeds:\n  f:\n    " + key + ": " + value + "\n    source: f.csv\n"
	file, err := config.Parse("f.yaml", []byte(text), func(string) (string, bool) { return "1", true })
	if err != nil {
		return err
	}
	fs, _ := feedFlags(e)
	return file.Apply(file.Feeds[0], fs)
}

// schemaType reads a property of the shipped schema back as a
// config.Type.
func schemaType(t *testing.T, raw json.RawMessage) config.Type {
	t.Helper()
	var p struct {
		Type  any `json:"type"`
		AnyOf []struct {
			Type    any             `json:"type"`
			Pattern string          `json:"pattern"`
			Items   json.RawMessage `json:"items"`
		} `json:"anyOf"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	scalar := func(typ any) string {
		switch typ := typ.(type) {
		case string:
			if typ == "string" {
				return "duration" // a string only: no number
			}
			return typ
		case []any:
			return "string" // string or number
		}
		return ""
	}
	if p.Type != nil {
		return config.Type{Scalar: scalar(p.Type)}
	}
	if len(p.AnyOf) == 2 && p.AnyOf[1].Type == "array" {
		item := schemaType(t, p.AnyOf[1].Items)
		return config.Type{Scalar: item.Scalar, List: true}
	}
	if len(p.AnyOf) == 2 && p.AnyOf[1].Pattern == config.VarPattern {
		return config.Type{Scalar: scalar(p.AnyOf[0].Type)}
	}
	t.Fatalf("unknown property schema %s", raw)
	return config.Type{}
}
