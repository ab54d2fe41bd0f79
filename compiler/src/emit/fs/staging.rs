//! A write staged in parts as they are compiled, then committed whole: what lets `tenantc build`
//! write each cell's files while the other cells are still being lowered, without holding the
//! output tree.
//!
//! Consumes: parts of the output tree (disjoint sets of files), from any thread, in any order
//! ([`Staging::take`], the [`PartSink`] of a streaming compilation), then the rest of the tree
//! ([`Staging::finish`]). Produces: the folder holding exactly the union of the parts and the rest,
//! and the changes made; or, when the compilation fails ([`Staging::abandon`]) or a write fails,
//! the folder as it was.
//!
//! Invariants:
//! - Step 1 of the write (see the parent module) is spread over the parts: each part is compared
//!   with the folder (on every core, outside the staging lock) and its changed files are written
//!   to temporary files at once, so only their paths are kept; the journal (step 2) is written
//!   only by [`Staging::finish`], once every part is in, and nothing of the old tree is changed
//!   before it. A kill while parts are staged leaves temporary files without a journal, which the
//!   next run removes: the old tree.
//! - The folder is scanned only under its exclusive lock; a missing folder is created (and locked
//!   and scanned) only when the first part arrives, so a compilation with errors creates nothing.
//! - A path handed twice, by two parts or a part and the rest, is refused as a bug, as
//!   [`crate::emit::render`] refuses two objects in one file.
//! - The filesystem operations are counted in one [`super::disk::Disk`] under the staging lock,
//!   so the test-only faults strike at one operation whatever the number of threads.

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::scan::Scan;
use super::{
    Change, Created, OutputTree, PROBE, TEMP_PREFIX, Writer, compare, is_artefact, join, parent,
    plain_path,
};
use crate::emit::PartSink;

use super::journal::Op;

/// A write of the output folder in progress: parts staged, the commit still to come.
#[derive(Debug)]
pub struct Staging<'w> {
    root: PathBuf,
    /// The folder as found under the lock; set when the first part arrives if the folder was
    /// missing when the write began.
    scan: OnceLock<Scan>,
    state: Mutex<State<'w>>,
}

/// What the parts staged so far did, under the staging lock.
#[derive(Debug)]
struct State<'w> {
    writer: &'w mut Writer,
    /// The first failure; the parts after it are not staged, and [`Staging::finish`] returns it.
    error: Option<io::Error>,
    /// Every path of the tree handed in so far.
    paths: BTreeSet<String>,
    /// Every folder those paths need.
    needed: BTreeSet<String>,
    /// Folders created by this write, or left to the journal because an entry to remove is in
    /// their way (`blocked`).
    made: BTreeSet<String>,
    blocked: BTreeSet<String>,
    /// Temporary file and tree path of every changed file, in the order they were staged.
    renames: Vec<(String, String)>,
    created: Created,
    /// The output folder and its parents, when this write created them (outermost first).
    root_made: Vec<PathBuf>,
    /// Folders that received a temporary file or a new folder: synced before the commit, and
    /// known to be writable.
    synced: BTreeSet<String>,
    changes: Vec<Change>,
}

impl Writer {
    /// Begins a write in parts: [`Staging::take`] each part, then [`Staging::finish`] with the
    /// rest, or [`Staging::abandon`].
    pub fn begin(&mut self) -> Staging<'_> {
        let root = self.disk.root.clone();
        let scan = OnceLock::new();
        if self.lock.is_some() || self.read_only.is_some() {
            // Locked (or read only) and recovered at open; the scan is taken now, before any part.
            let found = match self.scan.take() {
                Some(found) => Ok(found),
                None => Scan::of(&root),
            };
            match found {
                Ok(found) => {
                    let _ = scan.set(found);
                }
                Err(error) => {
                    return Staging::new(root, scan, self, Some(error));
                }
            }
        }
        Staging::new(root, scan, self, None)
    }
}

impl<'w> Staging<'w> {
    fn new(
        root: PathBuf,
        scan: OnceLock<Scan>,
        writer: &'w mut Writer,
        error: Option<io::Error>,
    ) -> Staging<'w> {
        Staging {
            root,
            scan,
            state: Mutex::new(State {
                writer,
                error,
                paths: BTreeSet::new(),
                needed: BTreeSet::new(),
                made: BTreeSet::new(),
                blocked: BTreeSet::new(),
                renames: Vec::new(),
                created: Created::default(),
                root_made: Vec::new(),
                synced: BTreeSet::new(),
                changes: Vec::new(),
            }),
        }
    }

    /// Stages one part: compares it with the folder and writes its changed files to temporary
    /// files. A failure is kept for [`Staging::finish`], and later parts are then ignored.
    pub fn stage(&self, part: &OutputTree) {
        if let Err(error) = self.try_stage(part) {
            let mut state = self.lock();
            if state.error.is_none() {
                state.error = Some(error);
            }
        }
    }

    fn try_stage(&self, part: &OutputTree) -> io::Result<()> {
        if let Some(bad) = part
            .keys()
            .find(|path| !plain_path(path) || is_artefact(path))
        {
            return Err(io::Error::other(format!(
                "internal error: output path `{}` is not a plain relative path; this is a bug in tenantc",
                bad.escape_debug()
            )));
        }
        let scan = self.scan()?;
        if self.lock().error.is_some() {
            return Ok(());
        }
        // Compared outside the staging lock, on every core: reading the old files is most of a
        // part's cost.
        let changes = compare::differing(&self.root, part, scan)?;
        let mut state = self.lock();
        if state.error.is_some() {
            return Ok(());
        }
        state.add(part, changes, scan)
    }

    /// The scan of the folder, taken under its lock; a missing folder is created and locked
    /// first, by the first part. A failure is kept, and never tried again: the lock it may have
    /// taken is held by this process, and taking it twice would wait for ever.
    fn scan(&self) -> io::Result<&Scan> {
        if let Some(scan) = self.scan.get() {
            return Ok(scan);
        }
        let mut state = self.lock();
        if let Some(scan) = self.scan.get() {
            return Ok(scan);
        }
        if state.error.is_some() {
            return Err(io::Error::other("the output folder could not be opened"));
        }
        match state.start(&self.root) {
            Ok(found) => Ok(self.scan.get_or_init(|| found)),
            Err(error) => {
                let again = io::Error::new(error.kind(), error.to_string());
                state.error = Some(error);
                Err(again)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<'w>> {
        // A thread that panicked while staging leaves consistent bookkeeping behind: every
        // update below is a push or an insert.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many files the parts staged so far hold.
    pub fn files(&self) -> usize {
        self.lock().paths.len()
    }

    /// Makes the folder hold exactly the parts staged and `rest`, committing the write; returns
    /// the changes, sorted by path (empty when the folder was up to date, and then untouched but
    /// for the lock file). On a failure before the commit, the folder holds its old tree.
    pub fn finish(self, rest: &OutputTree) -> io::Result<Vec<Change>> {
        if !rest.is_empty() {
            self.stage(rest);
        }
        // An empty tree still needs the scan, to remove what the folder holds.
        let scanned = self.scan().map(|_| ());
        let Staging { scan, state, .. } = self;
        let mut state = state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = scanned
            && state.error.is_none()
        {
            state.error = Some(error);
        }
        let scan = scan.into_inner().unwrap_or_default();
        if let Some(error) = state.error.take() {
            let created = std::mem::take(&mut state.created);
            return Err(state.writer.undo(error, &created));
        }
        state.commit(&scan)
    }

    /// Removes what the parts staged, after the compilation failed: the folder keeps its old
    /// tree, and a folder this write created (with its lock and the parents it created) is
    /// removed again, so a failed compilation leaves nothing. A temporary file that cannot be
    /// removed is left to the next run's recovery.
    pub fn abandon(self) {
        let mut state = self
            .state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let created = std::mem::take(&mut state.created);
        let writer = &mut *state.writer;
        writer.remove_created(&created);
        writer.scan = None;
        if !state.root_made.is_empty() {
            // Only folders that are empty once the lock file is gone are removed: a concurrent
            // build that waited for the lock finds the folder gone and fails, and writes nothing.
            let _ = writer.disk.remove_file(super::LOCK);
            writer.lock = None;
            for folder in state.root_made.iter().rev() {
                if std::fs::remove_dir(folder).is_err() {
                    break;
                }
            }
        }
    }
}

impl PartSink for Staging<'_> {
    fn take(&self, part: OutputTree) {
        self.stage(&part);
    }
}

impl State<'_> {
    /// Creates, locks and recovers the missing output folder, and scans it.
    fn start(&mut self, root: &std::path::Path) -> io::Result<Scan> {
        let writer = &mut *self.writer;
        self.root_made = writer.create_root()?;
        writer.lock_and_recover()?;
        match writer.scan.take() {
            Some(found) => Ok(found),
            None => Scan::of(root),
        }
    }

    /// Records a part's paths and folders, creates its new folders and writes its changed files
    /// to temporary files (only records them, for a folder that cannot be written).
    fn add(&mut self, part: &OutputTree, changes: Vec<Change>, scan: &Scan) -> io::Result<()> {
        let mut new_dirs = BTreeSet::new();
        for path in part.keys() {
            if !self.paths.insert(path.clone()) {
                return Err(io::Error::other(format!(
                    "internal error: two files are written to {path}; this is a bug in tenantc"
                )));
            }
            let mut folder = parent(path);
            while !folder.is_empty() && self.needed.insert(folder.to_string()) {
                if !scan.dirs.contains(folder) {
                    new_dirs.insert(folder.to_string());
                }
                folder = parent(folder);
            }
        }
        let read_only = self.writer.read_only.is_some();
        // Sorted, so parents are created before their children.
        for dir in new_dirs {
            if !self.made.insert(dir.clone()) || read_only {
                continue;
            }
            if blocked(&dir, scan) {
                self.blocked.insert(dir);
            } else {
                self.writer.disk.create_dir(&dir)?;
                self.synced.insert(parent(&dir).to_string());
                self.created.dirs.push(dir);
            }
        }
        for change in changes {
            let path = change.path().to_string();
            self.changes.push(change);
            if read_only {
                continue;
            }
            let folder = parent(&path);
            let name = format!("{TEMP_PREFIX}{}", self.renames.len());
            let temp = if self.blocked.contains(folder) {
                name
            } else {
                join(folder, &name)
            };
            self.created.temps.push(temp.clone());
            let contents = part.get(&path).map_or(&[][..], Vec::as_slice);
            self.writer.disk.write_temp(&temp, contents)?;
            self.synced.insert(parent(&temp).to_string());
            self.renames.push((temp, path));
        }
        Ok(())
    }

    /// Steps 1 (the end: removals planned, folders probed, everything synced), 2 and 3 of the
    /// write, once every part is staged.
    fn commit(mut self, scan: &Scan) -> io::Result<Vec<Change>> {
        let removals: Vec<String> = scan
            .entries
            .keys()
            .filter(|path| !self.paths.contains(*path))
            .cloned()
            .collect();
        let rmdirs: Vec<String> = scan.dirs.difference(&self.needed).cloned().collect();
        self.changes
            .extend(removals.iter().map(|path| Change::Extra(path.clone())));
        self.changes
            .sort_by(|left, right| left.path().cmp(right.path()));
        let writer = &mut *self.writer;
        writer.scan = None;
        // Every changed, missing and extra file is a change (a folder that cannot be written
        // stages none of them); an empty folder left behind is the one change that is not.
        if self.changes.is_empty() && rmdirs.is_empty() {
            return Ok(self.changes);
        }
        if let Some(error) = &writer.read_only {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "{error}; {} files would change, and nothing was changed",
                    self.changes.len()
                ),
            ));
        }
        let mut ops: Vec<Op> = removals
            .iter()
            .map(|path| Op::Remove { path: path.clone() })
            .collect();
        ops.extend(
            rmdirs
                .iter()
                .rev()
                .map(|path| Op::Rmdir { path: path.clone() }),
        );
        ops.extend(
            self.blocked
                .iter()
                .map(|path| Op::Mkdir { path: path.clone() }),
        );
        // The parts came in any order; the journal renames in path order.
        self.renames.sort_by(|left, right| left.1.cmp(&right.1));
        ops.extend(self.renames.iter().map(|(from, to)| Op::Rename {
            from: from.clone(),
            to: to.clone(),
        }));
        let mut created = std::mem::take(&mut self.created);
        let prepared = probe_and_sync(
            writer,
            (&self.synced, &self.blocked, &self.renames),
            &removals,
            &rmdirs,
            &mut created,
        );
        if let Err(error) = prepared {
            return Err(writer.undo(error, &created));
        }
        if let Err(error) = writer.commit(&ops, &mut created) {
            return Err(writer.undo(error, &created));
        }
        drop(self.renames);
        let applied = writer
            .disk
            .sync_dir("")
            .and_then(|()| writer.apply(&ops))
            .and_then(|()| writer.disk.remove_file(super::JOURNAL));
        if let Err(error) = applied {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "{error}; the write was committed but not finished: {} holds the rest, and the next `tenantc build` finishes it",
                    writer.disk.root.join(super::JOURNAL).display()
                ),
            ));
        }
        Ok(self.changes)
    }
}

/// Probes the folders the journal changes that no temporary file showed writable, then syncs
/// the temporary files and the folders that received them, before the journal names them.
fn probe_and_sync(
    writer: &mut Writer,
    (synced, blocked, renames): (&BTreeSet<String>, &BTreeSet<String>, &[(String, String)]),
    removals: &[String],
    rmdirs: &[String],
    created: &mut Created,
) -> io::Result<()> {
    let mut probe = BTreeSet::new();
    for path in removals {
        probe.insert(parent(path).to_string());
    }
    for dir in rmdirs {
        probe.insert(dir.clone());
        probe.insert(parent(dir).to_string());
    }
    for dir in blocked {
        probe.insert(parent(dir).to_string());
    }
    for folder in probe {
        if synced.contains(&folder) || blocked.contains(&folder) {
            continue;
        }
        let temp = join(&folder, PROBE);
        created.temps.push(temp.clone());
        writer.disk.write_temp(&temp, b"")?;
        writer.disk.remove_file(&temp)?;
        created.temps.pop();
    }
    // The temporary files and their folders reach the disk before the journal that names them,
    // so a power loss after the commit cannot roll forward to empty files.
    let temps: Vec<String> = renames.iter().map(|(temp, _)| temp.clone()).collect();
    writer.disk.sync_all(&temps)?;
    writer
        .disk
        .sync_all(&synced.iter().cloned().collect::<Vec<_>>())
}

/// Whether a new folder's path, or a parent's, is taken by an entry the write removes: the
/// journal creates it after the removal.
fn blocked(dir: &str, scan: &Scan) -> bool {
    let mut folder = dir;
    while !folder.is_empty() {
        if scan.entries.contains_key(folder) {
            return true;
        }
        folder = parent(folder);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::tests::{listing, tree};
    use super::super::{Faults, LOCK, read_tree, write};
    use super::*;
    use crate::emit::MARKER;

    fn open(out: &std::path::Path) -> Writer {
        Writer::open(out, Faults::default(), |_| {}).unwrap()
    }

    /// Splits `whole` into parts of the given paths and the rest.
    fn split(whole: &OutputTree, parts: &[&[&str]]) -> (Vec<OutputTree>, OutputTree) {
        let mut rest = whole.clone();
        let parts = parts
            .iter()
            .map(|paths| {
                paths
                    .iter()
                    .map(|path| (path.to_string(), rest.remove(*path).unwrap()))
                    .collect()
            })
            .collect();
        (parts, rest)
    }

    #[test]
    fn parts_in_any_order_write_the_same_folder_as_the_whole_tree() {
        let old = tree(&[
            (MARKER, "m"),
            ("a/x.yaml", "1"),
            ("a/y.yaml", "same"),
            ("b", "a file where a folder goes"),
            ("gone/z.yaml", "z"),
        ]);
        let new = tree(&[
            (MARKER, "m"),
            ("a/x.yaml", "2"),
            ("a/y.yaml", "same"),
            ("b/c/d.yaml", "3"),
            ("e/f.yaml", "4"),
            ("kustomization.yaml", "k"),
        ]);
        let parts: [&[&str]; 3] = [&["a/x.yaml", "a/y.yaml"], &["b/c/d.yaml"], &["e/f.yaml"]];
        let mut results = Vec::new();
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            write(&out, &old).unwrap();
            let (split_parts, rest) = split(&new, &parts);
            let mut writer = open(&out);
            let staging = writer.begin();
            for idx in order {
                staging.take(split_parts[idx].clone());
            }
            assert_eq!(staging.files(), 4);
            let changes = staging.finish(&rest).unwrap();
            assert_eq!(read_tree(&out).unwrap(), new, "order {order:?}");
            assert!(!listing(&out).iter().any(|path| path.contains(TEMP_PREFIX)));
            results.push(changes);
        }
        // The changes are those of writing the whole tree at once, in path order.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &old).unwrap();
        let whole = write(&out, &new).unwrap();
        assert!(
            results.iter().all(|changes| *changes == whole),
            "{results:?}"
        );
        assert_eq!(
            whole,
            vec![
                Change::Changed("a/x.yaml".into()),
                Change::Extra("b".into()),
                Change::Missing("b/c/d.yaml".into()),
                Change::Missing("e/f.yaml".into()),
                Change::Extra("gone/z.yaml".into()),
                Change::Missing("kustomization.yaml".into()),
            ]
        );
    }

    #[test]
    fn an_abandoned_write_leaves_the_old_tree_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let old = tree(&[(MARKER, "m"), ("a/x.yaml", "1")]);
        write(&out, &old).unwrap();
        let before = listing(&out);
        let mut writer = open(&out);
        let staging = writer.begin();
        staging.take(tree(&[("a/x.yaml", "2"), ("n/e/w.yaml", "3")]));
        // The part is staged: temporary files and a new folder exist until abandoned.
        assert!(listing(&out).iter().any(|path| path.contains(TEMP_PREFIX)));
        staging.abandon();
        assert_eq!(listing(&out), before);
        assert_eq!(read_tree(&out).unwrap(), old);
    }

    #[test]
    fn a_missing_folder_is_created_by_the_first_part_only() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut writer = open(&out);
        writer.begin().abandon();
        assert!(!out.exists(), "a compilation that failed created out/");
        let mut writer = open(&out);
        let staging = writer.begin();
        staging.take(tree(&[("c/x.yaml", "1")]));
        assert!(
            out.join(LOCK).exists(),
            "the first part locks the new folder"
        );
        staging.finish(&tree(&[(MARKER, "m")])).unwrap();
        assert_eq!(
            read_tree(&out).unwrap(),
            tree(&[(MARKER, "m"), ("c/x.yaml", "1")])
        );
    }

    #[test]
    fn a_path_in_two_parts_or_an_unsafe_path_is_refused_and_nothing_changes() {
        for (first, second) in [
            (tree(&[("a/x.yaml", "1")]), tree(&[("a/x.yaml", "2")])),
            (tree(&[("a/x.yaml", "1")]), tree(&[("../escape.yaml", "2")])),
            (
                tree(&[("a/x.yaml", "1")]),
                tree(&[(".tenantc-journal", "2")]),
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            let old = tree(&[(MARKER, "m"), ("old.yaml", "0")]);
            write(&out, &old).unwrap();
            let before = listing(&out);
            let mut writer = open(&out);
            let staging = writer.begin();
            staging.take(first);
            staging.take(second);
            let error = staging.finish(&tree(&[(MARKER, "m")])).unwrap_err();
            assert!(error.to_string().contains("bug in tenantc"), "{error}");
            assert!(error.to_string().contains("nothing was changed"), "{error}");
            assert_eq!(listing(&out), before);
            assert!(!dir.path().join("escape.yaml").exists());
        }
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_compared_and_refused_only_when_it_differs() {
        // As when the lock file cannot be created (a read-only checkout): the parts are only
        // compared, and the write fails without touching anything when they differ.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let old = tree(&[(MARKER, "m"), ("a/x.yaml", "1")]);
        write(&out, &old).unwrap();
        let before = listing(&out);
        let read_only = |writer: &mut Writer| {
            writer.read_only = Some(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "cannot create the lock",
            ));
        };
        for (part, rest) in [
            (tree(&[("a/x.yaml", "2")]), tree(&[(MARKER, "m")])),
            (
                tree(&[("a/x.yaml", "1"), ("b/new.yaml", "3")]),
                tree(&[(MARKER, "m")]),
            ),
            (tree(&[("a/x.yaml", "1")]), tree(&[])),
        ] {
            let mut writer = open(&out);
            read_only(&mut writer);
            let staging = writer.begin();
            staging.take(part.clone());
            let error = staging.finish(&rest).unwrap_err().to_string();
            assert!(error.contains("nothing was changed"), "{part:?}: {error}");
            assert_eq!(listing(&out), before, "{part:?}");
        }
        // Up to date, it succeeds without writing.
        let mut writer = open(&out);
        read_only(&mut writer);
        let staging = writer.begin();
        staging.take(tree(&[("a/x.yaml", "1")]));
        assert_eq!(staging.finish(&tree(&[(MARKER, "m")])).unwrap(), Vec::new());
        assert_eq!(listing(&out), before);
    }

    #[test]
    fn a_recovery_that_fails_at_the_first_part_is_an_error_not_a_wait_for_ever() {
        // out/ is missing when the build opens it, so the first part creates and locks it; a
        // killed concurrent build left a damaged journal there meanwhile. The lock this process
        // then holds must never be taken a second time.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut writer = open(&out);
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(super::super::JOURNAL), "not json").unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let staging = writer.begin();
            staging.take(tree(&[("a/x.yaml", "1")]));
            staging.take(tree(&[("b/y.yaml", "2")]));
            let error = staging.finish(&tree(&[(MARKER, "m")])).unwrap_err();
            done.send(error.to_string()).unwrap();
        });
        let error = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the write waited for its own lock");
        assert!(error.contains("journal"), "{error}");
    }

    #[test]
    fn an_abandoned_first_write_removes_the_folders_it_created() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("gen/deep/out");
        let mut writer = open(&out);
        let staging = writer.begin();
        staging.take(tree(&[("a/x.yaml", "1")]));
        assert!(out.join("a").exists());
        staging.abandon();
        drop(writer);
        assert!(!dir.path().join("gen").exists(), "a failed build left gen/");
        // A folder that existed before is kept, with only its lock file.
        let existing = dir.path().join("out");
        write(&existing, &tree(&[(MARKER, "m")])).unwrap();
        let mut writer = open(&existing);
        let staging = writer.begin();
        staging.take(tree(&[("a/x.yaml", "1")]));
        staging.abandon();
        assert_eq!(listing(&existing), [MARKER, LOCK]);
    }

    #[test]
    fn a_failure_while_staging_undoes_every_part_staged_before_it() {
        // Fail at every operation of a three-part write: before the commit the old tree stays,
        // with nothing of this run left.
        let old = tree(&[(MARKER, "m"), ("a/x.yaml", "1"), ("b/y.yaml", "2")]);
        let new = tree(&[
            (MARKER, "m"),
            ("a/x.yaml", "3"),
            ("c/z.yaml", "4"),
            ("d/w.yaml", "5"),
        ]);
        let parts: [&[&str]; 3] = [&["a/x.yaml"], &["c/z.yaml"], &["d/w.yaml"]];
        let mut untouched = 0;
        for fail_after in 0.. {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            write(&out, &old).unwrap();
            let before = listing(&out);
            let faults = Faults {
                crash_after: None,
                fail_after: Some(fail_after),
            };
            let Ok(mut writer) = Writer::open(&out, faults, |_| {}) else {
                // Taking the lock failed.
                assert_eq!(listing(&out), before, "failure after {fail_after}");
                continue;
            };
            let (split_parts, rest) = split(&new, &parts);
            let staging = writer.begin();
            for part in split_parts {
                staging.take(part);
            }
            let finished = staging.finish(&rest);
            // The lock is released before recovery takes it again.
            drop(writer);
            match finished {
                Ok(_) => {
                    assert_eq!(read_tree(&out).unwrap(), new);
                    break;
                }
                Err(error) if error.to_string().contains("nothing was changed") => {
                    assert_eq!(listing(&out), before, "failure after {fail_after}");
                    untouched += 1;
                }
                Err(_) => {
                    super::super::recover(&out).unwrap();
                    assert_eq!(read_tree(&out).unwrap(), new, "failure after {fail_after}");
                }
            }
        }
        assert!(untouched >= 6, "{untouched}");
    }
}
