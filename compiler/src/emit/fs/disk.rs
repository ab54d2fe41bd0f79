//! Counted filesystem operations on paths relative to the output folder: every operation of a
//! write or a recovery goes through here.
//!
//! Consumes: relative paths from the tree or the journal. Produces: files and folders created,
//! written, renamed, removed and synced under the output folder.
//!
//! Invariants:
//! - Each operation is counted once, and the test-only [`super::Faults`] strike there, so
//!   `tests/crash.rs` can stop a real build after every one.
//! - A new file is always created, never an existing one opened, and is made durable by
//!   [`Disk::sync_all`] before the journal that names it.
//! - [`Disk::real_parents`] refuses a path whose folders are not real folders, so no operation
//!   follows a symbolic link out of the output folder.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;

use super::{Faults, join};

/// Counted filesystem operations on paths relative to the output folder.
#[derive(Debug)]
pub(super) struct Disk {
    /// The output folder.
    pub(super) root: PathBuf,
    /// The operations done so far.
    pub(super) done: u64,
    /// Where the test-only faults strike.
    pub(super) faults: Faults,
}

impl Disk {
    /// Counts one operation; this is where test-only faults strike.
    pub(super) fn step(&mut self) -> io::Result<()> {
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

    pub(super) fn path(&self, relative: &str) -> PathBuf {
        if relative.is_empty() {
            self.root.clone()
        } else {
            self.root.join(relative)
        }
    }

    pub(super) fn context(&self, verb: &str, relative: &str, error: io::Error) -> io::Error {
        io::Error::new(
            error.kind(),
            format!("cannot {verb} {}: {error}", self.path(relative).display()),
        )
    }

    pub(super) fn create_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::create_dir(self.path(relative)))
            .map_err(|error| self.context("create folder", relative, error))
    }

    pub(super) fn remove_file(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::remove_file(self.path(relative)))
            .map_err(|error| self.context("remove", relative, error))
    }

    pub(super) fn remove_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| fs::remove_dir(self.path(relative)))
            .map_err(|error| self.context("remove folder", relative, error))
    }

    pub(super) fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
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
    pub(super) fn write_temp(&mut self, relative: &str, contents: &[u8]) -> io::Result<()> {
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
    pub(super) fn sync_all(&mut self, paths: &[String]) -> io::Result<()> {
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

    pub(super) fn sync_dir(&mut self, relative: &str) -> io::Result<()> {
        self.step()
            .and_then(|()| File::open(self.path(relative))?.sync_all())
            .map_err(|error| self.context("sync folder", relative, error))
    }

    /// Checks that every folder above `relative` is a real folder, not a symbolic link or a
    /// file, so that an operation never leaves the output folder. Returns whether they all
    /// exist; a missing one is an error when `required`.
    pub(super) fn real_parents(
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
