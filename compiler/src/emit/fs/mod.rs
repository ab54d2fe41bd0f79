//! Writing the output tree to disk incrementally and crash-safely, and comparing it with what
//! is there.
//!
//! Consumes: an [`OutputTree`] and the output folder. Produces: the folder holding exactly the
//! tree ([`Writer::write`]), or the tree on disk ([`read_tree`]) and how it differs ([`compare`]).
//!
//! A write goes in three steps, under an exclusive lock on `out/.tenantc-lock` ([`lock`]):
//! 1. every file whose bytes change is written to a temporary file `.tenantc-tmp-N` in its
//!    folder (new folders are created once each), part by part as the compilation hands the
//!    parts over ([`staging`]: [`Writer::begin`], [`Staging::take`]), and, once every part is
//!    in, all are synced on several threads ([`Staging::finish`]; [`Writer::write`] is a write
//!    of one part);
//! 2. a journal listing every removal, folder creation and rename is written, synced and renamed
//!    to `out/.tenantc-journal`, which commits the write ([`journal`]);
//! 3. the journal is applied and deleted ([`journal`]).
//!
//! A run that finds a journal applies it again (every operation is idempotent), and a run that
//! finds temporary files without a journal deletes them ([`recovery`]), so after a kill at any
//! moment the next run restores exactly the old tree or exactly the new one, and leaves nothing
//! else.
//! Every filesystem operation of a write goes through [`disk`], which counts it (where the faults
//! of `tests/crash.rs` strike) and never follows a symbolic link out of the folder; [`scan`] walks
//! the folder and decides whether tenantc may write it at all.
//!
//! Invariants:
//! - Only files whose bytes change are written, and only files that disappear are removed;
//!   an up-to-date folder is not touched (beyond the lock file).
//! - An existing folder is written to only if it carries tenantc's marker file, or holds
//!   nothing but tenantc's own lock, journal and temporary files, so `--out` pointed at the wrong
//!   place changes nothing.
//! - Symbolic links inside the folder are never followed, and every path comes from the tree or
//!   the journal as a relative path of plain components, so nothing is written outside it.
//! - Before the journal is committed, a failure removes what this run created and leaves the
//!   old tree; folders that the journal changes are probed for write access first.

mod compare;
mod disk;
mod journal;
mod lock;
mod recovery;
mod scan;
mod staging;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::OutputTree;
use disk::Disk;
use recovery::old_leftovers;
use scan::{Kind, Ownership, Scan, ownership};

pub use compare::Comparing;
pub use recovery::Recovery;
pub use staging::Staging;

/// The lock file inside the output folder; it stays there and is never part of the tree.
pub const LOCK: &str = ".tenantc-lock";

/// The journal of a committed write that is not yet fully applied.
pub const JOURNAL: &str = ".tenantc-journal";

/// The name prefix of temporary files; tenantc never writes a tree file with this prefix.
pub const TEMP_PREFIX: &str = ".tenantc-tmp-";

/// The journal is written under this temporary name and then renamed to [`JOURNAL`].
const JOURNAL_TEMP: &str = ".tenantc-tmp-journal";

/// The temporary file that tests whether a folder is writable.
const PROBE: &str = ".tenantc-tmp-probe";

/// How a file of `out/` differs from the tree a build would write.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// The build would write this file, and `out/` lacks it.
    Missing(String),
    /// `out/` has this file with other contents.
    Changed(String),
    /// `out/` has this file, and the build would not write it.
    Extra(String),
}

impl Change {
    /// The relative path.
    pub fn path(&self) -> &str {
        match self {
            Change::Missing(path) | Change::Changed(path) | Change::Extra(path) => path,
        }
    }
}

/// Test-only fault injection, set by the binary from the `TENANTC_TEST_CRASH_AFTER` and
/// `TENANTC_TEST_FAIL_AFTER` environment variables so that `tests/crash.rs` can stop a real
/// build at every filesystem operation. Never set these outside tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Abort the process (as a kill would) after this many filesystem operations.
    pub crash_after: Option<u64>,
    /// Make the filesystem operation after this many fail with "permission denied".
    pub fail_after: Option<u64>,
}

/// Reads every regular file under `dir` into a tree; a missing folder is an empty tree.
///
/// Tenantc's lock file is not part of the tree. A journal or temporary files of an interrupted
/// write are an error that says to run `tenantc build`.
pub fn read_tree(dir: &Path) -> io::Result<OutputTree> {
    let scan = Scan::of(dir)?;
    if let Some(leftover) = scan.interrupted() {
        return Err(io::Error::other(format!(
            "{} holds an interrupted write of tenantc ({leftover}); run `tenantc build` to finish or undo it",
            dir.display()
        )));
    }
    let mut tree = OutputTree::new();
    for (relative, kind) in &scan.entries {
        // Symlinks and other non-regular files are listed with empty contents so they show up
        // as changed, but never followed.
        let contents = match kind {
            Kind::File => fs::read(dir.join(relative))?,
            Kind::Other => Vec::new(),
        };
        tree.insert(relative.clone(), contents);
    }
    Ok(tree)
}

/// Like [`read_tree`], but first waits for a build that is writing `dir` (a shared lock on its
/// lock file, when there is one), calling `on_wait` with a message before waiting.
pub fn read_tree_waiting(dir: &Path, on_wait: fn(&str)) -> io::Result<OutputTree> {
    let _lock = lock::shared(dir, on_wait)?;
    read_tree(dir)
}

/// How the output folder differs from a tree: [`compare_dir`]'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// How the folder differs from the tree, sorted by path.
    pub changes: Vec<Change>,
    /// The bytes on disk of the first changed files (as many as asked for), to show a diff.
    pub current: OutputTree,
    /// The tree's bytes of the same files.
    pub built: OutputTree,
}

/// Lists how the folder `dir` differs from `tree`, as [`compare`] of the tree read from disk
/// would, without holding the folder in memory: each file is opened once, read only when its
/// size equals the tree's, and the files are compared on several threads. The bytes on disk of
/// the first `keep` changed files come back in [`Comparison::current`].
///
/// A journal or temporary files of an interrupted write are an error, as for [`read_tree`].
pub fn compare_dir(dir: &Path, tree: &OutputTree, keep: usize) -> io::Result<Comparison> {
    Comparing::new(dir, None, keep)?.finish(tree)
}

/// Like [`compare_dir`], but first waits for a build that is writing `dir` (a shared lock on its
/// lock file, when there is one), calling `on_wait` with a message before waiting.
pub fn compare_dir_waiting(
    dir: &Path,
    tree: &OutputTree,
    keep: usize,
    on_wait: fn(&str),
) -> io::Result<Comparison> {
    comparing(dir, keep, on_wait)?.finish(tree)
}

/// Begins a comparison of `dir` with a tree handed in parts ([`Comparing`]), after waiting for a
/// build that is writing it, as [`compare_dir_waiting`] does; the shared lock is held until
/// [`Comparing::finish`].
pub fn comparing(dir: &Path, keep: usize, on_wait: fn(&str)) -> io::Result<Comparing> {
    let lock = lock::shared(dir, on_wait)?;
    Comparing::new(dir, lock, keep)
}

/// Lists how `actual` differs from `expected`, sorted by path.
pub fn compare(expected: &OutputTree, actual: &OutputTree) -> Vec<Change> {
    let mut changes = Vec::new();
    for (path, contents) in expected {
        match actual.get(path) {
            None => changes.push(Change::Missing(path.clone())),
            Some(existing) if existing != contents => changes.push(Change::Changed(path.clone())),
            Some(_) => {}
        }
    }
    for path in actual.keys() {
        if !expected.contains_key(path) {
            changes.push(Change::Extra(path.clone()));
        }
    }
    changes.sort_by(|left, right| left.path().cmp(right.path()));
    changes
}

/// Replaces the contents of `out` with exactly `tree`. Returns the changes made (empty when
/// `out` was current, in which case nothing is touched but the lock file).
pub fn write(out: &Path, tree: &OutputTree) -> io::Result<Vec<Change>> {
    Writer::open(out, Faults::default(), |_| {})?.write(tree)
}

/// Takes the lock of `out` and repairs an interrupted write, as every build does first.
pub fn recover(out: &Path) -> io::Result<Recovery> {
    Writer::open(out, Faults::default(), |_| {}).map(|writer| writer.recovery)
}

/// The output folder, locked and repaired, ready to be written.
#[derive(Debug)]
pub struct Writer {
    disk: Disk,
    on_wait: fn(&str),
    lock: Option<File>,
    /// Why the folder cannot be written, when its lock file cannot be created (a read-only
    /// folder can still be found up to date).
    read_only: Option<io::Error>,
    recovery: Recovery,
    /// The folder as it was after recovery, while nothing has changed it.
    scan: Option<Scan>,
    leftovers: Vec<PathBuf>,
}

impl Writer {
    /// Opens `out`: refuses a folder tenantc did not make, takes the lock (calling `on_wait`
    /// with a message if another build holds it), and finishes or undoes an interrupted write.
    /// A missing folder is created only by [`Writer::write`].
    pub fn open(out: &Path, faults: Faults, on_wait: fn(&str)) -> io::Result<Writer> {
        let mut writer = Writer {
            disk: Disk {
                root: out.to_path_buf(),
                done: 0,
                faults,
            },
            on_wait,
            lock: None,
            read_only: None,
            recovery: Recovery::Clean,
            scan: None,
            leftovers: old_leftovers(out),
        };
        if ownership(out)? == Ownership::Owned {
            writer.lock_and_recover()?;
        }
        Ok(writer)
    }

    /// What opening found and repaired.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// Folders beside `out` that an older tenantc left behind after an interrupted build
    /// (`.out.tenantc-new-PID`, `.out.tenantc-old-PID`, each holding the marker). Tenantc never
    /// writes outside `out`, so it reports them and leaves their removal to the user.
    pub fn leftovers(&self) -> &[PathBuf] {
        &self.leftovers
    }

    /// Makes the folder hold exactly `tree`, writing only what changed. Returns the changes.
    pub fn write(&mut self, tree: &OutputTree) -> io::Result<Vec<Change>> {
        self.begin().finish(tree)
    }

    /// Creates the missing output folder (and its missing parents) once, before the first write.
    /// Returns the folders it created, outermost first (none when a concurrent build made the
    /// folder first), so that a write abandoned later can remove them again.
    fn create_root(&mut self) -> io::Result<Vec<PathBuf>> {
        let root = self.disk.root.clone();
        let mut made = Vec::new();
        if let Some(parent) = root.parent()
            && !parent.as_os_str().is_empty()
            && fs::symlink_metadata(parent).is_err()
        {
            let mut missing = parent;
            while fs::symlink_metadata(missing).is_err() {
                made.push(missing.to_path_buf());
                match missing.parent() {
                    Some(up) if !up.as_os_str().is_empty() => missing = up,
                    _ => break,
                }
            }
            made.reverse();
            self.disk.step()?;
            fs::create_dir_all(parent).map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("cannot create {}: {error}", parent.display()),
                )
            })?;
        }
        self.disk.step()?;
        match fs::create_dir(&root) {
            Ok(()) => {
                made.push(root);
                Ok(made)
            }
            // A concurrent build made it first; the lock serialises the rest.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                if ownership(&root)? == Ownership::Owned {
                    Ok(made)
                } else {
                    Err(io::Error::other(format!(
                        "{} appeared while tenantc was building",
                        root.display()
                    )))
                }
            }
            Err(error) => Err(io::Error::new(
                error.kind(),
                format!("cannot create {}: {error}", root.display()),
            )),
        }
    }

    /// Removes what a write staged after `error`, and says what was left.
    fn undo(&mut self, error: io::Error, created: &Created) -> io::Error {
        let failed = self.remove_created(created);
        let outcome = if failed == 0 {
            format!(
                "{} still holds its previous files",
                self.disk.root.display()
            )
        } else {
            format!(
                "{} still holds its previous files, and {failed} temporary files or folders that the next `tenantc build` removes",
                self.disk.root.display()
            )
        };
        io::Error::new(
            error.kind(),
            format!("{error}; nothing was changed: {outcome}"),
        )
    }
}

impl Writer {
    /// Removes the temporary files and folders a write created; returns how many are left.
    fn remove_created(&mut self, created: &Created) -> usize {
        let mut failed = 0;
        for temp in &created.temps {
            if self.disk.remove_file(temp).is_err()
                && fs::symlink_metadata(self.disk.root.join(temp)).is_ok()
            {
                failed += 1;
            }
        }
        for dir in created.dirs.iter().rev() {
            if self.disk.remove_dir(dir).is_err() {
                failed += 1;
            }
        }
        failed
    }
}

/// Paths created by the staging of a write, removed again if the write fails before its commit.
#[derive(Debug, Default)]
struct Created {
    temps: Vec<String>,
    dirs: Vec<String>,
}

/// Whether `path` is a non-empty relative path of plain `/`-separated components.
fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'))
        && !path.contains('\0')
}

/// Whether a tree path would be mistaken for tenantc's own lock, journal or temporary files.
fn is_artefact(path: &str) -> bool {
    path == LOCK || path == JOURNAL || file_name(path).starts_with(TEMP_PREFIX)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() {
        name.to_string()
    } else {
        format!("{folder}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::MARKER;

    pub(super) fn tree(files: &[(&str, &str)]) -> OutputTree {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
            .collect()
    }

    /// Every path under `dir` (folders with a trailing `/`), for "nothing else is left" checks.
    pub(super) fn listing(dir: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![(dir.to_path_buf(), String::new())];
        while let Some((path, prefix)) = stack.pop() {
            for entry in fs::read_dir(&path).unwrap() {
                let entry = entry.unwrap();
                let relative = join(&prefix, &entry.file_name().to_string_lossy());
                if entry.file_type().unwrap().is_dir() {
                    found.push(format!("{relative}/"));
                    stack.push((entry.path(), relative));
                } else {
                    found.push(relative);
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn write_replaces_the_folder_with_exactly_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = tree(&[(MARKER, "m"), ("a/x.yaml", "1"), ("b/y.yaml", "2")]);
        write(&out, &first).unwrap();
        assert_eq!(read_tree(&out).unwrap(), first);
        let second = tree(&[(MARKER, "m"), ("a/x.yaml", "3")]);
        let changes = write(&out, &second).unwrap();
        assert_eq!(
            changes,
            vec![
                Change::Changed("a/x.yaml".into()),
                Change::Extra("b/y.yaml".into())
            ]
        );
        assert_eq!(read_tree(&out).unwrap(), second);
        // Nothing is left beside out/, and inside it only the tree and the lock file.
        let siblings: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(siblings.len(), 1);
        assert_eq!(listing(&out), [MARKER, LOCK, "a/", "a/x.yaml"]);
    }

    #[test]
    fn write_refuses_a_folder_it_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious.txt"), "keep").unwrap();
        let error = write(dir.path(), &tree(&[(MARKER, "m")])).unwrap_err();
        assert!(error.to_string().contains("refusing"));
        assert_eq!(listing(dir.path()), ["precious.txt"]);
    }

    #[test]
    fn an_up_to_date_folder_is_not_touched() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let files = tree(&[(MARKER, "m"), ("a.yaml", "1")]);
        write(&out, &files).unwrap();
        let before = fs::metadata(out.join("a.yaml"))
            .unwrap()
            .modified()
            .unwrap();
        assert!(write(&out, &files).unwrap().is_empty());
        let after = fs::metadata(out.join("a.yaml"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
    }

    #[test]
    fn files_and_folders_swap_places() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = tree(&[(MARKER, "m"), ("a", "file"), ("b/c/d.yaml", "1")]);
        write(&out, &first).unwrap();
        let second = tree(&[(MARKER, "m"), ("a/x/y.yaml", "2"), ("b", "file")]);
        write(&out, &second).unwrap();
        assert_eq!(read_tree(&out).unwrap(), second);
        assert_eq!(
            listing(&out),
            [MARKER, LOCK, "a/", "a/x/", "a/x/y.yaml", "b"]
        );
    }

    #[test]
    fn symbolic_links_inside_out_are_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        write(&out, &tree(&[(MARKER, "m")])).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("a")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), out.join("f.yaml")).unwrap();
        let wanted = tree(&[(MARKER, "m"), ("a/x.yaml", "1"), ("f.yaml", "2")]);
        write(&out, &wanted).unwrap();
        assert_eq!(read_tree(&out).unwrap(), wanted);
        assert!(listing(&outside).is_empty(), "wrote outside out/");
        assert!(!fs::symlink_metadata(out.join("a")).unwrap().is_symlink());
    }
}
