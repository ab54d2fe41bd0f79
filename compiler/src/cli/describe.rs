//! `tenantc describe <tenant>`: compile like `check`, then print what one tenant gets per cell.
//!
//! Consumes: [`DescribeArgs`] and the declarations under the root. Produces: `describe.rs`'s view
//! of the tenant in the plan, as text or JSON on stdout; the diagnostics of the compilation on
//! stderr (text) or inside the document (JSON).
//!
//! Invariant: reads the plan, never the emitted YAML; nothing is described when any declaration
//! has an error (exit 1).

use std::path::PathBuf;

use clap::Args;

use super::error::{Exit, Fatal};
use super::output::{print_json, print_out};
use super::project::{PlanReader, unresolved};
use super::{ColorArg, DescribeFormat, report};

/// The arguments of `tenantc describe`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The tenant, as named in its declaration.
    pub tenant: String,
    /// Describe the tenant in this cell only.
    #[arg(long, value_name = "CELL")]
    pub cell: Option<String>,
    /// Project root holding tenants/ and cells/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// How to print the description.
    #[arg(long, value_enum, default_value_t = DescribeFormat::Human)]
    pub format: DescribeFormat,
    /// When to colour diagnostics.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
}

/// Runs `tenantc describe`.
pub fn run(args: &DescribeArgs) -> Result<Exit, Fatal> {
    let json = args.format == DescribeFormat::Json;
    let reader = PlanReader {
        kind: "describe",
        json,
        color: args.color.choice(),
    };
    let Some(compilation) = reader.compile(&args.root)? else {
        return Ok(Exit::Errors);
    };
    let Some(plan) = &compilation.plan else {
        return Err(unresolved());
    };
    let declared: Vec<&str> = compilation
        .fleet
        .tenants
        .iter()
        .map(|tenant| tenant.name.value.as_str())
        .collect();
    let view = tenantc::describe::lookup(plan, &declared, &args.tenant, args.cell.as_deref())
        .map_err(|error| Fatal::new(error.message()).with_help(error.help()))?;
    if !json {
        // Warnings still reach the user, on stderr.
        reader.show(&compilation);
        return Ok(print_out(&tenantc::describe::human(&view)));
    }
    let mut document = tenantc::describe::json(&view)
        .map_err(|error| Fatal::bug(format!("the plan cannot be written as JSON: {error}")))?;
    report::add_envelope(&mut document, "describe", &compilation);
    Ok(print_json(&document))
}
