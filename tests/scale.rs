//! The seeded fleet generator of the scale benchmark (`benches/fleet/seeded.rs`): what it
//! generates compiles with no finding at all, and the same seed gives the same bytes.
//!
//! The benchmark (`benches/scale.sh`) times the big fleets; these tests hold small ones to the
//! same rules in CI.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../benches/fleet/seeded.rs"]
mod seeded;

use seeded::Shape;
use tenantc::InputFile;

/// A fleet small enough for CI that still has every kind of cell, tenant and pool.
const SMALL: Shape = Shape {
    tenants: 36,
    cells: 4,
    seed: 23,
};

fn rendered(compilation: &tenantc::Compilation) -> String {
    tenantc::diag::render::human(
        &compilation.diagnostics,
        &compilation.sources,
        tenantc::diag::render::Color::Never,
    )
}

fn text_of<'a>(inputs: &'a [InputFile], prefix: &str) -> Vec<&'a str> {
    inputs
        .iter()
        .filter(|input| input.path.starts_with(prefix))
        .map(|input| std::str::from_utf8(&input.contents).unwrap())
        .collect()
}

#[test]
fn a_generated_fleet_compiles_with_no_error_and_no_warning() {
    for shape in [
        SMALL,
        Shape {
            tenants: 1,
            cells: 1,
            seed: 1,
        },
        Shape {
            tenants: 25,
            cells: 3,
            seed: 99,
        },
    ] {
        let inputs = seeded::generate(shape);
        let compilation = tenantc::compile(&inputs);
        assert!(
            compilation.diagnostics.is_empty() && compilation.suppressed.is_empty(),
            "{shape:?}:\n{}",
            rendered(&compilation)
        );
        assert!(compilation.output.is_some(), "{shape:?}");
        // Every signed model was verified: none is left out of the plan.
        let plan = compilation.plan.expect("a plan");
        let locks = inputs
            .iter()
            .filter(|input| input.path.ends_with(".lock"))
            .count();
        let verified: std::collections::BTreeSet<(&str, &str)> = plan
            .cells
            .iter()
            .flat_map(|cell| &cell.tenants)
            .flat_map(|tenant| {
                tenant
                    .weights
                    .iter()
                    .map(|model| (tenant.name.as_str(), model.name.as_str()))
            })
            .collect();
        assert_eq!(verified.len(), locks, "{shape:?}");
    }
}

#[test]
fn a_generated_fleet_uses_every_feature_the_benchmark_claims() {
    let inputs = seeded::generate(SMALL);
    let cells = text_of(&inputs, "cells/").join("");
    let tenants = text_of(&inputs, "tenants/").join("");
    for needle in [
        "sharing \"exclusive\"",
        "sharing \"mig\"",
        "sharing \"time-slice\"",
        "sharing \"mps\"",
        "mig-layout \"balanced\"",
        "topology {",
        "owner \"",
        "shared-base \"shared/",
        "aws account=",
        "gcp project=",
        "gitops \"argocd\"",
        "gitops \"flux\"",
    ] {
        assert!(cells.contains(needle), "no cell has `{needle}`");
    }
    for needle in [
        "trust \"hard\"",
        "trust \"mig\"",
        "trust \"soft\"",
        "exception \"rdma\"",
        "shared-base \"shared/",
        "model \"m\"",
    ] {
        assert!(tenants.contains(needle), "no tenant has `{needle}`");
    }
    let keys = text_of(&inputs, "keys/");
    let p384 = keys.iter().filter(|pem| pem.len() > 200).count();
    assert!(p384 > 0 && p384 < keys.len(), "both P-256 and P-384 keys");
    assert!(
        inputs
            .iter()
            .any(|input| input.path.starts_with("templates/"))
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_another_fleet() {
    let first = seeded::generate(SMALL);
    let again = seeded::generate(SMALL);
    let as_pairs = |inputs: &[InputFile]| -> Vec<(String, Vec<u8>)> {
        inputs
            .iter()
            .map(|input| (input.path.clone(), input.contents.clone()))
            .collect()
    };
    assert_eq!(as_pairs(&first), as_pairs(&again));
    let other = seeded::generate(Shape { seed: 24, ..SMALL });
    assert_ne!(as_pairs(&first), as_pairs(&other));
}
