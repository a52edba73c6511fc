package sink

import "context"

type pointsKey struct{}

// WithPoints returns ctx carrying hit, which a driver calls (Point) as
// it passes a named point between the statements of an operation (the
// points are internal/failpoint's Names), so that a test can stop or kill
// the process there, as at the pipeline's own points.
func WithPoints(ctx context.Context, hit func(name string) error) context.Context {
	return context.WithValue(ctx, pointsKey{}, hit)
}

// Point tells the function ctx carries (WithPoints), if any, that the
// driver passed point name, and returns its error.
func Point(ctx context.Context, name string) error {
	if hit, ok := ctx.Value(pointsKey{}).(func(string) error); ok {
		return hit(name)
	}
	return nil
}
