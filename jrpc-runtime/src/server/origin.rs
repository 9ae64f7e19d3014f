//! Decides which pages may reach a server: the `Origin` a browser puts on its requests, and the
//! `Host` a page of another site reaches a local server by (DNS rebinding). One policy for every
//! server of the crate and the protocols on it.

use std::fmt;

use ::http::header::{HOST, ORIGIN};
use ::http::{HeaderMap, HeaderValue, Uri};

/// Lists the names a loopback server is reached by.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Decides which browser pages and `Host` names may reach a server.
///
/// A browser puts `Origin` on every cross-origin request, every `POST` and every WebSocket
/// upgrade; other clients (curl, SDKs, servers) send none, and the origin rule lets them through.
/// The `Host` rule stops DNS rebinding: a page of another site whose name a resolver points at a
/// local server reaches it with its own name as `Host`.
///
/// | rule | passes, by default | settings |
/// | --- | --- | --- |
/// | origin | no `Origin`; the server's own (the `Origin`'s host and port are the request's `Host`) | [`allow_origins`](Self::allow_origins) adds origins (`https://app.example`) or hosts (`localhost`: any scheme and port); [`allow_any_origin`](Self::allow_any_origin); [`allow_same_origin`](Self::allow_same_origin)`(false)` |
/// | host | on a server bound to a loopback address: only `localhost`, `127.0.0.1` and `[::1]` (any port); elsewhere any | [`allow_hosts`](Self::allow_hosts): only the names listed, on any server; [`allow_any_host`](Self::allow_any_host) |
///
/// A refused request is answered `403` before its body is read (with a JSON-RPC error envelope),
/// and logged at WARN with the setting to change. An HTTP/2 request's host is its URI's
/// authority. A server on a private network that browsers reach should list its names
/// ([`allow_hosts`](Self::allow_hosts)): the same-origin rule alone cannot tell a rebinding page
/// from its own.
///
/// ```
/// use jrpc_runtime::server::OriginPolicy;
///
/// let policy = OriginPolicy::new().allow_origins(["https://app.example", "localhost"]);
/// assert!(policy.allows_origin("https://app.example", "api.example"));
/// assert!(policy.allows_origin("http://localhost:5173", "api.example"));
/// assert!(policy.allows_origin("https://api.example", "api.example"), "its own");
/// assert!(!policy.allows_origin("http://evil.example", "api.example"));
/// assert!(!policy.allows_origin("null", "api.example"));
/// assert!(policy.allows_host("localhost:8080", true));
/// assert!(!policy.allows_host("evil.example:8080", true), "bound to loopback");
/// assert!(policy.allows_host("evil.example:8080", false));
/// let named = OriginPolicy::new().allow_hosts(["api.example", "localhost"]);
/// assert!(named.allows_host("api.example:443", false));
/// assert!(!named.allows_host("evil.example", false));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[must_use = "a policy does nothing until a server takes it"]
pub struct OriginPolicy {
    /// `None`: any origin.
    origins: Option<Vec<String>>,
    /// Whether a request whose `Origin` names its own `Host` passes.
    same_origin: bool,
    /// `None`: any host. An empty list: the loopback names on a server bound to loopback, any
    /// elsewhere. Else only the names listed.
    hosts: Option<Vec<String>>,
}

/// Says why an [`OriginPolicy`] refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OriginRefused {
    /// Its `Origin` is not allowed.
    Origin(String),
    /// Its `Host` is not an allowed name.
    Host(String),
}

impl fmt::Display for OriginRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Origin(origin) => write!(
                f,
                "origin `{origin}` is not allowed (`OriginPolicy::allow_origins`)"
            ),
            Self::Host(host) => write!(
                f,
                "host `{host}` is not allowed (`OriginPolicy::allow_hosts`)"
            ),
        }
    }
}

impl OriginPolicy {
    /// Allows any page and any host: for what a policy checked already.
    #[cfg(feature = "http")]
    pub(crate) const ANY: Self = Self {
        origins: None,
        same_origin: true,
        hosts: None,
    };

    /// Returns the default policy: pages of the server's own origin, and no others; on a server
    /// bound to a loopback address, loopback `Host` names only.
    pub fn new() -> Self {
        Self {
            origins: Some(Vec::new()),
            same_origin: true,
            hosts: Some(Vec::new()),
        }
    }

    /// Allows pages of `origins` too, each a host (`localhost`, `[::1]`: any scheme and port) or
    /// a whole origin (`https://app.example`: that scheme, host and port).
    pub fn allow_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = self.origins.get_or_insert_with(Vec::new);
        list.extend(origins.into_iter().map(Into::into));
        self
    }

    /// Allows pages of any origin.
    pub fn allow_any_origin(mut self) -> Self {
        self.origins = None;
        self
    }

    /// Allows (default) or not a page of the server's own origin, one whose `Origin` names the
    /// request's `Host`.
    pub fn allow_same_origin(mut self, allow: bool) -> Self {
        self.same_origin = allow;
        self
    }

    /// Allows only requests whose `Host` names one of `hosts` (any port), on any server: list
    /// `localhost` too if local tools call a server that browsers reach by name. An empty list
    /// leaves the default.
    pub fn allow_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = self.hosts.get_or_insert_with(Vec::new);
        list.extend(hosts.into_iter().map(Into::into));
        self
    }

    /// Allows any `Host`, on any server.
    pub fn allow_any_host(mut self) -> Self {
        self.hosts = None;
        self
    }

    /// Returns the origins allowed beside the server's own; `None` when any is.
    pub fn origins(&self) -> Option<&[String]> {
        self.origins.as_deref()
    }

    /// Returns whether a page of `origin` (`scheme://host[:port]`, or `null`) may reach a server
    /// reached as `host` (the request's `Host`): listed as it is, its host listed, or (with the
    /// same-origin rule) naming `host` itself.
    pub fn allows_origin(&self, origin: &str, host: &str) -> bool {
        let Some(allowed) = &self.origins else {
            return true;
        };
        if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some((_, authority)) = origin.split_once("://") else {
            return false;
        };
        if self.same_origin && !host.is_empty() && authority.eq_ignore_ascii_case(host) {
            return true;
        }
        let name = name_of(authority);
        allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Returns whether `host` (a `Host` value, `name[:port]`) may be served by a server that is
    /// (`loopback`) or is not bound to a loopback address.
    pub fn allows_host(&self, host: &str, loopback: bool) -> bool {
        let name = name_of(host);
        match &self.hosts {
            None => true,
            Some(listed) if listed.is_empty() => {
                !loopback || LOOPBACK_NAMES.iter().any(|a| a.eq_ignore_ascii_case(name))
            }
            Some(listed) => listed.iter().any(|a| a.eq_ignore_ascii_case(name)),
        }
    }

    /// Checks a request by its headers (and `uri`, whose authority an HTTP/2 request carries in
    /// place of `Host`), for a server that is (`loopback`) or is not bound to a loopback
    /// address: its host first, then its origin.
    ///
    /// # Errors
    ///
    /// [`OriginRefused`] naming the rule and the value it refused.
    pub fn check(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        loopback: bool,
    ) -> Result<(), OriginRefused> {
        self.check_values(headers.get(ORIGIN), headers.get(HOST), uri, loopback)
    }

    /// Does what [`check`](Self::check) does, with the `Origin` and `Host` values a pass over the
    /// headers found.
    #[inline]
    pub(crate) fn check_values(
        &self,
        origin: Option<&HeaderValue>,
        host: Option<&HeaderValue>,
        uri: &Uri,
        loopback: bool,
    ) -> Result<(), OriginRefused> {
        let checks_host = match &self.hosts {
            None => false,
            // What nearly every request to a loopback server is: a loopback name, no `Origin`.
            Some(listed) if listed.is_empty() && loopback => {
                if origin.is_none() && host.is_some_and(|value| is_loopback_name(value.as_bytes()))
                {
                    return Ok(());
                }
                true
            }
            Some(listed) => !listed.is_empty(),
        };
        if origin.is_none() && !checks_host {
            return Ok(());
        }
        let host = match host {
            Some(value) => value.to_str().unwrap_or_default(),
            None => uri.authority().map_or("", |authority| authority.as_str()),
        };
        if checks_host && !host.is_empty() && !self.allows_host(host, loopback) {
            return Err(OriginRefused::Host(host.to_owned()));
        }
        if let Some(origin) = origin {
            let text = origin.to_str().unwrap_or_default();
            if !self.allows_origin(text, host) {
                return Err(OriginRefused::Origin(text.to_owned()));
            }
        }
        Ok(())
    }

    /// Checks a request as [`check`](Self::check) does, and makes the `403` that refuses it,
    /// logged at WARN.
    #[cfg(feature = "http")]
    pub(crate) fn refusal(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        loopback: bool,
    ) -> Option<::http::Response<super::ResponseBody>> {
        let why = self.check(headers, uri, loopback).err()?;
        Some(forbidden(&why))
    }
}

/// Returns the `403` refusing a request for `why`, logged at WARN.
#[cfg(any(feature = "http", feature = "ws"))]
#[cold]
pub(crate) fn forbidden(why: &OriginRefused) -> ::http::Response<super::ResponseBody> {
    tracing::warn!(%why, "request refused: answered 403");
    super::reply::refusal(::http::StatusCode::FORBIDDEN, &why.to_string())
}

/// Returns whether `host` (`name[:port]`, as bytes) is a loopback name: a look at the bytes,
/// for every request to a loopback server.
#[inline]
fn is_loopback_name(host: &[u8]) -> bool {
    // A name, then the end or a port.
    let named = |name: &[u8], same: fn(&[u8], &[u8]) -> bool| {
        host.len() >= name.len()
            && same(&host[..name.len()], name)
            && host.get(name.len()).is_none_or(|next| *next == b':')
    };
    named(b"127.0.0.1", |a, b| a == b)
        || named(b"localhost", |a, b| a.eq_ignore_ascii_case(b))
        || named(b"[::1]", |a, b| a == b)
}

/// Returns the name of `host` (`name[:port]`, `[v6][:port]`), without its port.
fn name_of(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(v6) => v6
            .split_once(']')
            .map_or(host, |(v6, _)| &host[..v6.len() + 2]),
        None => host.split(':').next().unwrap_or_default(),
    }
}

impl Default for OriginPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OriginPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OriginPolicy")
            .field("origins", &self.origins)
            .field("same_origin", &self.same_origin)
            .field("hosts", &self.hosts)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_matched_by_host_or_whole() {
        let policy = OriginPolicy::new().allow_same_origin(false).allow_origins([
            "localhost",
            "127.0.0.1",
            "[::1]",
            "https://app.example",
        ]);
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "https://app.example",
        ] {
            assert!(policy.allows_origin(ok, "localhost:8000"), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "https://app.example:444",
            "http://[::2]",
            "http://localhost.evil.example:8000",
        ] {
            assert!(!policy.allows_origin(bad, "localhost:8000"), "{bad}");
        }
        assert!(
            OriginPolicy::new()
                .allow_any_origin()
                .allows_origin("null", "")
        );
    }

    #[test]
    fn the_servers_own_origin_passes_unless_told_otherwise() {
        let policy = OriginPolicy::new();
        assert!(policy.allows_origin("http://api.example:8080", "api.example:8080"));
        assert!(!policy.allows_origin("http://api.example:8081", "api.example:8080"));
        assert!(!policy.allows_origin("http://api.example", ""));
        let strict = OriginPolicy::new().allow_same_origin(false);
        assert!(!strict.allows_origin("http://api.example:8080", "api.example:8080"));
    }

    #[test]
    fn hosts_are_matched_by_name_with_any_port() {
        let policy = OriginPolicy::new().allow_hosts(["localhost", "[::1]", "dev.local"]);
        for ok in [
            "localhost",
            "localhost:8080",
            "[::1]:80",
            "LOCALHOST",
            "dev.local:1",
        ] {
            assert!(policy.allows_host(ok, true), "{ok}");
            assert!(policy.allows_host(ok, false), "{ok}");
        }
        for bad in [
            "evil.example",
            "localhost.evil.example",
            "[::2]:80",
            "127.0.0.1",
        ] {
            assert!(!policy.allows_host(bad, true), "{bad}");
            assert!(!policy.allows_host(bad, false), "{bad}");
        }
        // The default checks hosts only on a server bound to loopback.
        assert!(!OriginPolicy::new().allows_host("evil.example", true));
        assert!(OriginPolicy::new().allows_host("evil.example", false));
        assert!(
            OriginPolicy::new()
                .allow_any_host()
                .allows_host("evil.example", true)
        );
    }

    #[test]
    fn loopback_names_are_told_by_their_bytes() {
        for yes in [
            "localhost",
            "LocalHost:80",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(is_loopback_name(yes.as_bytes()), "{yes}");
        }
        for no in [
            "localhost.evil",
            "127.0.0.2",
            "[::2]:1",
            "evil:localhost",
            "",
        ] {
            assert!(!is_loopback_name(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn a_request_is_checked_host_first() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        let uri = Uri::from_static("/rpc");
        let policy = OriginPolicy::new();
        let rebinding = headers(&[
            ("host", "evil.example:8080"),
            ("origin", "http://evil.example:8080"),
        ]);
        assert_eq!(
            policy.check(&rebinding, &uri, true),
            Err(OriginRefused::Host("evil.example:8080".into()))
        );
        assert_eq!(
            policy.check(&rebinding, &uri, false),
            Ok(()),
            "its own origin"
        );
        let cross = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(
            policy.check(&cross, &uri, true),
            Err(OriginRefused::Origin("http://evil.example".into()))
        );
        let curl = headers(&[("host", "127.0.0.1:8080")]);
        assert_eq!(policy.check(&curl, &uri, true), Ok(()));
        let h2 = Uri::from_static("http://evil.example/rpc");
        assert!(policy.check(&HeaderMap::new(), &h2, true).is_err());
    }
}
