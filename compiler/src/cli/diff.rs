//! `tenantc diff --base <revision>`: what a change does to each tenant and cell.
//!
//! Consumes: [`DiffArgs`], the declarations of a git revision (read by `git.rs`) and of the work
//! tree. Produces: `review/diff.rs`'s changes between the two plans as Markdown or JSON, or a
//! bounded unified diff of the two output trees, on stdout.
//!
//! Invariant: both sides are compiled by this tenantc, and a side that does not compile prints
//! its diagnostics and exits 1; the work tree, the index and the refs are never written.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tenantc::review::{self, diff as review_diff};

use super::error::{Exit, Fatal};
use super::output::print_out;
use super::project::load_declarations;
use super::{ColorArg, report};

/// The `--format` of `tenantc diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Markdown, for a pull-request comment.
    Markdown,
    /// One JSON document.
    Json,
    /// A unified diff of the output trees (bounded).
    Files,
}

/// The arguments of `tenantc diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The git revision to compare the work tree with, such as `origin/main`.
    #[arg(long, value_name = "REV")]
    pub base: String,
    /// Project root holding tenants/ and cells/, inside a git work tree.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// How to print the diff.
    #[arg(long, value_enum, default_value_t = DiffFormat::Markdown)]
    pub format: DiffFormat,
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
}

/// Runs `tenantc diff`: compiles the base revision and the work tree and prints what changed.
pub fn run(args: &DiffArgs) -> Result<Exit, Fatal> {
    let json = args.format == DiffFormat::Json;
    let (commit, base_loaded) = tenantc::git::load_revision(&args.root, &args.base)
        .map_err(|error| Fatal::new(error.message()).with_help(error.help()))?;
    let head_loaded = load_declarations(&args.root)?;
    let short: String = commit.chars().take(12).collect();
    let base_name = format!("{} ({short})", args.base);
    let mut sides = Vec::new();
    for (side, loaded) in [
        (format!("base {base_name}"), &base_loaded),
        ("the work tree".to_string(), &head_loaded),
    ] {
        let compilation = tenantc::compile_loaded(loaded);
        if let Some(error) = &compilation.internal_error {
            return Err(Fatal::bug(format!("{side}: {error}")));
        }
        if compilation.has_errors() {
            eprintln!("error: {side} does not compile; its diagnostics follow");
            if json {
                print!("{}", report::json("diff", &compilation, &[]));
            }
            eprint!(
                "{}",
                tenantc::diag::render::human(
                    &compilation.diagnostics,
                    &compilation.sources,
                    args.color.choice()
                )
            );
            eprintln!(
                "{} in {side}",
                tenantc::diag::render::summary(&compilation.diagnostics)
            );
            return Ok(Exit::Errors);
        }
        sides.push(compilation);
    }
    let (Some(base), Some(head)) = (sides.first(), sides.get(1)) else {
        return Err(Fatal::bug("a side was not compiled"));
    };
    let text = match args.format {
        DiffFormat::Files => {
            let empty = tenantc::emit::OutputTree::new();
            review_diff::files(
                base.output.as_ref().unwrap_or(&empty),
                head.output.as_ref().unwrap_or(&empty),
            )
        }
        DiffFormat::Markdown | DiffFormat::Json => {
            let (Some(base_plan), Some(head_plan)) = (&base.plan, &head.plan) else {
                return Err(Fatal::bug(
                    "the declarations have no error but were not resolved",
                ));
            };
            let changes = review_diff::diff(
                &review::review(base_plan),
                &review::review(head_plan),
                &base_name,
                "work tree",
            );
            if json {
                review_diff::json(&changes).map_err(|error| {
                    Fatal::bug(format!("the diff cannot be written as JSON: {error}"))
                })?
            } else {
                review_diff::markdown(&changes)
            }
        }
    };
    Ok(print_out(&text))
}
