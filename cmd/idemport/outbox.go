package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/idemport/idemport/internal/english"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/notify"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
)

// notifyFlags are --notify and --notify-timeout, shared by the commands
// that record or deliver events.
type notifyFlags struct {
	urls    []string
	timeout time.Duration
}

func (n *notifyFlags) register(c *cobra.Command) {
	stringArrayVar(c.Flags(), &n.urls, "notify", "deliver events to nats://HOST:PORT/SUBJECT, http(s)://… or exec:COMMAND (repeatable; default $IDEMPORT_NOTIFY, one per line)")
	c.Flags().Var(newDurationFlag(&n.timeout, pipeline.DefaultNotifyTimeout), "notify-timeout", "how long this run keeps trying to deliver events before leaving them to the next run")
}

// sinks opens the sinks of --notify, or else of IDEMPORT_NOTIFY (one
// address per line). The caller closes them.
func (n *notifyFlags) sinks(e *env) ([]idemtype.EventSink, error) {
	urls := n.urls
	if len(urls) == 0 {
		for _, l := range strings.Split(e.notify, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				urls = append(urls, l)
			}
		}
	}
	if n.timeout <= 0 {
		return nil, usageError{fmt.Errorf("--notify-timeout must be positive")}
	}
	var out []idemtype.EventSink
	seen := map[string]bool{}
	for _, u := range urls {
		s, err := notify.Parse(u, e.getenv)
		if err != nil {
			closeSinks(out)
			return nil, usageError{err}
		}
		if !seen[s.ID()] {
			seen[s.ID()] = true
			out = append(out, s)
		}
	}
	return out, nil
}

func closeSinks(ss []idemtype.EventSink) {
	for _, s := range ss {
		s.Close()
	}
}

// reportDelivery says on stderr what a delivery pass left undone; a
// notification that failed never changes the exit code of the command that
// recorded it.
func reportDelivery(e *env, rep pipeline.DeliveryReport) {
	names := make([]string, 0, len(rep.Errors))
	for n := range rep.Errors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		textf(e.stderr, "idemport: notify %s: %s\n", n, rep.Errors[n])
	}
	if rep.Failed > 0 {
		fmt.Fprintf(e.stderr, "idemport: %s refused for good by a sink; see 'idemport outbox list --state failed'\n", english.Plural(rep.Failed, "event delivery"))
	}
	if rep.Pending > 0 {
		fmt.Fprintf(e.stderr, "idemport: %s not delivered yet: the next run with the same --notify delivers them, or 'idemport outbox deliver'\n", english.Plural(rep.Pending, "event delivery"))
	}
}

func newOutboxCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "outbox",
		Short: "List and deliver the events of imports, undos and replays",
		Long: `Every completed import, undo and replay records an event in the outbox (idemport_outbox),
in the transaction of its effect, owed to each --notify sink the run had. Runs deliver it
after commit; what they could not deliver, the next run with the same --notify (or
'outbox deliver') delivers, with the same event ID.`,
	}
	c.AddCommand(newOutboxListCmd(e), newOutboxDeliverCmd(e))
	return c
}

func newOutboxListCmd(e *env) *cobra.Command {
	var into target
	var output, state string
	c := &cobra.Command{
		Use:   "list",
		Short: "List events and their delivery to each sink: pending, delivered or failed",
		Example: `  idemport outbox list
  idemport outbox list --state pending --output json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return listOutbox(c, e, into, output, state) },
	}
	e.intoFlag(c, &into)
	outputFlag(c, &output)
	c.Flags().StringVar(&state, "state", "", "only deliveries in this state: pending, delivered or failed")
	return c
}

// listOutbox lists the outbox's events and their deliveries in state (any,
// when empty).
func listOutbox(c *cobra.Command, e *env, into target, output, state string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	switch state {
	case "", ledger.DeliveryPending, ledger.DeliveryDelivered, ledger.DeliveryFailed:
	default:
		return usageError{fmt.Errorf("--state %q: want pending, delivered or failed", state)}
	}
	op, err := into.operator(c.Context(), pipeline.Options{ReadOnly: true, AllowMissing: true})
	if err != nil {
		return err
	}
	defer op.Close()
	ds, err := op.Outbox(c.Context(), state)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(e.stdout, deliveriesJSON(ds)...)
	}
	return writeTable(e.stdout, "no events", "EVENT\tKIND\tTABLE\tFILE ID\tRECORDED\tSINK\tSTATE\tATTEMPTS\tLAST ERROR", ds, func(d ledger.Delivery) []any {
		sink, st := d.SinkName, d.State
		if d.SinkID == "" {
			sink, st = "-", "no sink"
		}
		return []any{d.EventID, d.Kind, d.Key.Table, d.Key.FileID, msTime(d.CreatedAt), sink, st, d.Tries, orDash(d.LastError)}
	})
}

// deliveryJSON is one line of 'outbox list --output json'.
type deliveryJSON struct {
	EventID     string          `json:"event_id"`
	Kind        string          `json:"kind"`
	Table       string          `json:"table"`
	FileID      string          `json:"file_id"`
	CreatedAt   string          `json:"recorded_at"`
	Sink        string          `json:"sink,omitempty"`
	State       string          `json:"state,omitempty"`
	Attempts    int64           `json:"attempts"`
	LastError   string          `json:"last_error,omitempty"`
	DeliveredAt string          `json:"delivered_at,omitempty"`
	Event       json.RawMessage `json:"event"`
}

func deliveriesJSON(ds []ledger.Delivery) []deliveryJSON {
	out := make([]deliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = deliveryJSON{EventID: d.EventID, Kind: d.Kind, Table: d.Key.Table, FileID: d.Key.FileID,
			CreatedAt: jsonTime(d.CreatedAt), Sink: d.SinkName, State: d.State, Attempts: d.Tries,
			LastError: d.LastError, DeliveredAt: jsonTime(d.DeliveredAt), Event: json.RawMessage(d.Payload)}
	}
	return out
}

// deliverOptions are the flags of outbox deliver.
type deliverOptions struct {
	into   target
	output string
	nf     notifyFlags
}

func newOutboxDeliverCmd(e *env) *cobra.Command {
	o := &deliverOptions{}
	c := &cobra.Command{
		Use:   "deliver",
		Short: "Deliver the events still owed to the --notify sinks",
		Long: `Deliver sends the pending events owed to the sinks named by --notify (or $IDEMPORT_NOTIFY),
retrying with backoff for up to --notify-timeout. An event is owed to the sinks its run had;
give the same addresses. Exit 0 when nothing is left pending, 1 otherwise.`,
		Example: `  idemport outbox deliver --notify nats://127.0.0.1:4222/imports
  IDEMPORT_NOTIFY=https://hooks.example.com/idemport idemport outbox deliver --notify-timeout 2m`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return runDeliver(c, e, o) },
	}
	e.intoFlag(c, &o.into)
	outputFlag(c, &o.output)
	o.nf.register(c)
	return c
}

// runDeliver delivers the events owed to the sinks --notify names and
// prints how many went out; any left pending or failed is an error.
func runDeliver(c *cobra.Command, e *env, o *deliverOptions) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	sinks, err := o.nf.sinks(e)
	if err != nil {
		return err
	}
	defer closeSinks(sinks)
	if len(sinks) == 0 {
		return usageError{errors.New("no sink: give --notify or set IDEMPORT_NOTIFY")}
	}
	op, err := o.into.operator(c.Context(), pipeline.Options{Notify: sinks, Failpoints: e.failpoints})
	if err != nil {
		return err
	}
	defer op.Close()
	rep, err := op.Deliver(c.Context(), o.nf.timeout)
	if err != nil {
		return err
	}
	if o.output == "json" {
		if err := writeJSON(e.stdout, map[string]int64{"delivered": rep.Delivered, "failed": rep.Failed, "pending": rep.Pending}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "delivered %s; %d pending\n", english.Plural(rep.Delivered, "event delivery"), rep.Pending)
	}
	reportDelivery(e, rep)
	if rep.Pending > 0 || rep.Failed > 0 {
		return errDeliveryIncomplete
	}
	return nil
}

// errDeliveryIncomplete ends 'outbox deliver' with exit 1 when events are
// left undelivered; what they are was already said.
var errDeliveryIncomplete = errors.New("some events are not delivered")

// deliverAfter runs a delivery pass after a command that recorded events,
// within budget, reports what it left undone on stderr, and returns what
// the outbox still owes. It never fails the command.
func deliverAfter(ctx context.Context, e *env, op *ops.Operator, budget time.Duration) pipeline.DeliveryReport {
	rep, err := op.Deliver(ctx, budget)
	if err != nil {
		textf(e.stderr, "idemport: deliver events: %v\n", err)
	}
	return rep
}
