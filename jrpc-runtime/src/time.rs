//! Computes deadlines that never overflow.

use std::time::Duration;

use tokio::time::Instant;

/// About 30 years: what a deadline past the clock's range becomes (tokio's own `sleep` does the
/// same).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Returns the instant `limit` from now. `Instant + Duration` panics past the clock's range, and
/// limits are the user's to set: `Duration::MAX` is a natural way to say "no limit", so it means
/// the far future here rather than a panic in whatever task reads the setting.
pub(crate) fn after(limit: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(limit).unwrap_or(now + FAR_FUTURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_limit_is_the_far_future() {
        let now = Instant::now();
        assert!(after(Duration::MAX) >= now + FAR_FUTURE);
        let soon = after(Duration::from_secs(1));
        assert!(soon > now && soon <= Instant::now() + Duration::from_secs(1));
    }
}
