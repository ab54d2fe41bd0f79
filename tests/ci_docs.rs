//! The CI examples of `docs/ci.md`, tested by running the commands they run (issue 10).
//!
//! Consumes: `docs/ci.md` (the `run:` lines of the GitHub Actions workflow that call
//! `tenantc`, and the `entry:` of the pre-commit hook), the example fleet, the built binary, the
//! vendored SARIF schema. Produces: nothing; fails when a documented command does not do what
//! the document says on a clean fleet, a broken tenant file or a stale `out/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;

use support::{copy_dir, git};

use std::path::Path;
use std::process::Command;

/// The documented commands: `(what, command line)`.
fn documented() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(support::repo().join("docs/ci.md")).unwrap();
    let mut commands = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        for key in ["run: ", "entry: "] {
            if let Some(command) = line.strip_prefix(key)
                && command.starts_with("tenantc ")
            {
                commands.push((key.trim_end_matches(": ").to_string(), command.to_string()));
            }
        }
    }
    commands
}

/// Runs `command` in `dir` with `sh`, the documented `tenantc` being the binary under test.
fn run(dir: &Path, command: &str) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_tenantc"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn copy_fleet(into: &Path) {
    for folder in [
        "tenants",
        "cells",
        "out",
        "catalog",
        "keys",
        "weights",
        "templates",
    ] {
        let from = support::repo().join(folder);
        if from.is_dir() {
            copy_dir(&from, &into.join(folder));
        }
    }
}

fn sarif_results(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("tenantc.sarif")).unwrap();
    let log: serde_json::Value = serde_json::from_str(&text).expect("the log is JSON");
    assert_eq!(log["version"], "2.1.0");
    log["runs"][0]["results"].as_array().unwrap().clone()
}

#[test]
fn the_documented_ci_commands_pass_a_clean_fleet_and_fail_a_broken_one() {
    let commands = documented();
    let kinds: Vec<&str> = commands.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["run", "entry", "run"],
        "docs/ci.md changed its examples: {commands:?}"
    );
    let workflow = &commands[0].1;
    let hook = &commands[1].1;
    assert!(workflow.contains("> tenantc.sarif"), "{workflow}");

    // A clean fleet: both pass, and the log has no results.
    let clean = tempfile::tempdir().unwrap();
    copy_fleet(clean.path());
    let (status, stderr) = run(clean.path(), workflow);
    assert_eq!(status, 0, "{stderr}");
    assert!(sarif_results(clean.path()).is_empty());
    assert_eq!(run(clean.path(), hook).0, 0);

    // A broken tenant file: both fail, and the log points at the file and line.
    let broken = tempfile::tempdir().unwrap();
    copy_fleet(broken.path());
    let file = broken.path().join("tenants/globex-vision.kdl");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("trust \"mig\"", "trust \"medium\"")).unwrap();
    let (status, _) = run(broken.path(), workflow);
    assert_eq!(status, 1);
    let results = sarif_results(broken.path());
    assert!(!results.is_empty());
    let at = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(at["artifactLocation"]["uri"], "tenants/globex-vision.kdl");
    assert!(at["region"]["startLine"].as_u64().unwrap() > 1);
    assert_eq!(run(broken.path(), hook).0, 1);

    // A stale out/: both fail, and the log names the stale file.
    let stale = tempfile::tempdir().unwrap();
    copy_fleet(stale.path());
    let target = stale.path().join("out/us-east-1a/kueue/cohort-root.yaml");
    std::fs::write(&target, "# edited by hand\n").unwrap();
    assert_eq!(run(stale.path(), workflow).0, 1);
    let results = sarif_results(stale.path());
    assert!(
        results.iter().any(|result| result["ruleId"] == "out-stale"
            && result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                == "out/us-east-1a/kueue/cohort-root.yaml"),
        "{results:#?}"
    );
    assert_eq!(run(stale.path(), hook).0, 1);
}

#[test]
fn the_documented_diff_step_summarises_a_pull_request_against_its_base() {
    let commands = documented();
    let diff = &commands.last().unwrap().1;
    assert!(diff.starts_with("tenantc diff --base "), "{diff}");
    assert!(diff.contains("> tenantc-diff.md"), "{diff}");
    let repo = tempfile::tempdir().unwrap();
    copy_fleet(repo.path());
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "base"]);
    // As `actions/checkout` with `fetch-depth: 0` leaves it: the base branch as `origin/main`.
    git(
        repo.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let file = repo.path().join("tenants/acme-research.kdl");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("burst=32 gang=32", "burst=40 gang=32")).unwrap();
    let (status, stderr) = run(
        repo.path(),
        &format!("GITHUB_BASE_REF=main; export GITHUB_BASE_REF; {diff}"),
    );
    assert_eq!(status, 0, "{stderr}");
    let comment = std::fs::read_to_string(repo.path().join("tenantc-diff.md")).unwrap();
    assert!(
        comment.starts_with("## tenantc diff: origin/main ("),
        "{comment}"
    );
    assert!(
        comment.contains("| **security: higher quota** | us-east-1a | entitlement | burst on pool h100-train nvidia.com/gpu | 32 | 40 |"),
        "{comment}"
    );
}
