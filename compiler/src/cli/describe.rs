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
use tenantc::Compilation;

use super::error::{Exit, Fatal};
use super::output::{print_json, print_out};
use super::project::load_declarations;
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
    let loaded = load_declarations(&args.root)?;
    let compilation = tenantc::compile_loaded(&loaded);
    let show_diagnostics = || {
        if json {
            print!("{}", report::json("describe", &compilation, &[]));
        } else {
            report::human(&compilation, args.color.choice());
        }
    };
    if let Some(error) = &compilation.internal_error {
        show_diagnostics();
        return Err(Fatal::bug(error));
    }
    if compilation.has_errors() {
        show_diagnostics();
        return Ok(Exit::Errors);
    }
    let Some(plan) = &compilation.plan else {
        return Err(Fatal::bug(
            "the declarations have no error but were not resolved",
        ));
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
        show_diagnostics();
        return Ok(print_out(&tenantc::describe::human(&view)));
    }
    let mut document = tenantc::describe::json(&view)
        .map_err(|error| Fatal::bug(format!("the plan cannot be written as JSON: {error}")))?;
    with_diagnostics(&mut document, &compilation);
    Ok(print_json(&document))
}

/// Adds the envelope and the warnings of the compilation to the tenant's JSON document, as
/// `check --format json` lists them.
fn with_diagnostics(document: &mut serde_json::Value, compilation: &Compilation) {
    let report: serde_json::Value =
        serde_json::from_str(&report::json("describe", compilation, &[])).unwrap_or_default();
    if let serde_json::Value::Object(fields) = document {
        for key in [
            "tenantc",
            "kind",
            "diagnostics",
            "warnings",
            "silenced",
            "suppressed",
        ] {
            let value = report.get(key).cloned().unwrap_or_default();
            fields.insert(key.to_string(), value);
        }
    }
}
