// Package config reads idemport.yaml, the file that declares a team's
// feeds: defaults, then each feed's name, source and import options, keyed
// by the names of the import command's flags.
//
// The package knows no flag by name. Parse checks the file's shape and
// expands ${VAR} from the environment; Apply sets a feed's options on a
// *pflag.FlagSet of the caller's, through each flag's own Set, so that the
// types, defaults and validation of a key are those of its flag and the
// file and the command line can never disagree about them. Schema derives
// the file's JSON Schema from the same FlagSet. Every mistake is an *Error
// naming the file, line and column.
package config
