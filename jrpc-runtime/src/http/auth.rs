//! Authenticates HTTP requests and WebSocket upgrades by bearer token, before a body is read.

use std::sync::Arc;

use ::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use ::http::{HeaderMap, HeaderValue, StatusCode, Uri};

use super::reply::ResponseBody;
use crate::dispatch::Context;
use crate::server::refusal;

/// Verifies a token: the identity to put in the request's context, or `None`.
type Verify = dyn Fn(&str) -> Option<Grant> + Send + Sync;

/// Names the reply refusing a request.
pub(crate) type Refusal = ::http::Response<ResponseBody>;

/// Authenticates by bearer token for
/// [`HttpServerBuilder::bearer_auth`](super::HttpServerBuilder::bearer_auth)
/// (and MCP's endpoint): every `POST` (SSE answers included) and every WebSocket upgrade must
/// carry `Authorization: Bearer <token>` that the verifier takes, else it is answered `401` with
/// `WWW-Authenticate: Bearer` before its body is read (a token given and refused adds
/// `error="invalid_token"`, as RFC 6750 has it). The identity the verifier yields is put in the
/// request's [`Context`] as an extension (over WebSocket, the context of every call on the
/// connection), where handlers and [`Authorize`](crate::layers::Authorize) read it.
///
/// A verifier is a fixed set of tokens, each with its identity ([`tokens`](Self::tokens),
/// compared in constant time), or a function ([`verifier`](Self::verifier): a JWT check, a
/// lookup in a table loaded at start-up); it runs on the connection's task, so it should not
/// block.
///
/// ```
/// use jrpc_runtime::http::{BearerAuth, HttpServer};
/// use jrpc_runtime::Methods;
///
/// #[derive(Clone, Debug, PartialEq)]
/// enum Access { Full, Read }
///
/// let auth = BearerAuth::tokens([("s3cret", Access::Full), ("r3ad", Access::Read)]);
/// let server = HttpServer::builder(Methods::new()).bearer_auth(auth).build()?;
/// # drop(server);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct BearerAuth {
    verify: Arc<Verify>,
    /// `resource_metadata="..."` in the challenge: the URL of the protected resource's metadata
    /// (RFC 9728).
    resource_metadata: Option<Box<str>>,
}

/// Holds an identity to add to a request's context (`Clone`, so that it may travel in a request's
/// extensions).
#[derive(Clone)]
pub(crate) struct Grant(Arc<dyn Fn(Context) -> Context + Send + Sync>);

impl Grant {
    /// Returns the grant of `identity`.
    fn of<T: Clone + Send + Sync + 'static>(identity: T) -> Self {
        Self(Arc::new(move |ctx: Context| {
            ctx.with_extension(identity.clone())
        }))
    }

    /// Returns `ctx` with the identity in it.
    pub(crate) fn apply(self, ctx: Context) -> Context {
        (self.0)(ctx)
    }
}

impl BearerAuth {
    /// Takes the tokens of `tokens`, each giving its identity (any `Clone + Send + Sync` type;
    /// two tokens may give the same). Every token given is compared with each, in time that
    /// does not depend on where they differ.
    pub fn tokens<I, S, T>(tokens: I) -> Self
    where
        I: IntoIterator<Item = (S, T)>,
        S: Into<String>,
        T: Clone + Send + Sync + 'static,
    {
        // Each token's grant is made once, and shared by its requests.
        let tokens: Vec<(Box<[u8]>, Grant)> = tokens
            .into_iter()
            .map(|(token, identity)| (token.into().into_bytes().into(), Grant::of(identity)))
            .collect();
        let verify = move |given: &str| {
            let mut found = None;
            for (token, grant) in &tokens {
                if same(token, given.as_bytes()) {
                    found = Some(grant);
                }
            }
            found.cloned()
        };
        Self::with(verify)
    }

    /// Takes the tokens `verify` gives an identity for (any `Clone + Send + Sync` type).
    pub fn verifier<F, T>(verify: F) -> Self
    where
        F: Fn(&str) -> Option<T> + Send + Sync + 'static,
        T: Clone + Send + Sync + 'static,
    {
        Self::with(move |token: &str| verify(token).map(Grant::of))
    }

    fn with(verify: impl Fn(&str) -> Option<Grant> + Send + Sync + 'static) -> Self {
        Self {
            verify: Arc::new(verify),
            resource_metadata: None,
        }
    }

    /// Adds `resource_metadata="<url>"` to every challenge: where a client finds the protected
    /// resource's metadata (RFC 9728), and from it the authorization servers to get a token
    /// from. An MCP server's `protected_resource` setting sets it.
    #[must_use]
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into().into_boxed_str());
        self
    }

    /// Returns the identity of a request with these headers, or the `401` that refuses it
    /// (boxed: a refusal is rare, and the `Result` stays small on the way that serves).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<Grant, Box<Refusal>> {
        match bearer_token(headers) {
            Some(token) => self.verify_token(token),
            None => Err(self.challenge(None, "send `Authorization: Bearer <token>`")),
        }
    }

    /// Returns the identity of a WebSocket upgrade, from its `Authorization` header or, where a
    /// browser's `WebSocket` cannot send one, its `access_token` query parameter (RFC 6750,
    /// section 2.3); or the `401` that refuses it. The token is never logged.
    pub(crate) fn check_upgrade(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
    ) -> Result<Grant, Box<Refusal>> {
        if let Some(token) = bearer_token(headers) {
            return self.verify_token(token);
        }
        let query = uri.query().unwrap_or_default().as_bytes();
        let token = form_urlencoded::parse(query).find(|(name, _)| name == "access_token");
        match token {
            Some((_, token)) => self.verify_token(&token),
            None => Err(self.challenge(
                None,
                "send `Authorization: Bearer <token>`, or the token as `access_token` in the query",
            )),
        }
    }

    /// Returns the identity `token` gives, or the `401` that refuses it.
    fn verify_token(&self, token: &str) -> Result<Grant, Box<Refusal>> {
        if token.is_empty() {
            return Err(self.challenge(Some("invalid_request"), "the bearer token is empty"));
        }
        (self.verify)(token)
            .ok_or_else(|| self.challenge(Some("invalid_token"), "the bearer token is not taken"))
    }

    /// Returns `401` with the challenge, `error="<error>"` in it when a token was given.
    #[cold]
    fn challenge(&self, error: Option<&str>, why: &str) -> Box<Refusal> {
        let mut value = String::from("Bearer");
        let mut params = Vec::new();
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
        }
        if let Some(url) = &self.resource_metadata {
            params.push(format!("resource_metadata=\"{url}\""));
        }
        if !params.is_empty() {
            value.push(' ');
            value.push_str(&params.join(", "));
        }
        let mut res = refusal(StatusCode::UNAUTHORIZED, why);
        let value =
            HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        res.headers_mut().insert(WWW_AUTHENTICATE, value);
        Box::new(res)
    }
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth")
            .field("resource_metadata", &self.resource_metadata)
            .finish_non_exhaustive()
    }
}

/// Returns the token of `Authorization: Bearer <token>` (the scheme in any case); `None` without
/// the header, or with another scheme. Read as bytes: the header is there on every request.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.as_bytes();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first().is_some_and(|b| *b != b' ') {
        return None;
    }
    std::str::from_utf8(rest.trim_ascii()).ok()
}

/// Returns whether `a` and `b` are equal, in time that depends on their lengths alone.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0_u8, |diff, (x, y)| diff | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(authorization).unwrap());
        headers
    }

    fn challenge(res: &Refusal) -> &str {
        res.headers()[WWW_AUTHENTICATE].to_str().unwrap()
    }

    #[test]
    fn tokens_give_their_identities_and_others_are_challenged() {
        let auth = BearerAuth::tokens([("one", 1_u8), ("two", 2)]);
        let ctx = |grant: Grant| grant.apply(Context::new(crate::transport::Transport::Http));
        let one = auth.check(&headers("Bearer one")).map(ctx).unwrap();
        assert_eq!(one.extension::<u8>(), Some(&1));
        let two = auth.check(&headers("bearer   two ")).map(ctx).unwrap();
        assert_eq!(two.extension::<u8>(), Some(&2));

        let missing = auth.check(&HeaderMap::new()).err().unwrap();
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(challenge(&missing), "Bearer");
        let basic = auth.check(&headers("Basic b25lOg==")).err().unwrap();
        assert_eq!(challenge(&basic), "Bearer");
        let wrong = auth.check(&headers("Bearer three")).err().unwrap();
        assert_eq!(challenge(&wrong), r#"Bearer error="invalid_token""#);
        let prefix = auth.check(&headers("Bearer on")).err().unwrap();
        assert_eq!(challenge(&prefix), r#"Bearer error="invalid_token""#);
        let empty = auth.check(&headers("Bearer")).err().unwrap();
        assert_eq!(challenge(&empty), r#"Bearer error="invalid_request""#);
    }

    #[test]
    fn the_challenge_names_the_resource_metadata() {
        let auth = BearerAuth::verifier(|token| (token == "ok").then_some(()))
            .resource_metadata("https://api.example/.well-known/oauth-protected-resource/mcp");
        let missing = auth.check(&HeaderMap::new()).err().unwrap();
        assert_eq!(
            challenge(&missing),
            r#"Bearer resource_metadata="https://api.example/.well-known/oauth-protected-resource/mcp""#
        );
        let wrong = auth.check(&headers("Bearer no")).err().unwrap();
        assert_eq!(
            challenge(&wrong),
            r#"Bearer error="invalid_token", resource_metadata="https://api.example/.well-known/oauth-protected-resource/mcp""#
        );
        assert!(auth.check(&headers("Bearer ok")).is_ok());
    }
}
