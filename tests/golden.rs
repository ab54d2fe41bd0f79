//! The golden test: the repository's own `tenants/` and `cells/` compile to exactly `golden/`.
//!
//! `golden/` is the reviewed oracle; `out/` is the build product that `tenantc check` keeps in
//! step with the declarations. `UPDATE_GOLDEN=1 cargo test --test golden` rewrites `golden/`.

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
    let tree = compilation.output.expect("an output tree");
    support::assert_tree(&support::repo().join("golden"), &tree);
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
