//! Lists the protocol revisions this crate speaks, by era, and how a legacy `initialize` agrees on
//! one.

/// Lists the revisions of the legacy era (begun by `initialize`, scoped to a session or a stdio
/// connection), newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Lists the revisions of the modern era (stateless: every request names its revision and the
/// client's capabilities in `_meta`), newest first.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// Lists the legacy revisions that have Streamable HTTP (it came with 2025-03-26).
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's revisions"))]
pub(crate) const LEGACY_HTTP_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Returns what a legacy `initialize` answers when the client asks for `asked`: the same revision
/// when this crate speaks it, else the newest legacy one (never a modern revision: `initialize` is
/// legacy, and a client that asks it cannot take a modern answer).
pub(crate) fn negotiate(asked: Option<&str>) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .find(|known| Some(**known) == asked)
        .unwrap_or(&LEGACY_VERSIONS[0])
}

/// Returns the modern revision `text` names, when this crate speaks it.
pub(crate) fn modern(text: &str) -> Option<&'static str> {
    MODERN_VERSIONS.iter().copied().find(|v| *v == text)
}

/// Returns whether `text` names a legacy revision that has Streamable HTTP.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "HTTP's revisions"))]
pub(crate) fn is_legacy_http(text: &str) -> bool {
    LEGACY_HTTP_VERSIONS.contains(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_agrees_on_a_legacy_revision() {
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate(Some("2026-07-28")), "2025-11-25");
        assert_eq!(negotiate(None), "2025-11-25");
        assert_eq!(modern("2026-07-28"), Some("2026-07-28"));
        assert_eq!(modern("2025-11-25"), None);
        assert!(is_legacy_http("2025-03-26") && !is_legacy_http("2024-11-05"));
    }
}
