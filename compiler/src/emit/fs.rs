//! Writing the output tree to disk incrementally and crash-safely, and comparing it with what
//! is there.
//!
//! Consumes: an [`OutputTree`] and the output folder. Produces: the folder holding exactly the
//! tree ([`Writer::write`]), or the tree on disk ([`read_tree`]) and how it differs ([`compare`]).
//!
//! A write goes in three steps, under an exclusive lock on `out/.tenantc-lock`:
//! 1. every file whose bytes change is written to a temporary file `.tenantc-tmp-N` in its
//!    folder (new folders are created once each), and all are synced, on several threads;
//! 2. a journal listing every removal, folder creation and rename is written, synced and renamed
//!    to `out/.tenantc-journal`, which commits the write;
//! 3. the journal is applied and deleted.
//!
//! A run that finds a journal applies it again (every operation is idempotent), and a run that
//! finds temporary files without a journal deletes them, so after a kill at any moment the next
//! run restores exactly the old tree or exactly the new one, and leaves nothing else.
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

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{MARKER, OutputTree};

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

/// A journal larger than this is not one tenantc wrote (a million operations of 1 KiB).
const MAX_JOURNAL_BYTES: u64 = 1 << 30;

/// The format tag of the journal.
const JOURNAL_FORMAT: &str = "tenantc-journal-1";

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

/// What a run found and repaired before doing anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The folder was consistent.
    Clean,
    /// A committed write was interrupted, and its journal was applied: the folder holds the tree
    /// of that write.
    RolledForward,
    /// A write was interrupted before its commit, and its temporary files were removed: the
    /// folder holds the tree it held before.
    RolledBack,
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
    let lock_path = dir.join(LOCK);
    // Only a regular lock file is opened: a FIFO would block, a link would lead elsewhere.
    let regular = fs::symlink_metadata(&lock_path).is_ok_and(|meta| meta.is_file());
    let _lock = match File::open(&lock_path) {
        Ok(file) if regular => {
            match file.try_lock_shared() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    on_wait(&holder_message(&lock_path));
                    file.lock_shared()?;
                }
                Err(TryLockError::Error(error)) => return Err(error),
            }
            Some(file)
        }
        _ => None,
    };
    read_tree(dir)
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

    fn lock_and_recover(&mut self) -> io::Result<()> {
        let lock_path = self.disk.root.join(LOCK);
        // A lock "file" that is a symbolic link (out/ is committed, so anyone can add one) would
        // make tenantc truncate its target: it is removed instead, never opened.
        if let Ok(meta) = fs::symlink_metadata(&lock_path)
            && !meta.is_file()
        {
            self.disk.remove_file(LOCK).map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("{error}; {} must be a regular file", lock_path.display()),
                )
            })?;
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
        {
            Ok(file) => file,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                self.read_only = Some(io::Error::new(
                    error.kind(),
                    format!("cannot create {}: {error}", lock_path.display()),
                ));
                let scan = Scan::of(&self.disk.root)?;
                if let Some(leftover) = scan.interrupted() {
                    return Err(io::Error::other(format!(
                        "{} holds an interrupted write of tenantc ({leftover}) that cannot be finished: cannot create {}: {error}",
                        self.disk.root.display(),
                        lock_path.display()
                    )));
                }
                self.scan = Some(scan);
                return Ok(());
            }
            Err(error) => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("cannot create {}: {error}", lock_path.display()),
                ));
            }
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                (self.on_wait)(&holder_message(&lock_path));
                file.lock()?;
            }
            Err(TryLockError::Error(error)) => return Err(error),
        }
        // Say who holds the lock, for builds that wait for it.
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let holder = format!("pid={} since={since}\n", std::process::id());
        self.disk
            .step()
            .and_then(|()| file.set_len(0))
            .and_then(|()| file.write_all_at(holder.as_bytes(), 0))
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!(
                        "cannot write {}: {error}; nothing was changed",
                        lock_path.display()
                    ),
                )
            })?;
        self.lock = Some(file);
        self.recover()
    }

    /// Applies a committed journal, then removes temporary files and empty folders.
    fn recover(&mut self) -> io::Result<()> {
        let journal_path = self.disk.root.join(JOURNAL);
        match fs::symlink_metadata(&journal_path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
            Ok(_) => {
                let journal = read_journal(&journal_path)?;
                self.apply(&journal.ops)
                    .and_then(|()| self.disk.remove_file(JOURNAL))
                    .map_err(|error| {
                        io::Error::new(
                            error.kind(),
                            format!(
                                "cannot finish the interrupted write that {} records: {error}; the next `tenantc build` tries again",
                                journal_path.display()
                            ),
                        )
                    })?;
                self.recovery = Recovery::RolledForward;
            }
        }
        let scan = Scan::of(&self.disk.root)?;
        let empty = scan.empty_dirs();
        if scan.temps.is_empty() && empty.is_empty() {
            self.scan = Some(scan);
            return Ok(());
        }
        let swept = scan
            .temps
            .iter()
            .try_for_each(|temp| self.disk.remove_file(temp))
            .and_then(|()| {
                empty
                    .iter()
                    .rev()
                    .try_for_each(|dir| self.disk.remove_dir(dir))
            });
        if let Err(error) = swept {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "cannot remove what an interrupted build left: {error}; the next `tenantc build` tries again"
                ),
            ));
        }
        if self.recovery == Recovery::Clean && !scan.temps.is_empty() {
            self.recovery = Recovery::RolledBack;
        }
        self.scan = None;
        Ok(())
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

    /// Step 2: writes, syncs and renames the journal into place, which commits the write.
    fn commit(&mut self, ops: &[Op], created: &mut Created) -> io::Result<()> {
        let journal = Journal {
            format: JOURNAL_FORMAT.to_string(),
            ops: ops.to_vec(),
        };
        let mut text = serde_json::to_string(&journal).map_err(io::Error::other)?;
        text.push('\n');
        created.temps.push(JOURNAL_TEMP.to_string());
        self.disk.write_temp(JOURNAL_TEMP, text.as_bytes())?;
        self.disk.rename(JOURNAL_TEMP, JOURNAL)?;
        created.temps.pop();
        // From here on the journal, not this run, owns the temporary files.
        created.temps.clear();
        created.dirs.clear();
        Ok(())
    }

    /// Step 3 (and roll-forward): applies every operation, then syncs the folders it changed.
    fn apply(&mut self, ops: &[Op]) -> io::Result<()> {
        let mut verified = BTreeSet::new();
        let mut touched = BTreeSet::new();
        for op in ops {
            match op {
                Op::Remove { path } => {
                    if !self.disk.real_parents(path, &mut verified, false)? {
                        continue;
                    }
                    match fs::symlink_metadata(self.disk.root.join(path)) {
                        Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                        Err(error) => return Err(error),
                        // A later `mkdir` of the journal made a folder here already.
                        Ok(meta) if meta.is_dir() => continue,
                        Ok(_) => self.disk.remove_file(path)?,
                    }
                    touched.insert(parent(path).to_string());
                }
                Op::Rmdir { path } => {
                    if !self.disk.real_parents(path, &mut verified, false)? {
                        continue;
                    }
                    verified.retain(|dir: &String| {
                        dir != path && !dir.starts_with(&format!("{path}/"))
                    });
                    match fs::symlink_metadata(self.disk.root.join(path)) {
                        Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                        Err(error) => return Err(error),
                        // A later rename of the journal put a file here already.
                        Ok(meta) if !meta.is_dir() => continue,
                        Ok(_) => self.disk.remove_dir(path)?,
                    }
                    touched.insert(parent(path).to_string());
                }
                Op::Mkdir { path } => {
                    self.disk.real_parents(path, &mut verified, true)?;
                    match fs::symlink_metadata(self.disk.root.join(path)) {
                        Err(error) if error.kind() == io::ErrorKind::NotFound => {
                            self.disk.create_dir(path)?;
                        }
                        Err(error) => return Err(error),
                        Ok(meta) if meta.is_dir() => {}
                        Ok(_) => {
                            return Err(io::Error::other(format!(
                                "cannot create folder {}: a file is in the way",
                                self.disk.root.join(path).display()
                            )));
                        }
                    }
                    touched.insert(parent(path).to_string());
                }
                Op::Rename { from, to } => {
                    self.disk.real_parents(from, &mut verified, true)?;
                    self.disk.real_parents(to, &mut verified, true)?;
                    match fs::symlink_metadata(self.disk.root.join(from)) {
                        Ok(_) => self.disk.rename(from, to)?,
                        // Renamed before an interruption.
                        Err(error)
                            if error.kind() == io::ErrorKind::NotFound
                                && fs::symlink_metadata(self.disk.root.join(to)).is_ok() => {}
                        Err(error) => {
                            return Err(io::Error::new(
                                error.kind(),
                                format!(
                                    "the journal renames {} to {}, and neither exists: {error}",
                                    self.disk.root.join(from).display(),
                                    self.disk.root.join(to).display()
                                ),
                            ));
                        }
                    }
                    touched.insert(parent(from).to_string());
                    touched.insert(parent(to).to_string());
                }
            }
        }
        let touched: Vec<String> = touched
            .into_iter()
            .filter(|folder| fs::symlink_metadata(self.disk.path(folder)).is_ok())
            .collect();
        self.disk.sync_all(&touched)
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

/// Counted filesystem operations on paths relative to the output folder.
#[derive(Debug)]
struct Disk {
    root: PathBuf,
    done: u64,
    faults: Faults,
}

impl Disk {
    /// Counts one operation; this is where test-only faults strike.
    fn step(&mut self) -> io::Result<()> {
        if self.faults.crash_after == Some(self.done) {
            std::process::abort();
        }
        if self.faults.fail_after == Some(self.done) {
            self.done += 1;
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "injected failure (TENANTC_TEST_FAIL_AFTER)",
            ));
        }
        self.done += 1;
        Ok(())
    }

    fn path(&self, relative: &str) -> PathBuf {
        if relative.is_empty() {
            self.root.clone()
        } else {
            self.root.join(relative)
        }
    }

    fn context(&self, verb: &str, relative: &str, error: io::Error) -> io::Error {
        io::Error::new(
            error.kind(),
            format!("cannot {verb} {}: {error}", self.path(relative).display()),
        )
    }

    fn create_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::create_dir(self.path(relative)))
            .map_err(|error| self.context("create folder", relative, error))
    }

    fn remove_file(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::remove_file(self.path(relative)))
            .map_err(|error| self.context("remove", relative, error))
    }

    fn remove_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::remove_dir(self.path(relative)))
            .map_err(|error| self.context("remove folder", relative, error))
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let (source, target) = (self.path(from), self.path(to));
        self.step()
            .and_then(|()| fs::rename(&source, &target))
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!(
                        "cannot rename {} to {}: {error}",
                        source.display(),
                        target.display()
                    ),
                )
            })
    }

    /// Creates a new file (never an existing one) and writes it; two operations, so a crash
    /// can fall between them. [`Disk::sync_all`] makes it durable.
    fn write_temp(&mut self, relative: &str, contents: &[u8]) -> io::Result<()> {
        let path = self.path(relative);
        let result = self.step().and_then(|()| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?;
            self.step()?;
            file.write_all(contents)
        });
        result.map_err(|error| self.context("write", relative, error))
    }

    /// Syncs files or folders to the disk, on several threads: each sync mostly waits for the
    /// device, and a first build syncs tens of thousands of files. One operation.
    fn sync_all(&mut self, paths: &[String]) -> io::Result<()> {
        const THREADS: usize = 16;
        if paths.is_empty() {
            return Ok(());
        }
        self.step()?;
        let chunk = paths.len().div_ceil(THREADS).max(1);
        let this = &*self;
        std::thread::scope(|scope| {
            let workers: Vec<_> = paths
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter().try_for_each(|relative| {
                            File::open(this.path(relative))
                                .and_then(|file| file.sync_all())
                                .map_err(|error| this.context("sync", relative, error))
                        })
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("a sync thread failed")))
            })
        })
    }

    fn sync_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| File::open(self.path(relative))?.sync_all())
            .map_err(|error| self.context("sync folder", relative, error))
    }

    /// Checks that every folder above `relative` is a real folder, not a symbolic link or a
    /// file, so that an operation never leaves the output folder. Returns whether they all
    /// exist; a missing one is an error when `required`.
    fn real_parents(
        &self,
        relative: &str,
        verified: &mut BTreeSet<String>,
        required: bool,
    ) -> io::Result<bool> {
        let mut folder = String::new();
        let parts: Vec<&str> = relative.split('/').collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            folder = join(&folder, part);
            if verified.contains(&folder) {
                continue;
            }
            match fs::symlink_metadata(self.path(&folder)) {
                Ok(meta) if meta.is_dir() => {
                    verified.insert(folder.clone());
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound && !required => {
                    return Ok(false);
                }
                Err(error) => return Err(self.context("read", &folder, error)),
                Ok(_) => {
                    return Err(io::Error::other(format!(
                        "{} is not a folder; tenantc does not follow symbolic links in its output",
                        self.path(&folder).display()
                    )));
                }
            }
        }
        Ok(true)
    }
}

/// One operation of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
enum Op {
    /// Remove a file (or a symbolic link) that the new tree lacks.
    Remove { path: String },
    /// Remove a folder that the new tree lacks; listed deepest first, after its files.
    Rmdir { path: String },
    /// Create a folder that could not be created before the commit (a file was in its way).
    Mkdir { path: String },
    /// Move a temporary file over its target.
    Rename { from: String, to: String },
}

/// The journal file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Journal {
    format: String,
    ops: Vec<Op>,
}

/// Reads and validates a journal: a hostile journal (out/ is committed to Git) can name only
/// plain relative paths inside the folder, and can only move tenantc's temporary files.
fn read_journal(path: &Path) -> io::Result<Journal> {
    let damaged = |detail: String| {
        io::Error::other(format!(
            "{} is damaged or from another tenantc version ({detail}); delete it and run `tenantc build` again",
            path.display()
        ))
    };
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_file() || meta.len() > MAX_JOURNAL_BYTES {
        return Err(damaged(
            "not a regular file of a plausible size".to_string(),
        ));
    }
    let bytes = fs::read(path)?;
    let journal: Journal =
        serde_json::from_slice(&bytes).map_err(|error| damaged(error.to_string()))?;
    if journal.format != JOURNAL_FORMAT {
        return Err(damaged(format!("format `{}`", journal.format)));
    }
    for op in &journal.ops {
        let (paths, temp) = match op {
            Op::Remove { path } | Op::Rmdir { path } | Op::Mkdir { path } => (vec![path], None),
            Op::Rename { from, to } => (vec![from, to], Some(from)),
        };
        if let Some(bad) = paths
            .iter()
            .find(|path| !plain_path(path) || path.as_str() == LOCK || path.as_str() == JOURNAL)
        {
            return Err(damaged(format!("path `{}`", bad.escape_debug())));
        }
        if let Some(from) = temp
            && !file_name(from).starts_with(TEMP_PREFIX)
        {
            return Err(damaged(format!("renames `{}`", from.escape_debug())));
        }
    }
    Ok(journal)
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

/// An entry of the output folder other than a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A regular file.
    File,
    /// A symbolic link, FIFO, socket or device: never followed or read.
    Other,
}

/// One walk of the output folder, without reading any file.
#[derive(Debug, Default)]
struct Scan {
    /// Every non-folder entry except tenantc's own files.
    entries: BTreeMap<String, Kind>,
    /// Every real folder below the root.
    dirs: BTreeSet<String>,
    /// Temporary files of an interrupted write.
    temps: Vec<String>,
    /// Whether the root holds a journal.
    journal: bool,
}

impl Scan {
    fn of(dir: &Path) -> io::Result<Scan> {
        let mut scan = Scan::default();
        match fs::symlink_metadata(dir) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(scan),
            Err(error) => return Err(error),
            Ok(meta) if !meta.is_dir() => return Err(not_a_folder(dir, &meta)),
            Ok(_) => {}
        }
        let mut stack = vec![(dir.to_path_buf(), String::new())];
        while let Some((path, prefix)) = stack.pop() {
            for entry in fs::read_dir(&path)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let relative = join(&prefix, &name);
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    scan.dirs.insert(relative.clone());
                    stack.push((entry.path(), relative));
                } else if name.starts_with(TEMP_PREFIX) {
                    scan.temps.push(relative);
                } else if prefix.is_empty() && (name == LOCK || name == JOURNAL) {
                    // The lock file is never part of the tree; the journal is recovered.
                    scan.journal |= name == JOURNAL;
                } else if kind.is_file() {
                    scan.entries.insert(relative, Kind::File);
                } else {
                    scan.entries.insert(relative, Kind::Other);
                }
            }
        }
        scan.temps.sort();
        Ok(scan)
    }

    /// What shows that a write was interrupted, if anything.
    fn interrupted(&self) -> Option<String> {
        if self.journal {
            Some(JOURNAL.to_string())
        } else {
            self.temps.first().map(|first| match self.temps.len() {
                1 => format!("temporary file {first}"),
                count => format!("{count} temporary files such as {first}"),
            })
        }
    }

    /// Folders with no file below them once the temporary files are gone, sorted (so parents
    /// come before their children).
    fn empty_dirs(&self) -> Vec<String> {
        let mut full = BTreeSet::new();
        for path in self.entries.keys() {
            let mut folder = parent(path);
            while !folder.is_empty() && full.insert(folder.to_string()) {
                folder = parent(folder);
            }
        }
        self.dirs.difference(&full).cloned().collect()
    }
}

fn not_a_folder(dir: &Path, meta: &fs::Metadata) -> io::Error {
    if meta.file_type().is_symlink() {
        io::Error::other(format!(
            "{} is a symbolic link; tenantc does not follow it, pass the folder it points to with --out",
            dir.display()
        ))
    } else {
        io::Error::other(format!("{} exists and is not a folder", dir.display()))
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
        for (path, contents) in tree {
            let mut folder = parent(path);
            while !folder.is_empty() && needed.insert(folder.to_string()) {
                folder = parent(folder);
            }
            let change = match scan.entries.get(path) {
                None => Some(Change::Missing(path.clone())),
                Some(Kind::File) => {
                    let existing = fs::read(root.join(path))?;
                    (existing != *contents).then(|| Change::Changed(path.clone()))
                }
                Some(_) => Some(Change::Changed(path.clone())),
            };
            if let Some(change) = change {
                plan.writes.push(path.clone());
                plan.changes.push(change);
            }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ownership {
    Missing,
    Owned,
}

/// Whether `out` may be written: missing, marked by tenantc, or holding only tenantc's own
/// lock, journal and temporary files (a first build that was interrupted). Anything else is
/// refused before a single file in it is read.
fn ownership(out: &Path) -> io::Result<Ownership> {
    let meta = match fs::symlink_metadata(out) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Ownership::Missing),
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "{} cannot be a folder, a file is in its path: {error}",
                    out.display()
                ),
            ));
        }
        Err(error) => {
            return Err(io::Error::new(
                error.kind(),
                format!("cannot read {}: {error}", out.display()),
            ));
        }
        Ok(meta) => meta,
    };
    if !meta.is_dir() {
        return Err(not_a_folder(out, &meta));
    }
    if fs::symlink_metadata(out.join(MARKER)).is_ok() {
        return Ok(Ownership::Owned);
    }
    let mut stack = vec![(out.to_path_buf(), true)];
    while let Some((path, top)) = stack.pop() {
        for entry in fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            let ours = if kind.is_dir() {
                stack.push((entry.path(), false));
                true
            } else {
                name.starts_with(TEMP_PREFIX) || (top && (name == LOCK || name == JOURNAL))
            };
            if !ours {
                return Err(io::Error::other(format!(
                    "{} holds files that tenantc did not write (no {MARKER} marker); refusing to replace it. Choose an empty or new folder with --out",
                    out.display()
                )));
            }
        }
    }
    Ok(Ownership::Owned)
}

/// Says who holds the lock file at `path`, from what the holder wrote into it.
fn holder_message(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|word| word.strip_prefix(key))
            .and_then(|value| value.parse::<u64>().ok())
    };
    match (field("pid="), field("since=")) {
        (Some(pid), Some(since)) => format!(
            "another tenantc build holds {} since {} (pid {pid}); waiting",
            path.display(),
            utc(since)
        ),
        _ => format!("another tenantc build holds {}; waiting", path.display()),
    }
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(seconds: u64) -> String {
    let days = seconds / 86_400;
    let time = seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        time / 3600,
        time % 3600 / 60,
        time % 60
    )
}

/// Folders beside `out` that the whole-tree swap of older tenantc versions left after a kill:
/// `.<name>.tenantc-new-<pid>` or `.<name>.tenantc-old-<pid>`, real folders holding the marker.
fn old_leftovers(out: &Path) -> Vec<PathBuf> {
    let Some(name) = out
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
    else {
        return Vec::new();
    };
    let folder = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Ok(entries) = fs::read_dir(folder) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.tenantc-");
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let entry_name = entry.file_name().to_string_lossy().into_owned();
            let ours = entry_name
                .strip_prefix(&prefix)
                .and_then(|rest| {
                    rest.strip_prefix("new-")
                        .or_else(|| rest.strip_prefix("old-"))
                })
                .is_some_and(|pid| {
                    !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit())
                });
            ours && entry.file_type().is_ok_and(|kind| kind.is_dir())
                && fs::symlink_metadata(entry.path().join(MARKER)).is_ok()
        })
        .map(|entry| folder.join(entry.file_name()))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> OutputTree {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
            .collect()
    }

    /// Every path under `dir` (folders with a trailing `/`), for "nothing else is left" checks.
    fn listing(dir: &Path) -> Vec<String> {
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

    #[test]
    fn read_tree_reports_an_interrupted_write_and_ignores_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let files = tree(&[(MARKER, "m"), ("a/x.yaml", "1")]);
        write(dir.path(), &files).unwrap();
        assert_eq!(read_tree(dir.path()).unwrap(), files);
        fs::write(dir.path().join("a/.tenantc-tmp-0"), "half").unwrap();
        let error = read_tree(dir.path()).unwrap_err().to_string();
        assert!(error.contains("interrupted write"), "{error}");
        assert!(error.contains("run `tenantc build`"), "{error}");
        assert_eq!(recover(dir.path()).unwrap(), Recovery::RolledBack);
        assert_eq!(read_tree(dir.path()).unwrap(), files);
    }

    #[test]
    fn a_hostile_journal_cannot_reach_outside_out() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &tree(&[(MARKER, "m")])).unwrap();
        fs::write(dir.path().join("victim"), "keep").unwrap();
        for ops in [
            r#"[{"op":"remove","path":"../victim"}]"#,
            r#"[{"op":"rename","from":"x","to":"y"}]"#,
            r#"[{"op":"remove","path":"/etc/passwd"}]"#,
        ] {
            let journal = format!(r#"{{"format":"{JOURNAL_FORMAT}","ops":{ops}}}"#);
            fs::write(out.join(JOURNAL), journal).unwrap();
            let error = recover(&out).unwrap_err().to_string();
            assert!(error.contains("damaged"), "{error}");
        }
        // Through a symbolic link inside out/, too.
        std::os::unix::fs::symlink(dir.path(), out.join("link")).unwrap();
        let journal = format!(
            r#"{{"format":"{JOURNAL_FORMAT}","ops":[{{"op":"remove","path":"link/victim"}}]}}"#
        );
        fs::write(out.join(JOURNAL), journal).unwrap();
        let error = recover(&out).unwrap_err().to_string();
        assert!(error.contains("symbolic links"), "{error}");
        assert_eq!(
            fs::read_to_string(dir.path().join("victim")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn leftovers_of_the_old_swap_are_reported_only_when_clearly_ours() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        for (name, marked) in [
            (".out.tenantc-new-123", true),
            (".out.tenantc-old-9", true),
            (".out.tenantc-new-77", false),
            (".out.tenantc-new-x1", true),
            (".other.tenantc-new-5", true),
        ] {
            fs::create_dir(dir.path().join(name)).unwrap();
            if marked {
                fs::write(dir.path().join(name).join(MARKER), "m").unwrap();
            }
        }
        let writer = Writer::open(&out, Faults::default(), |_| {}).unwrap();
        assert_eq!(
            writer.leftovers(),
            [
                dir.path().join(".out.tenantc-new-123"),
                dir.path().join(".out.tenantc-old-9")
            ]
        );
        // They are reported, never removed: tenantc writes nothing outside out/.
        assert!(dir.path().join(".out.tenantc-new-123").exists());
    }

    #[test]
    fn a_lock_file_that_is_a_symbolic_link_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let files = tree(&[(MARKER, "m"), ("a.yaml", "1")]);
        write(&out, &files).unwrap();
        fs::remove_file(out.join(LOCK)).unwrap();
        fs::write(dir.path().join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(dir.path().join("victim"), out.join(LOCK)).unwrap();
        assert_eq!(read_tree_waiting(&out, |_| {}).unwrap(), files);
        write(&out, &files).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("victim")).unwrap(),
            "keep"
        );
        assert!(fs::symlink_metadata(out.join(LOCK)).unwrap().is_file());
        // A journal that is a link is refused without reading its target.
        std::os::unix::fs::symlink("/dev/zero", out.join(JOURNAL)).unwrap();
        let error = recover(&out).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn utc_formats_the_civil_date() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_047_691), "2026-11-30 14:08:11 UTC");
    }
}
