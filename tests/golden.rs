//! The golden test: the repository's own `tenants/` and `cells/` compile to exactly `golden/`.
//!
//! This is the one test of the example fleet itself (with the README's tour in
//! `tests/ci_docs.rs` and the conformance checks of the committed `out/`): every other test reads
//! the frozen fixture fleet in `tests/fixtures/fleet/`, so editing an example changes `out/`,
//! `golden/` and what this file says about them, nothing else.
//!
//! `golden/` is the reviewed oracle; `out/` is the build product that `tenantc check` keeps in
//! step with the declarations. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites `golden/`.
//! Beside the output tree, `golden/review/<tenant>.txt` holds the reviewer view of each tenant
//! (`tenantc::review`), so a change that widens what a tenant may do shows as a golden diff.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use tenantc::diag::render::{self, Color};

#[test]
fn example_fleet_compiles_to_the_golden_tree() {
    let compilation = support::compile_root(&support::example());
    assert!(
        compilation.diagnostics.is_empty(),
        "the example fleet must compile without diagnostics:\n{}",
        render::human(&compilation.diagnostics, &compilation.sources, Color::Never)
    );
    let mut tree = compilation.output.expect("an output tree");
    let plan = compilation.plan.as_ref().expect("a plan");
    for summary in tenantc::review::review(plan).tenants {
        let path = format!("{REVIEW}/{}.txt", summary.tenant);
        assert!(!tree.contains_key(&path), "the build writes {path}");
        tree.insert(path, tenantc::review::render(&summary).into_bytes());
    }
    support::assert_tree(&support::repo().join("golden"), &tree);
}

/// The folder of `golden/` that holds the reviewer view, one file per tenant.
const REVIEW: &str = "review";

#[test]
fn every_tenant_of_the_example_fleet_has_a_reviewer_view() {
    let declared: std::collections::BTreeSet<String> =
        std::fs::read_dir(support::example().join("tenants"))
            .unwrap()
            .map(|entry| {
                let name = entry.unwrap().file_name().into_string().unwrap();
                name.rsplit_once('.').unwrap().0.to_string()
            })
            .collect();
    let viewed: std::collections::BTreeSet<String> =
        std::fs::read_dir(support::repo().join("golden").join(REVIEW))
            .unwrap()
            .map(|entry| {
                let name = entry.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".txt").unwrap().to_string()
            })
            .collect();
    assert_eq!(declared, viewed);
}

#[test]
fn example_fleet_covers_two_cells_and_every_trust_class() {
    let compilation = support::compile_root(&support::example());
    let tree = compilation.output.expect("an output tree");
    let cells: std::collections::BTreeSet<&str> = tree
        .keys()
        .filter_map(|path| path.split_once('/').map(|(cell, _)| cell))
        .collect();
    assert!(cells.len() >= 2, "cells: {cells:?}");
    let text = support::text_tree(&tree);
    for trust in ["soft", "mig", "hard"] {
        assert!(
            text.values()
                .any(|file| file.contains(&format!("tenant.platform/trust: {trust}\n"))),
            "no tenant of trust class {trust}"
        );
    }
    let tenants: std::collections::BTreeSet<&str> = tree
        .keys()
        .filter_map(|path| {
            path.split('/')
                .nth(2)
                .filter(|_| path.contains("/tenants/"))
        })
        .collect();
    assert!(tenants.len() >= 4, "tenants: {tenants:?}");
}

/// The example's YAML declarations, recursively under its `tenants/` and `cells/`, with the
/// schema of their folder.
fn example_yaml_files() -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let mut files = Vec::new();
    for (folder, schema) in [("tenants", "tenant"), ("cells", "cell")] {
        let schema = support::repo().join(format!("schema/{schema}.schema.json"));
        let mut pending = vec![support::example().join(folder)];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                } else if path.is_dir() {
                    pending.push(path);
                } else if path
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml")
                {
                    files.push((path, schema.clone()));
                }
            }
        }
    }
    files.sort();
    files
}

/// The modeline of a YAML example leads an editor to the schema of its folder.
#[test]
fn yaml_modelines_point_at_the_schema_of_their_folder() {
    let mut seen = 0;
    for (path, schema) in example_yaml_files() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let Some(line) = text
            .lines()
            .find(|line| line.starts_with("# yaml-language-server:"))
        else {
            continue;
        };
        seen += 1;
        let target = line
            .split_once("$schema=")
            .map(|(_, target)| target.trim())
            .unwrap_or_default();
        let dir = path.parent().unwrap();
        let resolved = std::fs::canonicalize(dir.join(target))
            .unwrap_or_else(|error| panic!("{}: {target}: {error}", path.display()));
        let expected = std::fs::canonicalize(schema).unwrap_or_default();
        assert_eq!(resolved, expected, "{}", path.display());
    }
    assert!(
        seen >= 1,
        "no YAML example carries a yaml-language-server modeline"
    );
}
