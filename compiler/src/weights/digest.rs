//! The OpenSSF model-signing v1.0 root digest (method `files`, sha256) of a weights folder.
//!
//! Consumes: a folder of model weights on disk (for `tenantc weights hash` and `weights lock`),
//! or a file manifest (for verification at build time, which never reads weights).
//! Produces: the per-file sha256 manifest, ordered as model-signing orders it, and the root
//! digest: sha256 over the concatenated raw 32-byte file digests in that order.
//!
//! Invariants:
//! - Paths are compared component by component (`shards/part-00000.bin` sorts before
//!   `shards.txt`), never as byte strings; [`sort_manifest`] is the one ordering.
//! - Paths whose first component model-signing ignores (`.git`, `.gitignore`, `.gitattributes`,
//!   `.github`) are left out, empty files are included, and any symbolic link is refused with an
//!   error that names it; nothing outside the folder is ever opened.
//! - Files are hashed in parallel on scoped std threads, each streamed through a 256 KiB buffer
//!   that stays in the core's cache, so memory does not grow with file size; the result does not
//!   depend on the thread count.
//! - The library never prints: progress goes to a caller-given callback.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

/// The first path components model-signing v1.0 ignores by default.
pub const IGNORED: [&str; 4] = [".git", ".gitignore", ".gitattributes", ".github"];

/// The read buffer of one hashing thread: small enough to stay in a core's L2 cache (4 MiB
/// hashed about 15% slower in `benches/weights.rs`), large enough to need few reads.
const BUFFER_BYTES: usize = 256 * 1024;

/// One file of a manifest: its `/`-separated path relative to the model root and its sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// The path, such as `shards/part-00000.bin`.
    pub path: String,
    /// The sha256 of its contents.
    pub sha256: [u8; 32],
}

/// Orders paths component by component, as model-signing does (Python's `pathlib` order).
pub fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// Sorts a manifest into model-signing's order.
pub fn sort_manifest(files: &mut [FileDigest]) {
    files.sort_by(|a, b| path_order(&a.path, &b.path));
}

/// The root digest of a manifest already in [`sort_manifest`] order.
pub fn root_digest(files: &[FileDigest]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(file.sha256);
    }
    hasher.finalize().into()
}

/// Whether model-signing ignores the relative path `path` (its first component is ignored).
pub fn is_ignored(path: &str) -> bool {
    path.split('/')
        .next()
        .is_some_and(|first| IGNORED.contains(&first))
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Parses 64 lowercase hex digits into a digest.
pub fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (idx, slot) in out.iter_mut().enumerate() {
        let pair = text.get(idx * 2..idx * 2 + 2)?;
        if pair
            .bytes()
            .any(|byte| !matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        *slot = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// Why a folder could not be hashed.
#[derive(Debug)]
pub enum HashError {
    /// A symbolic link inside the folder; holds its relative path.
    Symlink(String),
    /// A FIFO, socket or device inside the folder; holds its relative path.
    NotRegular(String),
    /// A file name that is not UTF-8; holds it, lossily converted.
    NotUtf8(String),
    /// An IO error, with the path it happened at.
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashError::Symlink(path) => write!(
                f,
                "`{path}` is a symbolic link; model-signing refuses links, copy the file instead"
            ),
            HashError::NotRegular(path) => {
                write!(f, "`{path}` is not a regular file or folder")
            }
            HashError::NotUtf8(path) => write!(f, "`{path}` is not a UTF-8 file name"),
            HashError::Io(path, error) => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for HashError {}

/// The files model-signing would hash under `root`, with their sizes, in manifest order.
///
/// Refuses the root itself being a link, and any link below it.
pub fn list_files(root: &Path) -> Result<Vec<(String, u64)>, HashError> {
    let meta = fs::symlink_metadata(root).map_err(|error| HashError::Io(root.into(), error))?;
    if meta.file_type().is_symlink() {
        return Err(HashError::Symlink(root.display().to_string()));
    }
    let mut found = Vec::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, relative)) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|error| HashError::Io(dir.clone(), error))?;
        for entry in entries {
            let entry = entry.map_err(|error| HashError::Io(dir.clone(), error))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(HashError::NotUtf8(name.to_string_lossy().into_owned()));
            };
            let path = if relative.is_empty() {
                name.to_string()
            } else {
                format!("{relative}/{name}")
            };
            if is_ignored(&path) {
                continue;
            }
            let file_type = entry
                .file_type()
                .map_err(|error| HashError::Io(entry.path(), error))?;
            if file_type.is_symlink() {
                return Err(HashError::Symlink(path));
            } else if file_type.is_dir() {
                pending.push((entry.path(), path));
            } else if file_type.is_file() {
                let len = entry
                    .metadata()
                    .map_err(|error| HashError::Io(entry.path(), error))?
                    .len();
                found.push((path, len));
            } else {
                return Err(HashError::NotRegular(path));
            }
        }
    }
    found.sort_by(|a, b| path_order(&a.0, &b.0));
    Ok(found)
}

/// Streams one file through sha256, reporting each chunk's size to `progress`.
pub fn hash_file(
    path: &Path,
    buffer: &mut [u8],
    progress: &dyn Fn(u64),
) -> Result<[u8; 32], HashError> {
    let mut file = File::open(path).map_err(|error| HashError::Io(path.into(), error))?;
    let mut hasher = Sha256::new();
    loop {
        let read = match file.read(buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(HashError::Io(path.into(), error)),
        };
        hasher.update(buffer.get(..read).unwrap_or_default());
        progress(read as u64);
    }
    Ok(hasher.finalize().into())
}

/// Hashes every file model-signing would hash under `root`, on `threads` threads (at least one),
/// and returns the manifest in order. `progress(done, total)` is called with the bytes hashed so
/// far from the hashing threads.
pub fn hash_dir(
    root: &Path,
    threads: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<FileDigest>, HashError> {
    let files = list_files(root)?;
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    // Largest files first, so one big file started last does not leave a thread idle.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&idx| std::cmp::Reverse(files.get(idx).map_or(0, |file| file.1)));
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<Option<[u8; 32]>>> = Mutex::new(vec![None; files.len()]);
    let first_error: Mutex<Option<HashError>> = Mutex::new(None);
    let threads = threads.clamp(1, files.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buffer = vec![0u8; BUFFER_BYTES];
                let report = |read: u64| {
                    let so_far = done.fetch_add(read, Ordering::Relaxed) + read;
                    progress(so_far, total);
                };
                loop {
                    let claimed = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&idx) = order.get(claimed) else {
                        break;
                    };
                    let Some((path, _)) = files.get(idx) else {
                        break;
                    };
                    match hash_file(&root.join(path), &mut buffer, &report) {
                        Ok(digest) => {
                            if let Ok(mut results) = results.lock()
                                && let Some(slot) = results.get_mut(idx)
                            {
                                *slot = Some(digest);
                            }
                        }
                        Err(error) => {
                            if let Ok(mut first) = first_error.lock() {
                                first.get_or_insert(error);
                            }
                            // Stop the other threads early: claim everything.
                            next.store(order.len(), Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(error) = first_error.into_inner().ok().flatten() {
        return Err(error);
    }
    let results = results.into_inner().unwrap_or_default();
    let mut manifest = Vec::with_capacity(files.len());
    for ((path, _), digest) in files.into_iter().zip(results) {
        let Some(sha256) = digest else {
            return Err(HashError::Io(
                root.join(&path),
                io::Error::other("the file was not hashed"),
            ));
        };
        manifest.push(FileDigest { path, sha256 });
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture generator of `tests/fixtures/signing/make_model_dir.py`: a SHA-256 counter
    /// stream, `sha256(seed || i as 8 big-endian bytes)` for i = 0, 1, 2, …, truncated.
    pub(crate) fn stream(seed: &str, size: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(size + 32);
        let mut counter: u64 = 0;
        while out.len() < size {
            let mut hasher = Sha256::new();
            hasher.update(seed.as_bytes());
            hasher.update(counter.to_be_bytes());
            out.extend_from_slice(&hasher.finalize());
            counter += 1;
        }
        out.truncate(size);
        out
    }

    /// Writes the fixture model folder of the signing fixtures into `dir`.
    pub(crate) fn make_model_dir(dir: &Path) {
        const MIB: usize = 1024 * 1024;
        let files: [(&str, Vec<u8>); 6] = [
            (
                "model.safetensors",
                stream("model-signing-sample/model.safetensors", 50 * MIB),
            ),
            (
                "shards/part-00000.bin",
                stream("model-signing-sample/part-00000", MIB),
            ),
            ("shards.txt", b"part-00000.bin\n".to_vec()),
            (
                "config.json",
                b"{\"architectures\": [\"TinyModel\"], \"hidden_size\": 64}\n".to_vec(),
            ),
            ("empty.bin", Vec::new()),
            (
                ".gitattributes",
                b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n".to_vec(),
            ),
        ];
        for (path, contents) in files {
            let file = dir.join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, contents).unwrap();
        }
    }

    const FIXTURE_ROOT: &str = "8c9a7e39735253e1c194c92fa3ac00ef2c415375e443775f05a71e5fa4b377e9";

    #[test]
    fn the_fixture_model_folder_hashes_to_the_signed_root_digest() {
        let dir = tempfile::tempdir().unwrap();
        make_model_dir(dir.path());
        for threads in [1, 2, 7] {
            let manifest = hash_dir(dir.path(), threads, &|_, _| {}).unwrap();
            let paths: Vec<&str> = manifest.iter().map(|file| file.path.as_str()).collect();
            assert_eq!(
                paths,
                [
                    "config.json",
                    "empty.bin",
                    "model.safetensors",
                    "shards/part-00000.bin",
                    "shards.txt"
                ],
                "ordered component by component, empty file in, .gitattributes out"
            );
            assert_eq!(hex(&root_digest(&manifest)), FIXTURE_ROOT);
            assert_eq!(
                hex(&manifest.get(2).unwrap().sha256),
                "796bcad4fd7d7051076f1b30c1a448bda59a1283a0f46e58b417ad614d3a04b6"
            );
        }
    }

    #[test]
    fn paths_are_ordered_component_by_component_not_as_strings() {
        let mut paths = vec![
            "shards.txt",
            "shards/part-00000.bin",
            "a-b",
            "a/b",
            "a.b",
            "a/a/z",
        ];
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(
            paths,
            [
                "a/a/z",
                "a/b",
                "a-b",
                "a.b",
                "shards/part-00000.bin",
                "shards.txt"
            ]
        );
        // The byte order would put `shards.txt` first, since `.` < `/`.
        assert!("shards.txt" < "shards/part-00000.bin");
    }

    #[test]
    fn a_symbolic_link_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("a.bin"), b"x").unwrap();
        std::os::unix::fs::symlink("../a.bin", dir.path().join("sub/link.bin")).unwrap();
        let error = hash_dir(dir.path(), 2, &|_, _| {}).unwrap_err();
        assert!(matches!(&error, HashError::Symlink(path) if path == "sub/link.bin"));
        assert!(
            error
                .to_string()
                .contains("`sub/link.bin` is a symbolic link")
        );
    }

    #[test]
    fn git_paths_are_ignored_and_empty_files_are_included() {
        let dir = tempfile::tempdir().unwrap();
        for ignored in [
            ".git/config",
            ".github/x.yml",
            ".gitignore",
            ".gitattributes",
        ] {
            let file = dir.path().join(ignored);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, b"ignored").unwrap();
        }
        fs::write(dir.path().join("empty"), b"").unwrap();
        fs::write(dir.path().join(".gitkeep"), b"").unwrap();
        let manifest = hash_dir(dir.path(), 2, &|_, _| {}).unwrap();
        let paths: Vec<&str> = manifest.iter().map(|file| file.path.as_str()).collect();
        // `.gitkeep` is not one of the ignored names, so it counts, as in model-signing.
        assert_eq!(paths, [".gitkeep", "empty"]);
        assert_eq!(
            hex(&manifest.get(1).unwrap().sha256),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn hex_round_trips_and_refuses_uppercase_and_short_text() {
        let digest = [0xab; 32];
        assert_eq!(parse_hex(&hex(&digest)), Some(digest));
        assert_eq!(parse_hex(&hex(&digest).to_uppercase()), None);
        assert_eq!(parse_hex("ab"), None);
    }
}
