//! The lock file of a tenant's model weights, `weights/<tenant>.lock`.
//!
//! Consumes: the bytes of a lock file (JSON), or entries to write into one.
//! Produces: a [`LockFile`], or its canonical bytes.
//!
//! Invariants:
//! - Reading refuses a key written twice in any object (`crate::json_strict`), unknown fields,
//!   an unsupported `version`, a hashing method other than `files` with `sha256`, malformed
//!   digests, unsafe paths, duplicate entries and file lists that are not in model-signing's
//!   order, so a lock means exactly one thing.
//! - Writing is canonical: entries sorted by model name and version, files in model-signing's
//!   order, two-space JSON with a final newline; writing what was read gives the same bytes.

use serde::{Deserialize, Serialize};

use super::digest::{FileDigest, hex, parse_hex, path_order};
use crate::json_strict;

/// The lock format version this build reads and writes.
pub const LOCK_VERSION: u32 = 1;

/// A tenant's lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// Always [`LOCK_VERSION`].
    pub version: u32,
    /// One entry per model version, sorted by name and version.
    pub models: Vec<LockedModel>,
}

/// One locked model version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedModel {
    /// The model name, as declared.
    pub name: String,
    /// The version, as declared.
    pub version: String,
    /// The object-storage prefix, as declared when it was locked.
    pub prefix: String,
    /// `sha256:<root>`: the model-signing root digest of `files`.
    pub digest: String,
    /// How the digest was computed.
    pub hashing: Hashing,
    /// Every file of the model and its sha256, in model-signing's order.
    pub files: Vec<LockedFile>,
    /// The signature that covers the digest.
    pub signature: LockedSignature,
}

/// A hashing method; only `files` with `sha256` exists today.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hashing {
    /// `files`: one digest per file.
    pub method: String,
    /// `sha256`.
    pub hash: String,
}

impl Hashing {
    /// The one supported method.
    pub fn files_sha256() -> Self {
        Hashing {
            method: "files".to_string(),
            hash: "sha256".to_string(),
        }
    }
}

/// One file of a locked model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedFile {
    /// Relative `/`-separated path inside the model.
    pub path: String,
    /// Lowercase hex sha256.
    pub sha256: String,
}

/// The signature file of a locked model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedSignature {
    /// `model-signing` (a sigstore bundle of a model-signing statement) or `cosign-blob` (a
    /// detached signature over the model's digest line).
    pub format: String,
    /// The signature file, relative to the repository root, under `weights/`.
    pub path: String,
    /// Lowercase hex sha256 of the signature file.
    pub sha256: String,
}

/// The signature formats a lock may name.
pub const FORMATS: [&str; 2] = ["cosign-blob", "model-signing"];

impl LockedModel {
    /// The manifest as digests, or the first malformed entry.
    pub fn manifest(&self) -> Result<Vec<FileDigest>, String> {
        self.files
            .iter()
            .map(|file| {
                parse_hex(&file.sha256)
                    .map(|sha256| FileDigest {
                        path: file.path.clone(),
                        sha256,
                    })
                    .ok_or_else(|| format!("the sha256 of `{}` is not 64 hex digits", file.path))
            })
            .collect()
    }

    /// The root digest it records.
    pub fn root(&self) -> Option<[u8; 32]> {
        self.digest.strip_prefix("sha256:").and_then(parse_hex)
    }
}

/// Whether a manifest path is a plain relative path: `/`-separated non-empty components, none
/// `.` or `..`, no backslash or control character.
pub fn manifest_path_ok(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !path.chars().any(|ch| ch == '\\' || ch.is_control())
}

/// Reads a lock file, refusing anything that is not canonical in meaning.
pub fn read(bytes: &[u8]) -> Result<LockFile, String> {
    let lock: LockFile = json_strict::from_slice(bytes, json_strict::Root::file("lock"))
        .map_err(|error| error.reason(|error| format!("it is not a lock file: {error}")))?;
    if lock.version != LOCK_VERSION {
        return Err(format!(
            "it has version {}; this tenantc reads version {LOCK_VERSION}",
            lock.version
        ));
    }
    for pair in lock.models.windows(2) {
        if let [a, b] = pair
            && (a.name.as_str(), a.version.as_str()) >= (b.name.as_str(), b.version.as_str())
        {
            return Err(format!(
                "entries `{} {}` and `{} {}` are duplicated or out of order",
                a.name, a.version, b.name, b.version
            ));
        }
    }
    for model in &lock.models {
        let what = format!("entry `{} {}`", model.name, model.version);
        if model.hashing != Hashing::files_sha256() {
            return Err(format!(
                "{what} is hashed with method `{}` and hash `{}`; only `files` with `sha256` is supported",
                model.hashing.method, model.hashing.hash
            ));
        }
        if model.root().is_none() {
            return Err(format!(
                "{what} has a digest that is not `sha256:<64 hex digits>`"
            ));
        }
        model
            .manifest()
            .map_err(|error| format!("{what}: {error}"))?;
        if let Some(path) = model
            .files
            .iter()
            .find(|file| !manifest_path_ok(&file.path))
        {
            return Err(format!("{what} lists `{}`, not a relative path", path.path));
        }
        for pair in model.files.windows(2) {
            if let [a, b] = pair
                && path_order(&a.path, &b.path) != std::cmp::Ordering::Less
            {
                return Err(format!(
                    "{what} lists `{}` and `{}` duplicated or out of order",
                    a.path, b.path
                ));
            }
        }
        if !FORMATS.contains(&model.signature.format.as_str()) {
            return Err(format!(
                "{what} has signature format `{}`; it is `model-signing` or `cosign-blob`",
                model.signature.format
            ));
        }
        if !model
            .signature
            .path
            .strip_prefix("weights/")
            .is_some_and(manifest_path_ok)
        {
            return Err(format!(
                "{what} names signature `{}`, which is not a path under `weights/`",
                model.signature.path
            ));
        }
        if parse_hex(&model.signature.sha256).is_none() {
            return Err(format!(
                "{what} has a signature sha256 that is not 64 hex digits"
            ));
        }
    }
    Ok(lock)
}

/// The canonical bytes of a lock file: entries sorted, two-space JSON, final newline.
pub fn write(lock: &LockFile) -> Vec<u8> {
    let mut lock = lock.clone();
    lock.models
        .sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    for model in &mut lock.models {
        model.files.sort_by(|a, b| path_order(&a.path, &b.path));
    }
    let mut bytes = serde_json::to_vec_pretty(&lock).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Puts `entry` into `lock`, replacing the entry of the same name and version.
pub fn upsert(lock: &mut LockFile, entry: LockedModel) {
    lock.models
        .retain(|model| (&model.name, &model.version) != (&entry.name, &entry.version));
    lock.models.push(entry);
    lock.models
        .sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
}

/// The lock entries of a manifest.
pub fn locked_files(manifest: &[FileDigest]) -> Vec<LockedFile> {
    manifest
        .iter()
        .map(|file| LockedFile {
            path: file.path.clone(),
            sha256: hex(&file.sha256),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, version: &str) -> LockedModel {
        LockedModel {
            name: name.to_string(),
            version: version.to_string(),
            prefix: "s3://b/m/".to_string(),
            digest: format!("sha256:{}", "00".repeat(32)),
            hashing: Hashing::files_sha256(),
            files: vec![
                LockedFile {
                    path: "shards.txt".to_string(),
                    sha256: "11".repeat(32),
                },
                LockedFile {
                    path: "shards/a.bin".to_string(),
                    sha256: "22".repeat(32),
                },
            ],
            signature: LockedSignature {
                format: "model-signing".to_string(),
                path: "weights/t/m.sig.json".to_string(),
                sha256: "33".repeat(32),
            },
        }
    }

    #[test]
    fn writing_sorts_and_reading_back_gives_the_same_bytes() {
        let mut lock = LockFile {
            version: LOCK_VERSION,
            models: vec![],
        };
        upsert(&mut lock, entry("b", "1"));
        upsert(&mut lock, entry("a", "2"));
        upsert(&mut lock, entry("a", "1"));
        upsert(&mut lock, entry("a", "2"));
        let bytes = write(&lock);
        let read_back = read(&bytes).unwrap();
        let names: Vec<_> = read_back
            .models
            .iter()
            .map(|model| format!("{} {}", model.name, model.version))
            .collect();
        assert_eq!(names, ["a 1", "a 2", "b 1"]);
        let files: Vec<_> = read_back.models[0]
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(files, ["shards/a.bin", "shards.txt"]);
        assert_eq!(write(&read_back), bytes);
        assert!(bytes.ends_with(b"}\n"));
    }

    #[test]
    fn reading_refuses_what_could_mean_two_things() {
        let good = LockFile {
            version: LOCK_VERSION,
            models: vec![entry("a", "1")],
        };
        let text = String::from_utf8(write(&good)).unwrap();
        for (from, to, reason) in [
            ("\"version\": 1", "\"version\": 2", "version 2"),
            (
                "\"method\": \"files\"",
                "\"method\": \"shards\"",
                "method `shards`",
            ),
            (
                "\"path\": \"shards.txt\"",
                "\"path\": \"../x\"",
                "not a relative path",
            ),
            (
                "\"path\": \"shards.txt\"",
                "\"path\": \"shards/a.bin\"",
                "out of order",
            ),
            (
                "\"format\": \"model-signing\"",
                "\"format\": \"gpg\"",
                "format `gpg`",
            ),
            (
                "weights/t/m.sig.json",
                "keys/t/m.sig.json",
                "not a path under `weights/`",
            ),
            (
                "\"name\": \"a\"",
                "\"name\": \"a\", \"extra\": 1",
                "unknown field",
            ),
            ("sha256:00", "sha512:00", "digest"),
        ] {
            let changed = text.replacen(from, to, 1);
            assert_ne!(changed, text, "{from}");
            let error = read(changed.as_bytes()).unwrap_err();
            assert!(error.contains(reason), "{error} should say {reason}");
        }
        let duplicated = LockFile {
            version: LOCK_VERSION,
            models: vec![entry("a", "1"), entry("a", "1")],
        };
        let bytes = serde_json::to_vec(&duplicated).unwrap();
        assert!(read(&bytes).unwrap_err().contains("duplicated"));
    }
}
