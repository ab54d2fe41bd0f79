//! Load: the declaration files under a project root, read defensively.
//!
//! Consumes: a root folder, whose `tenants/` and `cells/` (and the signing material under
//! `keys/` and `weights/`, and the platform templates under `templates/`) come from untrusted
//! pull requests.
//! Produces: a [`Loaded`]: an [`InputFile`] for every file under `tenants/`, `cells/`, `keys/`,
//! `weights/` and `templates/` (recursively, dotfiles skipped, sorted by relative path), and a [`Finding`] for every file or
//! folder that was refused or could not be read; [`Finding::diagnostic`] turns a finding into a
//! located diagnostic, so one bad file never stops the run.
//!
//! Invariants:
//! - The only disk reads of the compiler besides `emit::fs` and `weights::digest::hash_dir`, which
//!   only the `tenantc weights` commands call (a build never reads model weights).
//! - Nothing outside the canonical project root is ever opened: every symbolic link is resolved
//!   first, and a link that leads out of the root (or nowhere, or into a cycle) is a finding.
//! - Only regular declaration files (`.kdl`, `.yaml`, `.yml`), signing material and templates
//!   (`templates/tenant/*.yaml.j2`, `templates/cell/*.yaml.j2`) are opened, never a FIFO, socket
//!   or device, and no more than [`MAX_FILE_BYTES`] of one is read; any other file is passed on
//!   with empty contents, unread, so nothing of it can be printed.
//! - Files are read after the walk, in parallel on the current rayon pool, and the result is
//!   sorted by path, so it is the same on any number of threads.
//! - Every path in an [`InputFile`] is relative, `/`-separated and made of names that pass
//!   [`name_problem`]; every path in a [`Finding`] is escaped to printable ASCII with
//!   [`escape_bytes`], so no file name can put a control character into output or onto a
//!   terminal.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic};
// The escaping lives in `escape.rs`; the CLI still names it here.
pub use crate::escape::{escape_bytes, escape_str};
use crate::limits::{MAX_FILE_BYTES, MAX_FOLDER_DEPTH, MAX_NAME_BYTES};
use crate::source::{FileId, Span};

// The folder layout lives in `layout.rs`; the CLI still names the declaration folders here.
pub use crate::layout::DECLARATION_FOLDERS as FOLDERS;
use crate::layout::{READ_FOLDERS, is_read};

/// One input file, with its path relative to the project root (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Such as `tenants/acme-research.kdl`; names that [`name_problem`] refuses make the
    /// file a `path-unsafe` error instead of a declaration.
    pub path: String,
    /// Raw bytes; non-UTF-8 contents are reported, not fatal. Contents of a file that is not a
    /// declaration (`file-ignored`) are never looked at.
    pub contents: Vec<u8>,
}

/// What [`load`] found under a root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The files to compile, sorted by path; files that are not declarations have empty contents.
    pub inputs: Vec<InputFile>,
    /// Files and folders that were refused or could not be read, sorted by path.
    pub findings: Vec<Finding>,
}

/// A file or folder that [`load`] refused or could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The path relative to the root, escaped to printable ASCII with [`escape_bytes`].
    pub path: String,
    /// What is wrong with it.
    pub problem: Problem,
}

/// Why a file or folder was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A name that may not reach generated output; holds the escaped name and the rule it breaks.
    PathUnsafe {
        /// The offending file or folder name, escaped.
        name: String,
        /// Which rule it breaks, such as `starts with `-``.
        reason: &'static str,
    },
    /// A symbolic link whose target lies outside the project root; holds the escaped target.
    SymlinkOutsideRoot(String),
    /// A symbolic link that leads nowhere, into a loop of links, or to a folder containing it.
    SymlinkBroken(String),
    /// A symbolic link into a folder tenantc writes (one with its marker, or below one); holds
    /// that folder relative to the root, escaped.
    SymlinkIntoOutput(String),
    /// A file or folder that exists but cannot be read; holds the reason.
    Unreadable(String),
    /// A declaration file larger than [`MAX_FILE_BYTES`]; holds its size in bytes.
    TooLarge(u64),
    /// A FIFO, socket or device; holds what it is, such as `a FIFO`.
    NotRegular(&'static str),
    /// A folder nested deeper than [`MAX_FOLDER_DEPTH`] under `tenants/` or `cells/`.
    TooDeep,
}

impl Finding {
    /// The diagnostic of this finding, located at the start of `file`, the finding's entry (with
    /// no text) in the source map.
    pub fn diagnostic(&self, file: FileId) -> Diagnostic {
        let span = Span::new(file, 0..0);
        let path = &self.path;
        match &self.problem {
            Problem::PathUnsafe { name, reason } => Diagnostic::error(
                Code::PathUnsafe,
                span,
                format!("the name `{name}` {reason}"),
            )
            .with_label("this path is not loaded")
            .with_note(
                "paths under tenants/ and cells/ are copied into the headers of generated files",
            )
            .with_help(format!(
                "rename it with ASCII letters, digits, `.`, `_` and `-` only, not starting with \
                 `.` or `-`, in at most {MAX_NAME_BYTES} bytes"
            )),
            Problem::SymlinkOutsideRoot(target) => Diagnostic::error(
                Code::SymlinkOutsideRoot,
                span,
                format!(
                    "`{path}` is a symbolic link to `{target}`, outside the project root, and is \
                     not followed"
                ),
            )
            .with_label("link leaves the root")
            .with_help("copy the declaration into tenants/ or cells/, or remove the link"),
            Problem::SymlinkBroken(reason) => Diagnostic::error(
                Code::SymlinkBroken,
                span,
                format!("`{path}` is a symbolic link that cannot be followed: {reason}"),
            )
            .with_label("broken link")
            .with_help("point the link at a file or folder inside the project root, or remove it"),
            Problem::SymlinkIntoOutput(folder) => Diagnostic::error(
                Code::SymlinkIntoOutput,
                span,
                format!(
                    "`{path}` is a symbolic link into `{folder}`, a folder tenantc writes, and is \
                     not followed"
                ),
            )
            .with_label("link into generated output")
            .with_note("the next build would read the generated manifests as declarations")
            .with_help("remove the link; declarations never live in tenantc's output"),
            Problem::Unreadable(reason) => Diagnostic::error(
                Code::FileUnreadable,
                span,
                format!("`{path}` cannot be read: {reason}"),
            )
            .with_label("not loaded")
            .with_help("make it readable by the user that runs tenantc, or remove it"),
            Problem::TooLarge(bytes) => Diagnostic::error(
                Code::FileTooLarge,
                span,
                format!(
                    "`{path}` has {bytes} bytes, more than the {MAX_FILE_BYTES} bytes a \
                     declaration file may have"
                ),
            )
            .with_label("not read")
            .with_help(
                "declare one tenant or cell per file; a declaration is far smaller than this",
            ),
            Problem::NotRegular(kind) if self.is_error() => Diagnostic::error(
                Code::FileNotRegular,
                span,
                format!("`{path}` is named like a declaration but is {kind}, not a regular file"),
            )
            .with_label("not opened")
            .with_help("replace it with the declaration as a regular file, or remove it"),
            Problem::NotRegular(kind) => Diagnostic::warning(
                Code::FileNotRegular,
                span,
                format!("`{path}` is {kind}, not a regular file, and is skipped"),
            )
            .with_label("not opened")
            .with_help("remove it from tenants/ and cells/; declarations are regular files"),
            Problem::TooDeep => Diagnostic::error(
                Code::FolderTooDeep,
                span,
                format!(
                    "`{path}` is nested more than {MAX_FOLDER_DEPTH} folders deep and is not read"
                ),
            )
            .with_label("too deep")
            .with_help("keep declarations in fewer levels of folders under tenants/ and cells/"),
        }
    }

    /// Whether the finding fails the build. A FIFO, socket or device is only skipped with a
    /// warning, unless it is named like a declaration: then a tenant or cell would silently drop
    /// out of the build, so it is an error.
    pub fn is_error(&self) -> bool {
        match self.problem {
            Problem::NotRegular(_) => {
                matches!(crate::layout::classify(&self.path), Some((_, Some(_))))
            }
            _ => true,
        }
    }
}

/// Reads every declaration file under `root`, refusing what is unsafe with a [`Finding`].
///
/// Fails only when the root itself is wrong: neither folder exists, a declaration folder is a
/// regular file, or the root cannot be resolved.
pub fn load(root: &Path) -> io::Result<Loaded> {
    let mut present = Vec::new();
    for folder in FOLDERS {
        let dir = root.join(folder);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_file() => {
                return Err(io::Error::other(format!(
                    "{} is not a folder",
                    dir.display()
                )));
            }
            Ok(_) => present.push(folder),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    if present.is_empty() {
        return Err(io::Error::other(format!(
            "{} has neither a tenants/ nor a cells/ folder; pass the project root with --root",
            root.display()
        )));
    }
    let canonical_root = fs::canonicalize(root)?;
    let mut walker = Walker {
        ancestors: vec![canonical_root.clone()],
        root: canonical_root,
        loaded: Loaded::default(),
        to_read: Vec::new(),
    };
    // The optional folders: signing material and templates.
    for folder in READ_FOLDERS
        .into_iter()
        .filter(|folder| !FOLDERS.contains(folder))
    {
        match fs::symlink_metadata(root.join(folder)) {
            Ok(_) => present.push(folder),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    present.sort_unstable();
    for folder in present {
        let path = walker.root.join(folder);
        walker.entry(&path, folder.to_string(), 0);
    }
    let mut loaded = walker.read_files();
    loaded.inputs.sort_by(|a, b| a.path.cmp(&b.path));
    loaded.findings.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(loaded)
}

struct Walker {
    /// The canonical project root: nothing outside it is opened.
    root: PathBuf,
    /// The canonical folders being walked, outermost first (the root included), to find cycles.
    ancestors: Vec<PathBuf>,
    loaded: Loaded,
    /// The regular files to read once the walk is done: the canonical path and the path shown.
    to_read: Vec<(PathBuf, String)>,
}

impl Walker {
    fn refuse(&mut self, path: String, problem: Problem) {
        self.loaded.findings.push(Finding { path, problem });
    }

    /// Reads the files the walk found, in parallel on the current rayon pool (each read is on
    /// its own: it opens only its path, and [`read_regular`] checks again that it is a regular
    /// file of bounded size), and adds each as an input or a finding in the walk's order.
    fn read_files(mut self) -> Loaded {
        use rayon::prelude::*;
        let read: Vec<(String, Result<Vec<u8>, Problem>)> = std::mem::take(&mut self.to_read)
            .into_par_iter()
            .map(|(real, relative)| {
                let contents = read_regular(&real);
                (relative, contents)
            })
            .collect();
        for (relative, contents) in read {
            match contents {
                Ok(contents) => self.loaded.inputs.push(InputFile {
                    path: relative,
                    contents,
                }),
                Err(problem) => self.refuse(relative, problem),
            }
        }
        self.loaded
    }

    /// The folder tenantc writes that holds the canonical path `target` (the folder itself, or
    /// an ancestor below the root, carries tenantc's marker), relative to the root.
    fn output_folder(&self, target: &Path) -> Option<String> {
        let mut folder = Some(target);
        while let Some(candidate) = folder {
            if candidate == self.root || !candidate.starts_with(&self.root) {
                return None;
            }
            if fs::symlink_metadata(candidate.join(crate::layout::MARKER))
                .is_ok_and(|meta| meta.is_file())
            {
                let relative = candidate.strip_prefix(&self.root).unwrap_or(candidate);
                return Some(escape_os(relative.as_os_str()));
            }
            folder = candidate.parent();
        }
        None
    }

    /// Loads the file or folder at `path` (whose folder is canonical, so only its last component
    /// may be a link), shown as `relative`, at folder depth `depth`.
    fn entry(&mut self, path: &Path, relative: String, depth: usize) {
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(error) => return self.refuse(relative, Problem::Unreadable(reason(&error))),
        };
        let (real, meta) = if meta.file_type().is_symlink() {
            let target = match fs::canonicalize(path) {
                Ok(target) => target,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    let problem = Problem::SymlinkBroken("its target does not exist".to_string());
                    return self.refuse(relative, problem);
                }
                Err(error) => {
                    return self.refuse(relative, Problem::SymlinkBroken(reason(&error)));
                }
            };
            if !target.starts_with(&self.root) {
                // Name the target as the link's own text says it (what the pull request wrote),
                // not as it resolves on this machine: no absolute path of the runner is printed.
                let written = fs::read_link(path).unwrap_or_default();
                let shown = escape_os(written.as_os_str());
                return self.refuse(relative, Problem::SymlinkOutsideRoot(shown));
            }
            if let Some(output) = self.output_folder(&target) {
                return self.refuse(relative, Problem::SymlinkIntoOutput(output));
            }
            match fs::metadata(&target) {
                Ok(meta) => (target, meta),
                Err(error) => return self.refuse(relative, Problem::Unreadable(reason(&error))),
            }
        } else {
            (path.to_path_buf(), meta)
        };
        if meta.is_dir() {
            if self.ancestors.contains(&real) {
                let problem = Problem::SymlinkBroken(
                    "it leads to a folder that contains it, a cycle".to_string(),
                );
                return self.refuse(relative, problem);
            }
            self.folder(real, relative, depth);
        } else if meta.is_file() {
            self.file(&real, relative, meta.len());
        } else {
            self.refuse(relative, Problem::NotRegular(kind_of(&meta.file_type())));
        }
    }

    /// Walks the canonical folder `real`, shown as `relative`.
    fn folder(&mut self, real: PathBuf, relative: String, depth: usize) {
        if depth > MAX_FOLDER_DEPTH {
            return self.refuse(relative, Problem::TooDeep);
        }
        let entries = match fs::read_dir(&real) {
            Ok(entries) => entries,
            Err(error) => return self.refuse(relative, Problem::Unreadable(reason(&error))),
        };
        let mut names = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => names.push(entry.file_name()),
                Err(error) => {
                    return self.refuse(relative, Problem::Unreadable(reason(&error)));
                }
            }
        }
        names.sort();
        self.ancestors.push(real.clone());
        for name in names {
            let bytes = os_bytes(&name);
            if bytes.first() == Some(&b'.') {
                continue;
            }
            let shown = format!("{relative}/{}", escape_bytes(&bytes));
            if let Some(reason) = name_problem(&bytes) {
                let name = escape_bytes(&bytes);
                self.refuse(shown, Problem::PathUnsafe { name, reason });
                continue;
            }
            self.entry(&real.join(&name), shown, depth + 1);
        }
        self.ancestors.pop();
    }

    /// Takes the regular file `real`, shown as `relative`, of `len` bytes by its metadata: a
    /// declaration, signing material or template is read after the walk ([`Walker::read_files`]).
    fn file(&mut self, real: &Path, relative: String, len: u64) {
        if !is_read(&relative) {
            // Skipped files are never opened: their contents cannot reach a diagnostic.
            self.loaded.inputs.push(InputFile {
                path: relative,
                contents: Vec::new(),
            });
            return;
        }
        if len > MAX_FILE_BYTES {
            return self.refuse(relative, Problem::TooLarge(len));
        }
        self.to_read.push((real.to_path_buf(), relative));
    }
}

/// Opens a file that was a regular file a moment ago and reads at most [`MAX_FILE_BYTES`].
fn read_regular(path: &Path) -> Result<Vec<u8>, Problem> {
    let file = File::open(path).map_err(|error| Problem::Unreadable(reason(&error)))?;
    let meta = file
        .metadata()
        .map_err(|error| Problem::Unreadable(reason(&error)))?;
    if !meta.is_file() {
        return Err(Problem::NotRegular(kind_of(&meta.file_type())));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Problem::TooLarge(meta.len()));
    }
    read_capped(file, MAX_FILE_BYTES)
}

/// Reads `reader` to its end unless it holds more than `cap` bytes: a file that grows while it
/// is read can never make the compiler hold more than `cap + 1` bytes of it.
fn read_capped(reader: impl Read, cap: u64) -> Result<Vec<u8>, Problem> {
    let mut contents = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut contents)
        .map_err(|error| Problem::Unreadable(reason(&error)))?;
    let read = u64::try_from(contents.len()).unwrap_or(u64::MAX);
    if read > cap {
        return Err(Problem::TooLarge(read));
    }
    Ok(contents)
}

/// An IO error as a lowercase reason, such as `permission denied (os error 13)`.
fn reason(error: &io::Error) -> String {
    let text = error.to_string();
    let mut chars = text.chars();
    let reason = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".to_string(),
    };
    escape_str(&reason)
}

/// What a file that is neither a folder nor a regular file is, for a message.
fn kind_of(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
    }
    let _ = file_type;
    "a special file"
}

/// The bytes of a file name (lossy where the platform does not expose them).
fn os_bytes(name: &std::ffi::OsStr) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        name.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        name.to_string_lossy().into_owned().into_bytes()
    }
}

fn escape_os(path: &std::ffi::OsStr) -> String {
    escape_bytes(&os_bytes(path))
}

/// Why a file or folder name may not reach generated output, or `None` if it may.
///
/// A safe name is 1 to [`MAX_NAME_BYTES`] bytes of ASCII letters, digits, `.`, `_` and `-`, and
/// starts with neither `.` (hidden files) nor `-` (read as an option by command-line tools).
pub fn name_problem(name: &[u8]) -> Option<&'static str> {
    let safe = |byte: &u8| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-');
    match name.first() {
        None => Some("is empty"),
        Some(b'.') => Some("starts with `.`"),
        Some(b'-') => Some("starts with `-`"),
        Some(_) if name.len() > MAX_NAME_BYTES => Some("is too long"),
        Some(_) if !name.iter().all(safe) => {
            Some("has a character other than ASCII letters, digits, `.`, `_` and `-`")
        }
        Some(_) => None,
    }
}

/// The first name of a `/`-separated relative path that may not reach output, with the reason.
pub fn path_problem(path: &str) -> Option<(&str, &'static str)> {
    path.split('/')
        .find_map(|name| name_problem(name.as_bytes()).map(|reason| (name, reason)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(loaded: &Loaded) -> Vec<&str> {
        loaded.inputs.iter().map(|i| i.path.as_str()).collect()
    }

    fn problems(loaded: &Loaded) -> Vec<(&str, &Problem)> {
        loaded
            .findings
            .iter()
            .map(|finding| (finding.path.as_str(), &finding.problem))
            .collect()
    }

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("tenants")).unwrap();
        fs::create_dir_all(dir.path().join("cells")).unwrap();
        dir
    }

    #[test]
    fn loads_declarations_recursively_and_skips_dotfiles() {
        let dir = project();
        fs::create_dir_all(dir.path().join("tenants/team")).unwrap();
        fs::write(dir.path().join("tenants/team/a.kdl"), "x").unwrap();
        fs::write(dir.path().join("tenants/.gitkeep"), "").unwrap();
        fs::write(dir.path().join("cells/c.yaml"), "y").unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["cells/c.yaml", "tenants/team/a.kdl"]);
        assert_eq!(loaded.inputs[1].contents, b"x");
        assert!(loaded.findings.is_empty());
    }

    #[test]
    fn files_that_are_not_declarations_are_passed_on_unread() {
        let dir = project();
        fs::write(dir.path().join("tenants/notes.txt"), "secret notes").unwrap();
        let big = File::create(dir.path().join("tenants/archive.tar")).unwrap();
        big.set_len(MAX_FILE_BYTES * 4).unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["tenants/archive.tar", "tenants/notes.txt"]);
        assert!(loaded.inputs.iter().all(|input| input.contents.is_empty()));
        assert!(loaded.findings.is_empty());
    }

    #[test]
    fn a_declaration_over_the_size_cap_is_refused_unread() {
        let dir = project();
        let big = File::create(dir.path().join("tenants/big.kdl")).unwrap();
        big.set_len(MAX_FILE_BYTES + 1).unwrap();
        let exact = File::create(dir.path().join("tenants/exact.kdl")).unwrap();
        exact.set_len(MAX_FILE_BYTES).unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["tenants/exact.kdl"]);
        assert_eq!(
            problems(&loaded),
            [("tenants/big.kdl", &Problem::TooLarge(MAX_FILE_BYTES + 1))]
        );
    }

    #[test]
    fn the_bounded_reader_stops_one_byte_past_the_cap() {
        // `io::repeat` never ends, like a file that keeps growing while it is read.
        assert_eq!(
            read_capped(io::repeat(b'a'), 10),
            Err(Problem::TooLarge(11))
        );
        assert_eq!(
            read_capped(&b"0123456789"[..], 10),
            Ok(b"0123456789".to_vec())
        );
    }

    #[test]
    fn names_of_safe_characters_only_are_accepted() {
        for good in ["acme-research.kdl", "team_a", "A1.yaml", "x", "_x"] {
            assert_eq!(name_problem(good.as_bytes()), None, "{good}");
        }
        let long = "a".repeat(MAX_NAME_BYTES + 1);
        for bad in [
            "x\nnamespace: kube-system\n#",
            "a b.kdl",
            "-rf",
            ".hidden",
            "",
            "tab\t.kdl",
            "caf\u{e9}.kdl",
            "rtl\u{202e}.kdl",
            "semi;colon",
            "back\\slash",
            "colon:x",
            "#hash",
            long.as_str(),
        ] {
            assert!(name_problem(bad.as_bytes()).is_some(), "{bad:?}");
        }
        assert!(name_problem(b"\xff.kdl").is_some());
        assert_eq!(path_problem("tenants/team/a.kdl"), None);
        assert_eq!(
            path_problem("tenants/a b/c.kdl").map(|(name, _)| name),
            Some("a b")
        );
        assert!(path_problem("tenants//a.kdl").is_some());
        assert!(path_problem("tenants/../a.kdl").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn unsafe_names_are_refused_escaped_and_never_read() {
        use std::os::unix::ffi::OsStrExt;
        let dir = project();
        let hostile = dir.path().join("tenants/x\nnamespace: kube-system\n#");
        fs::create_dir(&hostile).unwrap();
        fs::write(hostile.join("a.kdl"), "tenant \"a\" {}").unwrap();
        fs::write(dir.path().join("tenants/-rf.kdl"), "x").unwrap();
        let not_utf8 = std::ffi::OsStr::from_bytes(b"caf\xe9.kdl");
        fs::write(dir.path().join("cells").join(not_utf8), "x").unwrap();
        fs::write(dir.path().join("cells/ok.kdl"), "x").unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["cells/ok.kdl"]);
        let refused: Vec<&str> = loaded.findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            refused,
            [
                "cells/caf\\xe9.kdl",
                "tenants/-rf.kdl",
                "tenants/x\\nnamespace: kube-system\\n#"
            ]
        );
        assert!(
            loaded
                .findings
                .iter()
                .all(|f| matches!(f.problem, Problem::PathUnsafe { .. }))
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_inside_the_root_are_followed() {
        let dir = project();
        fs::create_dir_all(dir.path().join("shared/team")).unwrap();
        fs::write(dir.path().join("shared/a.kdl"), "x").unwrap();
        fs::write(dir.path().join("shared/team/b.kdl"), "y").unwrap();
        std::os::unix::fs::symlink("../shared/a.kdl", dir.path().join("tenants/a.kdl")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("shared/team"),
            dir.path().join("tenants/team"),
        )
        .unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["tenants/a.kdl", "tenants/team/b.kdl"]);
        assert_eq!(loaded.inputs[0].contents, b"x");
        assert!(loaded.findings.is_empty(), "{:?}", loaded.findings);
    }

    #[cfg(unix)]
    #[test]
    fn links_into_a_folder_tenantc_writes_are_refused() {
        let dir = project();
        let out = dir.path().join("out");
        fs::create_dir_all(out.join("cell/tenants")).unwrap();
        fs::write(out.join(crate::layout::MARKER), "m").unwrap();
        fs::write(out.join("cell/tenants/x.yaml"), "kind: Namespace").unwrap();
        let symlink = |target: &str, link: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(link)).unwrap();
        };
        symlink("../out", "tenants/o");
        symlink("../out/cell", "tenants/cell");
        symlink("../out/cell/tenants/x.yaml", "cells/x.yaml");
        // A folder without the marker (the output of another tool) is read as before.
        fs::create_dir_all(dir.path().join("other")).unwrap();
        fs::write(dir.path().join("other/a.kdl"), "x").unwrap();
        symlink("../other", "tenants/other");
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["tenants/other/a.kdl"]);
        assert_eq!(
            problems(&loaded),
            [
                ("cells/x.yaml", &Problem::SymlinkIntoOutput("out".into())),
                ("tenants/cell", &Problem::SymlinkIntoOutput("out".into())),
                ("tenants/o", &Problem::SymlinkIntoOutput("out".into())),
            ]
        );
        assert!(loaded.findings.iter().all(Finding::is_error));
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_root_are_refused_without_reading_the_target() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.kdl"), "TOKEN=hunter2").unwrap();
        let dir = project();
        let symlink = |target: &Path, link: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(link)).unwrap();
        };
        symlink(Path::new("/proc/self/environ"), "tenants/env.txt");
        symlink(&outside.path().join("secret.kdl"), "tenants/secret.kdl");
        symlink(outside.path(), "cells/outside");
        symlink(Path::new("../.."), "cells/up");
        let loaded = load(dir.path()).unwrap();
        assert!(loaded.inputs.is_empty(), "{:?}", loaded.inputs);
        let refused: Vec<&str> = loaded.findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            refused,
            [
                "cells/outside",
                "cells/up",
                "tenants/env.txt",
                "tenants/secret.kdl"
            ]
        );
        for finding in &loaded.findings {
            assert!(
                matches!(finding.problem, Problem::SymlinkOutsideRoot(_)),
                "{finding:?}"
            );
            let message = finding.diagnostic(FileId(0)).message;
            assert!(message.contains(&finding.path), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn dangling_looping_and_cyclic_links_are_findings_and_the_rest_still_loads() {
        let dir = project();
        let symlink = |target: &str, link: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(link)).unwrap();
        };
        fs::write(dir.path().join("tenants/good.kdl"), "x").unwrap();
        symlink("missing.kdl", "tenants/dangling.kdl");
        symlink("loop-b.kdl", "tenants/loop-a.kdl");
        symlink("loop-a.kdl", "tenants/loop-b.kdl");
        symlink("..", "tenants/parent");
        symlink(".", "cells/itself");
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["tenants/good.kdl"]);
        let found: Vec<(&str, bool)> = problems(&loaded)
            .into_iter()
            .map(|(path, problem)| (path, matches!(problem, Problem::SymlinkBroken(_))))
            .collect();
        assert_eq!(
            found,
            [
                ("cells/itself", true),
                ("tenants/dangling.kdl", true),
                ("tenants/loop-a.kdl", true),
                ("tenants/loop-b.kdl", true),
                ("tenants/parent", true),
            ]
        );
        let dangling = loaded.findings[1].diagnostic(FileId(0));
        assert_eq!(dangling.code, Code::SymlinkBroken);
        assert_eq!(
            dangling.message,
            "`tenants/dangling.kdl` is a symbolic link that cannot be followed: its target does \
             not exist"
        );
    }

    #[test]
    fn folders_deeper_than_the_limit_are_a_finding() {
        let dir = project();
        let mut deep = dir.path().join("tenants");
        let mut relative = "tenants".to_string();
        for _ in 0..=MAX_FOLDER_DEPTH {
            deep.push("d");
            relative.push_str("/d");
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("a.kdl"), "x").unwrap();
        fs::write(deep.parent().unwrap().join("b.kdl"), "y").unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(loaded.inputs.len(), 1);
        assert!(loaded.inputs[0].path.ends_with("/d/b.kdl"));
        assert_eq!(problems(&loaded), [(relative.as_str(), &Problem::TooDeep)]);
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_sockets_are_reported_and_never_opened() {
        let dir = project();
        let fifo = dir.path().join("tenants/pipe.kdl");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let other = dir.path().join("tenants/pipe.txt");
        let status = std::process::Command::new("mkfifo")
            .arg(&other)
            .status()
            .unwrap();
        assert!(status.success());
        let _socket =
            std::os::unix::net::UnixListener::bind(dir.path().join("cells/sock.yaml")).unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.path().join("cells/null.kdl")).unwrap();
        fs::write(dir.path().join("cells/c.kdl"), "x").unwrap();
        // Opening the FIFO would block this test forever; reaching the asserts proves it is not.
        let loaded = load(dir.path()).unwrap();
        assert_eq!(paths(&loaded), ["cells/c.kdl"]);
        assert_eq!(
            problems(&loaded),
            [
                (
                    "cells/null.kdl",
                    &Problem::SymlinkOutsideRoot("/dev/null".into())
                ),
                ("cells/sock.yaml", &Problem::NotRegular("a socket")),
                ("tenants/pipe.kdl", &Problem::NotRegular("a FIFO")),
                ("tenants/pipe.txt", &Problem::NotRegular("a FIFO")),
            ]
        );
        // Named like a declaration, a special file would drop a tenant or cell in silence.
        assert!(loaded.findings[1].is_error());
        assert!(loaded.findings[2].is_error());
        assert!(!loaded.findings[3].is_error());
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_folder_or_file_is_a_finding_naming_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = project();
        fs::create_dir(dir.path().join("tenants/locked")).unwrap();
        fs::write(dir.path().join("tenants/locked/a.kdl"), "x").unwrap();
        fs::write(dir.path().join("tenants/secret.kdl"), "y").unwrap();
        let locked = fs::Permissions::from_mode(0o000);
        fs::set_permissions(dir.path().join("tenants/locked"), locked.clone()).unwrap();
        fs::set_permissions(dir.path().join("tenants/secret.kdl"), locked).unwrap();
        let loaded = load(dir.path());
        let open = fs::Permissions::from_mode(0o755);
        fs::set_permissions(dir.path().join("tenants/locked"), open).unwrap();
        let loaded = loaded.unwrap();
        if fs::read(dir.path().join("tenants/secret.kdl")).is_ok() {
            // A privileged user (root in a container) reads through permissions; then both files
            // load like any other.
            assert_eq!(
                paths(&loaded),
                ["tenants/locked/a.kdl", "tenants/secret.kdl"]
            );
        } else {
            let found: Vec<&str> = loaded.findings.iter().map(|f| f.path.as_str()).collect();
            assert_eq!(found, ["tenants/locked", "tenants/secret.kdl"]);
        }
    }

    #[test]
    fn io_errors_become_lowercase_escaped_reasons() {
        let error = io::Error::new(io::ErrorKind::PermissionDenied, "Permission denied\n!");
        assert_eq!(reason(&error), "permission denied\\n!");
        let finding = Finding {
            path: "tenants/a.kdl".into(),
            problem: Problem::Unreadable(reason(&error)),
        };
        let diagnostic = finding.diagnostic(FileId(0));
        assert_eq!(diagnostic.code, Code::FileUnreadable);
        assert!(diagnostic.is_error());
        assert_eq!(
            diagnostic.message,
            "`tenants/a.kdl` cannot be read: permission denied\\n!"
        );
    }

    /// A valid cell and a tenant `alpha` with quota in it, for end-to-end tests.
    const CELL: &str = "cell \"c1\" {\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n    pool \"train\" {\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n    }\n}\n";
    const TENANT: &str = "tenant \"alpha\" {\n    org \"a\"\n    team \"b\"\n    trust \"hard\"\n    groups admin=\"g\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {\n        pool \"train\" reserved=1\n    }\n    workload \"train\" service-account=\"s\" priority=\"batch\"\n}\n";

    /// Whether rendered diagnostics hold only printable ASCII, line feeds and the box-drawing
    /// characters of the renderer.
    fn printable(text: &str) -> bool {
        text.chars()
            .all(|ch| (' '..='~').contains(&ch) || matches!(ch, '\n' | '┌' | '─' | '│'))
    }

    #[cfg(unix)]
    #[test]
    fn no_folder_name_can_reach_output_or_the_terminal_unescaped() {
        use std::os::unix::ffi::OsStrExt;
        // Pieces that broke out of comments, terminals or paths somewhere, and safe ones.
        let pieces: [&[u8]; 16] = [
            b"a",
            b"Z9",
            b"-",
            b".",
            b"_",
            b" ",
            b"\n",
            b"\r",
            b"\t",
            b"\x1b[31m",
            b"#",
            b": ",
            "\u{85}".as_bytes(),
            "\u{2028}".as_bytes(),
            "\u{202e}".as_bytes(),
            b"\xff",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let (mut refused, mut compiled) = (0, 0);
        for round in 0..120 {
            let mut name = Vec::new();
            for _ in 0..1 + round % 5 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Every third name is made of the safe pieces only.
                let choices = if round % 3 == 0 {
                    5
                } else {
                    pieces.len() as u64
                };
                let idx = usize::try_from(seed % choices).unwrap();
                name.extend_from_slice(pieces[idx]);
            }
            let dir = project();
            fs::write(dir.path().join("cells/c1.kdl"), CELL).unwrap();
            let folder = dir
                .path()
                .join("tenants")
                .join(std::ffi::OsStr::from_bytes(&name));
            fs::create_dir_all(&folder).unwrap();
            fs::write(folder.join("alpha.kdl"), TENANT).unwrap();
            let compilation = crate::compile_loaded(&load(dir.path()).unwrap());
            let human = crate::diag::render::human(
                &compilation.diagnostics,
                &compilation.sources,
                crate::diag::render::Color::Never,
            );
            assert!(printable(&human), "{name:?}: {human}");
            let codes: Vec<Code> = compilation.diagnostics.iter().map(|d| d.code).collect();
            if name.first() == Some(&b'.') {
                // Hidden: skipped without a finding, so the tenant is simply absent.
                assert!(
                    codes.iter().all(|code| *code != Code::PathUnsafe),
                    "{name:?}"
                );
            } else if name_problem(&name).is_some() {
                assert_eq!(codes, [Code::PathUnsafe], "{name:?}: {human}");
                refused += 1;
            } else {
                compiled += 1;
                assert!(compilation.diagnostics.is_empty(), "{name:?}: {human}");
                let tree = compilation.output.unwrap();
                for (path, bytes) in &tree {
                    let text = String::from_utf8(bytes.clone()).unwrap();
                    if path.ends_with(".yaml") {
                        let header = text.lines().next().unwrap();
                        assert!(header.starts_with("# Code generated by tenantc from "));
                        assert!(printable(header), "{header}");
                        assert!(!text.contains("namespace: kube"), "{path}: {text}");
                    }
                }
            }
        }
        assert!(
            refused > 20 && compiled > 10,
            "{refused} refused, {compiled} compiled"
        );
    }

    #[test]
    fn compile_refuses_unsafe_paths_and_never_shows_skipped_contents() {
        let input = |path: &str, text: &str| InputFile {
            path: path.to_string(),
            contents: text.as_bytes().to_vec(),
        };
        let inputs = [
            input("cells/c1.kdl", CELL),
            input("tenants/x\nnamespace: kube-system\n#/alpha.kdl", TENANT),
            input("tenants/env.txt", "CI_TOKEN=hunter2\n"),
        ];
        let compilation = crate::compile(&inputs);
        let human = crate::diag::render::human(
            &compilation.diagnostics,
            &compilation.sources,
            crate::diag::render::Color::Never,
        );
        let codes: Vec<Code> = compilation.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::FileIgnored, Code::PathUnsafe], "{human}");
        assert!(printable(&human), "{human}");
        assert!(human.contains("tenants/x\\nnamespace: kube-system\\n#/alpha.kdl:1:1"));
        assert!(!human.contains("hunter2"), "{human}");
        assert!(compilation.output.is_none());
    }

    #[test]
    fn a_root_without_declaration_folders_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).is_err());
    }
}
