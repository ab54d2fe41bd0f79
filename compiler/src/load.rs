//! Load: the declaration files under a project root.
//!
//! Consumes: a root folder. Produces: [`InputFile`]s for every file under `tenants/` and
//! `cells/` (recursively, dotfiles skipped, symbolic links followed up to a fixed depth, so a
//! linked declaration is never dropped in silence), sorted by relative path.
//!
//! Invariant: the only disk reads of the compiler besides `emit::fs`; paths in the result are
//! relative with `/` separators, so nothing machine-specific reaches the output.

use std::fs;
use std::io;
use std::path::Path;

use crate::InputFile;

/// The folders a project root holds declarations in.
pub const FOLDERS: [&str; 2] = ["cells", "tenants"];

/// Reads every declaration file under `root`. Fails when neither folder exists, since that
/// means the root is wrong.
pub fn load(root: &Path) -> io::Result<Vec<InputFile>> {
    let mut inputs = Vec::new();
    let mut found_folder = false;
    for folder in FOLDERS {
        let dir = root.join(folder);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {
                found_folder = true;
                walk(&dir, folder, 0, &mut inputs)?;
            }
            Ok(_) => {
                return Err(io::Error::other(format!(
                    "{} is not a folder",
                    dir.display()
                )));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    if !found_folder {
        return Err(io::Error::other(format!(
            "{} has neither a tenants/ nor a cells/ folder; pass the project root with --root",
            root.display()
        )));
    }
    inputs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(inputs)
}

/// How deep folders (and links to folders) may nest; deeper means a link cycle.
const MAX_DEPTH: usize = 16;

fn walk(dir: &Path, relative: &str, depth: usize, inputs: &mut Vec<InputFile>) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "{} is nested more than {MAX_DEPTH} folders deep (a symbolic link cycle?)",
            dir.display()
        )));
    }
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = format!("{relative}/{name}");
        // `metadata` follows symbolic links: a linked declaration is read like any other.
        let kind = fs::metadata(entry.path())?;
        if kind.is_dir() {
            walk(&entry.path(), &path, depth + 1, inputs)?;
        } else if kind.is_file() {
            inputs.push(InputFile {
                path,
                contents: fs::read(entry.path())?,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_declarations_recursively_and_skips_dotfiles() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("tenants/team")).unwrap();
        fs::create_dir_all(dir.path().join("cells")).unwrap();
        fs::write(dir.path().join("tenants/team/a.kdl"), "x").unwrap();
        fs::write(dir.path().join("tenants/.gitkeep"), "").unwrap();
        fs::write(dir.path().join("cells/c.yaml"), "y").unwrap();
        let paths: Vec<String> = load(dir.path())
            .unwrap()
            .into_iter()
            .map(|i| i.path)
            .collect();
        assert_eq!(paths, ["cells/c.yaml", "tenants/team/a.kdl"]);
    }

    #[cfg(unix)]
    #[test]
    fn follows_symbolic_links_to_declarations_and_stops_at_cycles() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("tenants")).unwrap();
        fs::create_dir_all(dir.path().join("shared")).unwrap();
        fs::write(dir.path().join("shared/a.kdl"), "x").unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("shared/a.kdl"),
            dir.path().join("tenants/a.kdl"),
        )
        .unwrap();
        let inputs = load(dir.path()).unwrap();
        assert_eq!(inputs.len(), 1);
        assert_eq!(inputs[0].path, "tenants/a.kdl");
        std::os::unix::fs::symlink(dir.path().join("tenants"), dir.path().join("tenants/loop"))
            .unwrap();
        assert!(load(dir.path()).is_err());
    }

    #[test]
    fn a_root_without_declaration_folders_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).is_err());
    }
}
