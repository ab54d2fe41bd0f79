//! Load: the declaration files under a project root.
//!
//! Consumes: a root folder. Produces: [`InputFile`]s for every file under `tenants/` and
//! `cells/` (recursively, dotfiles skipped), sorted by relative path.
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
                walk(&dir, folder, &mut inputs)?;
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

fn walk(dir: &Path, relative: &str, inputs: &mut Vec<InputFile>) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = format!("{relative}/{name}");
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), &path, inputs)?;
        } else if kind.is_file() {
            inputs.push(InputFile {
                path,
                contents: fs::read(entry.path())?,
            });
        }
        // Symbolic links are not followed: a declaration is a file in the repository.
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

    #[test]
    fn a_root_without_declaration_folders_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).is_err());
    }
}
