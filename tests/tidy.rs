//! Repository hygiene: module docs, the diagnostics reference and the code registry agree.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

#[path = "tidy/layers.rs"]
mod layers;
mod support;

use std::fs;
use std::path::Path;

use tenantc::diag::Code;

fn rust_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    rust_files(&support::repo().join("compiler/src"), &mut files);
    rust_files(&support::repo().join("tests"), &mut files);
    assert!(files.len() > 20);
    let missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = fs::read_to_string(path).unwrap();
            !text.starts_with("//!")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` header: {missing:?}"
    );
}

#[test]
fn diagnostics_reference_has_one_heading_per_code_in_registry_order() {
    let text = fs::read_to_string(support::repo().join("docs/diagnostics.md")).unwrap();
    let headings: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("## `"))
        .filter_map(|rest| rest.strip_suffix('`'))
        .collect();
    let codes: Vec<&str> = Code::ALL.iter().map(|code| code.as_str()).collect();
    assert_eq!(
        headings, codes,
        "docs/diagnostics.md headings must match compiler/src/diag/code.rs"
    );
}

#[test]
fn every_code_is_reported_somewhere_in_the_compiler() {
    let mut files = Vec::new();
    rust_files(&support::repo().join("compiler/src"), &mut files);
    let source: String = files
        .iter()
        .filter(|path| !path.ends_with("diag/code.rs"))
        .map(|path| fs::read_to_string(path).unwrap())
        .collect();
    for code in Code::ALL {
        let variant = format!("Code::{code:?}");
        assert!(
            source.contains(&variant),
            "{variant} is registered but never reported"
        );
    }
}

#[test]
fn rendered_examples_in_the_diagnostics_reference_match_the_snapshots() {
    let mut snapshots = String::new();
    for case in support::subdirs(&support::repo().join("tests/cases/err")) {
        snapshots.push_str(&fs::read_to_string(case.join("diagnostics.snap")).unwrap());
    }
    for case in support::subdirs(&support::repo().join("tests/cli")) {
        snapshots.push_str(&fs::read_to_string(case.join("expected")).unwrap());
    }
    let doc = fs::read_to_string(support::repo().join("docs/diagnostics.md")).unwrap();
    let mut checked = 0;
    for block in doc.split("```text\n").skip(1) {
        let block = block.split("\n```").next().unwrap();
        if block.starts_with("error[") || block.starts_with("warning[") {
            checked += 1;
            assert!(
                snapshots.contains(block),
                "docs/diagnostics.md shows output no snapshot has:\n{block}"
            );
        }
    }
    assert!(checked > 20, "only {checked} rendered examples found");
}

/// The profile tables of `docs/catalog.md`, made from the compiled-in catalog.
fn profile_tables() -> String {
    let catalog = tenantc::catalog::Catalog::builtin();
    let mut out = String::new();
    for table in catalog.tables() {
        out.push_str(&format!(
            "\n### `{}`\n\n{} compute slices, {} memory slices, a placement axis of {} units; confidence: {}.\n\n",
            table.key, table.compute_slices, table.memory_slices, table.placement_units, table.confidence
        ));
        out.push_str(
            "| profile | id | compute | memory | max | starts | size | min driver | inferred |\n",
        );
        out.push_str("|---|---:|---:|---:|---:|---|---:|---:|---|\n");
        for profile in &table.profiles {
            let starts: Vec<String> = profile
                .placement_starts
                .iter()
                .map(u32::to_string)
                .collect();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                profile.name,
                profile
                    .profile_id
                    .map_or("-".to_string(), |id| id.to_string()),
                profile.compute_slices,
                profile.memory_slices,
                profile.max_count,
                starts.join(", "),
                profile.placement_size,
                profile
                    .min_driver
                    .map_or("-".to_string(), |driver| format!("R{driver}")),
                if profile.inferred { "yes" } else { "no" },
            ));
        }
    }
    out.push('\n');
    out
}

#[test]
fn catalog_doc_lists_the_profiles_of_every_mig_table() {
    const BEGIN: &str = "<!-- BEGIN GENERATED: profiles -->\n";
    const END: &str = "<!-- END GENERATED: profiles -->";
    let path = support::repo().join("docs/catalog.md");
    let doc = fs::read_to_string(&path).unwrap();
    let (head, rest) = doc.split_once(BEGIN).expect("begin marker");
    let (current, tail) = rest.split_once(END).expect("end marker");
    let generated = profile_tables();
    if support::update_golden() {
        fs::write(&path, format!("{head}{BEGIN}{generated}{END}{tail}")).unwrap();
        return;
    }
    assert!(
        current == generated,
        "docs/catalog.md profile tables are stale: run UPDATE_GOLDEN=1 cargo test --test tidy"
    );
}
