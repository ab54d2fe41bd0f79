//! Fixture cases: every folder under `tests/cases/ok/` must compile without errors to exactly its
//! `expected/` tree; every folder under `tests/cases/err/` must report at least one error, and
//! its rendered diagnostics (human, colour off, and JSON) are insta snapshots stored beside it.
//!
//! A case's input is its `input/` folder, plus the fixtures its `shared` file names (lines
//! `<path in input/> = <file under tests/fixtures/>`), so that a fixture several cases use has
//! one copy (`tests/tidy.rs` refuses a second).
//!
//! Adding a case means adding files only. `UPDATE_GOLDEN=1` rewrites `expected/` trees and
//! `INSTA_UPDATE=always` (or `cargo insta review`) accepts new snapshots.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use std::path::Path;

use tenantc::diag::Code;
use tenantc::diag::render::{self, Color};

fn case_name(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn ok_cases_compile_to_their_expected_trees() {
    let cases = support::subdirs(&support::repo().join("tests/cases/ok"));
    assert!(!cases.is_empty(), "no ok cases found");
    for case in cases {
        let compilation = support::compile_root(&support::case_root(&case, "input"));
        let errors: Vec<_> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .collect();
        assert!(
            errors.is_empty(),
            "ok case {} has errors:\n{}",
            case_name(&case),
            render::human(&compilation.diagnostics, &compilation.sources, Color::Never)
        );
        let tree = compilation.output.expect("no errors means an output tree");
        support::assert_tree(&case.join("expected"), &tree);
    }
}

#[test]
fn err_cases_report_errors_and_match_their_snapshots() {
    let cases = support::subdirs(&support::repo().join("tests/cases/err"));
    assert!(!cases.is_empty(), "no err cases found");
    for case in cases {
        let name = case_name(&case);
        let compilation = support::compile_root(&support::case_root(&case, "input"));
        assert!(
            compilation.has_errors(),
            "err case {name} compiled without errors"
        );
        assert!(
            compilation.output.is_none(),
            "err case {name} produced output"
        );
        for diagnostic in &compilation.diagnostics {
            assert!(
                !diagnostic.help.is_empty(),
                "{name}: {} has no help line",
                diagnostic.code.as_str()
            );
            assert!(
                diagnostic.primary_span().is_some(),
                "{name}: {} has no location",
                diagnostic.code.as_str()
            );
        }
        let human = render::human(&compilation.diagnostics, &compilation.sources, Color::Never);
        let json = render::json(&compilation.diagnostics, &compilation.sources);
        insta::with_settings!({
            snapshot_path => case.clone(),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!("diagnostics", human);
            insta::assert_snapshot!("diagnostics-json", json);
        });
    }
}

/// The codes that no error case can show, each with the reason and the test that shows it
/// instead. Every other code of the registry (`compiler/src/diag/code.rs`) is reported by at
/// least one case under `tests/cases/err/`.
const WITHOUT_ERROR_CASE: &[(&str, &str)] = &[
    (
        "allow-unused",
        "reported only in a run without errors, which an error case is not; \
         tests/cli/allow-and-deny shows it",
    ),
    (
        "file-not-regular",
        "needs a FIFO, socket or device under tenants/ or cells/, which git does not store; \
         tests/cli.rs makes a FIFO, and tests/diff.rs a link in a git revision",
    ),
    (
        "file-too-large",
        "needs a declaration of more than 4 MiB, too large to commit; load.rs's unit tests and \
         tests/diff.rs write one in a scratch folder",
    ),
    (
        "file-unreadable",
        "needs a file its user may not read, and git stores no permission but the executable \
         bit; load.rs's unit tests make one",
    ),
    (
        "iam-grant-too-broad",
        "judges the IAM files tenantc wrote itself, which no declaration makes too broad; \
         tests/iam.rs tampers with them",
    ),
    (
        "mig-placement-too-complex",
        "no declared MIG table is known to exhaust the placement search's step budget; \
         validate/cells_placement.rs reaches it with a budget of 2 steps",
    ),
];

#[test]
fn every_diagnostic_code_has_an_error_case() {
    let mut reported = std::collections::BTreeSet::new();
    for case in support::subdirs(&support::repo().join("tests/cases/err")) {
        let compilation = support::compile_root(&support::case_root(&case, "input"));
        reported.extend(compilation.diagnostics.iter().map(|d| d.code.as_str()));
    }
    for (name, reason) in WITHOUT_ERROR_CASE {
        assert!(
            Code::ALL.iter().any(|code| code.as_str() == *name),
            "`{name}` is listed without an error case but is not a registered code"
        );
        assert!(!reason.is_empty());
        assert!(
            !reported.contains(name),
            "`{name}` has an error case now: take it off WITHOUT_ERROR_CASE"
        );
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|code| code.as_str())
        .filter(|name| !reported.contains(name))
        .filter(|name| !WITHOUT_ERROR_CASE.iter().any(|(listed, _)| listed == name))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without an error case under tests/cases/err/ (add one, or list the code in \
         WITHOUT_ERROR_CASE with the reason no declaration can show it): {missing:?}"
    );
}

/// Issue 19 item 4: every diagnostic that the fixture fleet and every ok and err case report has
/// a severity that its code's registry entry lists (the severities live beside each `Code`).
#[test]
fn every_case_reports_each_code_only_with_a_severity_it_lists() {
    let mut roots = vec![support::case_root(&support::fleet(), ".")];
    for kind in ["ok", "err"] {
        for case in support::subdirs(&support::repo().join("tests/cases").join(kind)) {
            roots.push(support::case_root(&case, "input"));
        }
    }
    assert!(roots.len() > 100, "{} roots", roots.len());
    let mut seen = std::collections::BTreeSet::new();
    for root in &roots {
        let compilation = support::compile_root(root);
        for diagnostic in &compilation.diagnostics {
            assert!(
                diagnostic.code.severities().contains(&diagnostic.severity),
                "{}: {} reported as {}",
                root.display(),
                diagnostic.code.as_str(),
                diagnostic.severity.as_str()
            );
            seen.insert((diagnostic.code.as_str(), diagnostic.severity.as_str()));
        }
    }
    assert!(seen.len() > 50, "{} codes and severities seen", seen.len());
}
