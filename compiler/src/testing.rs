//! Helpers shared by the unit tests (compiled only for `cargo test`).
//!
//! Consumes: a seed, or a fixture folder of declarations under `tests/`. Produces: [`Rng`], a
//! small deterministic generator for seeded property tests, so a failure reproduces from the seed
//! without a dependency; [`repo`], the repository the tests read; and [`declaration_files`], the
//! files of a fixture fleet folder (with its signing material) in sorted order.
//!
//! Invariants: the sequence of a seed never changes (xorshift 13/7/17); tests that print a seed
//! rely on it. Unit tests read fleets only from `tests/` (the frozen fixture fleet [`FLEET`], the
//! twins), never the example fleet at the repository's top, whose only test is the golden test.

pub(crate) mod support;

/// A xorshift generator; the seed must not be zero.
pub struct Rng(pub u64);

impl Rng {
    /// The next value of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items
            .get(self.below(items.len()))
            .copied()
            .unwrap_or_default()
    }
}

/// The repository the tests read: `TENANTC_TEST_REPO` when it is set (the README-tour test of
/// `tests/ci_docs.rs` runs every test binary against an edited scratch copy), else the one the
/// crate was built from.
pub fn repo() -> std::path::PathBuf {
    match std::env::var_os("TENANTC_TEST_REPO") {
        Some(root) if !root.is_empty() => std::path::PathBuf::from(root),
        _ => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// The frozen fixture fleet, relative to the repository: a copy of the example fleet as it was
/// when the tests that read it were written.
pub const FLEET: &str = "tests/fixtures/fleet";

/// The files under `<root>/tenants` and `<root>/cells`, and the signing material under
/// `<root>/keys` and `<root>/weights`, as `(relative path, text)`, sorted by path; `root` is a
/// fixture folder under `tests/`, relative to the repository (the test fails otherwise).
pub fn declaration_files(root: &str) -> Vec<(String, String)> {
    assert!(
        root.starts_with("tests/"),
        "`{root}`: unit tests read fixture fleets under tests/, such as testing::FLEET"
    );
    let root = repo().join(root);
    let mut files = Vec::new();
    for folder in ["tenants", "cells"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(folder))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        paths.sort();
        for path in paths {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            files.push((format!("{folder}/{name}"), text));
        }
    }
    // The signing material the weights stage verifies models with, recursively.
    let mut pending: Vec<(std::path::PathBuf, String)> = crate::layout::MATERIAL_FOLDERS
        .iter()
        .map(|folder| (root.join(folder), folder.to_string()))
        .collect();
    while let Some((dir, relative)) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{relative}/{name}");
            if entry.path().is_dir() {
                pending.push((entry.path(), path));
            } else {
                files.push((
                    path,
                    std::fs::read_to_string(entry.path()).unwrap_or_default(),
                ));
            }
        }
    }
    files.sort();
    files
}
