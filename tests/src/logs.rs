//! What a `tracing` subscriber writes, kept for a test to read.

use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Runs `test` (given what the subscriber writes) on a current-thread runtime, within
/// [`LIMIT`](crate::LIMIT), under a subscriber at `level` that writes `spans` events, without
/// times or colours.
pub fn logged<F: Future>(
    level: LevelFilter,
    spans: FmtSpan,
    test: impl FnOnce(Captured) -> F,
) -> (F::Output, Captured) {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_span_events(spans)
        .with_ansi(false)
        .without_time()
        .with_writer(move || sink.clone())
        .finish();
    // The subscriber serves this thread, which the current-thread runtime runs every task on.
    let _default = subscriber.set_default();
    // A test on another thread that met a callsite first, while this subscriber was being set,
    // may have cached it as off for everyone: looked at again now that the subscriber is set.
    tracing::callsite::rebuild_interest_cache();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let output = runtime.block_on(crate::bounded(test(captured.clone())));
    (output, captured)
}

/// A writer for a subscriber (`with_writer(move || captured.clone())`); clones share the text.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        String::from_utf8(bytes).unwrap()
    }

    /// Everything written so far, line by line.
    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }
}
