//! The chargeback recording rules tenantc emits, judged by Prometheus itself (issue 20 item 3):
//! `promtool check rules` on every emitted rule set, `promtool test rules` on the unit tests
//! under `tests/promtool/`.
//!
//! Consumes: promtool (`$TENANTC_PROMTOOL`, else the cache `tests/promtool/install.sh` builds:
//! `${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}/bin/promtool`), the
//! fixture fleet `tests/promtool/fleet/` and its emitted rules `tests/promtool/rules/
//! chargeback.rules.yaml` (the `spec` of the PrometheusRule tenantc emits for it), the `spec`
//! of every PrometheusRule under `out/` and `golden/`, the unit tests
//! `tests/promtool/*.test.yaml` and the test of `tests/promtool/wrong/`, run against the
//! emitted rules with one rule made wrong.
//! Produces: nothing, or with `UPDATE_GOLDEN=1` the rules file from what tenantc emits now;
//! fails when the rules file differs from what tenantc emits, a rule set does not check, a unit
//! test fails, or the wrong rule (a MIG slice counted as a GPU) passes its test. Without
//! promtool the promtool tests fail under `CI=true` (unless `TENANTC_PROMTOOL_DEFERRED=1`:
//! `.ci/run`'s promtool step runs them again) and print a skip line otherwise; the comparison
//! with what tenantc emits needs no promtool.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout
)] // Test code: a panic is a failed test, and the skip line and timings are its report.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{compile_root, repo, update_golden};

/// The emitted PrometheusRule of the fixture fleet's cell.
const FIXTURE_RULE: &str = "chargeback-test/metering/prometheusrule-tenantc-chargeback.yaml";
/// The committed rules file: the `spec` of [`FIXTURE_RULE`].
const RULES_FILE: &str = "tests/promtool/rules/chargeback.rules.yaml";
/// The first lines of [`RULES_FILE`], above the emitted `spec`.
const RULES_HEADER: &str = "# The `spec` of the PrometheusRule tenantc emits for the fixture fleet tests/promtool/fleet/\n\
# (out/chargeback-test/metering/), written by tests/promtool.rs; UPDATE_GOLDEN=1 cargo test --test\n\
# promtool rewrites it. DO NOT EDIT.\n";

/// The promtool binary, or `None` (with the skip line printed) when it is absent outside CI.
fn promtool() -> Option<PathBuf> {
    let path = match std::env::var_os("TENANTC_PROMTOOL") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => {
            let cache = match std::env::var_os("TENANTC_TOOLS_CACHE") {
                Some(root) if !root.is_empty() => PathBuf::from(root),
                _ => match std::env::var_os("XDG_CACHE_HOME") {
                    Some(root) if !root.is_empty() => PathBuf::from(root).join("tenantc-tools"),
                    _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/tenantc-tools"),
                },
            };
            cache.join("bin/promtool")
        }
    };
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "promtool not found at {}; build it with `bash tests/promtool/install.sh`",
        path.display()
    );
    // `.ci/run` sets TENANTC_PROMTOOL_DEFERRED=1 in its test step: its promtool step builds
    // promtool and runs this binary again, where a missing promtool fails.
    let deferred = std::env::var("TENANTC_PROMTOOL_DEFERRED").as_deref() == Ok("1");
    assert!(
        deferred || std::env::var("CI").as_deref() != Ok("true"),
        "{message}"
    );
    println!("SKIPPED promtool tests: {message}");
    None
}

fn run(promtool: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(promtool)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("{} cannot run: {error}", promtool.display()))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn files_ending(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_ending(&path, suffix, found);
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
}

/// The `spec` of an emitted PrometheusRule as a rules file: the canonical writer puts top-level
/// keys at the start of a line and indents their contents by two spaces.
fn rules_of(object: &str) -> Option<String> {
    if !object.lines().any(|line| line == "kind: PrometheusRule") {
        return None;
    }
    let mut rules = String::new();
    let mut in_spec = false;
    for line in object.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_spec = line == "spec:";
        } else if in_spec {
            rules.push_str(line.strip_prefix("  ").unwrap_or(line));
            rules.push('\n');
        }
    }
    Some(rules)
}

/// The rules file of the fixture fleet, as tenantc emits it now.
fn emitted_fixture_rules() -> String {
    let compilation = compile_root(&repo().join("tests/promtool/fleet"));
    let tree = compilation
        .output
        .unwrap_or_else(|| panic!("the fixture fleet builds: {:#?}", compilation.diagnostics));
    let object = String::from_utf8(tree[FIXTURE_RULE].clone()).unwrap();
    let rules = rules_of(&object).expect("a PrometheusRule");
    format!("{RULES_HEADER}{rules}")
}

#[test]
fn the_committed_rules_file_is_what_tenantc_emits_for_the_fixture_fleet() {
    let emitted = emitted_fixture_rules();
    let path = repo().join(RULES_FILE);
    if update_golden() {
        std::fs::write(&path, &emitted).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == emitted,
        "{RULES_FILE} differs from what tenantc emits (run with UPDATE_GOLDEN=1 to accept):\n{}",
        support::line_diff(&stored, &emitted)
    );
}

/// `rules` with the expression of `record` replaced by `expr`.
fn with_expression(rules: &str, record: &str, expr: &str) -> String {
    let mut out = String::new();
    let mut lines = rules.lines().peekable();
    let mut replaced = false;
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if line.trim_start() != format!("- record: \"{record}\"") {
            continue;
        }
        let expr_line = lines.next().expect("an expression after the record");
        let indent = expr_line.len() - expr_line.trim_start().len();
        assert!(expr_line.trim_start().starts_with("expr:"), "{expr_line}");
        out.push_str(&format!("{}expr: \"{expr}\"\n", " ".repeat(indent)));
        // The block of a multi-line expression is indented deeper than its key.
        while lines
            .peek()
            .is_some_and(|next| next.len() - next.trim_start().len() > indent)
        {
            lines.next();
        }
        replaced = true;
    }
    assert!(replaced, "no rule records {record}");
    out
}

#[test]
fn every_rules_file_and_emitted_prometheus_rule_passes_promtool_check_rules() {
    let Some(promtool) = promtool() else {
        return;
    };
    let mut files = Vec::new();
    files_ending(&repo().join("tests/promtool"), ".rules.yaml", &mut files);
    let scratch = std::env::temp_dir().join(format!("tenantc-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut emitted = Vec::new();
    files_ending(&repo().join("out"), ".yaml", &mut emitted);
    files_ending(&repo().join("golden"), ".yaml", &mut emitted);
    for path in emitted {
        let object = std::fs::read_to_string(&path).unwrap();
        if let Some(rules) = rules_of(&object) {
            let name = path
                .strip_prefix(repo())
                .unwrap()
                .to_string_lossy()
                .replace('/', "_");
            let file = scratch.join(name);
            std::fs::write(&file, rules).unwrap();
            files.push(file);
        }
    }
    // The fixture's rules, the example fleet's in out/ and golden/ (two cells each).
    assert!(files.len() >= 5, "too few rules files: {files:?}");
    let started = std::time::Instant::now();
    for file in &files {
        let output = run(
            &promtool,
            &["check", "rules", &file.to_string_lossy()],
            &repo(),
        );
        assert!(
            output.status.success(),
            "{}:\n{}",
            file.display(),
            text(&output)
        );
    }
    println!(
        "promtool check rules: {} files in {:?}",
        files.len(),
        started.elapsed()
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn each_rule_family_passes_its_promtool_unit_tests() {
    let Some(promtool) = promtool() else {
        return;
    };
    let dir = repo().join("tests/promtool");
    let mut tests = Vec::new();
    files_ending(&dir, ".test.yaml", &mut tests);
    tests.retain(|path| path.parent() == Some(dir.as_path()));
    assert!(!tests.is_empty(), "no unit tests under {}", dir.display());
    for test in tests {
        let started = std::time::Instant::now();
        let output = run(&promtool, &["test", "rules", &test.to_string_lossy()], &dir);
        assert!(
            output.status.success(),
            "{}:\n{}",
            test.display(),
            text(&output)
        );
        println!(
            "promtool test rules {}: {:?}",
            test.display(),
            started.elapsed()
        );
    }
}

#[test]
fn a_mig_slice_counted_as_a_gpu_fails_its_promtool_test() {
    let Some(promtool) = promtool() else {
        return;
    };
    // The emitted rules with GPU-equivalents summed as device counts, next to the test.
    let dir = std::env::temp_dir().join(format!("tenantc-promtool-wrong-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = std::fs::read_to_string(repo().join(RULES_FILE)).unwrap();
    let wrong = with_expression(
        &rules,
        "tenantc:tenant_pool_gpus:allocated",
        "sum by (tenant, pool) (tenantc:kueue_usage:devices)",
    );
    std::fs::write(dir.join("mig-as-gpu.rules.yaml"), wrong).unwrap();
    std::fs::copy(
        repo().join("tests/promtool/wrong/mig-as-gpu.test.yaml"),
        dir.join("mig-as-gpu.test.yaml"),
    )
    .unwrap();
    // The same test passes against the emitted rules: it fails below for the wrong rule only.
    std::fs::write(dir.join("right.rules.yaml"), &rules).unwrap();
    let test = std::fs::read_to_string(dir.join("mig-as-gpu.test.yaml")).unwrap();
    std::fs::write(
        dir.join("right.test.yaml"),
        test.replace("mig-as-gpu.rules.yaml", "right.rules.yaml"),
    )
    .unwrap();
    let right = run(&promtool, &["test", "rules", "right.test.yaml"], &dir);
    assert!(right.status.success(), "{}", text(&right));
    let output = run(&promtool, &["test", "rules", "mig-as-gpu.test.yaml"], &dir);
    let report = text(&output);
    assert!(!output.status.success(), "the wrong rule passed:\n{report}");
    // It fails on the value, not on a broken file: 4 GPUs where 6/7 is right.
    assert!(report.contains("FAILED"), "{report}");
    assert!(
        report.contains("got:") && report.contains("4E+00"),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
