//! Which pages may reach a server: the `Origin` a browser puts on its requests, and the `Host`
//! a page of another site reaches a local server by (DNS rebinding). One policy for every server
//! of the crate and the protocols on it.

use std::fmt;

use ::http::header::{HOST, ORIGIN};
use ::http::{HeaderMap, Uri};

/// Decides which browser pages may reach a server: a request that carries `Origin` (browsers
/// send it on every cross-origin request and every WebSocket upgrade) from an origin not allowed
/// is refused, and so is a request whose `Host` is not an allowed name. A request without
/// `Origin` (not from a browser: curl, an SDK, a server) passes the origin rule.
///
/// | rule | passes |
/// | --- | --- |
/// | origins ([`allow_origins`](Self::allow_origins)) | no `Origin`; an `Origin` listed whole (`https://app.example`) or whose host is listed (`localhost`: any scheme and port); any with [`allow_any_origin`](Self::allow_any_origin) |
/// | hosts ([`allow_hosts`](Self::allow_hosts)) | a `Host` (an HTTP/2 request's authority) whose name is listed, any port; any when none is listed |
///
/// A refused request is answered `403` before its body is read, with a JSON-RPC error envelope
/// on a `POST`, and logged at WARN with the rule that refused it.
///
/// ```
/// use jrpc_runtime::server::OriginPolicy;
///
/// let local = OriginPolicy::new()
///     .allow_origins(["localhost", "127.0.0.1", "[::1]", "https://app.example"])
///     .allow_hosts(["localhost", "127.0.0.1", "[::1]"]);
/// assert!(local.allows_origin("http://localhost:5173"));
/// assert!(local.allows_origin("https://app.example"));
/// assert!(!local.allows_origin("http://evil.example"));
/// assert!(!local.allows_origin("null"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[must_use = "a policy does nothing until a server takes it"]
pub struct OriginPolicy {
    /// `None`: any origin.
    origins: Option<Vec<String>>,
    /// Empty: any host.
    hosts: Vec<String>,
}

impl OriginPolicy {
    /// Checks a request as [`check`](Self::check) does, and makes the `403` that refuses it,
    /// logged at WARN.
    #[cfg(feature = "http")]
    pub(crate) fn refusal(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
    ) -> Option<::http::Response<super::ResponseBody>> {
        let why = self.check(headers, uri).err()?;
        tracing::warn!(%why, "request refused: answered 403");
        Some(super::reply::refusal(
            ::http::StatusCode::FORBIDDEN,
            &why.to_string(),
        ))
    }
}

/// Why an [`OriginPolicy`] refused a request.
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
    /// Returns a policy that allows no browser origin and any host.
    pub fn new() -> Self {
        Self {
            origins: Some(Vec::new()),
            hosts: Vec::new(),
        }
    }

    /// Allows pages of `origins`, each a host (`localhost`, `[::1]`: any scheme and port) or a
    /// whole origin (`https://app.example`: that scheme, host and port), besides those allowed
    /// already.
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

    /// Allows requests whose `Host` is one of `hosts` (names, any port), besides those allowed
    /// already; until one is given, any `Host` is.
    pub fn allow_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts.extend(hosts.into_iter().map(Into::into));
        self
    }

    /// Returns the origins allowed; `None` when any is.
    pub fn origins(&self) -> Option<&[String]> {
        self.origins.as_deref()
    }

    /// Returns the hosts allowed; empty when any is.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Returns whether `origin` (`scheme://host[:port]`, or `null`) is allowed: listed as it is,
    /// or its host listed.
    pub fn allows_origin(&self, origin: &str) -> bool {
        let Some(allowed) = &self.origins else {
            return true;
        };
        if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some((_, authority)) = origin.split_once("://") else {
            return false;
        };
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map(|(host, _)| format!("[{host}]")),
            None => authority.split(':').next().map(str::to_owned),
        };
        host.is_some_and(|host| allowed.iter().any(|a| a.eq_ignore_ascii_case(&host)))
    }

    /// Returns whether `host` (a `Host` value, `name[:port]`) names an allowed host.
    pub fn allows_host(&self, host: &str) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let name = match host.strip_prefix('[') {
            Some(v6) => v6
                .split_once(']')
                .map_or(host, |(v6, _)| &host[..v6.len() + 2]),
            None => host.split(':').next().unwrap_or_default(),
        };
        self.hosts.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Checks a request's `headers` (and `uri`, whose authority an HTTP/2 request carries in
    /// place of `Host`): its host first, then its origin.
    ///
    /// # Errors
    ///
    /// [`OriginRefused`] naming the rule and the value it refused.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), OriginRefused> {
        if !self.hosts.is_empty() {
            let host = match headers.get(HOST) {
                Some(value) => value.to_str().unwrap_or_default(),
                None => uri.authority().map_or("", |authority| authority.as_str()),
            };
            if !host.is_empty() && !self.allows_host(host) {
                return Err(OriginRefused::Host(host.to_owned()));
            }
        }
        if self.origins.is_some()
            && let Some(origin) = headers.get(ORIGIN)
        {
            let text = origin.to_str().unwrap_or_default();
            if !self.allows_origin(text) {
                return Err(OriginRefused::Origin(text.to_owned()));
            }
        }
        Ok(())
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
            .field("hosts", &self.hosts)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_matched_by_host_or_whole() {
        let policy = OriginPolicy::new().allow_origins([
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
            assert!(policy.allows_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "null",
            "https://app.example:444",
            "http://[::2]",
        ] {
            assert!(!policy.allows_origin(bad), "{bad}");
        }
        assert!(OriginPolicy::new().allow_any_origin().allows_origin("null"));
    }

    #[test]
    fn hosts_are_matched_by_name_with_any_port() {
        let policy = OriginPolicy::new().allow_hosts(["localhost", "[::1]"]);
        for ok in ["localhost", "localhost:8080", "[::1]:80", "LOCALHOST"] {
            assert!(policy.allows_host(ok), "{ok}");
        }
        for bad in ["evil.example", "localhost.evil.example", "[::2]:80"] {
            assert!(!policy.allows_host(bad), "{bad}");
        }
        assert!(OriginPolicy::new().allows_host("anything"));
    }
}
