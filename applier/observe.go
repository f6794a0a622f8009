package applier

import "context"

type observerKey struct{}

// WithObserver returns a context under which Apply calls observe after each
// request it sends to the FE (each statement for doris, each batch for native)
// with the batch's catalog and the request's outcome (nil = success), for
// metrics. Only the applier knows how many requests a batch became, and only
// its caller (the agent) has the metrics: the observer travels with the call,
// as net/http/httptrace's ClientTrace does, so that neither is built from the
// other.
func WithObserver(ctx context.Context, observe func(catalog string, err error)) context.Context {
	return context.WithValue(ctx, observerKey{}, observe)
}

// observe reports one request to ctx's observer, if any.
func observe(ctx context.Context, catalog string, err error) {
	if f, ok := ctx.Value(observerKey{}).(func(string, error)); ok && f != nil {
		f(catalog, err)
	}
}
