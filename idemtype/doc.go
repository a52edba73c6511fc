// Package idemtype holds the primitives idemport's packages share: the
// interfaces and small value types that more than one of reader, sink,
// ledger, checkpoint and pipeline speak, so that none of them keeps a copy
// of another's and no exported signature needs an internal package. It is a
// leaf: it imports nothing of idemport, and anything may import it.
//
// It holds:
//
//   - [Source], the bytes of an input file wherever they live (a local
//     file, an object in a bucket, a URL), which reader reads;
//   - [Type], a column's logical type, with the Arrow field metadata key
//     ([MetadataType]) that carries it from reader's batches to sink's
//     tables ([Type.Field], [TypeOf]);
//   - [Partition], a run of a file's rows as a plan cuts it, which reader
//     plans and checkpoint stores, and [Reject], a bad row, which reader
//     finds and ledger stores;
//   - [Rows] and [Partitions], the counts of what happened to rows and
//     partitions, which sink, checkpoint, ledger and pipeline report;
//   - [Querier], the handle statements run on, and [Migrator] and
//     [StateDriver], the parts of a sink.Driver that migrate, ledger and
//     checkpoint use, declared once here so that those packages need not
//     import sink;
//   - [EventSink], where pipeline delivers events ([EventMessage]), which
//     the command's NATS, HTTP and exec sinks implement, and
//     [ErrPermanent], a delivery refused for good, and [ErrMisconfigured],
//     one a sink cannot take until it is set up otherwise.
package idemtype
