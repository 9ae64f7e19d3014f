//! The official MCP conformance suite, `@modelcontextprotocol/conformance` (pinned in
//! `tests/interop/package.json`), against `mcp_everything --http`: each protocol revision's
//! required server scenarios, `server --url … --requirements REV`, for 2025-11-25 (the legacy
//! era, through the TypeScript SDK's client) and 2026-07-28 (the modern era, raw requests).
//!
//! The suite's command line imports `globSync` from `fs`, which Node has only since 22 (it uses
//! it for its summary alone); on Node 20 it fails before it runs. So it runs with a preload,
//! `tests/interop/globsync-register.mjs`, that shims that one function for the suite's modules
//! where Node lacks it (`fs-globsync.mjs` says how). Without `node` or the package, the test
//! fails under CI and elsewhere says why and passes (`jrpc_tests::tools`).
//!
//! `tests/interop/conformance-expected.txt` lists the required scenarios that do not pass yet:
//! the test fails on a failing required scenario it does not list (a regression) and on a listed
//! one that passes (a stale line). It prints each revision's tallies: required scenarios passed,
//! and the scenarios the suite runs without scoring them (pending, extension,
//! added-after-release).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;

use jrpc_tests::examples::Calculator;
use jrpc_tests::{node, tools};

/// The revisions whose requirements are run, in this order.
const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The suite's command line, within `tests/interop`.
const SUITE: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
/// The list of what does not pass yet, within `tests/interop`.
const EXPECTED: &str = "conformance-expected.txt";

/// What one `server --requirements REV` run reported, scenario by scenario.
#[derive(Debug, Default)]
struct Report {
    /// Every scenario run: whether it passed (no failed check).
    passed: BTreeMap<String, bool>,
    /// The scenarios run without a score, with the reason (`pending`, `extension`...).
    not_scored: BTreeMap<String, String>,
}

impl Report {
    /// Reads the suite's summary: `✓ NAME: N passed, M failed` (or `✗`) for every scenario,
    /// then the block of those not scored, `  ✓ NAME (REASON)`.
    fn parse(output: &str) -> Report {
        let mut report = Report::default();
        let summary = output.split("=== SUMMARY ===").nth(1).unwrap_or_default();
        let (scored, not_scored) = summary
            .split_once("Not scored for")
            .unwrap_or((summary, ""));
        for line in scored.lines() {
            if let Some((passed, rest)) = mark(line)
                && let Some((name, _)) = rest.split_once(": ")
            {
                report.passed.insert(name.to_owned(), passed);
            }
        }
        for line in not_scored.lines().skip(1) {
            if let Some((_, rest)) = mark(line.trim_start())
                && let Some((name, reason)) = rest.split_once(" (")
            {
                let reason = reason.trim_end_matches(')').to_owned();
                report.not_scored.insert(name.to_owned(), reason);
            }
        }
        report
    }

    /// The scored scenarios that failed.
    fn failed(&self) -> BTreeSet<String> {
        self.passed
            .iter()
            .filter(|(name, passed)| !**passed && !self.not_scored.contains_key(*name))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// `required 7/30, pending 1/2, extension 1/10, added-after-release 1/1`.
    fn tallies(&self) -> String {
        let required: Vec<bool> = self
            .passed
            .iter()
            .filter(|(name, _)| !self.not_scored.contains_key(*name))
            .map(|(_, passed)| *passed)
            .collect();
        let mut by_reason: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (name, reason) in &self.not_scored {
            let tally = by_reason.entry(reason).or_default();
            tally.0 += usize::from(self.passed.get(name) == Some(&true));
            tally.1 += 1;
        }
        let mut text = format!(
            "required {}/{}",
            required.iter().filter(|p| **p).count(),
            required.len()
        );
        for (reason, (passed, all)) in by_reason {
            text.push_str(&format!(", {reason} {passed}/{all}"));
        }
        text
    }
}

/// `✓ rest` or `✗ rest`: whether it passed, and the rest.
fn mark(line: &str) -> Option<(bool, &str)> {
    if let Some(rest) = line.strip_prefix("✓ ") {
        Some((true, rest))
    } else {
        line.strip_prefix("✗ ").map(|rest| (false, rest))
    }
}

/// The scenarios `conformance-expected.txt` lists for `revision`.
fn expected_failures(dir: &Path, revision: &str) -> BTreeSet<String> {
    let path = dir.join(EXPECTED);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(' '))
        .filter(|(rev, _)| *rev == revision)
        .map(|(_, scenario)| scenario.trim().to_owned())
        .collect()
}

#[test]
fn the_conformance_suite_passes_each_revisions_required_scenarios() {
    let Some(dir) = tools::require(
        "the MCP conformance suite",
        node::setup(&["@modelcontextprotocol/conformance"]),
    ) else {
        return;
    };
    let built =
        jrpc_tests::build_examples(&["mcp_everything"]).unwrap_or_else(|why| panic!("{why}"));
    let binary = &built["mcp_everything"];
    let dir = dir.as_path();
    // The revisions run at once, each against a server of its own: the suite mostly waits.
    let problems: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = REVISIONS
            .map(|revision| scope.spawn(move || run_revision(dir, binary, revision)))
            .into_iter()
            .collect();
        runs.into_iter()
            .flat_map(|run| {
                run.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Runs `revision`'s requirements against a server of its own; what is wrong, a line each.
fn run_revision(dir: &Path, binary: &Path, revision: &str) -> Vec<String> {
    let mut server = Calculator::spawn(binary, &["--http", "127.0.0.1:0"]);
    let url = format!("http://{}/mcp", server.addr);
    let args: Vec<&OsStr> = [
        "--import",
        "./globsync-register.mjs",
        SUITE,
        "server",
        "--url",
        &url,
        "--requirements",
        revision,
    ]
    .map(OsStr::new)
    .to_vec();
    let output = node::run_args(dir, &args, node::LIMIT)
        .unwrap_or_else(|why| panic!("{why}\n--- server's stderr\n{}", server.stderr()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = Report::parse(&stdout);
    assert!(
        !report.passed.is_empty(),
        "no summary from the suite ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    println!("conformance {revision}: {}", report.tallies());
    let failed = report.failed();
    let expected = expected_failures(dir, revision);
    let mut problems = Vec::new();
    for scenario in failed.difference(&expected) {
        problems.push(format!("{revision} {scenario}: fails (not in {EXPECTED})"));
    }
    for scenario in expected.difference(&failed) {
        problems.push(format!(
            "{revision} {scenario}: listed in {EXPECTED}, but it passes: take its line out"
        ));
    }
    if !problems.is_empty() {
        println!("--- the suite's output for {revision}\n{stdout}");
    }
    server.assert_alive();
    problems
}

#[test]
fn the_summary_is_read_scenario_by_scenario() {
    let output = "=== Running scenario: ping ===\n=== SUMMARY ===\n✓ ping: 1 passed, 0 failed\n\
        ✗ tools-list: 0 passed, 2 failed\n✓ server-sse-polling: 0 passed, 0 failed\n\
        ✗ json-schema-2020-12: 0 passed, 2 failed\n\nTotal: 1 passed, 4 failed\n\n\
        Not scored for 2025-11-25: 2 scenario(s) run, 1 failing. These do not affect conformance.\n\
        \x20 ✗ json-schema-2020-12 (pending)\n  ✓ server-sse-polling (pending)\n";
    let report = Report::parse(output);
    assert_eq!(report.failed(), BTreeSet::from(["tools-list".to_owned()]));
    assert_eq!(report.tallies(), "required 1/2, pending 1/2");
}
