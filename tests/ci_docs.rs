//! The documented examples, tested by running the commands they run: the CI examples of
//! `docs/ci.md` (issue 10), the tour of `README.md` (issue 18) and the examples of
//! `docs/what-if.md` (issue 21).
//!
//! Consumes: `docs/ci.md` (the `run:` lines of the GitHub Actions workflow that call
//! `tenantc`, and the `entry:` of the pre-commit hook), the README's "A five-minute tour" (its
//! edits, commands and quoted output), the example fleet, the built binary, the vendored SARIF
//! schema. Produces: nothing; fails when a documented command does not do what the document
//! says on a clean fleet, a broken tenant file or a stale `out/`, or when a command of the tour
//! prints other text than the README quotes, to the line number and the summary line.

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

/// One numbered step of the README's tour: its prose (code blocks left out) and its code blocks,
/// `(language, body)` in order.
struct TourStep {
    number: usize,
    prose: String,
    blocks: Vec<(String, String)>,
}

/// The steps of the README's "A five-minute tour", read from the README itself.
fn tour_steps() -> Vec<TourStep> {
    let readme = std::fs::read_to_string(support::repo().join("README.md")).unwrap();
    let start = readme
        .find("\n## A five-minute tour\n")
        .expect("the README has its tour");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |idx| idx + 3);
    let mut steps: Vec<TourStep> = Vec::new();
    let mut block: Option<(String, String)> = None;
    for line in rest[..end].lines() {
        // Step bodies are indented by three spaces, as the Markdown list item needs.
        let inner = line.strip_prefix("   ").unwrap_or(line);
        if let Some((language, body)) = block.as_mut() {
            if inner.trim_end() == "```" {
                let done = (language.clone(), std::mem::take(body));
                steps.last_mut().unwrap().blocks.push(done);
                block = None;
            } else {
                body.push_str(inner);
                body.push('\n');
            }
            continue;
        }
        if let Some(language) = inner.strip_prefix("```") {
            block = Some((language.trim().to_string(), String::new()));
            continue;
        }
        let number = line
            .split_once(". ")
            .and_then(|(number, _)| number.parse::<usize>().ok());
        if let Some(number) = number {
            steps.push(TourStep {
                number,
                prose: String::new(),
                blocks: Vec::new(),
            });
        }
        if let Some(step) = steps.last_mut() {
            step.prose.push_str(line.trim());
            step.prose.push('\n');
        }
    }
    assert!(block.is_none(), "a code block of the tour is never closed");
    steps
}

/// The edits a step's prose asks for, "in `<file>`, change `<from>` to `<to>` and `<from>` to
/// `<to>`": the file, and each `(from, to)`.
fn tour_edits(prose: &str) -> Option<(String, Vec<(String, String)>)> {
    let spans: Vec<(usize, usize)> = {
        let ticks: Vec<usize> = prose.match_indices('`').map(|(idx, _)| idx).collect();
        ticks
            .chunks(2)
            .filter_map(|pair| Some((*pair.first()?, *pair.get(1)?)))
            .collect()
    };
    let text = |(open, close): (usize, usize)| prose[open + 1..close].to_string();
    let file = spans
        .iter()
        .find(|(open, _)| prose[..*open].ends_with("in "))
        .map(|span| text(*span))?;
    let edits: Vec<(String, String)> = spans
        .windows(2)
        .filter(|pair| &prose[pair[0].1 + 1..pair[1].0] == " to ")
        .map(|pair| (text(pair[0]), text(pair[1])))
        .collect();
    (!edits.is_empty()).then_some((file, edits))
}

/// The output tree under `dir` as `check` reads it (the lock file left out).
fn tree(dir: &Path) -> tenantc::emit::OutputTree {
    tenantc::emit::fs::read_tree(dir).unwrap()
}

/// Issue 18 item 1: every output block the tour quotes is exactly what its commands print when
/// the step's edits are applied to a copy of the example fleet: each diagnostic, its line and
/// column, the source line shown and the summary line; and the exit code the prose states.
#[test]
fn the_readme_tour_prints_exactly_what_the_readme_quotes() {
    let steps = tour_steps();
    assert!(steps.len() >= 5, "the tour has its steps");
    let mut compared = 0;
    for step in &steps {
        for pair in step.blocks.windows(2) {
            let [(first, commands), (second, quoted)] = pair else {
                continue;
            };
            if first != "sh" || second != "text" {
                continue;
            }
            let fleet = tempfile::tempdir().unwrap();
            copy_fleet(fleet.path());
            if let Some((file, edits)) = tour_edits(&step.prose) {
                let path = fleet.path().join(&file);
                let mut text = std::fs::read_to_string(&path).unwrap();
                for (from, to) in &edits {
                    assert_eq!(
                        text.matches(from.as_str()).count(),
                        1,
                        "step {}: `{from}` is not in {file} exactly once",
                        step.number
                    );
                    text = text.replacen(from.as_str(), to, 1);
                }
                std::fs::write(&path, text).unwrap();
            }
            let out_before = tree(&fleet.path().join("out"));
            let mut printed = String::new();
            let mut status = 0;
            for command in commands.lines().filter(|line| !line.trim().is_empty()) {
                let command = command
                    .strip_prefix("cargo run --release -- ")
                    .map(|args| format!("tenantc {args}"))
                    .unwrap_or_else(|| command.to_string());
                let bin = Path::new(env!("CARGO_BIN_EXE_tenantc"));
                let output = Command::new("sh")
                    .arg("-c")
                    .arg(&command)
                    .current_dir(fleet.path())
                    .env(
                        "PATH",
                        format!(
                            "{}:{}",
                            bin.parent().unwrap().display(),
                            std::env::var("PATH").unwrap_or_default()
                        ),
                    )
                    .env_remove("CLICOLOR_FORCE")
                    .output()
                    .unwrap();
                printed.push_str(&String::from_utf8_lossy(&output.stdout));
                printed.push_str(&String::from_utf8_lossy(&output.stderr));
                status = output.status.code().unwrap_or(-1);
            }
            assert_eq!(
                printed.trim_end(),
                quoted.trim_end(),
                "step {} of the README's tour prints other text than it quotes",
                step.number
            );
            if let Some(code) = step
                .prose
                .split("exits with code ")
                .nth(1)
                .and_then(|rest| rest.get(..1))
            {
                assert_eq!(
                    status.to_string(),
                    code,
                    "step {}: the exit code",
                    step.number
                );
                if status != 0 && step.prose.contains("writes nothing") {
                    let changes =
                        tenantc::emit::fs::compare(&tree(&fleet.path().join("out")), &out_before);
                    assert!(changes.is_empty(), "step {}: {changes:?}", step.number);
                }
            }
            compared += 1;
        }
    }
    assert!(
        compared >= 1,
        "the tour quotes no command output to compare"
    );
}

/// How many checks of `tests/conformance.rs` need a control plane: the ones the first
/// `cargo test --locked` skips.
fn conformance_checks_needing_a_cluster() -> usize {
    let text = std::fs::read_to_string(support::repo().join("tests/conformance.rs")).unwrap();
    let start = text
        .find("const CHECKS: &[(&str, bool, Check)] = &[")
        .expect("tests/conformance.rs lists its checks");
    let table = &text[start..];
    let table = &table[..table.find("\n];").expect("the list of checks ends")];
    let compact: String = table.chars().filter(|ch| !ch.is_whitespace()).collect();
    compact.matches("\",true,").count()
}

/// Issue 18 item 8: the README says up front how many conformance checks the first test run
/// skips, and each number it gives is the count of checks that need a control plane.
#[test]
fn the_readme_counts_the_conformance_checks_the_first_test_run_skips() {
    let count = conformance_checks_needing_a_cluster();
    assert!(count > 0);
    let readme = std::fs::read_to_string(support::repo().join("README.md")).unwrap();
    let top = &readme[..readme.find("\n## ").unwrap()];
    let mut numbers = Vec::new();
    for (before, after) in [
        ("the ", " conformance checks"),
        ("SKIPPED ", " checks"),
        ("`", " skipped`"),
        ("all ", " of them"),
    ] {
        for (idx, _) in readme.match_indices(after) {
            let head = &readme[..idx];
            let digits: String = head
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if !digits.is_empty() && head[..head.len() - digits.len()].ends_with(before) {
                numbers.push((after, digits.parse::<usize>().unwrap()));
            }
        }
    }
    assert!(
        numbers.len() >= 4,
        "the README no longer counts the skipped checks: {numbers:?}"
    );
    for (what, number) in &numbers {
        assert_eq!(*number, count, "README: `{number}{what}`");
    }
    assert!(
        top.contains(&format!("skips the {count} conformance checks")),
        "the README says before its first section that the first test run skips them"
    );
}

/// Issue 21 item 3: every example of `docs/what-if.md` prints exactly what the document quotes
/// when run on a copy of the example fleet, and exits with the code its prose states.
#[test]
fn the_what_if_examples_print_exactly_what_docs_what_if_md_quotes() {
    let text = std::fs::read_to_string(support::repo().join("docs/what-if.md")).unwrap();
    let fleet = tempfile::tempdir().unwrap();
    copy_fleet(fleet.path());
    // (prose before the block, language, body) for each fenced block, in order.
    let mut blocks: Vec<(String, String, String)> = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some((language, body)) = open.as_mut() {
            if line == "```" {
                blocks.push((
                    std::mem::take(&mut prose),
                    language.clone(),
                    std::mem::take(body),
                ));
                open = None;
            } else {
                body.push_str(line);
                body.push('\n');
            }
        } else if let Some(language) = line.strip_prefix("```") {
            open = Some((language.to_string(), String::new()));
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    assert!(
        open.is_none(),
        "a code block of docs/what-if.md is never closed"
    );
    let mut compared = 0;
    for pair in blocks.windows(2) {
        let [(said, first, commands), (_, second, quoted)] = pair else {
            continue;
        };
        if first != "sh" || second != "text" {
            continue;
        }
        let mut printed = String::new();
        let mut status = 0;
        for command in commands.lines().filter(|line| !line.trim().is_empty()) {
            let args: Vec<&str> = command
                .strip_prefix("tenantc ")
                .expect("an example runs tenantc")
                .split_whitespace()
                .collect();
            let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
                .args(&args)
                .current_dir(fleet.path())
                .output()
                .unwrap();
            printed.push_str(&String::from_utf8_lossy(&output.stdout));
            printed.push_str(&String::from_utf8_lossy(&output.stderr));
            status = output.status.code().unwrap_or(-1);
        }
        assert_eq!(
            printed.trim_end(),
            quoted.trim_end(),
            "docs/what-if.md: `{}` prints other text than it quotes",
            commands.trim()
        );
        const SAYS: &str = "exits with code ";
        let code = said
            .rfind(SAYS)
            .and_then(|at| said.get(at + SAYS.len()..at + SAYS.len() + 1))
            .expect("the prose before each example states its exit code");
        assert_eq!(status.to_string(), code, "`{}`", commands.trim());
        compared += 1;
    }
    assert!(compared >= 4, "docs/what-if.md quotes {compared} examples");
}
