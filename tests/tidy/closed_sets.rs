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

/// The closed enums of the model and the layers below the stages: a `match` on one of them in
/// `plan/`, `lower/` or `validate/` names every value, so a new value fails to compile where it
/// is not handled.
const CLOSED_ENUMS: &[&str] = &[
    "AdmissionEngine",
    "AwsMode",
    "CeilingResource",
    "CellFolder",
    "CloudIdentity",
    "DeviceMode",
    "GitOpsController",
    "ParamKey",
    "PodSecurityLevel",
    "Scheduler",
    "Sharing",
    "Signer",
    "TenantRole",
    "Trust",
    "WorkloadKind",
];

/// `_` arms on a closed enum kept on purpose, as `(file, enum)`, each with its reason.
const WILDCARD_EXCEPTIONS: &[(&str, &str)] = &[];

/// The `_ =>` (or `_ if …`) arms of `code` whose `match`'s other arms, at the same depth, name
/// a value of a closed enum, as `(line, enum)`.
fn wildcard_arms_in(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !(trimmed.starts_with("_ =>") || trimmed.starts_with("_ if ")) {
            continue;
        }
        let indent = line.len() - trimmed.len();
        // The arms before it, up to the `match` that opens them (at a smaller indent).
        let mut named = None;
        for earlier in lines[..index].iter().rev() {
            let earlier_trimmed = earlier.trim_start();
            if earlier_trimmed.is_empty() {
                continue;
            }
            let earlier_indent = earlier.len() - earlier_trimmed.len();
            if earlier_indent < indent {
                break;
            }
            if earlier_indent > indent {
                continue;
            }
            let pattern = earlier_trimmed.split("=>").next().unwrap_or("");
            if let Some(set) = CLOSED_ENUMS
                .iter()
                .find(|set| pattern.contains(&format!("{set}::")))
            {
                named = Some(set.to_string());
                break;
            }
        }
        if let Some(set) = named {
            found.push((index + 1, set));
        }
    }
    found
}

/// Every such arm in the non-test code of the stages, as `(file, line, enum)`.
fn wildcard_arms() -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    for (relative, code) in non_test_code() {
        if !STAGES.iter().any(|stage| relative.starts_with(stage)) {
            continue;
        }
        for (line, set) in wildcard_arms_in(&code) {
            found.push((relative.clone(), line, set));
        }
    }
    found
}

#[test]
fn no_stage_matches_a_closed_enum_with_a_wildcard_arm() {
    let arms = wildcard_arms();
    let allowed: BTreeSet<(&str, &str)> = WILDCARD_EXCEPTIONS.iter().copied().collect();
    let against: Vec<String> = arms
        .iter()
        .filter(|(file, _, set)| !allowed.contains(&(file.as_str(), set.as_str())))
        .map(|(file, line, set)| {
            format!(
                "compiler/src/{file}:{line}: a `_` arm on `{set}` turns a new value into an old one"
            )
        })
        .collect();
    assert!(
        against.is_empty(),
        "name every value of the enum instead of a `_` arm:\n{}",
        against.join("\n")
    );
    let used: BTreeSet<(&str, &str)> = arms
        .iter()
        .map(|(file, _, set)| (file.as_str(), set.as_str()))
        .collect();
    let stale: Vec<&(&str, &str)> = WILDCARD_EXCEPTIONS
        .iter()
        .filter(|entry| !used.contains(entry))
        .collect();
    assert!(stale.is_empty(), "exceptions no longer needed: {stale:?}");
}

#[test]
fn a_wildcard_arm_on_a_closed_enum_is_seen_and_one_on_another_match_is_not() {
    let sample = "match pool.sharing {\n    Sharing::Mig => 1,\n    Sharing::Mps\n    | Sharing::TimeSlice => 2,\n    _ => 3,\n}\nmatch count {\n    0 => 1,\n    _ => 2,\n}\nmatch role {\n    Some(role) => match role {\n        TenantRole::Admin => 1,\n        _ => 2,\n    },\n    _ => 0,\n}\n";
    assert_eq!(
        wildcard_arms_in(sample),
        [(5, "Sharing".to_string()), (14, "TenantRole".to_string())]
    );
}
