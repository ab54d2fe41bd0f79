//! The journal of a write: the operations that turn the staged folder into the new tree, written
//! and synced before any of them runs, so that a kill after the commit rolls forward.
//!
//! Consumes: the operations [`super::Writer`] staged, or a journal found on disk. Produces: the
//! committed journal `out/.tenantc-journal` ([`Writer::commit`]), the folder after every
//! operation ([`Writer::apply`], which recovery runs again after a kill), and a validated journal
//! read back ([`read_journal`]).
//!
//! Invariants:
//! - Every operation is idempotent, so applying a journal twice, or after a kill in the middle,
//!   gives the same folder.
//! - A journal read from disk (out/ is committed to Git, so anyone can write one) names only plain
//!   relative paths inside the folder, never the lock or the journal, and renames only tenantc's
//!   temporary files; anything else is refused as damaged before one operation runs.
//! - Every folder above a path is checked to be a real folder before the operation, so no
//!   operation follows a symbolic link out of the folder.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    Created, JOURNAL, JOURNAL_TEMP, LOCK, TEMP_PREFIX, Writer, file_name, parent, plain_path,
};

/// A journal larger than this is not one tenantc wrote (a million operations of 1 KiB).
const MAX_JOURNAL_BYTES: u64 = 1 << 30;

/// The format tag of the journal.
const JOURNAL_FORMAT: &str = "tenantc-journal-1";

impl Writer {
    /// Step 2: writes, syncs and renames the journal into place, which commits the write.
    pub(super) fn commit(&mut self, ops: &[Op], created: &mut Created) -> io::Result<()> {
        // Borrowed, not copied: a cold build of a large fleet journals every file it writes.
        let journal = JournalOut {
            format: JOURNAL_FORMAT,
            ops,
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
    pub(super) fn apply(&mut self, ops: &[Op]) -> io::Result<()> {
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
}

/// One operation of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub(super) enum Op {
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
pub(super) struct Journal {
    format: String,
    /// The operations, in the order they are applied.
    pub(super) ops: Vec<Op>,
}

/// The journal file as [`Writer::commit`] writes it, borrowing the operations: the same fields,
/// so it serializes to what [`Journal`] reads (a test holds the two to each other).
#[derive(Serialize)]
struct JournalOut<'a> {
    format: &'a str,
    ops: &'a [Op],
}

/// Reads and validates a journal: a hostile journal (out/ is committed to Git) can name only
/// plain relative paths inside the folder, and can only move tenantc's temporary files.
pub(super) fn read_journal(path: &Path) -> io::Result<Journal> {
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

#[cfg(test)]
mod tests {
    use super::super::{recover, tests::tree, write};
    use super::*;
    use crate::emit::MARKER;

    #[test]
    fn the_journal_written_reads_back_with_the_same_operations() {
        let ops = vec![
            Op::Remove {
                path: "a/old.yaml".to_string(),
            },
            Op::Rename {
                from: format!("a/{TEMP_PREFIX}1"),
                to: "a/new.yaml".to_string(),
            },
        ];
        let text = serde_json::to_string(&JournalOut {
            format: JOURNAL_FORMAT,
            ops: &ops,
        })
        .unwrap();
        let journal: Journal = serde_json::from_str(&text).unwrap();
        assert_eq!(journal.format, JOURNAL_FORMAT);
        assert_eq!(journal.ops, ops);
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
}
