//! The lock of the output folder: one build writes it at a time, and `check` reads it only
//! between builds.
//!
//! Consumes: the output folder. Produces: the exclusive lock a build holds while it recovers and
//! writes ([`Writer::lock_and_recover`]), the shared lock `check` reads under ([`shared`]), and,
//! for a run that waits, who holds the lock and since when.
//!
//! Invariants:
//! - The lock file is `out/.tenantc-lock`; it stays in the folder and is never part of the tree.
//! - A lock file that is not a regular file (a symbolic link, committed by anyone) is removed by
//!   a build and ignored by `check`, never opened, so tenantc never truncates or blocks on
//!   another file.
//! - A folder whose lock file cannot be created (read-only) can still be found up to date, but
//!   is never written, and an interrupted write in it is an error.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::scan::Scan;
use super::{LOCK, Writer};

impl Writer {
    /// Takes the exclusive lock (waiting for another build, with a message), says in the lock
    /// file who holds it, and recovers the folder. A folder where the lock file cannot be
    /// created is recorded as read-only instead.
    pub(super) fn lock_and_recover(&mut self) -> io::Result<()> {
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
}

/// Takes a shared lock on the lock file of `dir`, when it has a regular one, waiting (after
/// calling `on_wait` with a message) while a build holds it; the lock lasts as long as the file.
pub(super) fn shared(dir: &Path, on_wait: fn(&str)) -> io::Result<Option<File>> {
    let lock_path = dir.join(LOCK);
    // Only a regular lock file is opened: a FIFO would block, a link would lead elsewhere.
    let regular = fs::symlink_metadata(&lock_path).is_ok_and(|meta| meta.is_file());
    match File::open(&lock_path) {
        Ok(file) if regular => {
            match file.try_lock_shared() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    on_wait(&holder_message(&lock_path));
                    file.lock_shared()?;
                }
                Err(TryLockError::Error(error)) => return Err(error),
            }
            Ok(Some(file))
        }
        _ => Ok(None),
    }
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

#[cfg(test)]
mod tests {
    use super::super::{JOURNAL, read_tree_waiting, recover, tests::tree, write};
    use super::*;
    use crate::emit::MARKER;

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
