//! Comparing the output tree with the folder on disk, file by file, without holding the folder
//! in memory.
//!
//! Consumes: an [`OutputTree`], the output folder and its [`Scan`]. Produces: the paths whose
//! bytes on disk differ from the tree's ([`differing`]), and the bytes of a few of them
//! ([`read_some`]) for a diff.
//!
//! Invariants:
//! - Each file is opened at most once, and read only when its size equals the size in the tree,
//!   into a buffer of its thread that is reused for every file; nothing read is kept.
//! - Files are compared on several threads (rayon), and the result is sorted by path, so it is
//!   the same on any number of threads.
//! - Only entries the scan found to be regular files are opened; symbolic links and other
//!   entries count as changed and are never followed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;

use super::scan::{Kind, Scan};
use super::{Change, Comparison, OutputTree};
use crate::emit::PartSink;

/// A comparison of the output folder with a tree handed in parts (the [`PartSink`] of a
/// streaming `tenantc check`): each part is compared as it arrives and dropped, keeping only the
/// changes and the bytes of the first changed files, for a diff.
#[derive(Debug)]
pub struct Comparing {
    root: PathBuf,
    scan: Scan,
    /// The shared lock on the folder's lock file, held until the comparison ends.
    _lock: Option<File>,
    keep: usize,
    state: Mutex<Found>,
}

/// What the parts compared so far found.
///
/// `built` keeps the `keep` first changed paths seen so far, so at the end it holds the first
/// `keep` changed files of the whole tree, the ones [`read_some`] reads from disk.
#[derive(Debug, Default)]
struct Found {
    /// The first failure; later parts are not compared, and [`Comparing::finish`] returns it.
    error: Option<io::Error>,
    /// Every path handed in so far.
    paths: BTreeSet<String>,
    changes: Vec<Change>,
    /// The tree's bytes of the changed files with the `keep` first paths so far.
    built: OutputTree,
}

impl Comparing {
    /// Scans `dir` under `lock` (the shared lock of the caller, or none), refusing a folder that
    /// holds an interrupted write, as [`super::read_tree`] does.
    pub(super) fn new(dir: &Path, lock: Option<File>, keep: usize) -> io::Result<Comparing> {
        let scan = Scan::of(dir)?;
        if let Some(leftover) = scan.interrupted() {
            return Err(io::Error::other(format!(
                "{} holds an interrupted write of tenantc ({leftover}); run `tenantc build` to finish or undo it",
                dir.display()
            )));
        }
        Ok(Comparing {
            root: dir.to_path_buf(),
            scan,
            _lock: lock,
            keep,
            state: Mutex::new(Found::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Found> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Compares one part; a failure is kept for [`Comparing::finish`].
    pub fn compare(&self, part: &OutputTree) {
        if self.lock().error.is_some() {
            return;
        }
        let found = differing(&self.root, part, &self.scan);
        let mut state = self.lock();
        let changes = match found {
            Ok(changes) => changes,
            Err(error) => {
                state.error.get_or_insert(error);
                return;
            }
        };
        for path in part.keys() {
            if !state.paths.insert(path.clone()) {
                state.error.get_or_insert(io::Error::other(format!(
                    "internal error: two files are written to {path}; this is a bug in tenantc"
                )));
                return;
            }
        }
        for change in changes {
            if let Change::Changed(path) = &change
                && let Some(contents) = part.get(path)
            {
                state.built.insert(path.clone(), contents.clone());
                if state.built.len() > self.keep {
                    state.built.pop_last();
                }
            }
            state.changes.push(change);
        }
    }

    /// How many files the parts compared so far hold.
    pub fn files(&self) -> usize {
        self.lock().paths.len()
    }

    /// Compares `rest`, then lists the folder's entries that no part held; returns how the
    /// folder differs from the whole tree, with the bytes of the first `keep` changed files on
    /// disk and as built.
    pub fn finish(self, rest: &OutputTree) -> io::Result<Comparison> {
        self.compare(rest);
        let Comparing {
            root,
            scan,
            state,
            keep,
            ..
        } = self;
        let found = state
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(error) = found.error {
            return Err(error);
        }
        let mut changes = found.changes;
        changes.extend(
            scan.entries
                .keys()
                .filter(|path| !found.paths.contains(*path))
                .map(|path| Change::Extra(path.clone())),
        );
        changes.sort_by(|left, right| left.path().cmp(right.path()));
        let current = read_some(&root, &scan, &changes, keep)?;
        let mut built = found.built;
        built.retain(|path, _| current.contains_key(path));
        Ok(Comparison {
            changes,
            current,
            built,
        })
    }
}

impl PartSink for Comparing {
    fn take(&self, part: OutputTree) {
        self.compare(&part);
    }
}

/// How the files of `tree` differ from the folder `root` whose scan is `scan`: a
/// [`Change::Missing`] or [`Change::Changed`] per tree path whose bytes are not on disk, sorted
/// by path. Entries on disk that the tree lacks are not listed (the caller knows them from the
/// scan).
pub(super) fn differing(root: &Path, tree: &OutputTree, scan: &Scan) -> io::Result<Vec<Change>> {
    let entries: Vec<(&String, &Vec<u8>)> = tree.iter().collect();
    let found: Vec<Option<Change>> = entries
        .par_iter()
        .map_init(Vec::new, |buffer, (path, contents)| {
            Ok(match scan.entries.get(*path) {
                None => Some(Change::Missing((*path).clone())),
                Some(Kind::File) => (!same_contents(&root.join(path), contents, buffer)?)
                    .then(|| Change::Changed((*path).clone())),
                Some(Kind::Other) => Some(Change::Changed((*path).clone())),
            })
        })
        .collect::<io::Result<_>>()?;
    // The tree is sorted by path, and the parallel map keeps its order.
    Ok(found.into_iter().flatten().collect())
}

/// Whether the file at `path` holds exactly `expected`: its size is read first, and its bytes
/// only when the sizes agree, into `buffer`.
fn same_contents(path: &Path, expected: &[u8], buffer: &mut Vec<u8>) -> io::Result<bool> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    if size != expected.len() as u64 {
        return Ok(false);
    }
    buffer.clear();
    // One byte more than expected, so a file that grew since its size was read is seen to.
    (&mut file)
        .take(size.saturating_add(1))
        .read_to_end(buffer)?;
    Ok(buffer.as_slice() == expected)
}

/// The bytes on disk of the first `limit` [`Change::Changed`] files among `changes` (in their
/// order; missing and extra files are not counted), for showing how they differ; symbolic links
/// and other entries read as empty, never followed.
pub(super) fn read_some(
    root: &Path,
    scan: &Scan,
    changes: &[Change],
    limit: usize,
) -> io::Result<OutputTree> {
    let mut current = OutputTree::new();
    let changed = changes.iter().filter_map(|change| match change {
        Change::Changed(path) => Some(path),
        Change::Missing(_) | Change::Extra(_) => None,
    });
    for path in changed.take(limit) {
        let contents = match scan.entries.get(path) {
            Some(Kind::File) => std::fs::read(root.join(path))?,
            Some(Kind::Other) | None => Vec::new(),
        };
        current.insert(path.clone(), contents);
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::super::tests::tree;
    use super::super::{Change, compare_dir, read_tree, write};
    use crate::emit::MARKER;
    use std::fs;

    #[test]
    fn a_file_of_another_size_or_other_bytes_is_changed_and_a_missing_one_missing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let written = tree(&[
            (MARKER, "m"),
            ("a.yaml", "same"),
            ("b/c.yaml", "1234"),
            ("b/d.yaml", "x"),
            ("e.yaml", "gone"),
        ]);
        write(&out, &written).unwrap();
        let wanted = tree(&[
            (MARKER, "m"),
            ("a.yaml", "same"),
            // Same size, other bytes.
            ("b/c.yaml", "1235"),
            // Another size.
            ("b/d.yaml", "xy"),
            ("f.yaml", "new"),
        ]);
        let comparison = compare_dir(&out, &wanted, 10).unwrap();
        assert_eq!(
            comparison.changes,
            vec![
                Change::Changed("b/c.yaml".into()),
                Change::Changed("b/d.yaml".into()),
                Change::Extra("e.yaml".into()),
                Change::Missing("f.yaml".into()),
            ]
        );
        // The bytes on disk of the changed files are handed back for the diff, no others.
        assert_eq!(
            comparison.current,
            tree(&[("b/c.yaml", "1234"), ("b/d.yaml", "x")])
        );
        // It agrees with comparing the whole tree read from disk.
        assert_eq!(
            comparison.changes,
            super::super::compare(&wanted, &read_tree(&out).unwrap())
        );
        assert!(compare_dir(&out, &written, 10).unwrap().changes.is_empty());
    }

    #[test]
    fn a_symbolic_link_in_out_is_changed_and_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &tree(&[(MARKER, "m")])).unwrap();
        let outside = dir.path().join("secret");
        fs::write(&outside, "same").unwrap();
        std::os::unix::fs::symlink(&outside, out.join("a.yaml")).unwrap();
        let comparison =
            compare_dir(&out, &tree(&[(MARKER, "m"), ("a.yaml", "same")]), 10).unwrap();
        assert_eq!(comparison.changes, vec![Change::Changed("a.yaml".into())]);
        assert_eq!(comparison.current, tree(&[("a.yaml", "")]));
    }

    #[test]
    fn changed_files_after_many_missing_ones_are_still_kept_for_the_diff() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &tree(&[(MARKER, "m"), ("z.yaml", "old")])).unwrap();
        let mut wanted = tree(&[(MARKER, "m"), ("z.yaml", "new")]);
        for idx in 0..250 {
            wanted.insert(format!("a{idx:03}.yaml"), b"missing".to_vec());
        }
        let comparison = compare_dir(&out, &wanted, 10).unwrap();
        assert_eq!(comparison.changes.len(), 251);
        assert_eq!(comparison.current, tree(&[("z.yaml", "old")]));
        assert_eq!(comparison.built, tree(&[("z.yaml", "new")]));
    }

    #[test]
    fn only_the_first_changed_files_are_read_for_the_diff() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(
            &out,
            &tree(&[(MARKER, "m"), ("a", "1"), ("b", "2"), ("c", "3")]),
        )
        .unwrap();
        let wanted = tree(&[(MARKER, "m"), ("a", "4"), ("b", "5"), ("c", "6")]);
        let comparison = compare_dir(&out, &wanted, 2).unwrap();
        assert_eq!(comparison.changes.len(), 3);
        assert_eq!(comparison.current, tree(&[("a", "1"), ("b", "2")]));
    }
}
