//! Writing the output tree to disk, and comparing it with what is there.
//!
//! Consumes: an [`OutputTree`] and the output folder. Produces: the folder holding exactly the
//! tree ([`write`]), or the list of files that differ ([`compare`]).
//!
//! Invariants:
//! - The tree is written to a fresh sibling folder and swapped in with two renames, so readers
//!   see the old tree or the new one, never a mix; the previous tree is then deleted.
//! - An existing folder is replaced only if it is empty or carries tenantc's marker file, so
//!   `--out` pointed at the wrong place deletes nothing.
//! - Symbolic links are never followed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{MARKER, OutputTree};

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

/// Reads every regular file under `dir` into a tree; a missing folder is an empty tree.
pub fn read_tree(dir: &Path) -> io::Result<OutputTree> {
    let mut tree = OutputTree::new();
    match fs::symlink_metadata(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(tree),
        Err(error) => return Err(error),
        Ok(meta) if !meta.is_dir() => {
            return Err(io::Error::other(format!(
                "{} exists and is not a folder",
                dir.display()
            )));
        }
        Ok(_) => {}
    }
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        for entry in fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((entry.path(), relative));
            } else {
                // Symlinks and other non-regular files are listed with empty contents so they
                // show up as changed, but never followed.
                let contents = if kind.is_file() {
                    fs::read(entry.path())?
                } else {
                    Vec::new()
                };
                tree.insert(relative, contents);
            }
        }
    }
    Ok(tree)
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

fn sibling(out: &Path, tag: &str) -> io::Result<PathBuf> {
    let name = out
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} has no folder name", out.display())))?;
    let parent = out.parent().unwrap_or(Path::new("."));
    Ok(parent.join(format!(
        ".{}.tenantc-{tag}-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Replaces `out` with exactly `tree`. Returns the changes made (empty when `out` was current,
/// in which case nothing is touched).
pub fn write(out: &Path, tree: &OutputTree) -> io::Result<Vec<Change>> {
    // Refuse a folder tenantc did not make before reading anything in it: `--out` pointed at a
    // large or precious folder must cost nothing.
    if let Ok(meta) = fs::symlink_metadata(out)
        && meta.is_dir()
        && fs::symlink_metadata(out.join(MARKER)).is_err()
        && fs::read_dir(out)?.next().is_some()
    {
        return Err(io::Error::other(format!(
            "{} holds files that tenantc did not write (no {MARKER} marker); refusing to replace it. Choose an empty or new folder with --out",
            out.display()
        )));
    }
    let current = read_tree(out)?;
    let changes = compare(tree, &current);
    if changes.is_empty() {
        return Ok(changes);
    }
    if !current.is_empty() && !current.contains_key(MARKER) {
        return Err(io::Error::other(format!(
            "{} holds files that tenantc did not write (no {MARKER} marker); refusing to replace it. Choose an empty or new folder with --out",
            out.display()
        )));
    }
    let staging = sibling(out, "new")?;
    if fs::symlink_metadata(&staging).is_ok() {
        fs::remove_dir_all(&staging)?;
    }
    let result = write_staging(&staging, tree).and_then(|()| swap(out, &staging));
    if result.is_err() && fs::symlink_metadata(&staging).is_ok() {
        let _ = fs::remove_dir_all(&staging);
    }
    result.map(|()| changes)
}

fn write_staging(staging: &Path, tree: &OutputTree) -> io::Result<()> {
    fs::create_dir_all(staging)?;
    for (relative, contents) in tree {
        let path = staging.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, contents)?;
    }
    Ok(())
}

fn swap(out: &Path, staging: &Path) -> io::Result<()> {
    if fs::symlink_metadata(out).is_err() {
        if let Some(parent) = out.parent()
            && !parent.as_os_str().is_empty()
        {
            fs::create_dir_all(parent)?;
        }
        return fs::rename(staging, out);
    }
    let old = sibling(out, "old")?;
    if fs::symlink_metadata(&old).is_ok() {
        fs::remove_dir_all(&old)?;
    }
    fs::rename(out, &old)?;
    if let Err(error) = fs::rename(staging, out) {
        // Put the previous tree back so `out/` is never left missing.
        let _ = fs::rename(&old, out);
        return Err(error);
    }
    fs::remove_dir_all(&old)
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
        // Nothing is left beside out/.
        let siblings: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(siblings.len(), 1);
    }

    #[test]
    fn write_refuses_a_folder_it_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious.txt"), "keep").unwrap();
        let error = write(dir.path(), &tree(&[(MARKER, "m")])).unwrap_err();
        assert!(error.to_string().contains("refusing"));
        assert_eq!(
            fs::read_to_string(dir.path().join("precious.txt")).unwrap(),
            "keep"
        );
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
}
