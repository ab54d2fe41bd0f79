//! Repository hygiene: module docs, the diagnostics reference and the code registry agree.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

#[path = "tidy/closed_sets.rs"]
mod closed_sets;
#[path = "tidy/label_keys.rs"]
mod label_keys;
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

/// The modules that may touch the disk (ARCHITECTURE.md): `load.rs` reads the project,
/// `emit/fs/` writes `out/`, `git.rs` reads a revision, `weights/digest.rs` hashes a weights
/// folder, and `cli/disk.rs` reads and writes the files a command names on its command line.
const DISK_MODULES: [&str; 5] = [
    "load.rs",
    "emit/fs/",
    "git.rs",
    "weights/digest.rs",
    "cli/disk.rs",
];

/// What touches the disk (or runs a program): std's file system and process modules, and the
/// `Path` methods that read the file system.
const DISK_ACCESS: [&str; 9] = [
    "std::fs",
    "process::Command",
    "env::current_dir",
    ".canonicalize()",
    ".read_dir()",
    ".symlink_metadata()",
    ".is_dir()",
    ".is_file()",
    ".exists()",
];

/// The lines of a file's non-test code that touch the disk (one of [`DISK_ACCESS`], or a
/// `use std::{…}` that imports `fs` or `process`); the code stops at the file's test module
/// (`#[cfg(test)]` before a `mod … {` block, which ends each file).
fn disk_access(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|pair| {
            let next = pair[1].trim();
            pair[0].trim() == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{')
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.starts_with("//"))
        .filter(|line| {
            DISK_ACCESS.iter().any(|access| line.contains(access))
                || (line.starts_with("use std::{")
                    && line
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|word| word == "fs" || word == "process"))
        })
        .map(str::to_string)
        .collect()
}

/// The source files of modules declared `#[cfg(test)] mod name;`, and their submodules.
fn test_only_modules(files: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for path in files {
        let text = fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            let Some(name) = pair[1]
                .trim()
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            if pair[0].trim() != "#[cfg(test)]" {
                continue;
            }
            let stem = path.file_stem().unwrap();
            let folder = if stem == "mod" || stem == "lib" || stem == "main" {
                path.parent().unwrap().to_path_buf()
            } else {
                path.with_extension("")
            };
            found.push(folder.join(format!("{name}.rs")));
            found.push(folder.join(name));
        }
    }
    found
}

#[test]
fn only_the_io_modules_touch_the_disk() {
    let source = support::repo().join("compiler/src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    files.sort();
    let test_only = test_only_modules(&files);
    let mut found = Vec::new();
    for path in &files {
        let relative = path
            .strip_prefix(&source)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if DISK_MODULES.iter().any(|module| {
            relative == *module || (module.ends_with('/') && relative.starts_with(module))
        }) || test_only.iter().any(|module| path.starts_with(module))
        {
            continue;
        }
        for line in disk_access(&fs::read_to_string(path).unwrap()) {
            found.push(format!("compiler/src/{relative}: {line}"));
        }
    }
    assert!(
        found.is_empty(),
        "only {DISK_MODULES:?} touch the disk (ARCHITECTURE.md); move this access there:\n{}",
        found.join("\n")
    );
    // The check finds what it looks for, skips only the test module, and knows the test-only
    // modules of the crate.
    let sample = "use std::fs;\nuse std::{io, process};\nfn f(p: &Path) -> bool {\n    p.exists() && p.join(\"x\").is_dir()\n}\n#[cfg(test)]\nmod tests {\n    fn g() { std::fs::read(\"x\"); }\n}\n";
    assert_eq!(disk_access(sample).len(), 3, "{:?}", disk_access(sample));
    assert!(
        test_only.contains(&source.join("testing.rs")),
        "{test_only:?}"
    );
    assert!(
        test_only.contains(&source.join("keyless/tests.rs")),
        "{test_only:?}"
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

/// The test files that may read the example fleet at the repository's top (through
/// `support::example()`): the golden test, the README's tour, and the conformance checks that
/// judge the example's committed `out/`. Every other test reads `tests/fixtures/fleet/`.
const EXAMPLE_READERS: &[&str] = &[
    "tests/golden.rs",
    "tests/ci_docs.rs",
    "tests/conformance.rs",
];

/// Where a test may name the repository's folder itself: the two helpers every other test finds
/// the repository through, so that `TENANTC_TEST_REPO` (see `tests/ci_docs.rs`) moves them all.
const REPOSITORY_FINDERS: &[&str] = &["tests/support/mod.rs", "compiler/src/testing.rs"];

/// Issue 19 item 7: tests find the repository through `support::repo()` or `testing::repo()`,
/// read the example fleet only where they judge it, and embed none of its files. A line that
/// names the crate's folder elsewhere must name, on that line, what it reaches there: a path
/// under `tests/` or `compiler/src/`, or `Cargo.toml` (the manifest that cargo reads).
#[test]
fn tests_reach_the_repository_through_one_place_and_the_example_only_where_they_judge_it() {
    let repo = support::repo();
    let mut files = Vec::new();
    rust_files(&repo.join("compiler/src"), &mut files);
    rust_files(&repo.join("tests"), &mut files);
    let example_folders: Vec<std::path::PathBuf> = tenantc::layout::READ_FOLDERS
        .iter()
        .chain(&["out", "golden"])
        .map(|folder| repo.join(folder))
        .collect();
    // Spelled in two pieces, so that this file does not name what it looks for.
    let example_call = concat!("support::", "example()");
    let mut offending = Vec::new();
    for path in &files {
        let relative = path
            .strip_prefix(&repo)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = fs::read_to_string(path).unwrap();
        for (idx, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let at = format!("{relative}:{}: {}", idx + 1, line.trim());
            if line.contains("env!(\"CARGO_MANIFEST_DIR\")")
                && !REPOSITORY_FINDERS.contains(&relative.as_str())
                && !["\"/tests/", "\"tests/", "\"compiler/src", "\"Cargo.toml\""]
                    .iter()
                    .any(|reached| line.contains(reached))
            {
                offending.push(format!("{at}\n    finds the repository by itself"));
            }
            if line.contains(example_call)
                && !EXAMPLE_READERS.contains(&relative.as_str())
                && relative != "tests/support/mod.rs"
            {
                offending.push(format!("{at}\n    reads the example fleet"));
            }
            for macro_name in ["include_str!(\"", "include_bytes!(\""] {
                for (start, _) in line.match_indices(macro_name) {
                    let rest = &line[start + macro_name.len()..];
                    let Some(target) = rest.split('"').next() else {
                        continue;
                    };
                    let embedded = path.parent().unwrap().join(target);
                    let embedded = embedded.canonicalize().unwrap_or(embedded);
                    if example_folders
                        .iter()
                        .any(|folder| embedded.starts_with(folder))
                    {
                        offending.push(format!("{at}\n    embeds a file of the example fleet"));
                    }
                }
            }
        }
    }
    assert!(
        offending.is_empty(),
        "read the repository through support::repo() (tests/) or crate::testing::repo() \
         (unit tests), and a fleet from support::fleet() or crate::testing::FLEET:\n{}",
        offending.join("\n")
    );
}

/// The declaration files of the fixtures under `tests/`: regular `.kdl`, `.yaml` and `.yml`
/// files below a `tenants/` or `cells/` folder, outside the expected output trees.
fn fixture_declarations(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            let name = entry.file_name();
            if name != "expected" && name != "out" {
                fixture_declarations(&path, found);
            }
        } else if kind.is_file()
            && path
                .extension()
                .is_some_and(|ext| ext == "kdl" || ext == "yaml" || ext == "yml")
            && path
                .components()
                .any(|part| part.as_os_str() == "tenants" || part.as_os_str() == "cells")
        {
            found.push(path);
        }
    }
}

/// Issue 19 item 7: one copy of each fixture tenant and cell. A declaration that several cases
/// use lives once under `tests/fixtures/` (the frozen fleet in `tests/fixtures/fleet/`, others in
/// `tests/fixtures/tenants/` and `tests/fixtures/cells/`), and each case names it in its `shared`
/// file; a variant is a file of its own, different from every other.
#[test]
fn no_fixture_declaration_is_a_copy_of_another() {
    let tests = support::repo().join("tests");
    let mut files = Vec::new();
    fixture_declarations(&tests, &mut files);
    files.sort();
    assert!(files.len() > 100, "found only {} declarations", files.len());
    let mut first_of: std::collections::BTreeMap<Vec<u8>, &std::path::PathBuf> =
        std::collections::BTreeMap::new();
    let mut copies = Vec::new();
    for path in &files {
        let bytes = fs::read(path).unwrap();
        if let Some(first) = first_of.get(&bytes) {
            copies.push(format!(
                "{} is a copy of {}",
                path.strip_prefix(&tests).unwrap().display(),
                first.strip_prefix(&tests).unwrap().display()
            ));
        } else {
            first_of.insert(bytes, path);
        }
    }
    assert!(
        copies.is_empty(),
        "share one copy under tests/fixtures/ through the cases' `shared` files \
         (tests/cases.rs):\n{}",
        copies.join("\n")
    );
}
