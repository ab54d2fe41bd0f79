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

/// Compiles `inputs` on a pool of `threads` threads.
fn compile_on(threads: usize, inputs: &[InputFile]) -> tenantc::Compilation {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| tenantc::compile(inputs))
}

#[test]
fn one_thread_and_four_threads_give_the_same_bytes_and_the_same_findings() {
    let inputs = seeded::generate(SMALL);
    let one = compile_on(1, &inputs);
    let four = compile_on(4, &inputs);
    let (one_tree, four_tree) = (one.output.unwrap(), four.output.unwrap());
    assert!(one_tree.len() > 1000, "{} files", one_tree.len());
    let differing: Vec<&String> = one_tree
        .iter()
        .filter(|(path, bytes)| four_tree.get(*path) != Some(bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(differing.is_empty(), "differ on 4 threads: {differing:?}");
    assert_eq!(one_tree.len(), four_tree.len());

    // Fleets with findings of each parallel stage, which come out the same, in the same order:
    // signatures that do not verify (the weights stage runs only on a fleet that validated),
    // and files that do not parse or read.
    let mut unsigned = inputs.clone();
    let mut bundles = 0;
    for input in &mut unsigned {
        if input.path.ends_with(".sig.json") && bundles < 3 {
            bundles += 1;
            let text = String::from_utf8(input.contents.clone()).unwrap();
            // Another signature, still base64: the file no longer verifies.
            input.contents = text.replacen("\"sig\":\"M", "\"sig\":\"N", 1).into_bytes();
        }
    }
    let mut unreadable = inputs.clone();
    unreadable.push(InputFile {
        path: "tenants/broken.kdl".to_string(),
        contents: b"tenant \"broken\" {\n    org \"x\"\n".to_vec(),
    });
    unreadable.push(InputFile {
        path: "tenants/typo.kdl".to_string(),
        contents: b"tenant \"typo\" {\n    orgg \"x\"\n}\n".to_vec(),
    });
    for (what, broken, codes) in [
        ("signatures", unsigned, ["weights-"]),
        ("files", unreadable, ["kdl-"]),
    ] {
        let one = compile_on(1, &broken);
        let four = compile_on(4, &broken);
        let found = rendered(&one);
        assert!(
            one.has_errors() && codes.iter().all(|code| found.contains(code)),
            "{what}:\n{found}"
        );
        assert_eq!(found, rendered(&four), "{what}");
        assert_eq!(one.diagnostics, four.diagnostics, "{what}");
    }
}
