//! Intake: the input files to what the stages read, each file on its own.
//!
//! Consumes: the [`InputFile`]s of a run and the [`Finding`]s of what `load` refused.
//! Produces: an [`Intake`] (the source map, the parsed declarations, the names of unreadable
//! declarations, the signing material, the platform templates and the `allow` entries) and the
//! findings about the files: refused and ignored files, files that are not UTF-8, and each
//! declaration's parse, `allow` and schema findings.
//!
//! Invariants: files are taken in path order, so the same files give the same source map; a
//! file's findings are sorted and capped as soon as the file is read, so a hostile file holds
//! the memory of a few hundred diagnostics, not of one per byte (the driver's final cap merges
//! the counts); a refused or skipped file keeps no text, so nothing of it can be printed.

use crate::diag::{self, Code, Diagnostic};
use crate::escape::escape_str;
use crate::layout::{self, DeclKind, classify};
use crate::load::{Finding, InputFile, Problem};
use crate::parse;
use crate::schema;
use crate::source::{SourceMap, Span};
use crate::template;
use crate::validate;
use crate::weights;

/// What the stages read of a run's files.
#[derive(Debug, Default)]
pub struct Intake {
    /// Every input file, for rendering diagnostics; refused and skipped files without text.
    pub sources: SourceMap,
    /// The declarations that could be read, in path order.
    pub declarations: Vec<schema::Declaration>,
    /// The cells and tenants whose files could not be read, so references to them are not
    /// reported again as unknown.
    pub unreadable: validate::Unreadable,
    /// The signing material under `keys/` and `weights/`, never parsed or shown.
    pub material: weights::Material,
    /// The platform templates, whose text is in `sources`.
    pub templates: Vec<template::Template>,
    /// The `allow` entries of every declaration.
    pub allows: Vec<diag::allow::Allow>,
}

/// Reads every input file, and reports what `load` refused at the refused paths.
pub fn read(inputs: &[InputFile], refused: &[Finding]) -> (Intake, Vec<Diagnostic>) {
    let mut intake = Intake::default();
    let mut diagnostics = Vec::new();
    for finding in refused {
        refuse(
            finding,
            &mut intake.sources,
            &mut diagnostics,
            &mut intake.unreadable,
        );
    }
    let mut jobs = Vec::new();
    let mut sorted: Vec<&InputFile> = inputs.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for input in sorted {
        if let Some((name, reason)) = crate::load::path_problem(&input.path) {
            let finding = Finding {
                path: escape_str(&input.path),
                problem: Problem::PathUnsafe {
                    name: escape_str(name),
                    reason,
                },
            };
            refuse(
                &finding,
                &mut intake.sources,
                &mut diagnostics,
                &mut intake.unreadable,
            );
            continue;
        }
        if layout::is_material(&input.path) {
            // Signing material is read by the weights stage, never parsed or shown.
            intake
                .material
                .insert(input.path.clone(), input.contents.clone());
            continue;
        }
        if layout::in_templates(&input.path) {
            load_template(
                input,
                &mut intake.sources,
                &mut diagnostics,
                &mut intake.templates,
            );
            continue;
        }
        if let Some((_, None)) = classify(&input.path) {
            // A skipped file keeps no text either, whatever its contents.
            let file = intake.sources.add(input.path.clone(), String::new());
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
        let file = intake.sources.add(input.path.clone(), text);
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
            intake.unreadable.insert(kind, file_stem(&input.path));
            continue;
        }
        jobs.push(Job {
            file,
            kind,
            format,
            stem: file_stem(&input.path),
            at: diagnostics.len(),
        });
    }
    // Every declaration file is parsed and read on its own, in parallel; the results are taken
    // in path order, each file's findings where the sequential loop would have put them, so the
    // intake is the same on any number of threads.
    use rayon::prelude::*;
    let sources = &intake.sources;
    let read: Vec<Read> = jobs.par_iter().map(|job| read_one(job, sources)).collect();
    let mut earlier = std::mem::take(&mut diagnostics).into_iter();
    let mut taken = 0;
    for (job, read) in jobs.iter().zip(read) {
        diagnostics.extend(earlier.by_ref().take(job.at - taken));
        taken = job.at;
        diagnostics.extend(read.diagnostics);
        intake.allows.extend(read.allows);
        match &read.declaration {
            None => intake.unreadable.insert(job.kind, job.stem.clone()),
            // A tenant declared under another file name (`file-name-mismatch`) is likely
            // renamed in one place only; pool owners naming the file's name are not reported
            // again.
            Some(schema::Declaration::Tenant(tenant)) if tenant.name.value != job.stem => {
                intake.unreadable.insert(job.kind, job.stem.clone());
            }
            Some(_) => {}
        }
        intake.declarations.extend(read.declaration);
    }
    diagnostics.extend(earlier);
    (intake, diagnostics)
}

/// A declaration file to parse and read: its place in the source map, what it declares, and how
/// many findings of other files came before it.
struct Job {
    file: crate::source::FileId,
    kind: DeclKind,
    format: parse::Format,
    stem: String,
    at: usize,
}

/// What one declaration file holds: its declaration (if readable), its `allow` entries and its
/// findings, sorted and capped.
struct Read {
    declaration: Option<schema::Declaration>,
    allows: Vec<diag::allow::Allow>,
    diagnostics: Vec<Diagnostic>,
}

/// Parses one declaration file, takes out its `allow` entries and reads its declaration.
fn read_one(job: &Job, sources: &SourceMap) -> Read {
    let text = sources.get(job.file).map(|f| f.text.as_str()).unwrap_or("");
    let (mut document, mut file_diagnostics) = parse::parse(job.file, text, job.format);
    // `allow` entries silence warnings; they are taken out before the schema reads the
    // declaration, and applied once every stage has reported.
    let (allows, allow_diagnostics) = diag::allow::extract(&mut document);
    file_diagnostics.extend(allow_diagnostics);
    let (declaration, shape_diagnostics) = schema::read(&document, job.kind, sources);
    file_diagnostics.extend(shape_diagnostics);
    // Cap the file's findings now, so a hostile file holds the memory of a few hundred
    // diagnostics, not of one per byte; the driver's final cap merges the counts.
    diag::sort(&mut file_diagnostics, sources);
    Read {
        declaration,
        allows,
        diagnostics: diag::truncate(file_diagnostics),
    }
}

/// The file name of a path without folders and extension.
fn file_stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .map_or(name, |(stem, _)| stem)
        .to_string()
}

/// Reports a file that is not compiled; a refused cell or tenant file marks its declaration
/// unreadable, so references to it are not reported again as unknown.
fn refuse(
    finding: &Finding,
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
