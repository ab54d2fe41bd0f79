//! tenantc: a build-time compiler for multi-tenant GPU fleets.
//!
//! Consumes: tenant and cell declarations (KDL v2 or YAML) as in-memory files.
//! Produces: a [`Compilation`]: every diagnostic of the run, sorted, and, when there is no error,
//! the output tree of per-cell Kubernetes manifests.
//!
//! The pipeline is `load` (disk, in the binary; [`compile_loaded`] takes its result) → [`parse`] → [`schema`] → [`validate`] →
//! [`lower`] → [`emit`] → the storage IAM audit of `validate/audit.rs`; see `ARCHITECTURE.md` for the stage map and invariants.
//!
//! Invariant: [`compile`] is pure: no IO, no clock, no environment; the same inputs give the
//! same bytes.

pub mod catalog;
pub mod describe;
pub mod diag;
pub mod emit;
pub mod escape;
pub mod facts;
pub mod git;
pub mod hardware;
pub mod json_strict;
pub mod keyless;
pub mod kube;
pub mod layout;
pub mod limits;
pub mod load;
pub mod lower;
pub mod model;
pub mod names;
pub mod parse;
pub mod plan;
pub mod policy;
pub mod quantity;
pub mod report;
pub mod review;
pub mod schema;
pub mod source;
pub mod template;
#[cfg(test)]
mod testing;
pub mod validate;
pub mod weights;

pub use layout::classify;
pub use load::InputFile;

use diag::{Code, Diagnostic};
use emit::OutputTree;
use layout::DeclKind;
use source::{SourceMap, Span};

/// The result of one compilation.
#[derive(Debug, Clone)]
pub struct Compilation {
    /// Every input file, for rendering diagnostics.
    pub sources: SourceMap,
    /// Every finding, sorted by file, position and code, at most as many per file as
    /// `limits.rs` allows; a `diagnostics-truncated` diagnostic after a file's last one counts
    /// the rest (see [`diag::truncate`]).
    pub diagnostics: Vec<Diagnostic>,
    /// The warnings an `allow` of the declarations silenced, in the order of `diagnostics`,
    /// each with its reason (see [`diag::allow`]).
    pub suppressed: Vec<diag::allow::Suppressed>,
    /// The resolved plan, present when the declarations validated (even if the plan's own
    /// checks then found errors).
    pub plan: Option<plan::Plan>,
    /// The validated declarations the plan was resolved from (what the storage IAM audit
    /// locates its findings at).
    pub fleet: model::Fleet,
    /// The output tree, present only when no diagnostic is an error.
    pub output: Option<OutputTree>,
    /// A broken invariant of the compiler itself (a bug, not a user mistake).
    pub internal_error: Option<String>,
}

impl Compilation {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The file name of a path without folders and extension.
fn file_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map_or(name, |(stem, _)| stem)
        .to_string()
}

/// The declaration of tenant `name` among `inputs`, if a tenant file declares it readably
/// (for `tenantc weights lock`, which needs the model's version, prefix and signer).
pub fn read_tenant(inputs: &[InputFile], name: &str) -> Option<model::Tenant> {
    let mut sources = SourceMap::new();
    for input in inputs {
        let Some((DeclKind::Tenant, Some(format))) = classify(&input.path) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&input.contents) else {
            continue;
        };
        let file = sources.add(input.path.clone(), text.to_string());
        let text = sources.get(file).map(|f| f.text.as_str()).unwrap_or("");
        let (mut document, _) = parse::parse(file, text, format);
        let _ = diag::allow::extract(&mut document);
        if let (Some(schema::Declaration::Tenant(tenant)), _) =
            schema::read(&document, DeclKind::Tenant, &sources)
            && tenant.name.value == name
        {
            return Some(*tenant);
        }
    }
    None
}

/// Compiles the given files.
///
/// A path with a name that [`load::name_problem`] refuses is reported as `path-unsafe` and the
/// file is not compiled, so only safe paths reach the output.
pub fn compile(inputs: &[InputFile]) -> Compilation {
    compile_with_findings(inputs, &[])
}

/// Compiles what [`load::load`] found: its files, and its findings about the files and folders
/// it refused, each as a diagnostic located at the refused path.
pub fn compile_loaded(loaded: &load::Loaded) -> Compilation {
    compile_with_findings(&loaded.inputs, &loaded.findings)
}

/// Reports a file that is not compiled; a refused cell or tenant file marks its declaration
/// unreadable, so references to it are not reported again as unknown.
fn refuse(
    finding: &load::Finding,
    sources: &mut SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
    unreadable: &mut validate::Unreadable,
) {
    // A refused file keeps no text: nothing of its contents can be printed.
    let file = sources.add(finding.path.clone(), String::new());
    diagnostics.push(finding.diagnostic(file));
    if finding.is_error() {
        match classify(&finding.path) {
            Some((DeclKind::Cell, Some(_))) => {
                unreadable.cells.insert(file_stem(&finding.path));
            }
            Some((DeclKind::Tenant, Some(_))) => {
                unreadable.tenants.insert(file_stem(&finding.path));
            }
            _ => {}
        }
    }
}

fn compile_with_findings(inputs: &[InputFile], findings: &[load::Finding]) -> Compilation {
    let catalog = catalog::Catalog::builtin();
    let mut sources = SourceMap::new();
    let mut diagnostics = Vec::new();
    let mut declarations = Vec::new();
    let mut unreadable = validate::Unreadable::default();
    let mut material = weights::Material::new();
    let mut templates = Vec::new();
    let mut allows = Vec::new();
    for finding in findings {
        refuse(finding, &mut sources, &mut diagnostics, &mut unreadable);
    }
    let mut sorted: Vec<&InputFile> = inputs.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for input in sorted {
        if let Some((name, reason)) = load::path_problem(&input.path) {
            let finding = load::Finding {
                path: escape::escape_str(&input.path),
                problem: load::Problem::PathUnsafe {
                    name: escape::escape_str(name),
                    reason,
                },
            };
            refuse(&finding, &mut sources, &mut diagnostics, &mut unreadable);
            continue;
        }
        if layout::is_material(&input.path) {
            // Signing material is read by the weights stage, never parsed or shown.
            material.insert(input.path.clone(), input.contents.clone());
            continue;
        }
        if layout::in_templates(&input.path) {
            load_template(input, &mut sources, &mut diagnostics, &mut templates);
            continue;
        }
        if let Some((_, None)) = classify(&input.path) {
            // A skipped file keeps no text either, whatever its contents.
            let file = sources.add(input.path.clone(), String::new());
            diagnostics.push(
                Diagnostic::warning(
                    Code::FileIgnored,
                    Span::new(file, 0..0),
                    format!("`{}` is not a declaration file and is skipped", input.path),
                )
                .with_label("not read")
                .with_help("declarations end in `.kdl` or `.yaml`; move other files elsewhere"),
            );
            continue;
        }
        let (text, utf8_error) = match String::from_utf8(input.contents.clone()) {
            Ok(text) => (text, None),
            Err(error) => (
                String::from_utf8_lossy(&input.contents).into_owned(),
                // The source map drops a leading byte order mark, so positions count after it.
                Some(error.utf8_error().valid_up_to().saturating_sub(
                    if input.contents.starts_with(b"\xef\xbb\xbf") {
                        3
                    } else {
                        0
                    },
                )),
            ),
        };
        let file = sources.add(input.path.clone(), text);
        let Some((kind, format)) = classify(&input.path) else {
            continue;
        };
        let Some(format) = format else {
            continue;
        };
        if let Some(valid_up_to) = utf8_error {
            diagnostics.push(
                Diagnostic::error(
                    Code::FileNotUtf8,
                    Span::new(file, valid_up_to..valid_up_to),
                    "file is not valid UTF-8",
                )
                .with_label("first invalid byte")
                .with_help("save the file as UTF-8"),
            );
            unreadable.insert(kind, file_stem(&input.path));
            continue;
        }
        let text = sources.get(file).map(|f| f.text.as_str()).unwrap_or("");
        let (mut document, mut file_diagnostics) = parse::parse(file, text, format);
        // `allow` entries silence warnings; they are taken out before the schema reads the
        // declaration, and applied once every stage has reported.
        let (file_allows, allow_diagnostics) = diag::allow::extract(&mut document);
        allows.extend(file_allows);
        file_diagnostics.extend(allow_diagnostics);
        let (declaration, shape_diagnostics) = schema::read(&document, kind, &sources);
        file_diagnostics.extend(shape_diagnostics);
        // Cap the file's findings now, so a hostile file holds the memory of a few hundred
        // diagnostics, not of one per byte; the final cap below merges the counts.
        diag::sort(&mut file_diagnostics, &sources);
        diagnostics.extend(diag::truncate(file_diagnostics));
        match &declaration {
            None => unreadable.insert(kind, file_stem(&input.path)),
            // A tenant declared under another file name (`file-name-mismatch`) is likely
            // renamed in one place only; pool owners naming the file's name are not reported
            // again.
            Some(schema::Declaration::Tenant(tenant))
                if tenant.name.value != file_stem(&input.path) =>
            {
                unreadable.insert(kind, file_stem(&input.path));
            }
            Some(_) => {}
        }
        declarations.extend(declaration);
    }
    // Templates are parsed whatever the declarations hold, so a syntax error shows at once.
    diagnostics.extend(template::check_syntax(&templates, &sources));
    let (fleet, validate_diagnostics) = validate::validate(declarations, &unreadable, catalog);
    diagnostics.extend(validate_diagnostics);
    // Resolve only a fleet that validated: the plan's checks assume sound references.
    let mut plan = None;
    if !diagnostics.iter().any(Diagnostic::is_error) {
        // Weights are verified before anything is resolved, and a model that fails stops the
        // build like any other error: nothing unverified reaches the plan or the output.
        let (verified, weight_findings) = weights::verify(&fleet, &material);
        diagnostics.extend(weight_findings);
        let (resolved, findings) = plan::resolve(&fleet, &verified, &sources, catalog);
        diagnostics.extend(findings);
        plan = Some(resolved);
    }
    diag::sort(&mut diagnostics, &sources);
    // Silence the warnings the declarations acknowledge; an allow is unused only when every
    // stage ran, that is when nothing is an error.
    let report_unused = !diagnostics.iter().any(Diagnostic::is_error);
    let (mut diagnostics, suppressed) = diag::allow::apply(diagnostics, &allows, report_unused);
    diag::sort(&mut diagnostics, &sources);
    // Cap what each file shows; the hidden findings are counted, and still fail the run.
    let diagnostics = diag::truncate(diagnostics);

    let mut diagnostics = diagnostics;
    let mut output = None;
    let mut internal_error = None;
    if let Some(plan) = plan
        .as_ref()
        .filter(|_| !diagnostics.iter().any(Diagnostic::is_error))
    {
        let lowered = lower::lower(plan).map(|mut manifest| {
            let findings = template::apply(&mut manifest, plan, &templates, &sources);
            (manifest, findings)
        });
        let rendered = lowered.and_then(|(manifest, findings)| {
            if findings.iter().any(Diagnostic::is_error) {
                Ok(Err(findings))
            } else {
                emit::render(&manifest).map(Ok)
            }
        });
        match rendered {
            Ok(Err(findings)) => {
                diagnostics.extend(findings);
                diag::sort(&mut diagnostics, &sources);
                diagnostics = diag::truncate(diagnostics);
            }
            Ok(Ok(tree)) => {
                // The security audit judges the bytes that would be written; a finding keeps
                // the whole tree from being written.
                let findings = validate::audit::audit(&tree, plan, &fleet);
                if findings.is_empty() {
                    output = Some(tree);
                } else {
                    diagnostics.extend(findings);
                    diag::sort(&mut diagnostics, &sources);
                    diagnostics = diag::truncate(diagnostics);
                }
            }
            Err(error) => internal_error = Some(error.to_string()),
        }
    }
    Compilation {
        sources,
        diagnostics,
        suppressed,
        plan,
        fleet,
        output,
        internal_error,
    }
}

/// Adds a file under `templates/` to the source map: a template (`templates/tenant/*.yaml.j2`,
/// `templates/cell/*.yaml.j2`) keeps its text for rendering and diagnostics, any other file is
/// skipped with a warning and keeps none.
fn load_template(
    input: &InputFile,
    sources: &mut SourceMap,
    diagnostics: &mut Vec<Diagnostic>,
    templates: &mut Vec<template::Template>,
) {
    let Some(scope) = layout::template_scope(&input.path) else {
        let file = sources.add(input.path.clone(), String::new());
        diagnostics.push(
            Diagnostic::warning(
                Code::FileIgnored,
                Span::new(file, 0..0),
                format!("`{}` is not a template and is skipped", input.path),
            )
            .with_label("not read")
            .with_help(
                "templates are `templates/tenant/<name>.yaml.j2` and `templates/cell/<name>.yaml.j2`",
            ),
        );
        return;
    };
    match String::from_utf8(input.contents.clone()) {
        Ok(text) => {
            let file = sources.add(input.path.clone(), text);
            templates.push(template::Template {
                path: input.path.clone(),
                file,
                scope,
            });
        }
        Err(error) => {
            let at = error.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(&input.contents).into_owned();
            let file = sources.add(input.path.clone(), text);
            diagnostics.push(
                Diagnostic::error(
                    Code::FileNotUtf8,
                    Span::new(file, at..at),
                    "file is not valid UTF-8",
                )
                .with_label("first invalid byte")
                .with_help("save the file as UTF-8"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_byte_after_a_byte_order_mark_is_located_where_the_reader_sees_it() {
        for (contents, line_col) in [
            (&b"\xef\xbb\xbfab\xff"[..], (1, 3)),
            (&b"ab\xff"[..], (1, 3)),
            (&b"\xef\xbb\xbfa\nb\xffc"[..], (2, 2)),
        ] {
            let compilation = compile(&[InputFile {
                path: "tenants/t.kdl".into(),
                contents: contents.to_vec(),
            }]);
            let diagnostic = compilation
                .diagnostics
                .iter()
                .find(|diagnostic| diagnostic.code == Code::FileNotUtf8)
                .unwrap();
            let span = diagnostic.labels.first().unwrap().span;
            let file = compilation.sources.get(span.file).unwrap();
            assert_eq!(file.line_col(span.start as usize), line_col, "{contents:?}");
        }
    }
}
