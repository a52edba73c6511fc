package config

import (
	"encoding/json"

	"github.com/spf13/pflag"
)

// SchemaID is the $id of the file's JSON Schema, as shipped in the
// repository.
const SchemaID = "https://github.com/idemport/idemport/blob/main/docs/idemport.schema.json"

// Schema is the JSON Schema (draft 2020-12) of a file whose keys are the
// flags of fs: each key's type is TypeOf its flag and its description the
// flag's usage. Editors validate and complete idemport.yaml with it. The
// output is deterministic (keys sorted) and ends with a newline.
func Schema(fs *pflag.FlagSet) ([]byte, error) {
	options := map[string]any{}
	fs.VisitAll(func(fl *pflag.Flag) {
		options[fl.Name] = propertySchema(TypeOf(fl), fl.Usage)
	})
	feed := map[string]any{}
	for k, v := range options {
		feed[k] = v
	}
	feed[SourceKey] = map[string]any{
		"description": "what the feed imports, as the import command's arguments: files, directories, globs or URLs, one or a list",
		"anyOf": []any{
			map[string]any{"type": "string", "minLength": 1},
			map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string", "minLength": 1}},
		},
	}
	schema := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  SchemaID,
		"title":                "idemport.yaml",
		"description":          "Feeds for 'idemport run': defaults, then each feed's source and import options, keyed by the import command's flag names. Strings may hold ${VAR}, read from the environment.",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{FeedsKey},
		"properties": map[string]any{
			DefaultsKey: map[string]any{
				"description":          "options every feed takes unless it sets its own",
				"type":                 "object",
				"additionalProperties": false,
				"properties":           options,
			},
			FeedsKey: map[string]any{
				"description":   "the feeds, by name, run in this order",
				"type":          "object",
				"minProperties": 1,
				"propertyNames": map[string]any{"pattern": FeedNamePattern},
				"additionalProperties": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"required":             []string{SourceKey},
					"properties":           feed,
				},
			},
		},
	}
	out, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// VarPattern matches a string holding a ${VAR}: such a string may stand
// for a value of any type, which the flag then parses.
const VarPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*\}`

// propertySchema describes one key of type t. A string key also takes a
// number (max-rejects: 10), as YAML reads one; a duration only a string;
// a boolean or integer key also a string holding a ${VAR}.
func propertySchema(t Type, usage string) map[string]any {
	var scalar map[string]any
	switch t.Scalar {
	case "boolean", "integer":
		scalar = map[string]any{"anyOf": []any{
			map[string]any{"type": t.Scalar},
			map[string]any{"type": "string", "pattern": VarPattern},
		}}
	case "duration":
		scalar = map[string]any{"type": "string"}
	default:
		scalar = map[string]any{"type": []string{"string", "number"}}
	}
	if !t.List {
		scalar["description"] = usage
		return scalar
	}
	return map[string]any{
		"description": usage,
		"anyOf":       []any{scalar, map[string]any{"type": "array", "items": scalar}},
	}
}
