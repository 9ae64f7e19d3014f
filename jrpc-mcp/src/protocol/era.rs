//! Reads a request's era from its `_meta`; checks what a modern request must carry, in the order
//! the specification ranks its errors; and defines the error codes MCP adds.
//!
//! | `params._meta` | era | checks, first failure answered |
//! | --- | --- | --- |
//! | names `io.modelcontextprotocol/protocolVersion` | modern | `clientCapabilities` an object, `logLevel` (if any) a level: else `-32602`; the revision one this crate speaks: else `-32022` with `supported` and `requested` |
//! | anything else (none, not an object, no revision) | legacy | none here: the legacy handlers read what they need |
//!
//! Over HTTP the transport adds its header checks around these (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`: `-32020`); over stdio these are all.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::types::LogLevel;
use super::version::{self, MODERN_VERSIONS};
use jrpc_runtime::wire::{ErrorCode, RpcError};

/// Names the `_meta` key of the protocol revision of a modern request.
pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Names the `_meta` key of the client's capabilities for this request.
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Names the `_meta` key of the lowest level of log messages the client wants for this request.
pub(crate) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Names the result `_meta` key of the server's name and version.
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Names the notification `_meta` key of the listen request a notification belongs to.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Says with `-32020` that an HTTP header is missing or disagrees with the body.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's headers"))]
pub(crate) const HEADER_MISMATCH: ErrorCode = ErrorCode::new(-32020);
/// Says with `-32021` that handling the request needs a capability the client did not declare.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "HTTP answers it 400")
)]
pub(crate) const MISSING_CAPABILITY: ErrorCode = ErrorCode::new(-32021);
/// Says with `-32022` that the request's protocol revision is not one this server speaks.
pub(crate) const UNSUPPORTED_VERSION: ErrorCode = ErrorCode::new(-32022);
/// Says with `-32002` that a resource was not found, in the legacy era (the modern era answers
/// `-32602`).
pub(crate) const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode::new(-32002);

/// Holds the members of a request's `params._meta` that MCP reads, as written (their types are
/// checked by [`check`](Self::check)). A `_meta` that is not an object reads as empty: legacy.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestMeta {
    pub(crate) version: Option<Value>,
    pub(crate) capabilities: Option<Value>,
    pub(crate) client_info: Option<Value>,
    pub(crate) log_level: Option<Value>,
    pub(crate) progress_token: Option<Value>,
}

#[derive(Default, Deserialize)]
struct Members {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    version: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    capabilities: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    client_info: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    log_level: Option<Value>,
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Value>,
}

impl<'de> Deserialize<'de> for RequestMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let members = match Value::deserialize(deserializer)? {
            value @ Value::Object(_) => Members::deserialize(value).unwrap_or_default(),
            _ => Members::default(),
        };
        Ok(Self {
            version: members.version,
            capabilities: members.capabilities,
            client_info: members.client_info,
            log_level: members.log_level,
            progress_token: members.progress_token,
        })
    }
}

/// Holds a modern request's `_meta`, checked.
#[derive(Clone, Debug)]
pub(crate) struct Modern {
    pub(crate) version: &'static str,
    pub(crate) capabilities: Value,
    pub(crate) client_info: Option<Value>,
    pub(crate) log_level: Option<LogLevel>,
}

impl RequestMeta {
    /// Reads the `_meta` of `params`; empty when there is none.
    #[cfg_attr(
        not(feature = "http"),
        allow(dead_code, reason = "HTTP reads it before dispatch")
    )]
    pub(crate) fn of(params: Option<&RawValue>) -> Self {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(rename = "_meta", default)]
            meta: Option<RequestMeta>,
        }
        params
            .and_then(|raw| serde_json::from_str::<Holder>(raw.get()).ok())
            .and_then(|holder| holder.meta)
            .unwrap_or_default()
    }

    /// Returns whether the request is modern: its `_meta` names a protocol revision.
    pub(crate) fn is_modern(&self) -> bool {
        self.version.is_some()
    }

    /// Returns the revision named, when it is a string.
    pub(crate) fn version(&self) -> Option<&str> {
        self.version.as_ref().and_then(Value::as_str)
    }

    /// Checks a modern request's members: `-32602` naming what is missing or ill-typed.
    ///
    /// # Errors
    ///
    /// `-32602` when the revision is missing or not a string, the capabilities are missing or
    /// not an object, or `logLevel` names no level.
    pub(crate) fn check_members(&self) -> Result<Option<LogLevel>, RpcError> {
        if self.version().is_none() {
            return Err(invalid(&format!(
                "`_meta` must name the protocol revision as a string in `{PROTOCOL_VERSION}`"
            )));
        }
        if !self.capabilities.as_ref().is_some_and(Value::is_object) {
            return Err(invalid(&format!(
                "`_meta` must carry the client's capabilities as an object in `{CLIENT_CAPABILITIES}` (`{{}}` for none)"
            )));
        }
        match &self.log_level {
            None => Ok(None),
            Some(level) => level
                .as_str()
                .and_then(|text| text.parse().ok())
                .map(Some)
                .ok_or_else(|| invalid(&format!("`{LOG_LEVEL}` must name a log level"))),
        }
    }

    /// Checks a modern request: its members, then its revision.
    ///
    /// # Errors
    ///
    /// As [`check_members`](Self::check_members), then `-32022` for a revision this crate does
    /// not speak.
    pub(crate) fn check(&self) -> Result<Modern, RpcError> {
        let log_level = self.check_members()?;
        let requested = self.version().unwrap_or_default();
        let version = version::modern(requested).ok_or_else(|| unsupported_version(requested))?;
        Ok(Modern {
            version,
            capabilities: self.capabilities.clone().unwrap_or_default(),
            client_info: self.client_info.clone(),
            log_level,
        })
    }
}

/// `-32602` for a `_meta` that does not hold what a modern request must.
fn invalid(why: &str) -> RpcError {
    RpcError::invalid_params(why)
}

/// Returns `-32022`, with the revisions this crate speaks per request and the one asked for.
pub(crate) fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(UNSUPPORTED_VERSION, "Unsupported protocol version")
        .with_data(&serde_json::json!({ "supported": MODERN_VERSIONS, "requested": requested }))
}

/// Returns `-32021`, naming the capabilities the request needs (a `ClientCapabilities` object).
pub(crate) fn missing_capability(required: Value) -> RpcError {
    RpcError::new(MISSING_CAPABILITY, "Missing required client capability")
        .with_data(&serde_json::json!({ "requiredCapabilities": required }))
}

/// Returns `-32020`, saying which header and why.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's headers"))]
pub(crate) fn header_mismatch(why: &str) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(params: Value) -> RequestMeta {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        RequestMeta::of(Some(&raw))
    }

    #[test]
    fn the_era_is_read_from_the_revision() {
        assert!(!meta(json!({})).is_modern());
        assert!(!meta(json!({ "_meta": "x" })).is_modern());
        assert!(!meta(json!([1, 2])).is_modern());
        assert!(!meta(json!({ "_meta": { "progressToken": 1 } })).is_modern());
        assert_eq!(
            meta(json!({ "_meta": { "progressToken": "t" } })).progress_token,
            Some(json!("t"))
        );
        assert!(meta(json!({ "_meta": { PROTOCOL_VERSION: 7 } })).is_modern());
        assert!(RequestMeta::of(None).version.is_none());
    }

    #[test]
    fn a_modern_request_is_checked_in_order() {
        let code = |params: Value| meta(params).check().unwrap_err().code().code();
        assert_eq!(code(json!({ "_meta": { PROTOCOL_VERSION: 7 } })), -32602);
        assert_eq!(code(json!({ "_meta": { PROTOCOL_VERSION: "v9" } })), -32602);
        let caps = json!({});
        assert_eq!(
            code(
                json!({ "_meta": { PROTOCOL_VERSION: "v9", CLIENT_CAPABILITIES: caps, LOG_LEVEL: "loud" } })
            ),
            -32602
        );
        let err = meta(json!({ "_meta": { PROTOCOL_VERSION: "v9", CLIENT_CAPABILITIES: caps } }))
            .check()
            .unwrap_err();
        assert_eq!(err.code().code(), -32022);
        assert_eq!(
            err.data_as::<Value>().unwrap().unwrap(),
            json!({ "supported": ["2026-07-28"], "requested": "v9" })
        );
        let ok = meta(json!({ "_meta": {
            PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: { "sampling": {} }, LOG_LEVEL: "info"
        } }))
        .check()
        .unwrap();
        assert_eq!(ok.version, "2026-07-28");
        assert_eq!(ok.log_level, Some(LogLevel::Info));
        assert_eq!(ok.capabilities, json!({ "sampling": {} }));
    }
}
