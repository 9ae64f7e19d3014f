//! Names the error codes the Language Server Protocol adds to JSON-RPC's.
//!
//! A handler answers them as any error (`RpcError::new(codes::CONTENT_MODIFIED, "...")`): the
//! LSP range `-32899..=-32800` is outside JSON-RPC's reserved one, and `-32002`/`-32001` are in
//! its server range, so the dispatcher sends each as it is.

use jrpc_runtime::ErrorCode;

/// Says a request came before `initialize` (`ServerNotInitialized`; the lifecycle answers it).
pub const SERVER_NOT_INITIALIZED: ErrorCode = ErrorCode::new(-32002);
/// Says the error is of no known kind (`UnknownErrorCode`).
pub const UNKNOWN_ERROR_CODE: ErrorCode = ErrorCode::new(-32001);
/// Says the request was valid but failed, the message saying why (`RequestFailed`).
pub const REQUEST_FAILED: ErrorCode = ErrorCode::new(-32803);
/// Says the server cancelled a request that allows it (`ServerCancelled`).
pub const SERVER_CANCELLED: ErrorCode = ErrorCode::new(-32802);
/// Says the document changed under the request, whose result would be stale
/// (`ContentModified`).
pub const CONTENT_MODIFIED: ErrorCode = ErrorCode::new(-32801);
/// Says the client cancelled the request with `$/cancelRequest` (`RequestCancelled`).
pub const REQUEST_CANCELLED: ErrorCode = ErrorCode::new(-32800);
