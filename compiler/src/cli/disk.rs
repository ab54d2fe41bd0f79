//! The command line's own file access: the files a command names on its command line.
//!
//! Consumes: paths given as arguments. Produces: their text (the object `test-policy` judges),
//! where they resolve (the `--out` overlap check, a signature's path under the root), and the lock
//! file `weights lock` writes.
//!
//! Invariant: apart from `load`, `emit::fs`, `git` and `weights::digest`, which the commands
//! call, this is the only code of the program that touches the disk; it writes one file only,
//! `weights/<tenant>.lock`, through a temporary file and a rename.

use std::path::{Component, Path, PathBuf};

/// Reads a text file a command names (the object of `test-policy`).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

/// Whether `path` is a folder, following symbolic links.
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// Whether something exists at `path`, following symbolic links.
pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Resolves `path` as the system will once it exists: every existing prefix is canonicalised
/// (following symbolic links), and the missing rest is appended with `.` and `..` applied.
pub fn resolve(path: &Path) -> PathBuf {
    let mut resolved = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir()
            .and_then(|dir| dir.canonicalize())
            .unwrap_or_default()
    };
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::RootDir | Component::Prefix(_) => resolved.push(part),
            Component::Normal(name) => {
                resolved.push(name);
                // A missing part (or a dangling link, which nothing can be created through) is
                // taken as written.
                if let Ok(canonical) = resolved.canonicalize() {
                    resolved = canonical;
                }
            }
        }
    }
    resolved
}

/// `path` relative to the project root, `/`-separated, if it lies inside it.
pub fn relative_to_root(root: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    let path = std::fs::canonicalize(path).ok()?;
    let relative = path.strip_prefix(&root).ok()?;
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    Some(parts?.join("/"))
}

/// Writes a file through a temporary file and a rename, so a reader never sees half of it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("lock.tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}
