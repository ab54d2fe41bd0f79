//! Resource limits: how much of anything the compiler accepts from untrusted input.
//!
//! Consumes: nothing. Produces: the constants every stage checks its input against.
//!
//! Invariant: every limit is here, as data, and hitting one is a located diagnostic with a
//! code documented in `docs/diagnostics.md` (never a crash, a hang or unbounded memory).
//! `docs/security.md` lists them with the reasons for each value.

/// The largest declaration file read, in bytes; a larger file is refused unread.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How deep folders (and links to folders) may nest under `tenants/` and `cells/`.
pub const MAX_FOLDER_DEPTH: usize = 16;

/// The longest file or folder name accepted under `tenants/` and `cells/`, in bytes; names are
/// copied into the headers of generated files.
pub const MAX_NAME_BYTES: usize = 128;

/// How deep KDL children blocks or YAML lists and mappings may nest.
pub const MAX_NESTING: usize = 64;

/// How many diagnostics of one code are shown per file; the rest are counted in one note.
pub const MAX_DIAGNOSTICS_PER_CODE_PER_FILE: usize = 50;

/// How many diagnostics are shown per file in all; the rest are counted in one note.
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 200;

/// How many diagnostics are shown per run in all, after the caps per file; the rest are counted
/// in one note.
pub const MAX_DIAGNOSTICS_PER_RUN: usize = 1000;

/// How many search steps one MIG layout's placement may take before it is reported as too
/// complex to prove placeable.
pub const MAX_PLACEMENT_STEPS: u64 = 1_000_000;
