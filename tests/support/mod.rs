//! Helpers shared by the integration tests: where the repository and its fixture fleets are,
//! loading fixture folders (with the files they share, see [`case_root`]) and comparing trees.
//!
//! Invariants: every file a test reads from the repository is found through [`repo`] (a tidy
//! test holds every other test file to it), so `TENANTC_TEST_REPO` moves all of them at once; a
//! test that needs a realistic fleet reads the frozen [`fleet`], and only the golden test, the
//! README's tour and the conformance checks of the committed `out/` read the [`example`] fleet.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use tenantc::emit::OutputTree;
use tenantc::{Compilation, InputFile, compile_loaded, load};

/// The environment variable that points the tests at another copy of the repository; the
/// README-tour test of `tests/ci_docs.rs` runs every test binary against an edited scratch copy.
pub const REPO_OVERRIDE: &str = "TENANTC_TEST_REPO";

/// The repository root: `TENANTC_TEST_REPO` when it is set, else the one the tests were built
/// from.
pub fn repo() -> PathBuf {
    match std::env::var_os(REPO_OVERRIDE) {
        Some(root) if !root.is_empty() => PathBuf::from(root),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// The example fleet at the repository's top (`tenants/`, `cells/`, `keys/`, `weights/`,
/// `templates/`), whose output is `out/` and `golden/`. Only the golden test, the README's tour
/// and the conformance checks that judge the committed `out/` read it: editing an example must
/// change nothing else.
pub fn example() -> PathBuf {
    repo()
}

/// The frozen fixture fleet, `tests/fixtures/fleet/`: a copy of the example fleet as it was when
/// the tests that use it were written, never edited with it. A test that needs a realistic
/// fleet reads this one (or builds a variant from it with a stated edit).
pub fn fleet() -> PathBuf {
    repo().join(FLEET)
}

/// Where the frozen fixture fleet lives, relative to the repository.
pub const FLEET: &str = "tests/fixtures/fleet";

/// Every folder of a fleet that the build reads: declarations, signing material, templates.
pub const FLEET_FOLDERS: [&str; 5] = tenantc::layout::READ_FOLDERS;

/// Copies the frozen fixture fleet's folders into `to` (which may exist).
pub fn copy_fleet(to: &Path) {
    for folder in FLEET_FOLDERS {
        let from = fleet().join(folder);
        if from.is_dir() {
            copy_dir(&from, &to.join(folder));
        }
    }
}

/// The file of a case folder that names the fixtures its input shares with other cases.
pub const SHARED: &str = "shared";

/// The root a fixture case is compiled from: its own folder (`input/` of a case under
/// `tests/cases/`, `root/` of a CLI case) when it has no `shared` file, else a scratch copy
/// holding first every fixture folder the `shared` file names and then the case's own files.
#[derive(Debug)]
pub struct CaseRoot {
    path: PathBuf,
    _scratch: Option<tempfile::TempDir>,
}

impl std::ops::Deref for CaseRoot {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl From<PathBuf> for CaseRoot {
    /// A root that is a folder as it stands, such as a fleet.
    fn from(path: PathBuf) -> CaseRoot {
        CaseRoot {
            path,
            _scratch: None,
        }
    }
}

impl AsRef<Path> for CaseRoot {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// What a case's `shared` file says: one entry a line, blank lines and `#` comments left out.
#[derive(Debug, Default)]
pub struct Shared {
    /// From lines `<destination> = <source>`: a file or folder under `tests/fixtures/` (such as
    /// `fleet`, the frozen fixture fleet, or `tenants/alpha.kdl`), and where it goes in the
    /// case's root (`.` is the root itself), so one copy of a fixture serves every case.
    pub fixtures: Vec<(PathBuf, PathBuf)>,
    /// Paths relative to the root, from lines `replace <path>`: a shared file that the case's
    /// own file of the same path replaces, a variant whose reason the comment above it gives.
    /// Any other file that two entries both put in place fails the test.
    pub replaced: BTreeSet<PathBuf>,
}

/// The `shared` file of `case` (empty when there is none).
pub fn shared_fixtures(case: &Path) -> Shared {
    let mut shared = Shared::default();
    let Ok(text) = fs::read_to_string(case.join(SHARED)) else {
        return shared;
    };
    let file = case.join(SHARED);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(path) = line.strip_prefix("replace ") {
            shared.replaced.insert(PathBuf::from(path.trim()));
            continue;
        }
        let Some((destination, source)) = line.split_once(" = ") else {
            panic!(
                "{}: `{line}` is not `<destination> = <source>`",
                file.display()
            );
        };
        let source = repo().join("tests/fixtures").join(source.trim());
        assert!(
            source.exists(),
            "{}: `{}` is not under tests/fixtures/",
            file.display(),
            source.display()
        );
        shared
            .fixtures
            .push((PathBuf::from(destination.trim()), source));
    }
    shared
}

/// The root of `case` whose own files are in its subfolder `own` (see [`CaseRoot`]).
pub fn case_root(case: &Path, own: &str) -> CaseRoot {
    let shared = shared_fixtures(case);
    if shared.fixtures.is_empty() {
        return case.join(own).into();
    }
    let scratch = tempfile::tempdir().unwrap();
    let mut copied = BTreeMap::new();
    let own = (PathBuf::from("."), case.join(own));
    for (destination, source) in shared.fixtures.iter().chain([&own]) {
        let destination = if destination == Path::new(".") {
            PathBuf::new()
        } else {
            destination.clone()
        };
        if source.is_dir() {
            copy_into(source, scratch.path(), &destination, &mut copied);
        } else if source.exists() {
            copy_one(source, scratch.path(), &destination, &mut copied);
        }
    }
    let replaced: BTreeSet<&PathBuf> = copied
        .iter()
        .filter_map(|(path, times)| (*times > 1).then_some(path))
        .collect();
    assert_eq!(
        replaced,
        shared.replaced.iter().collect(),
        "{}: the files that the case's own replace must be listed as `replace <path>`",
        case.join(SHARED).display()
    );
    CaseRoot {
        path: scratch.path().to_path_buf(),
        _scratch: Some(scratch),
    }
}

/// Copies the file or link `from` to `<root>/<relative>`, counting how often each path was
/// copied: a later copy replaces an earlier one.
fn copy_one(from: &Path, root: &Path, relative: &Path, copied: &mut BTreeMap<PathBuf, usize>) {
    let target = root.join(relative);
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    *copied.entry(relative.to_path_buf()).or_default() += 1;
    if fs::symlink_metadata(&target).is_ok() {
        fs::remove_file(&target).unwrap();
    }
    if fs::symlink_metadata(from).unwrap().file_type().is_symlink() {
        copy_link(from, &target);
    } else {
        fs::copy(from, &target).unwrap();
    }
}

/// Copies the tree `from` to `<root>/<relative>` with [`copy_one`] for each file.
fn copy_into(from: &Path, root: &Path, relative: &Path, copied: &mut BTreeMap<PathBuf, usize>) {
    fs::create_dir_all(root.join(relative)).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = relative.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_into(&entry.path(), root, &path, copied);
        } else {
            copy_one(&entry.path(), root, &path, copied);
        }
    }
}

/// Whether snapshot trees should be rewritten instead of compared.
pub fn update_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|value| value == "1")
}

/// Loads and compiles the declarations under `root`, with the findings of the load.
pub fn compile_root(root: &Path) -> Compilation {
    compile_loaded(&load::load(root).expect("fixture root loads"))
}

/// The plan of a variant of a fleet that `write` puts into a scratch folder, which must compile
/// (`what` names it in the failure, with the messages of its findings).
pub fn compile_variant(write: impl FnOnce(&Path), what: &str) -> tenantc::plan::Plan {
    let root = tempfile::tempdir().unwrap();
    write(root.path());
    let compilation = compile_root(root.path());
    assert!(
        compilation.output.is_some(),
        "{what} compiles: {:?}",
        compilation
            .diagnostics
            .iter()
            .map(|d| &d.message)
            .collect::<Vec<_>>()
    );
    compilation.plan.unwrap()
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

/// Copies a folder tree, for running the compiler or the CLI on a scratch copy of a fixture;
/// a symbolic link is copied as the same link, never followed.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            copy_link(&entry.path(), &target);
        } else if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Makes `to` a symbolic link with the same target text as the link `from`.
#[cfg(unix)]
pub fn copy_link(from: &Path, to: &Path) {
    std::os::unix::fs::symlink(fs::read_link(from).unwrap(), to).unwrap();
}

/// Makes `to` a symbolic link with the same target text as the link `from`.
#[cfg(not(unix))]
pub fn copy_link(from: &Path, _to: &Path) {
    panic!("{}: symbolic links are copied on unix only", from.display());
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
