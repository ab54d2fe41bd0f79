//! One label-key table: a string literal that starts with one of tenantc's label-key prefixes
//! (`tenant.platform/`, `tenantc.io/`, `app.kubernetes.io/`), or a key made with
//! `format!("{LABEL_PREFIX}/…")`, in the non-test code of `compiler/src/` fails, with the file
//! and line, unless it is in `kube/labels.rs` or [`EXCEPTIONS`] lists it.
//!
//! So a key is named once, in `kube/labels.rs`, and every stage that writes or reads it uses the
//! constant; a key spelled twice could be written under one name and read under another. The
//! check reads lines that hold code (a line that is only a string literal is not seen).

use std::collections::BTreeSet;
use std::fs;

use super::layers::{non_test_code, source_root};

/// The one home of the keys.
const TABLE: &str = "kube/labels.rs";

/// What starts a key literal.
const KEY_STARTS: &[&str] = &[
    "\"tenant.platform/",
    "\"tenantc.io/",
    "\"app.kubernetes.io/",
    "{LABEL_PREFIX}/",
];

/// Keys spelled outside the table on purpose, as `(file, key)`.
const EXCEPTIONS: &[(&str, &str)] = &[
    // Help texts that show a declaration a user can write (a pool taint of the declaration
    // language, not a key tenantc emits).
    ("plan/pinning.rs", "\"tenantc.io/pool"),
    ("validate/pools.rs", "\"tenantc.io/pool"),
    // The example in the help of a metrics selector: the scraper's own label, a foreign key.
    ("schema/cell.rs", "\"app.kubernetes.io/name"),
];

/// Every key literal in the non-test code outside the table, as `(file, line, key)`.
fn stray_keys() -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    for (relative, code) in non_test_code() {
        if relative == TABLE {
            continue;
        }
        let source = fs::read_to_string(source_root().join(&relative)).unwrap();
        for (index, (code_line, source_line)) in code.lines().zip(source.lines()).enumerate() {
            // Comments and test code are blanked out of `code`.
            if code_line.trim().is_empty() {
                continue;
            }
            for start in KEY_STARTS {
                for (at, _) in source_line.match_indices(start) {
                    let key: String = source_line[at..]
                        .chars()
                        .enumerate()
                        .take_while(|(idx, ch)| *idx == 0 || !matches!(ch, '"' | '\\' | ' '))
                        .map(|(_, ch)| ch)
                        .collect();
                    found.push((relative.clone(), index + 1, key));
                }
            }
        }
    }
    found
}

#[test]
fn label_keys_are_spelled_only_in_the_label_table() {
    let found = stray_keys();
    let allowed: BTreeSet<(&str, &str)> = EXCEPTIONS.iter().copied().collect();
    let against: Vec<String> = found
        .iter()
        .filter(|(file, _, key)| {
            !allowed
                .iter()
                .any(|(allowed_file, prefix)| file == allowed_file && key.starts_with(prefix))
        })
        .map(|(file, line, key)| format!("compiler/src/{file}:{line}: {key}"))
        .collect();
    assert!(
        against.is_empty(),
        "name the key with its constant in compiler/src/{TABLE} (add it there):\n{}",
        against.join("\n")
    );
    let stale: Vec<&(&str, &str)> = EXCEPTIONS
        .iter()
        .filter(|(file, prefix)| {
            !found
                .iter()
                .any(|(found_file, _, key)| found_file == file && key.starts_with(prefix))
        })
        .collect();
    assert!(stale.is_empty(), "exceptions no longer needed: {stale:?}");
}
