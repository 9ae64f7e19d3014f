//! Implements the `otel` feature: W3C trace context to and from OpenTelemetry, through
//! `tracing-opentelemetry`'s span extension.
//!
//! A request's span gets the caller's context as its OpenTelemetry parent (a remote parent, so an
//! exporter shows the server's span under the client's). A call made from within a span that
//! OpenTelemetry knows (the client's own `call` span, when enabled, or the application's) carries
//! that span's context. Both do nothing without an `OpenTelemetryLayer` in the subscriber: the
//! spans then have no OpenTelemetry context, and the trace served is sent instead.

use opentelemetry::trace::{
    SpanContext, SpanId as OtelSpanId, TraceContextExt as _, TraceFlags, TraceId as OtelTraceId,
    TraceState,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::trace::{SpanId, TraceContext, TraceId};

/// Makes `trace`, the caller's, the OpenTelemetry parent of `span`.
pub(super) fn set_parent(span: &tracing::Span, trace: &TraceContext) {
    let state = trace
        .tracestate()
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    let remote = SpanContext::new(
        OtelTraceId::from_bytes(trace.trace_id().0.to_be_bytes()),
        OtelSpanId::from_bytes(trace.parent_id().0.to_be_bytes()),
        TraceFlags::new(trace.flags()),
        true,
        state,
    );
    // Refused only for a span OpenTelemetry does not know (no layer): nothing to parent then.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// Returns the OpenTelemetry context of the current span, when it has a valid one.
pub(super) fn current() -> Option<TraceContext> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let current = span.span_context();
    if !current.is_valid() {
        return None;
    }
    let trace_id = TraceId(u128::from_be_bytes(current.trace_id().to_bytes()));
    let span_id = SpanId(u64::from_be_bytes(current.span_id().to_bytes()));
    let trace = TraceContext::new(trace_id, span_id, current.is_sampled())?;
    let state = current.trace_state().header();
    Some(trace.with_state(&state))
}
