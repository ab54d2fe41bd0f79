//! Helpers shared by the integration tests: loading fixture folders and comparing trees.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use tenantc::emit::OutputTree;
use tenantc::{Compilation, InputFile, compile_loaded, load};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether snapshot trees should be rewritten instead of compared.
pub fn update_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|value| value == "1")
}

/// Loads and compiles the declarations under `root`, with the findings of the load.
pub fn compile_root(root: &Path) -> Compilation {
    compile_loaded(&load::load(root).expect("fixture root loads"))
}

/// Loads the declarations under `root` as inputs; the root must load without findings.
pub fn inputs(root: &Path) -> Vec<InputFile> {
    let loaded = load::load(root).expect("fixture root loads");
    assert!(loaded.findings.is_empty(), "{:?}", loaded.findings);
    loaded.inputs
}

/// Compares `tree` with the folder `expected`, or rewrites the folder when `UPDATE_GOLDEN=1`.
/// Panics with the list of missing, extra and changed files.
pub fn assert_tree(expected: &Path, tree: &OutputTree) {
    if update_golden() {
        if expected.exists() {
            fs::remove_dir_all(expected).unwrap();
        }
        for (path, contents) in tree {
            let file = expected.join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, contents).unwrap();
        }
        return;
    }
    let actual = tenantc::emit::fs::read_tree(expected).unwrap();
    let changes = tenantc::emit::fs::compare(tree, &actual);
    if !changes.is_empty() {
        let mut report = String::new();
        for change in &changes {
            report.push_str(&format!("  {change:?}\n"));
            if let tenantc::emit::fs::Change::Changed(path) = change {
                let built = String::from_utf8_lossy(&tree[path]);
                let stored = String::from_utf8_lossy(&actual[path]);
                report.push_str(&line_diff(&stored, &built));
            }
        }
        panic!(
            "{} differs from the compiled tree (run with UPDATE_GOLDEN=1 to accept):\n{report}",
            expected.display()
        );
    }
}

/// The lines that differ, `-` as stored and `+` as built, with their line numbers.
pub fn line_diff(stored: &str, built: &str) -> String {
    let stored: Vec<&str> = stored.lines().collect();
    let built: Vec<&str> = built.lines().collect();
    let mut out = String::new();
    for idx in 0..stored.len().max(built.len()) {
        let (old, new) = (stored.get(idx), built.get(idx));
        if old != new {
            if let Some(old) = old {
                out.push_str(&format!("    {:>4} - {old}\n", idx + 1));
            }
            if let Some(new) = new {
                out.push_str(&format!("    {:>4} + {new}\n", idx + 1));
            }
        }
    }
    out
}

/// The files of a tree as text, by path.
pub fn text_tree(tree: &OutputTree) -> BTreeMap<String, String> {
    tree.iter()
        .map(|(path, bytes)| (path.clone(), String::from_utf8(bytes.clone()).unwrap()))
        .collect()
}

/// Sorted subfolders of `dir`.
pub fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// A seeded xorshift generator for the property tests over generated fleets: the same seed
/// gives the same fleet on every machine, so a failing seed can be replayed.
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Compiles `inputs` and returns the output tree; a diagnostic error fails the test with the
/// rendered diagnostics.
#[allow(dead_code)]
pub fn build(inputs: &[InputFile]) -> OutputTree {
    let compilation = tenantc::compile(inputs);
    assert!(
        !compilation.has_errors(),
        "{}",
        tenantc::diag::render::human(
            &compilation.diagnostics,
            &compilation.sources,
            tenantc::diag::render::Color::Never
        )
    );
    compilation.output.expect("an output tree")
}

/// Copies a folder tree, for running the compiler or the CLI on a scratch copy of a fixture.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs git in `dir` with a fixed identity and no user or system configuration; returns its
/// stdout, and fails the test when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=tenantc-test",
            "-c",
            "user.email=test@example.com",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}
