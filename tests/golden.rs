//! The golden test: the repository's own `tenants/` and `cells/` compile to exactly `golden/`.
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
    let compilation = support::compile_root(&support::repo());
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
        std::fs::read_dir(support::repo().join("tenants"))
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
    let compilation = support::compile_root(&support::repo());
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
