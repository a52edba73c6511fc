// Package partition is what the reader's plan pass yields and its
// partition readers return, in both wings: the [Plan] of a file, cut into
// partitions of [DefaultRows] rows and [DefaultBytes] bytes at most, the
// [ScanOptions] a wing's plan pass takes, the [Batch] of rows a partition
// reader returns (of about [BatchBytes] at most), the checksum of a
// partition's bytes ([Castagnoli]), and the error of a partition whose
// superseded rows differ from its plan.
package partition
