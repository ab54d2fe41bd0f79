//! `tenantc what-if`: compile like `check`, then say what tenants lose if the platform drains
//! nodes, loses a cell or removes a MIG layout, without editing a declaration.
//!
//! Consumes: [`WhatIfArgs`] and the declarations under the root. Produces: `what_if`'s result
//! as text or JSON on stdout; the diagnostics of the compilation on stderr (text) or inside the
//! document (JSON).
//!
//! Invariants: reads the plan, never the emitted YAML; exit 0 when every reservation is still
//! backed, 1 when one is not (or the declarations have errors), 2 for a change that names
//! nothing declared or cannot be made (usage).

use std::path::PathBuf;

use clap::Args;
use tenantc::what_if::{self, Change};

use super::error::{Exit, Fatal};
use super::output::{print_json, print_out};
use super::project::{PlanReader, unresolved};
use super::{ColorArg, DescribeFormat, report};

/// The arguments of `tenantc what-if`.
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("change")
        .required(true)
        .multiple(true)
        .args(["drain", "lose_cell", "remove_layout"])
))]
pub struct WhatIfArgs {
    /// Drain nodes of a pool: `<cell>/<pool>=<nodes>`, `<cell>/<pool>/<layout>=<nodes>` for a
    /// MIG pool of several layouts, or `<cell>/<pool>@<level>[=<domains>]` for whole domains of
    /// a topology level (its label, or the label's last part, such as `rack`). Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub drain: Vec<String>,
    /// Lose every node of a cell. Repeatable.
    #[arg(long, value_name = "CELL")]
    pub lose_cell: Vec<String>,
    /// Remove a MIG layout, `<cell>/<pool>/<layout>`: its nodes offer none of its profiles.
    /// Repeatable.
    #[arg(long, value_name = "CELL/POOL/LAYOUT")]
    pub remove_layout: Vec<String>,
    /// Project root holding tenants/ and cells/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// How to print the answer.
    #[arg(long, value_enum, default_value_t = DescribeFormat::Human)]
    pub format: DescribeFormat,
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
}

/// Runs `tenantc what-if`.
pub fn run(args: &WhatIfArgs) -> Result<Exit, Fatal> {
    let json = args.format == DescribeFormat::Json;
    // The changes are read before anything is compiled, so a malformed one is a usage error
    // whatever the declarations say.
    let mut changes = Vec::new();
    for text in &args.drain {
        changes.push(Change::Drain(
            what_if::parse_drain(text).map_err(spec_fatal)?,
        ));
    }
    changes.extend(args.lose_cell.iter().cloned().map(Change::LoseCell));
    for text in &args.remove_layout {
        changes.push(what_if::parse_remove_layout(text).map_err(spec_fatal)?);
    }
    let reader = PlanReader {
        kind: "what-if",
        json,
        color: args.color.choice(),
    };
    let Some(compilation) = reader.compile(&args.root)? else {
        return Ok(Exit::Errors);
    };
    let Some(plan) = &compilation.plan else {
        return Err(unresolved());
    };
    let result = what_if::query(plan, &compilation.fleet, &changes).map_err(spec_fatal)?;
    let exit = if result.backed {
        Exit::Success
    } else {
        Exit::Errors
    };
    if !json {
        reader.show(&compilation);
        print_out(&what_if::human(&result));
        return Ok(exit);
    }
    let mut document = serde_json::to_value(&result)
        .map_err(|error| Fatal::bug(format!("the answer cannot be written as JSON: {error}")))?;
    report::add_envelope(&mut document, "what-if", &compilation);
    print_json(&document);
    Ok(exit)
}

fn spec_fatal(error: what_if::SpecError) -> Fatal {
    Fatal::new(error.message).with_help(error.help)
}
