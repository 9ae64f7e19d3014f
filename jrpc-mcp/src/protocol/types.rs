//! Defines small wire types both eras share: the era itself, log levels, a program's name and
//! version, and the caching hints of modern results.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Names the protocol era a request belongs to, chosen per request: a request whose `_meta` names
/// its protocol revision is modern (2026-07-28: stateless); any other is legacy (2025-11-25 and
/// earlier: `initialize`, a session over HTTP or the connection over stdio).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2025-11-25 and earlier.
    Legacy,
    /// 2026-07-28 and later.
    Modern,
}

/// Names the severity of a log message, as MCP (and syslog) rank them: `Debug` is the lowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LogLevel {
    /// Details for debugging.
    Debug,
    /// Information.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Lists every level, lowest first.
    pub const ALL: [LogLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// Returns the level's wire name: `"debug"`, `"info"`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LogLevel {
    type Err = UnknownLevel;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
            .ok_or(UnknownLevel)
    }
}

/// Reports a text that names no [`LogLevel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a log level: the levels are debug, info, notice, warning, error, critical, alert, emergency"
)]
pub struct UnknownLevel;

/// Holds a program's name and version, as `initialize` and `_meta` carry them (`Implementation`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Implementation {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// A name to show people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Implementation {
    /// Returns a program of that name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
        }
    }
}

/// Says who may reuse a cached modern result: anyone (`Public`: it holds nothing about the user),
/// or only the same authorization context (`Private`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any client may reuse it.
    Public,
    /// Only the same authorization context may.
    Private,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ranked_and_named() {
        assert!(LogLevel::Debug < LogLevel::Emergency);
        assert_eq!("warning".parse::<LogLevel>(), Ok(LogLevel::Warning));
        assert_eq!("loud".parse::<LogLevel>(), Err(UnknownLevel));
        assert_eq!(
            serde_json::to_string(&LogLevel::Critical).unwrap(),
            r#""critical""#
        );
    }
}
