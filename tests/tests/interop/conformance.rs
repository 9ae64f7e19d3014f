//! The official MCP conformance suite, `@modelcontextprotocol/conformance` (pinned in
//! `tests/interop/package.json`), against `mcp_everything --http`: each protocol revision's
//! scenarios, `server --url … --requirements REV` (required ones, and those it runs unscored:
//! pending, extension, added after release), for 2025-11-25 (the legacy era, through the
//! TypeScript SDK's client) and 2026-07-28 (the modern era, raw requests); then the skills
//! extension's scenarios (SEP-2640), which no revision's requirements name, each with
//! `--scenario S --spec-version REV --force`. `mcp_balanced` runs the same against three
//! replicas behind HAProxy.
//!
//! The suite's command line imports `globSync` from `fs`, which Node has only since 22 (it uses
//! it for its summary alone); on Node 20 it fails before it runs. So it runs with a preload,
//! `tests/interop/globsync-register.mjs`, that shims that one function for the suite's modules
//! where Node lacks it (`fs-globsync.mjs` says how). Without `node` or the package, the test
//! fails under CI and elsewhere says why and passes (`jrpc_tests::tools`).
//!
//! `tests/interop/conformance-expected.txt` lists the scenarios that do not pass yet, scored or
//! not: the test fails on a failing scenario it does not list (a regression) and on a listed
//! one that passes (a stale line). A scenario passes when no check fails; a skills scenario
//! whose checks all skip (a server that declares no skills) does not. It prints each revision's
//! tallies: required scenarios passed, and the others by why the suite does not score them
//! (pending, extension, added-after-release).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;

use jrpc_tests::examples::Calculator;
use jrpc_tests::{node, tools};

/// The revisions whose requirements are run, in this order.
pub(crate) const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The suite's command line, within `tests/interop`.
const SUITE: &str = "node_modules/@modelcontextprotocol/conformance/dist/index.js";
/// The list of what does not pass yet, within `tests/interop`.
const EXPECTED: &str = "conformance-expected.txt";
/// The skills extension's scenarios, run at each revision.
const SKILLS: [&str; 3] = [
    "sep-2640-skills-directory",
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
];

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

    /// Reads the output of one scenario run alone (`--scenario`): it passed when no check
    /// failed and one besides the wire-schema check succeeded.
    fn add_alone(&mut self, name: &str, reason: &str, output: &str) {
        let passed = output
            .lines()
            .find_map(|line| line.strip_prefix("Passed: "))
            .and_then(|rest| {
                let (counts, rest) = rest.split_once(", ")?;
                let (succeeded, _) = counts.split_once('/')?;
                let failed = rest.split_once(" failed")?.0;
                Some(failed.trim() == "0" && succeeded.trim().parse::<usize>().ok()? > 1)
            })
            .unwrap_or(false);
        self.passed.insert(name.to_owned(), passed);
        self.not_scored.insert(name.to_owned(), reason.to_owned());
    }

    /// The scenarios that failed, scored or not.
    fn failed(&self) -> BTreeSet<String> {
        self.passed
            .iter()
            .filter(|(_, passed)| !**passed)
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
fn the_conformance_suite_passes_each_revisions_scenarios() {
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
    let problems = check_revision(dir, &url, revision, "single", &|| server.stderr());
    server.assert_alive();
    problems
}

/// Runs `revision`'s requirements and the skills scenarios against `url` (`label` says which
/// servers are there, in the tallies printed); what is wrong, a line each.
pub(crate) fn check_revision(
    dir: &Path,
    url: &str,
    revision: &str,
    label: &str,
    server_stderr: &dyn Fn() -> String,
) -> Vec<String> {
    let suite = |args: &[&str]| {
        let mut all = vec![
            "--import",
            "./globsync-register.mjs",
            SUITE,
            "server",
            "--url",
            url,
        ];
        all.extend_from_slice(args);
        let args: Vec<&OsStr> = all.into_iter().map(OsStr::new).collect();
        let output = node::run_args(dir, &args, node::LIMIT)
            .unwrap_or_else(|why| panic!("{why}\n--- server's stderr\n{}", server_stderr()));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let stdout = suite(&["--requirements", revision]);
    let mut report = Report::parse(&stdout);
    assert!(
        !report.passed.is_empty(),
        "no summary from the suite:\n--- stdout\n{stdout}"
    );
    let mut outputs = vec![stdout];
    for scenario in SKILLS {
        let output = suite(&[
            "--scenario",
            scenario,
            "--spec-version",
            revision,
            "--force",
        ]);
        report.add_alone(scenario, "extension", &output);
        outputs.push(output);
    }
    println!("conformance {revision} ({label}): {}", report.tallies());
    let failed = report.failed();
    let expected = expected_failures(dir, revision);
    let mut problems = Vec::new();
    for scenario in failed.difference(&expected) {
        problems.push(format!(
            "{revision} {scenario} ({label}): fails (not in {EXPECTED})"
        ));
    }
    for scenario in expected.difference(&failed) {
        problems.push(format!(
            "{revision} {scenario} ({label}): listed in {EXPECTED}, but it passes: take its line out"
        ));
    }
    if !problems.is_empty() {
        println!(
            "--- the suite's output for {revision} ({label})\n{}",
            outputs.join("\n")
        );
    }
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
    assert_eq!(report.tallies(), "required 1/2, pending 1/2");
    assert_eq!(
        report.failed(),
        BTreeSet::from(["tools-list".to_owned(), "json-schema-2020-12".to_owned()]),
        "unscored scenarios count too"
    );
}

#[test]
fn a_scenario_run_alone_passes_when_a_check_passes_and_none_fails() {
    let mut report = Report::default();
    report.add_alone(
        "a",
        "extension",
        "Checks:\n...\nTest Results:\nPassed: 12/12, 0 failed, 1 warnings\n",
    );
    report.add_alone(
        "b",
        "extension",
        "Test Results:\nPassed: 1/1, 0 failed, 0 warnings\n",
    );
    report.add_alone(
        "c",
        "extension",
        "Test Results:\nPassed: 3/5, 2 failed, 0 warnings\n",
    );
    report.add_alone("d", "extension", "no summary");
    assert_eq!(report.tallies(), "required 0/0, extension 1/4");
    assert_eq!(report.failed().len(), 3);
}
