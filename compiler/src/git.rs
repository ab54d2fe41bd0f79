//! Load from git: the declarations and signing material of a project root as one revision holds
//! them, for `tenantc diff --base <revision>`.
//!
//! Consumes: a project root inside a git work tree and a revision (a branch, tag or commit).
//! Produces: the revision's commit id and a [`Loaded`], exactly as `load::load` would make it
//! from a checkout of that revision: an [`InputFile`] for every file under the folders the build
//! reads ([`READ_FOLDERS`]: `tenants/`, `cells/`, `keys/`, `weights/` and `templates/`; dotfiles
//! skipped, sorted), and a [`Finding`] for what it refuses.
//!
//! Invariants:
//! - Read only: it runs `git rev-parse`, `git ls-tree` and `git cat-file`, which never touch the
//!   work tree, the index or any ref; nothing is checked out and no file is written.
//! - The same refusals as `load`: a name that [`name_problem`] refuses, a folder deeper than
//!   [`MAX_FOLDER_DEPTH`], a declaration larger than [`MAX_FILE_BYTES`] (by the size git records,
//!   before anything is read) and a symbolic link (which a checkout could point anywhere) are
//!   findings; files the build does not open ([`is_read`]) are passed on unread.
//! - A revision is never read as an option: one that starts with `-` is unknown.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::escape::escape_bytes;
use crate::layout::{READ_FOLDERS, is_read};
use crate::limits::{MAX_FILE_BYTES, MAX_FOLDER_DEPTH};
use crate::load::{Finding, InputFile, Loaded, Problem, name_problem};

/// Why a revision could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    /// The root is not inside a git work tree; holds git's reason.
    NotARepository(String),
    /// The revision names no commit.
    UnknownRevision(String),
    /// git could not be run or failed otherwise; holds the reason.
    Failed(String),
}

impl GitError {
    /// The error as a lowercase message without a final period.
    pub fn message(&self) -> String {
        match self {
            Self::NotARepository(reason) => {
                format!("the project root is not inside a git repository ({reason})")
            }
            Self::UnknownRevision(revision) => {
                format!(
                    "`{}` names no commit of the repository",
                    escape_bytes(revision.as_bytes())
                )
            }
            Self::Failed(reason) => format!("git failed: {reason}"),
        }
    }

    /// The next step for the user.
    pub fn help(&self) -> String {
        match self {
            Self::NotARepository(_) => {
                "run `tenantc diff` inside a clone of the fleet's repository, or pass it with --root".to_string()
            }
            Self::UnknownRevision(_) => {
                "pass a branch, tag or commit that `git rev-parse` knows, such as `origin/main` (fetch it first in a shallow CI clone)".to_string()
            }
            Self::Failed(_) => "check that `git` is installed and on PATH".to_string(),
        }
    }
}

/// Runs git in `root` with `args`; returns its stdout, or its stderr's first line on failure.
fn git(root: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, (bool, String)> {
    let mut command = Command::new("git");
    // Pathspecs are the root's own folder names, never patterns.
    command
        .arg("-C")
        .arg(root)
        .arg("--literal-pathspecs")
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|error| (false, error.to_string()))?;
    let writer = match (input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || stdin.write_all(&bytes)))
        }
        _ => None,
    };
    let output = child
        .wait_with_output()
        .map_err(|error| (false, error.to_string()))?;
    if let Some(writer) = writer {
        match writer.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err((false, error.to_string())),
            Err(_) => return Err((false, "the writer to git stopped".to_string())),
        }
    }
    if output.status.success() {
        Ok(output.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or("no message").trim();
        Err((true, escape_bytes(first.as_bytes())))
    }
}

/// Reads the project root as `revision` holds it; returns the commit id and what it holds.
pub fn load_revision(root: &Path, revision: &str) -> Result<(String, Loaded), GitError> {
    let prefix = match git(root, &["rev-parse", "--show-prefix"], None) {
        Ok(stdout) => String::from_utf8_lossy(&stdout).trim_end().to_string(),
        Err((true, reason)) => return Err(GitError::NotARepository(reason)),
        Err((false, reason)) => return Err(GitError::Failed(reason)),
    };
    if revision.is_empty() || revision.starts_with('-') {
        return Err(GitError::UnknownRevision(revision.to_string()));
    }
    let wanted = format!("{revision}^{{commit}}");
    let commit = match git(root, &["rev-parse", "--verify", "--quiet", &wanted], None) {
        Ok(stdout) => String::from_utf8_lossy(&stdout).trim().to_string(),
        Err((true, _)) => return Err(GitError::UnknownRevision(revision.to_string())),
        Err((false, reason)) => return Err(GitError::Failed(reason)),
    };
    let mut args = vec![
        "ls-tree",
        "-r",
        "-l",
        "-z",
        "--full-tree",
        commit.as_str(),
        "--",
    ];
    // Everything the build reads: a base compiled without its templates (or keys, or weights)
    // differs from the same tree on disk.
    let pathspecs: Vec<String> = READ_FOLDERS
        .iter()
        .map(|folder| format!("{prefix}{folder}"))
        .collect();
    args.extend(pathspecs.iter().map(String::as_str));
    let listing = git(root, &args, None).map_err(|(_, reason)| GitError::Failed(reason))?;
    let mut loaded = Loaded::default();
    // Blobs to read: (object id, index in `loaded.inputs`).
    let mut wanted_blobs: Vec<(String, usize)> = Vec::new();
    for entry in listing.split(|byte| *byte == 0) {
        let Some(tab) = entry.iter().position(|byte| *byte == b'\t') else {
            continue;
        };
        let (head, path) = entry.split_at(tab);
        let path = path.get(1..).unwrap_or_default();
        let Some(path) = path.strip_prefix(prefix.as_bytes()) else {
            continue;
        };
        let fields: Vec<&[u8]> = head
            .split(|byte| *byte == b' ')
            .filter(|field| !field.is_empty())
            .collect();
        let (mode, kind, object, size) = match fields.as_slice() {
            [mode, kind, object, size] => (*mode, *kind, *object, *size),
            _ => continue,
        };
        let components: Vec<&[u8]> = path.split(|byte| *byte == b'/').collect();
        if components
            .iter()
            .any(|component| component.first() == Some(&b'.'))
        {
            continue;
        }
        let shown: Vec<String> = components.iter().map(|c| escape_bytes(c)).collect();
        let shown = shown.join("/");
        if let Some((component, reason)) = components
            .iter()
            .find_map(|component| name_problem(component).map(|reason| (component, reason)))
        {
            let name = escape_bytes(component);
            loaded.findings.push(Finding {
                path: shown,
                problem: Problem::PathUnsafe { name, reason },
            });
            continue;
        }
        // Folders below `tenants/` and the like: the file's own component is not a folder.
        if components.len().saturating_sub(2) > MAX_FOLDER_DEPTH {
            loaded.findings.push(Finding {
                path: shown,
                problem: Problem::TooDeep,
            });
            continue;
        }
        if kind != b"blob" {
            // A submodule holds no declarations of this repository.
            continue;
        }
        if mode == b"120000" {
            loaded.findings.push(Finding {
                path: shown,
                problem: Problem::NotRegular("a symbolic link in git"),
            });
            continue;
        }
        if !is_read(&shown) {
            loaded.inputs.push(InputFile {
                path: shown,
                contents: Vec::new(),
            });
            continue;
        }
        let size: u64 = String::from_utf8_lossy(size).parse().unwrap_or(u64::MAX);
        if size > MAX_FILE_BYTES {
            loaded.findings.push(Finding {
                path: shown,
                problem: Problem::TooLarge(size),
            });
            continue;
        }
        wanted_blobs.push((
            String::from_utf8_lossy(object).to_string(),
            loaded.inputs.len(),
        ));
        loaded.inputs.push(InputFile {
            path: shown,
            contents: Vec::new(),
        });
    }
    read_blobs(root, &wanted_blobs, &mut loaded.inputs)?;
    loaded.inputs.sort_by(|a, b| a.path.cmp(&b.path));
    loaded.findings.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((commit, loaded))
}

/// Reads the blobs with `git cat-file --batch` into the inputs they belong to.
fn read_blobs(
    root: &Path,
    blobs: &[(String, usize)],
    inputs: &mut [InputFile],
) -> Result<(), GitError> {
    if blobs.is_empty() {
        return Ok(());
    }
    let mut request = String::new();
    for (object, _) in blobs {
        request.push_str(object);
        request.push('\n');
    }
    let output = git(root, &["cat-file", "--batch"], Some(request.as_bytes()))
        .map_err(|(_, reason)| GitError::Failed(reason))?;
    let mut rest: &[u8] = &output;
    for (_, idx) in blobs {
        let newline = rest
            .iter()
            .position(|byte| *byte == b'\n')
            .ok_or_else(|| GitError::Failed("`git cat-file` ended early".to_string()))?;
        let header = String::from_utf8_lossy(rest.get(..newline).unwrap_or_default()).to_string();
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|size| size.parse().ok())
            .ok_or_else(|| GitError::Failed(format!("`git cat-file` answered `{header}`")))?;
        let start = newline + 1;
        let contents = rest
            .get(start..start.saturating_add(size))
            .ok_or_else(|| GitError::Failed("`git cat-file` ended early".to_string()))?;
        if let Some(input) = inputs.get_mut(*idx) {
            input.contents = contents.to_vec();
        }
        // The contents end with one newline of the protocol's own.
        rest = rest
            .get(start.saturating_add(size).saturating_add(1)..)
            .unwrap_or_default();
    }
    Ok(())
}
