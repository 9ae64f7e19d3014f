//! W3C trace context: the caller's trace, as `traceparent` and `tracestate` carry it.
//!
//! A transport that reads the two values (HTTP and WebSocket-upgrade headers, MCP's
//! `params._meta`) parses them with [`TraceContext::parse`] and hands the result to the handler
//! as an extension of its [`Context`](crate::dispatch::Context); a caller writes them back out
//! with [`TraceContext::traceparent`] and [`TraceContext::tracestate`].
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

use std::fmt;

/// The most characters of `tracestate` kept, as the recommendation asks every vendor to
/// propagate at least.
const MAX_STATE_LEN: usize = 512;
/// The most members of `tracestate`.
const MAX_STATE_MEMBERS: usize = 32;
/// The length of a version-00 `traceparent`.
const TRACEPARENT_LEN: usize = 55;

/// A trace's id: 16 bytes, written as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(pub u128);

/// A span's id: 8 bytes, written as 16 lowercase hex digits.
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

/// The trace a call belongs to, and the span that made it (W3C `traceparent`), with the
/// vendors' state that travels beside it (`tracestate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: TraceId,
    parent_id: SpanId,
    flags: u8,
    state: Option<Box<str>>,
}

impl TraceContext {
    /// A context for `trace_id` whose calling span is `parent_id`, sampled or not.
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

    /// The trace's id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The id of the span that made the call.
    pub fn parent_id(&self) -> SpanId {
        self.parent_id
    }

    /// Whether the caller recorded its span (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The vendors' state, as received.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The same trace, with `span` as the calling span: what a handler sends on the calls it
    /// makes from within `span`. The state travels on unchanged.
    pub fn child(&self, span: SpanId) -> Option<Self> {
        (span.0 != 0).then(|| Self {
            parent_id: span,
            ..self.clone()
        })
    }

    /// The `traceparent` value, version `00`.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.parent_id, self.flags)
    }
}

/// The value of a field of lowercase hex digits; `None` for any other byte.
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

    /// The recommendation's own example.
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
