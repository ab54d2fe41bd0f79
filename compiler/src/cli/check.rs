//! `tenantc check`: compile the declarations in memory and compare the result with `out/`.
//!
//! Consumes: [`CommonArgs`]. Produces: the report of the compilation and, when `out/` differs
//! from what `build` would write, the changed, missing and extra files with a bounded diff of
//! each changed one; exit 1 for errors or a stale `out/`.
//!
//! Invariant: never writes; it reads `out/` under a shared lock, taken before compiling (each
//! cell's files are compared as soon as they are compiled), so it never sees a build's write
//! half applied.

use std::path::Path;

use tenantc::emit::OutputTree;
use tenantc::emit::fs::{self as out_fs, Change};

use super::error::{Exit, Fatal};
use super::project::{
    self, CommonArgs, Mode, Project, change_word, files, note_waiting, print_report,
};

/// Runs `tenantc check`.
pub fn run(args: &CommonArgs) -> Result<Exit, Fatal> {
    let mut project = Project::open(args)?;
    let out_dir = &project.out_dir.clone();
    let cannot_read =
        |error: std::io::Error| Fatal::new(format!("cannot read {}: {error}", out_dir.display()));
    // Each cell's files are compared with out/ as soon as they are compiled, and dropped, so the
    // output tree is never held whole. A folder that cannot be compared (an interrupted write)
    // is reported after the compilation, whose findings come first.
    let comparing = out_fs::comparing(out_dir, STALE_DIFF_LINES, note_waiting);
    let compilation = match &comparing {
        Ok(comparing) => project.compile_into(comparing),
        Err(_) => project.compile(),
    };
    let Some(rest) = project::output_of(args, Mode::Check, &compilation)? else {
        return Ok(Exit::Errors);
    };
    let comparing = comparing.map_err(cannot_read)?;
    // Only the changed files a diff can show are kept: each shows at least one line of the
    // budget.
    let total = comparing.files() + rest.len();
    let out_fs::Comparison {
        changes,
        current,
        built,
    } = comparing.finish(rest).map_err(cannot_read)?;
    print_report(args, Mode::Check, &compilation, &changes);
    if changes.is_empty() {
        if args.human() {
            eprintln!("{} is up to date ({})", out_dir.display(), files(total));
        }
        Ok(Exit::Success)
    } else {
        if args.human() {
            print_stale(out_dir, &changes, &built, &current);
        }
        Ok(Exit::Errors)
    }
}

/// Diff lines shown per changed file, and in all, before the rest is only counted.
const STALE_DIFF_LINES_PER_FILE: usize = 40;
const STALE_DIFF_LINES: usize = 200;

/// Lists on stderr how `out/` differs from what the build writes, with a bounded unified diff of
/// each changed file and the next step.
fn print_stale(out_dir: &Path, changes: &[Change], built: &OutputTree, current: &OutputTree) {
    eprintln!(
        "error[out-stale]: {} differs from what `tenantc build` writes ({})",
        out_dir.display(),
        files(changes.len())
    );
    for change in changes {
        eprintln!("  {:<8} {}", change_word(change), change.path());
    }
    // What changed inside each changed file, bounded, so a reviewer sees whether the committed
    // output was edited by hand or simply not rebuilt.
    let mut budget = STALE_DIFF_LINES;
    for change in changes {
        let Change::Changed(path) = change else {
            continue;
        };
        // Only the first changed files are kept, at most one per line of the budget.
        if budget == 0 || !built.contains_key(path) {
            eprintln!("  … more changed files; run `tenantc build` and `git diff` to see all");
            break;
        }
        let text = |tree: &OutputTree| {
            tree.get(path)
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default()
        };
        let diff = tenantc::emit::diff::unified(
            &text(current),
            &text(built),
            STALE_DIFF_LINES_PER_FILE.min(budget),
        );
        eprintln!("  --- {}/{path} (in out/)", out_dir.display());
        eprintln!("  +++ {}/{path} (as built)", out_dir.display());
        for line in diff.lines() {
            // The committed out/ is as untrusted as the declarations: escaped, a file cannot fake
            // lines of a CI log or drive the reviewer's terminal.
            eprintln!("  {}", tenantc::diag::printable(line.to_string()));
        }
        budget = budget.saturating_sub(diff.lines().count());
    }
    eprintln!("  = help: run `tenantc build` and commit the result; never edit out/ by hand");
}
