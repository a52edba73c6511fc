// Package archtest holds the architecture tests of the module, in one
// place: which package may depend on which (the direction of imports, the
// reader's wings, idemtype as a leaf), that nothing outside the drivers
// asks which database it is nor holds SQL statement text, that no public API names an internal
// type, and that no package compiles a regular expression in a
// package-level variable (a cost every start pays). Each check is proven able to fail on a made-up violation. The
// package has no code of its own; its tests read the module's source and
// the go command's view of it.
package archtest
