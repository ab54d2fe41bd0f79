//! The diagnostics of a compilation, as every command that compiles prints them.
//!
//! Consumes: a [`Compilation`]. Produces: the rendered diagnostics with their summary line on
//! stderr ([`human`]), or the JSON report of `docs/json.md` ([`json`]) for the command to print.

use tenantc::Compilation;
use tenantc::diag::render::{self, Color};

/// Prints the diagnostics for people on stderr, then, when there are any (or any were
/// silenced by an `allow`), the summary line that points at `tenantc explain`.
pub fn human(compilation: &Compilation, color: Color) {
    let text = render::human(&compilation.diagnostics, &compilation.sources, color);
    eprint!("{text}");
    if !compilation.diagnostics.is_empty() || !compilation.suppressed.is_empty() {
        eprintln!(
            "{}; `tenantc explain <code>` tells more about a code",
            render::summary_with_silenced(&compilation.diagnostics, compilation.suppressed.len())
        );
    }
}

/// The JSON report of the diagnostics, a document of kind `kind` (`build`, `check`,
/// `describe`, `diff`), with `check`'s stale files as `(path, change)` pairs.
pub fn json(kind: &str, compilation: &Compilation, stale: &[(String, String)]) -> String {
    render::json_report(
        kind,
        &compilation.diagnostics,
        &compilation.suppressed,
        &compilation.sources,
        stale,
    )
}
