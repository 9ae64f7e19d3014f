//! Test-only crate: the tests live under `tests/`.
