//! Rendering of diagnostics for people (source snippets) and for tools (JSON).
//!
//! Consumes: sorted [`Diagnostic`]s and the [`SourceMap`] they point into.
//! Produces: text. Both renderers read the same values, so they never disagree.
//!
//! Invariant: rendering is pure; the caller decides where the text goes.

use std::ops::Range;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::{Error as FilesError, Files};
use codespan_reporting::term::{self, termcolor};
use serde::Serialize;

use super::{Diagnostic, Severity};
use crate::source::{FileId, SourceMap};

struct Sources<'a>(&'a SourceMap);

impl<'a> Files<'a> for Sources<'a> {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, FilesError> {
        self.0
            .get(id)
            .map(|file| file.path.as_str())
            .ok_or(FilesError::FileMissing)
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, FilesError> {
        self.0
            .get(id)
            .map(|file| file.text.as_str())
            .ok_or(FilesError::FileMissing)
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, FilesError> {
        let file = self.0.get(id).ok_or(FilesError::FileMissing)?;
        Ok(match file.line_starts().binary_search(&byte_index) {
            Ok(idx) => idx,
            Err(idx) => idx.saturating_sub(1),
        })
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, FilesError> {
        let file = self.0.get(id).ok_or(FilesError::FileMissing)?;
        let starts = file.line_starts();
        let start = *starts.get(line_index).ok_or(FilesError::LineTooLarge {
            given: line_index,
            max: starts.len().saturating_sub(1),
        })?;
        let end = starts
            .get(line_index + 1)
            .copied()
            .unwrap_or(file.text.len());
        Ok(start..end)
    }
}

/// Whether the human renderer may use ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    /// Plain text.
    Never,
    /// ANSI escape codes.
    Always,
}

/// Renders diagnostics with source snippets, `file:line:col` headers and help lines.
pub fn human(diagnostics: &[Diagnostic], sources: &SourceMap, color: Color) -> String {
    let mut buffer = match color {
        Color::Never => termcolor::Buffer::no_color(),
        Color::Always => termcolor::Buffer::ansi(),
    };
    let config = term::Config::default();
    let files = Sources(sources);
    for diagnostic in diagnostics {
        let rendered = to_codespan(diagnostic);
        if term::emit_to_write_style(&mut buffer, &config, &files, &rendered).is_err() {
            // A label outside its file is a compiler bug; fall back to the one-line form so the
            // finding is never lost.
            let line = format!(
                "{}[{}]: {}\n",
                diagnostic.severity.as_str(),
                diagnostic.code.as_str(),
                diagnostic.message
            );
            let _ = std::io::Write::write_all(&mut buffer, line.as_bytes());
        }
    }
    String::from_utf8_lossy(buffer.as_slice()).into_owned()
}

fn to_codespan(diagnostic: &Diagnostic) -> cs::Diagnostic<FileId> {
    let base = match diagnostic.severity {
        Severity::Error => cs::Diagnostic::error(),
        Severity::Warning => cs::Diagnostic::warning(),
    };
    let labels = diagnostic
        .labels
        .iter()
        .map(|label| {
            let style = if label.primary {
                cs::LabelStyle::Primary
            } else {
                cs::LabelStyle::Secondary
            };
            cs::Label::new(style, label.span.file, label.span.range())
                .with_message(label.message.clone())
        })
        .collect();
    let mut notes = diagnostic.notes.clone();
    if !diagnostic.help.is_empty() {
        notes.push(format!("help: {}", diagnostic.help));
    }
    base.with_code(diagnostic.code.as_str())
        .with_message(diagnostic.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

/// A one-line summary such as `error: 3 errors, 1 warning`.
pub fn summary(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    let plural =
        |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    format!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
}

#[derive(Serialize)]
struct JsonPosition<'a> {
    file: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    byte_start: u32,
    byte_end: u32,
}

#[derive(Serialize)]
struct JsonLabel<'a> {
    #[serde(flatten)]
    position: JsonPosition<'a>,
    message: &'a str,
    primary: bool,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    severity: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<JsonPosition<'a>>,
    labels: Vec<JsonLabel<'a>>,
    notes: &'a [String],
    help: &'a str,
}

#[derive(Serialize)]
struct JsonStale<'a> {
    path: &'a str,
    change: &'a str,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    diagnostics: Vec<JsonDiagnostic<'a>>,
    errors: usize,
    warnings: usize,
    stale: Vec<JsonStale<'a>>,
}

fn position<'a>(sources: &'a SourceMap, span: crate::source::Span) -> JsonPosition<'a> {
    let (line, column, end_line, end_column) =
        sources.get(span.file).map_or((0, 0, 0, 0), |file| {
            let (line, column) = file.line_col(span.start as usize);
            let (end_line, end_column) = file.line_col(span.end as usize);
            (line, column, end_line, end_column)
        });
    JsonPosition {
        file: sources.path(span.file),
        line,
        column,
        end_line,
        end_column,
        byte_start: span.start,
        byte_end: span.end,
    }
}

/// Renders diagnostics as one pretty-printed JSON document with a trailing newline.
pub fn json(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    json_with_stale(diagnostics, sources, &[])
}

/// Like [`json`], with the `(path, change)` pairs of a stale output folder.
pub fn json_with_stale(
    diagnostics: &[Diagnostic],
    sources: &SourceMap,
    stale: &[(String, String)],
) -> String {
    let items = diagnostics
        .iter()
        .map(|diagnostic| JsonDiagnostic {
            code: diagnostic.code.as_str(),
            severity: diagnostic.severity.as_str(),
            message: &diagnostic.message,
            location: diagnostic
                .primary_span()
                .map(|span| position(sources, span)),
            labels: diagnostic
                .labels
                .iter()
                .map(|label| JsonLabel {
                    position: position(sources, label.span),
                    message: &label.message,
                    primary: label.primary,
                })
                .collect(),
            notes: &diagnostic.notes,
            help: &diagnostic.help,
        })
        .collect();
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let report = JsonReport {
        diagnostics: items,
        errors,
        warnings: diagnostics.len() - errors,
        stale: stale
            .iter()
            .map(|(path, change)| JsonStale { path, change })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}
