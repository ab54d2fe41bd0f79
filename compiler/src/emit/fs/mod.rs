//! Writing the output tree to disk incrementally and crash-safely, and comparing it with what
//! is there.
//!
//! Consumes: an [`OutputTree`] and the output folder. Produces: the folder holding exactly the
//! tree ([`Writer::write`]), or the tree on disk ([`read_tree`]) and how it differs ([`compare`]).
//!
//! A write goes in three steps, under an exclusive lock on `out/.tenantc-lock` ([`lock`]):
//! 1. every file whose bytes change is written to a temporary file `.tenantc-tmp-N` in its
//!    folder (new folders are created once each), and all are synced, on several threads
//!    (this module: [`Writer::write`] plans and stages the write);
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

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::OutputTree;
use disk::Disk;
use journal::Op;
use recovery::old_leftovers;
use scan::{Kind, Ownership, Scan, ownership};

pub use recovery::Recovery;

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
}

/// Lists how the folder `dir` differs from `tree`, as [`compare`] of the tree read from disk
/// would, without holding the folder in memory: each file is opened once, read only when its
/// size equals the tree's, and the files are compared on several threads. The bytes on disk of
/// the first `keep` changed files come back in [`Comparison::current`].
///
/// A journal or temporary files of an interrupted write are an error, as for [`read_tree`].
pub fn compare_dir(dir: &Path, tree: &OutputTree, keep: usize) -> io::Result<Comparison> {
    let scan = Scan::of(dir)?;
    if let Some(leftover) = scan.interrupted() {
        return Err(io::Error::other(format!(
            "{} holds an interrupted write of tenantc ({leftover}); run `tenantc build` to finish or undo it",
            dir.display()
        )));
    }
    let mut changes = compare::differing(dir, tree, &scan)?;
    changes.extend(
        scan.entries
            .keys()
            .filter(|path| !tree.contains_key(*path))
            .map(|path| Change::Extra(path.clone())),
    );
    changes.sort_by(|left, right| left.path().cmp(right.path()));
    let current = compare::read_some(dir, &scan, &changes, keep)?;
    Ok(Comparison { changes, current })
}

/// Like [`compare_dir`], but first waits for a build that is writing `dir` (a shared lock on its
/// lock file, when there is one), calling `on_wait` with a message before waiting.
pub fn compare_dir_waiting(
    dir: &Path,
    tree: &OutputTree,
    keep: usize,
    on_wait: fn(&str),
) -> io::Result<Comparison> {
    let _lock = lock::shared(dir, on_wait)?;
    compare_dir(dir, tree, keep)
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
        if let Some(bad) = tree
            .keys()
            .find(|path| !plain_path(path) || is_artefact(path))
        {
            return Err(io::Error::other(format!(
                "internal error: output path `{}` is not a plain relative path; this is a bug in tenantc",
                bad.escape_debug()
            )));
        }
        if self.lock.is_none() && self.read_only.is_none() {
            self.create_root()?;
            self.lock_and_recover()?;
        }
        let scan = match self.scan.take() {
            Some(scan) => scan,
            None => Scan::of(&self.disk.root)?,
        };
        let plan = Plan::new(&self.disk.root, tree, &scan)?;
        if plan.is_empty() {
            return Ok(plan.changes);
        }
        if let Some(error) = &self.read_only {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "{error}; {} files would change, and nothing was changed",
                    plan.changes.len()
                ),
            ));
        }
        let mut created = Created::default();
        let staged = self.stage(tree, &plan, &mut created);
        let ops = match staged {
            Ok(ops) => ops,
            Err(error) => return Err(self.undo(error, &created)),
        };
        if let Err(error) = self.commit(&ops, &mut created) {
            return Err(self.undo(error, &created));
        }
        let applied = self
            .disk
            .sync_dir("")
            .and_then(|()| self.apply(&ops))
            .and_then(|()| self.disk.remove_file(JOURNAL));
        if let Err(error) = applied {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "{error}; the write was committed but not finished: {} holds the rest, and the next `tenantc build` finishes it",
                    self.disk.root.join(JOURNAL).display()
                ),
            ));
        }
        Ok(plan.changes)
    }

    /// Creates the missing output folder (and its missing parents) once, before the first write.
    fn create_root(&mut self) -> io::Result<()> {
        let root = self.disk.root.clone();
        if let Some(parent) = root.parent()
            && !parent.as_os_str().is_empty()
            && fs::symlink_metadata(parent).is_err()
        {
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
            Ok(()) => Ok(()),
            // A concurrent build made it first; the lock serialises the rest.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                if ownership(&root)? == Ownership::Owned {
                    Ok(())
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

    /// Step 1: creates new folders and writes every changed file to a temporary file, probes
    /// the folders the journal will change, and syncs. Returns the journal's operations.
    fn stage(
        &mut self,
        tree: &OutputTree,
        plan: &Plan,
        created: &mut Created,
    ) -> io::Result<Vec<Op>> {
        for dir in &plan.mkdirs {
            if !plan.blocked.contains(dir) {
                self.disk.create_dir(dir)?;
                created.dirs.push(dir.clone());
            }
        }
        let mut ops = Vec::new();
        ops.extend(
            plan.removals
                .iter()
                .map(|path| Op::Remove { path: path.clone() }),
        );
        ops.extend(
            plan.rmdirs
                .iter()
                .rev()
                .map(|path| Op::Rmdir { path: path.clone() }),
        );
        ops.extend(
            plan.mkdirs
                .iter()
                .filter(|dir| plan.blocked.contains(*dir))
                .map(|path| Op::Mkdir { path: path.clone() }),
        );
        let mut synced = BTreeSet::new();
        let mut written = Vec::new();
        for (idx, path) in plan.writes.iter().enumerate() {
            let folder = parent(path);
            let blocked = plan.blocked.contains(folder);
            let temp = if blocked {
                format!("{TEMP_PREFIX}{idx}")
            } else {
                join(folder, &format!("{TEMP_PREFIX}{idx}"))
            };
            let contents = tree.get(path).map_or(&[][..], Vec::as_slice);
            created.temps.push(temp.clone());
            self.disk.write_temp(&temp, contents)?;
            synced.insert(parent(&temp).to_string());
            written.push(temp.clone());
            ops.push(Op::Rename {
                from: temp,
                to: path.clone(),
            });
        }
        // Every folder whose entries the journal changes must be writable, or the journal could
        // not be applied; a folder that already received a temporary file is known to be.
        let mut probe = BTreeSet::new();
        for path in &plan.removals {
            probe.insert(parent(path).to_string());
        }
        for dir in &plan.rmdirs {
            probe.insert(dir.clone());
            probe.insert(parent(dir).to_string());
        }
        for dir in plan.mkdirs.iter().filter(|dir| plan.blocked.contains(*dir)) {
            probe.insert(parent(dir).to_string());
        }
        for folder in probe {
            if synced.contains(&folder) || plan.blocked.contains(&folder) {
                continue;
            }
            let temp = join(&folder, PROBE);
            created.temps.push(temp.clone());
            self.disk.write_temp(&temp, b"")?;
            self.disk.remove_file(&temp)?;
            created.temps.pop();
        }
        for dir in &created.dirs {
            synced.insert(parent(dir).to_string());
        }
        // The temporary files and their folders reach the disk before the journal that names
        // them, so a power loss after the commit cannot roll forward to empty files.
        self.disk.sync_all(&written)?;
        self.disk
            .sync_all(&synced.into_iter().collect::<Vec<_>>())?;
        Ok(ops)
    }

    /// Removes what [`Writer::stage`] created after `error`, and says what was left.
    fn undo(&mut self, error: io::Error, created: &Created) -> io::Error {
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

/// Paths created by [`Writer::stage`], removed again if the write fails before its commit.
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

/// What a write must do to turn the scanned folder into the tree.
#[derive(Debug, Default)]
struct Plan {
    /// Tree files to write, sorted.
    writes: Vec<String>,
    /// Entries to remove, sorted.
    removals: Vec<String>,
    /// Folders to remove, sorted (removed in reverse, children first).
    rmdirs: Vec<String>,
    /// Folders to create, sorted (parents first).
    mkdirs: Vec<String>,
    /// Folders to create whose path, or a parent's, is taken by an entry to remove: they are
    /// created by the journal after the removal.
    blocked: BTreeSet<String>,
    changes: Vec<Change>,
}

impl Plan {
    fn new(root: &Path, tree: &OutputTree, scan: &Scan) -> io::Result<Plan> {
        let mut plan = Plan::default();
        let mut needed = BTreeSet::new();
        for path in tree.keys() {
            let mut folder = parent(path);
            while !folder.is_empty() && needed.insert(folder.to_string()) {
                folder = parent(folder);
            }
        }
        // Sorted by path, as the tree is.
        for change in compare::differing(root, tree, scan)? {
            plan.writes.push(change.path().to_string());
            plan.changes.push(change);
        }
        for path in scan.entries.keys() {
            if !tree.contains_key(path) {
                plan.removals.push(path.clone());
                plan.changes.push(Change::Extra(path.clone()));
            }
        }
        plan.rmdirs = scan.dirs.difference(&needed).cloned().collect();
        plan.mkdirs = needed.difference(&scan.dirs).cloned().collect();
        for dir in &plan.mkdirs {
            let mut folder = dir.as_str();
            while !folder.is_empty() {
                if scan.entries.contains_key(folder) {
                    plan.blocked.insert(dir.clone());
                    break;
                }
                folder = parent(folder);
            }
        }
        plan.changes
            .sort_by(|left, right| left.path().cmp(right.path()));
        Ok(plan)
    }

    fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removals.is_empty() && self.rmdirs.is_empty()
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
