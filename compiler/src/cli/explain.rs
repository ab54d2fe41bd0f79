//! `tenantc explain [CODE]`: the reference section of a diagnostic code, or the list of every
//! code with its stage, severities and description.
//!
//! Consumes: a code, the code registry and `docs/diagnostics.md`, compiled in. Produces: the section as Markdown
//! text or JSON on stdout.
//!
//! Invariant: reads nothing at run time; the reference is the one this binary was built with.

use tenantc::diag::Code;
use tenantc::diag::render;

use super::DescribeFormat;
use super::error::{Exit, Fatal};
use super::output::{escape, print_json, print_out};

/// The diagnostics reference, compiled in so `explain` works offline and matches this build.
const DIAGNOSTICS_DOC: &str = include_str!("../../../docs/diagnostics.md");

/// The section of `code` in the diagnostics reference, from its heading to the next one.
fn doc_section(code: &str) -> Option<&'static str> {
    let heading = format!("## `{code}`\n");
    let start = DIAGNOSTICS_DOC.find(&heading)?;
    let section = DIAGNOSTICS_DOC.get(start..)?;
    let body = section.get(heading.len()..)?;
    let end = body
        .find("\n## ")
        .map_or(section.len(), |idx| idx + heading.len() + 1);
    section.get(..end)
}

/// The severities a code is reported with, as the registry lists them (and `docs/diagnostics.md`
/// names them, a test of `diag::code` says): `error`, `warning`, or both for a code reported as
/// either (such as `file-not-regular`).
fn severities(code: Code) -> Vec<&'static str> {
    code.severities()
        .iter()
        .map(|severity| severity.as_str())
        .collect()
}

/// Runs `tenantc explain`.
pub fn run(code: Option<&str>, format: DescribeFormat) -> Result<Exit, Fatal> {
    let json = format == DescribeFormat::Json;
    let entry = |code: &Code| {
        serde_json::json!({
            "code": code.as_str(),
            "stage": code.stage(),
            "severities": severities(*code),
            "description": code.description(),
        })
    };
    let Some(wanted) = code else {
        if json {
            let codes: Vec<serde_json::Value> = Code::ALL.iter().map(entry).collect();
            return Ok(print_json(&serde_json::json!({
                "tenantc": render::JSON_ENVELOPE_VERSION,
                "kind": "explain",
                "codes": codes,
            })));
        }
        let mut text = format!(
            "{:<36} {:<10} {:<13} {}\n",
            "CODE", "STAGE", "SEVERITY", "DESCRIPTION"
        );
        for code in Code::ALL {
            text.push_str(&format!(
                "{:<36} {:<10} {:<13} {}\n",
                code.as_str(),
                code.stage(),
                severities(*code).join("|"),
                code.description()
            ));
        }
        return Ok(print_out(&text));
    };
    let found = Code::ALL.iter().find(|code| code.as_str() == wanted);
    let (Some(code), Some(section)) = (found, doc_section(wanted)) else {
        let names = Code::ALL.iter().map(|code| code.as_str());
        let hint = tenantc::diag::did_you_mean(wanted, names)
            .map(|close| format!("; did you mean `{close}`?"))
            .unwrap_or_default();
        return Err(Fatal::new(format!(
            "`{}` is not a diagnostic code{hint}",
            escape(wanted)
        ))
        .with_help("`tenantc explain` lists every code"));
    };
    if json {
        let mut document = entry(code);
        if let serde_json::Value::Object(fields) = &mut document {
            fields.insert("tenantc".into(), render::JSON_ENVELOPE_VERSION.into());
            fields.insert("kind".into(), "explain".into());
            fields.insert("section".into(), section.into());
        }
        return Ok(print_json(&document));
    }
    Ok(print_out(section))
}
