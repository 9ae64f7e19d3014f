//! Carries W3C trace context: the caller's trace, as `traceparent` and `tracestate` carry it.
//!
//! A transport that reads the two values (HTTP and WebSocket-upgrade headers, MCP's
//! `params._meta`) parses them with [`TraceContext::parse`] and keeps the result on the
//! handler's [`Context`](crate::dispatch::Context) ([`Context::trace`](crate::dispatch::Context::trace)),
//! only when the request carried one. The request's span then has the field `trace_id`, and its
//! DEBUG line `trace_id=`; with the `otel` feature the span's OpenTelemetry parent is the caller's
//! span (through `tracing-opentelemetry`).
//!
//! While a handler of such a request runs, its trace is the one being served: the clients it
//! calls through (the HTTP client's `traceparent` header, MCP's `params._meta` on a connection
//! that speaks MCP) send [`TraceContext::outgoing`], the same trace with a new span id. With
//! `otel`, a current span that OpenTelemetry knows comes first: its own context is sent. Work a
//! handler spawns runs outside that: take `ctx.trace()` along.
//!
//! Parsing follows the W3C Trace Context recommendation, level 1:
//!
//! | input | taken as |
//! | --- | --- |
//! | version `00`: exactly 55 characters, lowercase hex fields joined by `-` | the context |
//! | a later version: at least 55 characters, a `-` after the flags when longer | its first four fields, read as version `00` (the recommendation's forward compatibility) |
//! | version `ff`, uppercase hex, a field of the wrong length | no context: the call starts a new trace |
//! | trace id or parent id all zeros | no context |
//! | `tracestate` without a valid `traceparent` | ignored |
//! | `tracestate` over 512 characters, or with more than 32 members | dropped, the `traceparent` kept |

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// Caps the characters of `tracestate` kept, as the recommendation asks every vendor to
/// propagate at least.
const MAX_STATE_LEN: usize = 512;
/// Caps the members of `tracestate`.
const MAX_STATE_MEMBERS: usize = 32;
/// Gives the length of a version-00 `traceparent`.
const TRACEPARENT_LEN: usize = 55;

/// Identifies a trace: 16 bytes, written as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(pub u128);

/// Identifies a span: 8 bytes, written as 16 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpanId(pub u64);

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Names the trace a call belongs to, and the span that made it (W3C `traceparent`), with the
/// vendors' state that travels beside it (`tracestate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: TraceId,
    parent_id: SpanId,
    flags: u8,
    state: Option<Box<str>>,
}

impl TraceContext {
    /// Returns a context for `trace_id` whose calling span is `parent_id`, sampled or not.
    ///
    /// Returns `None` when either id is zero, which the recommendation makes invalid.
    pub fn new(trace_id: TraceId, parent_id: SpanId, sampled: bool) -> Option<Self> {
        (trace_id.0 != 0 && parent_id.0 != 0).then_some(Self {
            trace_id,
            parent_id,
            flags: u8::from(sampled),
            state: None,
        })
    }

    /// Reads a `traceparent` value, and the `tracestate` beside it when there is one.
    ///
    /// Returns `None` when `traceparent` is not valid (see the module's table): the call then
    /// starts a trace of its own, as the recommendation says.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let value = traceparent.trim_matches([' ', '\t']).as_bytes();
        if value.len() < TRACEPARENT_LEN {
            return None;
        }
        let version = hex_field(&value[0..2])?;
        if version == 0xff || (version == 0 && value.len() != TRACEPARENT_LEN) {
            return None;
        }
        if value.len() > TRACEPARENT_LEN && value[TRACEPARENT_LEN] != b'-' {
            return None;
        }
        if value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
            return None;
        }
        let trace_id = TraceId(hex_field(&value[3..35])?);
        let parent_id = SpanId(u64::try_from(hex_field(&value[36..52])?).ok()?);
        let flags = u8::try_from(hex_field(&value[53..55])?).ok()?;
        let mut context = Self::new(trace_id, parent_id, false)?;
        context.flags = flags;
        context.state = tracestate.and_then(valid_state).map(Box::from);
        Some(context)
    }

    /// Returns the trace's id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// Returns the id of the span that made the call.
    pub fn parent_id(&self) -> SpanId {
        self.parent_id
    }

    /// Returns whether the caller recorded its span (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// Returns the vendors' state, as received.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// Returns the trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Returns the same context with `state` as its `tracestate` (none when `state` is out of the
    /// recommendation's bounds, or empty).
    #[must_use]
    pub fn with_state(mut self, state: &str) -> Self {
        self.state = valid_state(state).map(Box::from);
        self
    }

    /// Returns the same trace, with `span` as the calling span: what a handler sends on the calls
    /// it makes from within `span`. The state travels on unchanged.
    pub fn child(&self, span: SpanId) -> Option<Self> {
        (span.0 != 0).then(|| Self {
            parent_id: span,
            ..self.clone()
        })
    }

    /// Returns the `traceparent` value, version `00`.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.parent_id, self.flags)
    }
}

tokio::task_local! {
    /// Holds the trace of the request whose handler runs, for the calls it makes.
    static SERVING: TraceContext;
}

impl TraceContext {
    /// Starts a new trace: random trace and span ids (the span being the caller's own), for a
    /// client that begins one (see [`scope`](Self::scope)).
    pub fn root(sampled: bool) -> Self {
        let trace_id = (u128::from(new_span_id().0) << 64) | u128::from(new_span_id().0);
        Self {
            trace_id: TraceId(trace_id),
            parent_id: new_span_id(),
            flags: u8::from(sampled),
            state: None,
        }
    }

    /// Runs `work` in this trace, as a handler of a request that carried it runs: the calls it
    /// makes carry this trace with a new span id each (see [`outgoing`](Self::outgoing)).
    ///
    /// ```
    /// use jrpc_runtime::TraceContext;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let trace = TraceContext::root(true);
    /// let id = trace.trace_id();
    /// let sent = trace.scope(async { TraceContext::outgoing() }).await.unwrap();
    /// assert_eq!(sent.trace_id(), id);
    /// assert_eq!(TraceContext::outgoing(), None, "outside the scope");
    /// # });
    /// ```
    pub fn scope<F: Future>(self, work: F) -> impl Future<Output = F::Output> {
        SERVING.scope(self, work)
    }

    /// Returns the trace context a call made now carries: with the `otel` feature, that of the
    /// current span when OpenTelemetry knows it; else, while the handler of a request that carried
    /// a trace runs, that trace with a new span id (see [Trace context](crate::guide::tracing));
    /// else `None`.
    pub fn outgoing() -> Option<Self> {
        #[cfg(feature = "otel")]
        if let Some(current) = super::otel::current() {
            return Some(current);
        }
        SERVING
            .try_with(|serving| serving.child(new_span_id()))
            .ok()
            .flatten()
    }
}

/// MCP's `params._meta`: where an MCP call carries its caller's trace.
impl TraceContext {
    /// Returns `params` carrying this trace in `_meta`: an object without `_meta` gets one, absent
    /// params become `{"_meta": ...}`; params that are an array, or have a `_meta` of their own,
    /// are left as they are.
    pub(crate) fn meta_in(&self, params: Option<Box<RawValue>>) -> Option<Box<RawValue>> {
        let mut meta = format!(r#"{{"traceparent":"{}""#, self.traceparent());
        if let Some(state) = self.tracestate()
            && let Ok(state) = serde_json::to_string(state)
        {
            meta.push_str(",\"tracestate\":");
            meta.push_str(&state);
        }
        meta.push('}');
        let text = match &params {
            None => Some(format!(r#"{{"_meta":{meta}}}"#)),
            Some(given) => given
                .get()
                .trim_start()
                .strip_prefix('{')
                .filter(|_| {
                    let keys =
                        serde_json::from_str::<HashMap<Cow<'_, str>, IgnoredAny>>(given.get());
                    keys.is_ok_and(|keys| !keys.contains_key("_meta"))
                })
                .map(|members| {
                    let comma = if members.trim_start().starts_with('}') {
                        ""
                    } else {
                        ","
                    };
                    format!(r#"{{"_meta":{meta}{comma}{members}"#)
                }),
        };
        match text.and_then(|text| RawValue::from_string(text).ok()) {
            Some(with_meta) => Some(with_meta),
            None => params,
        }
    }
}

/// Runs `call` with `trace` as the trace being served (for [`TraceContext::outgoing`]).
pub(crate) fn serving<F: Future>(
    trace: &TraceContext,
    call: F,
) -> tokio::task::futures::TaskLocalFuture<TraceContext, F> {
    SERVING.scope(trace.clone(), call)
}

/// Makes `trace` the caller of a request's (enabled) `span`: its `trace_id` field, and with
/// `otel` its OpenTelemetry parent.
pub(super) fn parent(span: &tracing::Span, trace: &TraceContext) {
    span.record("trace_id", tracing::field::display(trace.trace_id()));
    #[cfg(feature = "otel")]
    super::otel::set_parent(span, trace);
}

/// Returns a span id for an outgoing call: random enough to be told apart within a trace (a
/// xorshift on a per-thread seed from the standard library's random hasher keys), never zero.
fn new_span_id() -> SpanId {
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            use std::hash::{BuildHasher as _, Hasher as _};
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(0x9e37_79b9_7f4a_7c15);
            hasher.finish() | 1
        });
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        SpanId(x.wrapping_mul(0x2545_f491_4f6c_dd1d).max(1))
    })
}

/// Reads the value of a field of lowercase hex digits; `None` for any other byte.
fn hex_field(field: &[u8]) -> Option<u128> {
    field.iter().try_fold(0u128, |value, &byte| {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            _ => return None,
        };
        Some((value << 4) | u128::from(digit))
    })
}

/// `state` if it is within the recommendation's bounds, its members `key=value`.
fn valid_state(state: &str) -> Option<&str> {
    let state = state.trim_matches([' ', '\t']);
    if state.is_empty() || state.len() > MAX_STATE_LEN || !state.is_ascii() {
        return None;
    }
    let mut members = 0;
    for member in state.split(',').map(|m| m.trim_matches([' ', '\t'])) {
        if member.is_empty() {
            continue;
        }
        members += 1;
        let (key, value) = member.split_once('=')?;
        if key.is_empty() || value.is_empty() || members > MAX_STATE_MEMBERS {
            return None;
        }
    }
    (members > 0).then_some(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds the recommendation's own example.
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_the_recommendations_example() {
        let context = TraceContext::parse(EXAMPLE, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.parent_id().to_string(), "00f067aa0ba902b7");
        assert!(context.sampled());
        assert_eq!(context.tracestate(), Some("congo=t61rcWkgMzE"));
        assert_eq!(context.traceparent(), EXAMPLE);
    }

    #[test]
    fn refuses_what_the_recommendation_refuses() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn reads_a_later_version_by_its_first_fields() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes-next";
        let context = TraceContext::parse(later, None).unwrap();
        assert!(!context.sampled());
        assert_eq!(
            context.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        );
    }

    #[test]
    fn drops_a_state_out_of_bounds_and_keeps_the_parent() {
        let many = vec!["k=v"; MAX_STATE_MEMBERS + 1].join(",");
        let long = format!("k={}", "v".repeat(MAX_STATE_LEN));
        for bad in ["", "novalue", "=v", many.as_str(), long.as_str(), "k=vé"] {
            let context = TraceContext::parse(EXAMPLE, Some(bad)).unwrap();
            assert_eq!(context.tracestate(), None, "{bad:?}");
        }
        let context = TraceContext::parse(EXAMPLE, Some(" a=1 , ,b=2")).unwrap();
        assert_eq!(context.tracestate(), Some("a=1 , ,b=2"));
    }

    #[test]
    fn a_child_keeps_the_trace_and_names_its_span() {
        let context = TraceContext::parse(EXAMPLE, Some("a=1")).unwrap();
        let child = context.child(SpanId(0xabcdef)).unwrap();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_eq!(
            child.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000abcdef-01"
        );
        assert_eq!(child.tracestate(), Some("a=1"));
        assert_eq!(context.child(SpanId(0)), None);
        assert_eq!(TraceContext::new(TraceId(0), SpanId(1), true), None);
    }
}
