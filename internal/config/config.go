package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// SourceKey is the key of a feed's source: what the import command takes
// as arguments (files, directories, globs or URLs), one or a list. It is
// the one key of a feed that is not a flag.
const SourceKey = "source"

// DefaultsKey and FeedsKey are the file's two top-level keys.
const (
	DefaultsKey = "defaults"
	FeedsKey    = "feeds"
)

// Pos is a place in the file: 1-based line and column (0 when the YAML
// parser names only the line).
type Pos struct {
	File         string
	Line, Column int
}

// String is "file:line:column", or "file:line" without a column.
func (p Pos) String() string {
	if p.Column == 0 {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Error is a mistake in the file, at Pos.
type Error struct {
	Pos Pos
	Err error
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Err: fmt.Errorf(format, args...)}
}

// File is an idemport.yaml as read: its defaults and its feeds in file
// order, every ${VAR} expanded. It is not yet checked against the flags:
// Apply does that.
type File struct {
	Path     string
	Defaults []Setting
	Feeds    []*Feed
}

// Feed is one feed of the file.
type Feed struct {
	Name     string
	Pos      Pos // of its name
	Source   []string
	Settings []Setting
}

// Setting is one key of the defaults or of a feed: a flag's name and its
// value as text, one string for a scalar and one per item of a list.
type Setting struct {
	Key      string
	Pos      Pos // of the key
	ValuePos Pos
	Values   []string
	List     bool // the value was a YAML sequence
	kinds    []kind
}

// kind is what YAML made of a scalar, checked against the flag's type.
type kind int

const (
	kindString   kind = iota
	kindInt           // !!int
	kindFloat         // !!float
	kindBool          // !!bool
	kindExpanded      // held a ${VAR}: its type is the flag's to judge
)

func (k kind) String() string {
	return [...]string{"a string", "an integer", "a number", "a boolean", "a string"}[k]
}

// Read reads and parses the file at path; see Parse.
func Read(path string, lookupEnv func(string) (string, bool)) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, lookupEnv)
}

// Parse reads an idemport.yaml's text: a mapping with "feeds" (a mapping
// of feed names, in file order, to their keys, "source" among them) and
// optionally "defaults" (keys every feed takes unless it sets its own).
// Every scalar's ${NAME} is replaced by lookupEnv(NAME), and "$${" stands
// for a literal "${"; an undefined variable is an error. Errors are
// *Error values, several joined with errors.Join, each naming its place;
// nothing about the keys' names or types is checked here (see Apply).
func Parse(path string, data []byte, lookupEnv func(string) (string, bool)) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(path, err)
	}
	p := &parser{path: path, env: lookupEnv}
	f := &File{Path: path}
	if len(doc.Content) == 0 {
		return nil, errorf(Pos{File: path, Line: 1, Column: 1}, "the file is empty: it needs %q", FeedsKey)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errorf(p.pos(root), "want a mapping with %q (and %q), got %s", FeedsKey, DefaultsKey, nodeKind(root))
	}
	var feeds *yaml.Node
	p.each(root, func(k, v *yaml.Node) {
		switch k.Value {
		case DefaultsKey:
			if v.Kind != yaml.MappingNode {
				p.fail(errorf(p.pos(v), "%s: want a mapping of options, got %s", DefaultsKey, nodeKind(v)))
				return
			}
			p.each(v, func(k, v *yaml.Node) {
				if k.Value == SourceKey {
					p.fail(errorf(p.pos(k), "%s has no %s: each feed names its own", DefaultsKey, SourceKey))
					return
				}
				if s, ok := p.setting(k, v); ok {
					f.Defaults = append(f.Defaults, s)
				}
			})
		case FeedsKey:
			feeds = v
		default:
			p.fail(errorf(p.pos(k), "unknown key %q: the file has %q and %q%s", k.Value, DefaultsKey, FeedsKey, suggest(k.Value, []string{DefaultsKey, FeedsKey})))
		}
	})
	switch {
	case feeds == nil:
		p.fail(errorf(p.pos(root), "no %q: the file declares at least one feed", FeedsKey))
	case feeds.Kind != yaml.MappingNode || len(feeds.Content) == 0:
		p.fail(errorf(p.pos(feeds), "%s: want a mapping of feed names to their options, got %s", FeedsKey, nodeKind(feeds)))
	default:
		p.each(feeds, func(k, v *yaml.Node) {
			if feed := p.feed(k, v); feed != nil {
				f.Feeds = append(f.Feeds, feed)
			}
		})
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return f, nil
}

// FeedNamePattern is what a feed's name must match: it appears in
// metrics labels, the ledger and command lines.
const FeedNamePattern = `^[A-Za-z0-9][A-Za-z0-9._-]*$`

// The package's regular expressions are compiled on first use, not at
// start: every run of the command would pay for them, most never use them.
var feedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(FeedNamePattern) })

type parser struct {
	path string
	env  func(string) (string, bool)
	errs []error
}

func (p *parser) fail(err error) { p.errs = append(p.errs, err) }

func (p *parser) pos(n *yaml.Node) Pos { return Pos{File: p.path, Line: n.Line, Column: n.Column} }

// each calls fn with each key and value of mapping m, in order, refusing
// keys that are not plain strings and keys given twice.
func (p *parser) each(m *yaml.Node, fn func(k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			p.fail(errorf(p.pos(k), "want a name as key, got %s", nodeKind(k)))
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.fail(errorf(p.pos(k), "%q is given twice (first at line %d)", k.Value, first.Line))
			continue
		}
		seen[k.Value] = k
		fn(k, v)
	}
}

func (p *parser) feed(k, v *yaml.Node) *Feed {
	if !feedName().MatchString(k.Value) {
		p.fail(errorf(p.pos(k), "feed name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", k.Value))
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.fail(errorf(p.pos(v), "feed %s: want a mapping with %q and options, got %s", k.Value, SourceKey, nodeKind(v)))
		return nil
	}
	feed := &Feed{Name: k.Value, Pos: p.pos(k)}
	hasSource := false
	p.each(v, func(k, v *yaml.Node) {
		s, ok := p.setting(k, v)
		if !ok {
			if k.Value == SourceKey {
				hasSource = true // its error is said
			}
			return
		}
		if s.Key != SourceKey {
			feed.Settings = append(feed.Settings, s)
			return
		}
		hasSource = true
		for i, kd := range s.kinds {
			if kd == kindBool {
				p.fail(errorf(s.ValuePos, "feed %s: %s: want paths, globs or URLs, got %s", feed.Name, SourceKey, kd))
				return
			}
			if s.Values[i] == "" {
				p.fail(errorf(s.ValuePos, "feed %s: %s: an empty path", feed.Name, SourceKey))
				return
			}
		}
		if len(s.Values) == 0 {
			p.fail(errorf(s.ValuePos, "feed %s: %s: an empty list", feed.Name, SourceKey))
			return
		}
		feed.Source = s.Values
	})
	if !hasSource {
		p.fail(errorf(feed.Pos, "feed %s: no %q: name the files, directories, globs or URLs it imports", feed.Name, SourceKey))
	}
	return feed
}

// setting reads one key and its value: a scalar, or a sequence of
// scalars. A null, a mapping or a nested sequence is an error.
func (p *parser) setting(k, v *yaml.Node) (Setting, bool) {
	s := Setting{Key: k.Value, Pos: p.pos(k), ValuePos: p.pos(v)}
	scalar := func(n *yaml.Node) bool {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			p.fail(errorf(p.pos(n), "%s: want a value, got %s", k.Value, nodeKind(n)))
			return false
		}
		text, expanded, err := expand(n.Value, p.env)
		if err != nil {
			p.fail(&Error{Pos: p.pos(n), Err: fmt.Errorf("%s: %w", k.Value, err)})
			return false
		}
		kd := kindString
		switch {
		case expanded:
			kd = kindExpanded
		case n.Tag == "!!int":
			kd = kindInt
		case n.Tag == "!!float":
			kd = kindFloat
		case n.Tag == "!!bool":
			kd = kindBool
		}
		s.Values = append(s.Values, text)
		s.kinds = append(s.kinds, kd)
		return true
	}
	if v.Kind == yaml.SequenceNode {
		s.List = true
		s.Values = []string{}
		for _, item := range v.Content {
			if !scalar(item) {
				return s, false
			}
		}
		return s, true
	}
	return s, scalar(v)
}

var varRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`) })

// expand replaces each ${NAME} in s by its value in the environment, and
// $${ by ${. It reports whether s held a variable.
func expand(s string, lookupEnv func(string) (string, bool)) (string, bool, error) {
	var err error
	expanded := false
	out := varRef().ReplaceAllStringFunc(s, func(m string) string {
		if m == "$${" {
			return "${"
		}
		name := m[2 : len(m)-1]
		if !validVar(name) {
			if err == nil {
				err = fmt.Errorf("%q is not a variable's name (write $${ for a literal ${)", name)
			}
			return m
		}
		v, ok := lookupEnv(name)
		if !ok && err == nil {
			err = fmt.Errorf("${%s} is not set in the environment", name)
		}
		expanded = true
		return v
	})
	return out, expanded, err
}

func validVar(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// syntaxError places a YAML syntax error: the parser names only the line,
// in its message (go.yaml.in/yaml/v3 has no error type for it).
func syntaxError(path string, err error) error {
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return errorf(Pos{File: path, Line: line}, "%s", m[2])
	}
	return errorf(Pos{File: path, Line: 1}, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// Apply sets the defaults' options and then the feed's on fs, each through
// its flag's Set (a list through the flag's Replace), so that each is
// parsed and checked as the flag would be given on a command line. A key
// that names no flag of fs, a value of the wrong type or one the flag
// refuses is an *Error at the key or value; errors of several keys are
// joined. Apply marks every flag it sets as changed.
func (f *File) Apply(feed *Feed, fs *pflag.FlagSet) error {
	var errs []error
	apply := func(where string, s Setting) {
		if err := set(fs, s); err != nil {
			errs = append(errs, &Error{Pos: err.Pos, Err: fmt.Errorf("%s: %w", where, err.Err)})
		}
	}
	for _, s := range f.Defaults {
		apply(DefaultsKey, s)
	}
	for _, s := range feed.Settings {
		apply("feed "+feed.Name, s)
	}
	return errors.Join(errs...)
}

func set(fs *pflag.FlagSet, s Setting) *Error {
	fl := fs.Lookup(s.Key)
	if fl == nil {
		var names []string
		fs.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
		return errorf(s.Pos, "unknown key %q%s", s.Key, suggest(s.Key, append(names, SourceKey)))
	}
	t := TypeOf(fl)
	if s.List && !t.List {
		return errorf(s.ValuePos, "%s: want %s, got a list", s.Key, t)
	}
	for _, kd := range s.kinds {
		if !t.accepts(kd) {
			return errorf(s.ValuePos, "%s: want %s, got %s", s.Key, t, kd)
		}
	}
	if s.List {
		if err := fl.Value.(pflag.SliceValue).Replace(s.Values); err != nil {
			return errorf(s.ValuePos, "%s: %v", s.Key, err)
		}
		fl.Changed = true
		return nil
	}
	if err := fs.Set(s.Key, s.Values[0]); err != nil {
		return errorf(s.ValuePos, "%s: %v", s.Key, err)
	}
	return nil
}

// Type is the type of value a key takes in the file, derived from its
// flag: the one fact Apply checks and Schema describes.
type Type struct {
	// Scalar is "boolean", "integer", "duration" or "string".
	Scalar string
	// List: the flag takes several values; the key takes one or a list.
	List bool
}

func (t Type) String() string {
	s := map[string]string{"boolean": "true or false", "integer": "an integer", "duration": "a duration such as 30s or 10m", "string": "a string"}[t.Scalar]
	if t.List {
		s += " or a list of them"
	}
	return s
}

// accepts reports whether a scalar YAML made into k fits t. A string
// holding a ${VAR} fits any type: the flag then parses it.
func (t Type) accepts(k kind) bool {
	if k == kindExpanded {
		return true
	}
	switch t.Scalar {
	case "boolean":
		return k == kindBool
	case "integer":
		return k == kindInt
	case "duration":
		return k == kindString
	}
	return k != kindBool
}

// TypeOf is the type of value fl takes in the file, from its pflag type.
func TypeOf(fl *pflag.Flag) Type {
	switch fl.Value.Type() {
	case "bool":
		return Type{Scalar: "boolean"}
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		return Type{Scalar: "integer"}
	case "duration":
		return Type{Scalar: "duration"}
	}
	_, list := fl.Value.(pflag.SliceValue)
	return Type{Scalar: "string", List: list}
}

// suggest is "; did you mean X?" for the name among names nearest to s,
// when one is near enough to be a misspelling.
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
