//! Serves the methods of a session's life, by era: the legacy `initialize`, `ping` and the
//! notifications around them; the modern `server/discover`.
//!
//! | method | legacy | modern |
//! | --- | --- | --- |
//! | `initialize` | agrees on a legacy revision (the client's when spoken here, else the newest), records the client's capabilities on its session or connection, states the server's | `-32601`: removed |
//! | `ping` | `{}` | `-32601`: removed |
//! | `logging/setLevel` | `{}`; log messages below the level are not sent on the session (or connection) | `-32601`: removed (a request asks for its logs in its `_meta`) |
//! | `server/discover` | `-32602`: a client that probes it falls back to `initialize` | the revisions spoken per request, the capabilities, the server's name in `_meta` |
//! | `notifications/initialized`, `notifications/cancelled`, `notifications/roots/list_changed` | taken, nothing to answer | taken |

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::changes;
use super::request::{LegacyState, McpRequest, meta_error};
use super::{Core, Params, decode, route};
use crate::protocol::era::RequestMeta;
use crate::protocol::types::LogLevel;
use crate::protocol::version::{self, MODERN_VERSIONS};
use crate::store::SessionChange;
use jrpc_runtime::RegisterError;
use jrpc_runtime::wire::RpcError;
use jrpc_runtime::{Context, Methods};

/// Registers the methods of a session's life.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "initialize", initialize)?;
    route(methods, core, "ping", ping)?;
    route(methods, core, "server/discover", discover)?;
    route(methods, core, "logging/setLevel", set_level)?;
    for notice in [
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/roots/list_changed",
    ] {
        methods.register_notification(notice, &[], |_: Params, _| async {})?;
    }
    Ok(())
}

/// `initialize`'s params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(default)]
    capabilities: Option<Value>,
    #[serde(default)]
    client_info: Option<Value>,
    #[serde(rename = "_meta", default)]
    meta: RequestMeta,
}

async fn initialize(core: Arc<Core>, params: Params, ctx: Context) -> Result<Value, RpcError> {
    let params: InitializeParams = decode(&params)?;
    if params.meta.is_modern() {
        let req = McpRequest::read(params.meta, &ctx, &core)?;
        return Err(removed("initialize", req.protocol_version()));
    }
    let version = version::negotiate(params.protocol_version.as_deref());
    if let Some(state) = ctx.extension::<Arc<LegacyState>>() {
        let (capabilities, client_info) = (params.capabilities, params.client_info);
        match state.hooks() {
            // The store keeps it, and has the GET stream follow the lists wherever it is.
            Some(hooks) => {
                state.initialized(version, capabilities.clone(), client_info.clone(), None);
                let change = SessionChange::Initialized {
                    version: version.to_owned(),
                    capabilities,
                    client_info,
                };
                hooks.changed(change).await?;
            }
            None => {
                let push = state.initialized(version, capabilities, client_info, ctx.peer());
                if let Some(push) = push {
                    changes::follow_lists(&core, &push);
                }
            }
        }
    }
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": core.capabilities,
        "serverInfo": core.info,
    });
    if let Some(instructions) = &core.instructions {
        result["instructions"] = instructions.as_str().into();
    }
    Ok(result)
}

/// `logging/setLevel`'s params.
#[derive(Deserialize)]
struct SetLevel {
    level: LogLevel,
}

async fn set_level(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<Map<String, Value>, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    McpRequest::read(meta, &ctx, &core)?.legacy_only("logging/setLevel")?;
    let SetLevel { level } = decode(&params)?;
    if let Some(state) = ctx.extension::<Arc<LegacyState>>() {
        state.set_log_level(level);
        if let Some(hooks) = state.hooks() {
            hooks.changed(SessionChange::LogLevel(level)).await?;
        }
    }
    Ok(Map::new())
}

/// Holds the params of a method that reads nothing but `_meta`.
#[derive(Deserialize)]
pub(crate) struct MetaOnly {
    #[serde(rename = "_meta", default)]
    pub(crate) meta: RequestMeta,
}

async fn ping(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<Map<String, Value>, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    McpRequest::read(meta, &ctx, &core)?.legacy_only("ping")?;
    Ok(Map::new())
}

async fn discover(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<impl Serialize, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    if !meta.is_modern() {
        return Err(meta_error(
            "`server/discover` is a method of revision 2026-07-28",
        ));
    }
    let req = McpRequest::read(meta, &ctx, &core)?;
    let mut body = Map::new();
    body.insert("supportedVersions".into(), json!(MODERN_VERSIONS));
    body.insert("capabilities".into(), core.modern_capabilities.clone());
    if let Some(instructions) = &core.instructions {
        body.insert("instructions".into(), instructions.as_str().into());
    }
    Ok(req.stamp(body, Some(core.hints.discover)))
}

/// Returns `-32601` for a method the modern era removed.
pub(crate) fn removed(method: &str, version: &str) -> RpcError {
    RpcError::method_not_found()
        .with_data(&format!("`{method}` is not a method of revision {version}"))
        .with_reserved_code()
}
