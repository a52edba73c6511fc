// Package value is what the reader knows of values, whatever the format:
// a field's text as scanned ([Cell]), the typed value it converts to
// ([Value], [Convert], [ConvertText]) and the inference of a column's
// type from its values ([Inference]), decimals and timestamps, the column
// schema ([Schema]), the reason codes of bad rows ([CodeType] …) and the
// text checks every format applies ([CheckText]), and the limits of the
// target's columns that a value must also fit ([Limit], [CheckLimits]).
//
// It imports no other package of the reader.
package value
