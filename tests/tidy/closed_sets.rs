//! No closed set is matched as text in the stages that judge and lower it: a `match` arm whose
//! pattern is a string literal (`"exclusive" =>`, `"cpu" | "memory" =>`) in the non-test code of
//! `plan/`, `lower/` or `validate/` fails, with the file and line, unless [`OPEN_SETS`] lists it.
//!
//! A closed set (sharing modes, trust classes, workload kinds, ceiling resources, ...) is an
//! enum, matched without a `_` arm, so adding a value fails to compile where it is not handled;
//! matched as text, a new value would fall into whatever the `_` arm does.

use std::collections::BTreeSet;
use std::fs;

use super::layers::{non_test_code, source_root};

/// Text matched on purpose, as `(file, first literal of the arm)`, because the set is open.
const OPEN_SETS: &[(&str, &str)] = &[
    // A cell's `cloud` is any name in the model; only `aws` and `gcp` get storage IAM, and the
    // help for any other cloud is the fallback.
    ("validate/iam.rs", "aws"),
    ("validate/iam.rs", "gcp"),
    // Output folders: the cell folders with their own sync step, and every tenant and
    // template folder after them.
    ("lower/gitops.rs", "cluster"),
    ("lower/gitops.rs", "kueue"),
    ("lower/gitops.rs", "gpu-operator"),
];

/// The stages whose code may not match a closed set as text.
const STAGES: &[&str] = &["plan/", "lower/", "validate/"];

/// Every `match` arm of the stages whose pattern starts with a string literal, as
/// `(file, line, literal)`.
fn text_arms() -> Vec<(String, usize, String)> {
    let mut arms = Vec::new();
    for (relative, code) in non_test_code() {
        if !STAGES.iter().any(|stage| relative.starts_with(stage)) {
            continue;
        }
        let source = fs::read_to_string(source_root().join(&relative)).unwrap();
        for (index, (code_line, source_line)) in code.lines().zip(source.lines()).enumerate() {
            // In the code, a literal is blanked out: an arm on a string is a line whose code is
            // only `|` between blanks and then `=>`, and whose source starts with a quote.
            let code_line = code_line.trim_start();
            let Some(before_arrow) = code_line.split("=>").next() else {
                continue;
            };
            if !code_line.contains("=>") || before_arrow.chars().any(|ch| ch != ' ' && ch != '|') {
                continue;
            }
            let Some(literal) = source_line.trim_start().strip_prefix('"') else {
                continue;
            };
            let literal = literal.split('"').next().unwrap_or("").to_string();
            arms.push((relative.clone(), index + 1, literal));
        }
    }
    arms
}

#[test]
fn no_stage_matches_a_closed_set_as_text() {
    let arms = text_arms();
    let open: BTreeSet<(&str, &str)> = OPEN_SETS.iter().copied().collect();
    let against: Vec<String> = arms
        .iter()
        .filter(|(file, _, literal)| !open.contains(&(file.as_str(), literal.as_str())))
        .map(|(file, line, literal)| {
            format!("compiler/src/{file}:{line}: `\"{literal}\" =>` matches a closed set as text")
        })
        .collect();
    assert!(
        against.is_empty(),
        "match the enum of the set instead (a new one beside the model's, such as \
         `facts::split::CeilingResource`), without a `_` arm:\n{}",
        against.join("\n")
    );
    let used: BTreeSet<(&str, &str)> = arms
        .iter()
        .map(|(file, _, literal)| (file.as_str(), literal.as_str()))
        .collect();
    let stale: Vec<&(&str, &str)> = OPEN_SETS
        .iter()
        .filter(|entry| !used.contains(entry))
        .collect();
    assert!(
        stale.is_empty(),
        "open sets no longer matched, remove them: {stale:?}"
    );
}
