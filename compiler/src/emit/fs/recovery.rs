//! Recovery of an interrupted write, before a run does anything else with the folder.
//!
//! Consumes: the locked output folder. Produces: the folder holding exactly the old tree or the
//! new one ([`Recovery`]): a committed journal is applied again, and temporary files without a
//! journal (a write killed before its commit) are removed, with the folders left empty; and the
//! folders an older tenantc left beside `out/` ([`old_leftovers`]), which are only reported.
//!
//! Invariants:
//! - Recovery runs under the exclusive lock, before anything is compiled or written.
//! - It removes only tenantc's temporary files and folders left empty, and writes nothing
//!   outside the folder.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::scan::Scan;
use super::{JOURNAL, Writer, journal::read_journal};
use crate::emit::MARKER;

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

impl Writer {
    /// Applies a committed journal, then removes temporary files and empty folders.
    pub(super) fn recover(&mut self) -> io::Result<()> {
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
}

/// Folders beside `out` that the whole-tree swap of older tenantc versions left after a kill:
/// `.<name>.tenantc-new-<pid>` or `.<name>.tenantc-old-<pid>`, real folders holding the marker.
pub(super) fn old_leftovers(out: &Path) -> Vec<PathBuf> {
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
    use super::super::{Faults, read_tree, recover, tests::tree, write};
    use super::*;

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
}
