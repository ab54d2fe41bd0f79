//! `tenantc build`: compile the declarations and make the output folder hold exactly the result.
//!
//! Consumes: [`CommonArgs`]. Produces: `out/` written through `emit::fs` (only the files whose
//! bytes change, each cell's staged as soon as it is compiled, committed once the whole
//! compilation succeeded), the report of the compilation, and what was written.
//!
//! Invariant: the lock of `out/` is taken, and an interrupted write finished or undone, before
//! anything is compiled; nothing is written when any declaration has an error.

use std::path::Path;

use tenantc::emit::fs::{self as out_fs, Change};

use super::error::{Exit, Fatal};
use super::project::{self, CommonArgs, Mode, Project, files, note_waiting, print_report};

/// Runs `tenantc build`.
pub fn run(args: &CommonArgs) -> Result<Exit, Fatal> {
    let mut project = Project::open(args)?;
    let out_dir = &project.out_dir.clone();
    let cannot_write =
        |error: std::io::Error| Fatal::new(format!("cannot write {}: {error}", out_dir.display()));
    // A build first takes the lock of out/ and finishes or undoes an interrupted write, before
    // anything else touches it.
    let mut writer =
        out_fs::Writer::open(out_dir, test_faults(), note_waiting).map_err(cannot_write)?;
    notice_recovery(args, out_dir, &writer);
    // Each cell's files are staged in out/ as temporary files as soon as they are compiled, so
    // the output tree is never held whole; the write commits only after the whole compilation.
    let staging = writer.begin();
    let compilation = project.compile_into(&staging);
    let rest = match project::output_of(args, Mode::Build, &compilation) {
        Ok(Some(rest)) => rest,
        outcome => {
            staging.abandon();
            return outcome.map(|_| Exit::Errors);
        }
    };
    let total = staging.files() + rest.len();
    match staging.finish(rest) {
        Ok(changes) => {
            print_report(args, Mode::Build, &compilation, &[]);
            if args.human() {
                eprintln!("{}", written(out_dir, total, &changes));
            }
            Ok(Exit::Success)
        }
        Err(error) => {
            // Warnings of the compilation still reach the user.
            if args.human() {
                print_report(args, Mode::Build, &compilation, &[]);
            }
            Err(cannot_write(error))
        }
    }
}

/// What a build wrote: the files it wrote and removed, never the files it left as they were.
fn written(out_dir: &Path, total: usize, changes: &[Change]) -> String {
    let removed = changes
        .iter()
        .filter(|change| matches!(change, Change::Extra(_)))
        .count();
    let wrote = changes.len().saturating_sub(removed);
    if changes.is_empty() {
        return format!(
            "{} is up to date ({}); nothing written",
            out_dir.display(),
            files(total)
        );
    }
    let mut parts = Vec::new();
    if total > wrote {
        parts.push(format!("{} unchanged", total.saturating_sub(wrote)));
    }
    if removed > 0 {
        parts.push(format!("{removed} removed"));
    }
    let detail = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    format!("wrote {} to {}{detail}", files(wrote), out_dir.display())
}

/// Test-only fault injection: `TENANTC_TEST_CRASH_AFTER=N` aborts the process after N
/// filesystem operations of writing out/, and `TENANTC_TEST_FAIL_AFTER=N` makes the next one fail.
/// `tests/crash.rs` uses them to stop a real build at every step; never set them otherwise.
fn test_faults() -> out_fs::Faults {
    // Only builds with debug assertions (the ones `cargo test` runs) read the hooks: a release
    // binary in CI cannot be made to crash or fail on purpose by its environment.
    let number = |name: &str| {
        if !cfg!(debug_assertions) {
            return None;
        }
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
    };
    out_fs::Faults {
        crash_after: number("TENANTC_TEST_CRASH_AFTER"),
        fail_after: number("TENANTC_TEST_FAIL_AFTER"),
    }
}

/// Says what opening out/ repaired, and which leftovers of older versions lie beside it.
fn notice_recovery(args: &CommonArgs, out_dir: &Path, writer: &out_fs::Writer) {
    if !args.human() {
        return;
    }
    match writer.recovery() {
        out_fs::Recovery::Clean => {}
        out_fs::Recovery::RolledForward => eprintln!(
            "note: finished the interrupted write of an earlier build in {}",
            out_dir.display()
        ),
        out_fs::Recovery::RolledBack => eprintln!(
            "note: removed the temporary files of an interrupted build from {}",
            out_dir.display()
        ),
    }
    for leftover in writer.leftovers() {
        eprintln!(
            "warning: {} was left by an interrupted build of an older tenantc; nothing uses it, remove it with `rm -rf`",
            leftover.display()
        );
    }
}
