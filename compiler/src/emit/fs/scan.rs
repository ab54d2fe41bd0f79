//! One walk of the output folder, reading no file, and whether tenantc may write the folder.
//!
//! Consumes: the output folder. Produces: its entries, folders and temporary files ([`Scan`]),
//! what shows an interrupted write, and the folder's [`Ownership`].
//!
//! Invariants:
//! - Symbolic links, FIFOs, sockets and devices are listed, never followed or opened.
//! - A folder is tenantc's only if it carries the marker file or holds nothing but tenantc's own
//!   lock, journal and temporary files; anything else is refused before one file in it is read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;

use super::{JOURNAL, LOCK, TEMP_PREFIX, join, parent};
use crate::emit::MARKER;

/// An entry of the output folder other than a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file.
    File,
    /// A symbolic link, FIFO, socket or device: never followed or read.
    Other,
}

/// One walk of the output folder, without reading any file.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Every non-folder entry except tenantc's own files.
    pub(super) entries: BTreeMap<String, Kind>,
    /// Every real folder below the root.
    pub(super) dirs: BTreeSet<String>,
    /// Temporary files of an interrupted write.
    pub(super) temps: Vec<String>,
    /// Whether the root holds a journal.
    pub(super) journal: bool,
}

impl Scan {
    pub(super) fn of(dir: &Path) -> io::Result<Scan> {
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
    pub(super) fn interrupted(&self) -> Option<String> {
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
    pub(super) fn empty_dirs(&self) -> Vec<String> {
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

/// Whether the output folder exists (and may then be written) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ownership {
    Missing,
    Owned,
}

/// Whether `out` may be written: missing, marked by tenantc, or holding only tenantc's own
/// lock, journal and temporary files (a first build that was interrupted). Anything else is
/// refused before a single file in it is read.
pub(super) fn ownership(out: &Path) -> io::Result<Ownership> {
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
