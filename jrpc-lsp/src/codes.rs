//! Names the error codes the Language Server Protocol adds to JSON-RPC's.
//!
//! A handler answers them as any error (`RpcError::new(codes::CONTENT_MODIFIED, "...")`): the
//! LSP range `-32899..=-32800` is outside JSON-RPC's reserved one, and `-32002`/`-32001` are in
//! its server range, so the dispatcher sends each as it is.

use jrpc_runtime::ErrorCode;

/// `ServerNotInitialized`: a request came before `initialize` (the lifecycle answers it).
pub const SERVER_NOT_INITIALIZED: ErrorCode = ErrorCode::new(-32002);
/// `UnknownErrorCode`.
pub const UNKNOWN_ERROR_CODE: ErrorCode = ErrorCode::new(-32001);
/// `RequestFailed`: the request was valid but failed (the message says why).
pub const REQUEST_FAILED: ErrorCode = ErrorCode::new(-32803);
/// `ServerCancelled`: the server cancelled a request that says it may be.
pub const SERVER_CANCELLED: ErrorCode = ErrorCode::new(-32802);
/// `ContentModified`: the document changed under the request; its result would be stale.
pub const CONTENT_MODIFIED: ErrorCode = ErrorCode::new(-32801);
/// `RequestCancelled`: the client cancelled the request (`$/cancelRequest`).
pub const REQUEST_CANCELLED: ErrorCode = ErrorCode::new(-32800);
