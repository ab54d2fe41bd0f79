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

use std::collections::BTreeMap;

use super::{Code, Diagnostic, Severity};
use crate::source::{FileId, SourceFile, SourceMap};

/// Lines longer than this many bytes are shown as a window around their labels.
const LONG_LINE_BYTES: usize = 240;

/// How many characters of a long line are shown before its first labelled position.
const WINDOW_BEFORE: usize = 40;

/// How many characters of a long line are shown in all.
const WINDOW_CHARS: usize = 160;

/// Marks the side of a window where a long line was cut.
const ELLIPSIS: &str = "…";

/// One source line as one diagnostic's snippet shows it.
struct SnippetLine {
    /// The 0-based line index in the original file.
    index: usize,
    /// Where the line starts in the snippet text.
    text_start: usize,
    /// Where the line ends in the snippet text, after its line break.
    text_end: usize,
    /// The original byte offset of the first byte shown.
    window_start: usize,
    /// The original byte offset one past the last byte shown.
    window_end: usize,
    /// The length of the ellipsis before the window (zero when the line is shown from its start).
    prefix: usize,
}

impl SnippetLine {
    /// Where an original byte offset of this line is in the snippet text; offsets outside the
    /// window are moved to its nearest edge.
    fn to_snippet(&self, offset: usize) -> usize {
        let clamped = offset.clamp(self.window_start, self.window_end);
        (self.text_start + self.prefix + (clamped - self.window_start)).min(self.text_end)
    }

    /// The original byte offset of a snippet text offset on this line.
    fn to_original(&self, offset: usize) -> usize {
        let within = offset.saturating_sub(self.text_start + self.prefix);
        (self.window_start + within).min(self.window_end)
    }
}

/// The lines of one file that one diagnostic's labels touch, with long lines cut to a window,
/// so rendering costs the size of the snippet, not the size of the lines it points into.
struct SnippetFile<'a> {
    id: FileId,
    file: &'a SourceFile,
    text: String,
    /// Sorted by `index` and by `text_start`.
    lines: Vec<SnippetLine>,
}

impl SnippetFile<'_> {
    fn line(&self, index: usize) -> Option<&SnippetLine> {
        self.lines
            .binary_search_by_key(&index, |line| line.index)
            .ok()
            .and_then(|idx| self.lines.get(idx))
    }

    fn to_snippet(&self, offset: usize) -> usize {
        self.line(original_line(self.file, offset))
            .map_or(self.text.len(), |line| line.to_snippet(offset))
    }
}

/// The 0-based index of the line of the original file holding a byte offset.
fn original_line(file: &SourceFile, offset: usize) -> usize {
    match file.line_starts().binary_search(&offset) {
        Ok(idx) => idx,
        Err(idx) => idx.saturating_sub(1),
    }
}

/// The original byte range of a line without its line break (whichever break the file's syntax
/// has: CR, LF, CRLF, and for KDL also NEL, VT, FF, U+2028 and U+2029).
fn line_bounds(file: &SourceFile, index: usize) -> (usize, usize) {
    file.line_range(index)
        .map_or((file.text.len(), file.text.len()), |range| {
            (range.start, range.end)
        })
}

/// Appends `line` so that a terminal or a CI log shows it as text: every control, bidirectional
/// formatting or other character that no declaration may hold (see
/// [`crate::names::char_kind_forbidden`]; a tab stays) becomes a visible stand-in of the same
/// UTF-8 length, so byte offsets into the snippet are unchanged and the caret has a column to
/// stand under. A raw escape sequence in a file must never reach the reader's terminal.
fn push_visible(text: &mut String, line: &str) {
    for ch in line.chars() {
        if ch == '\t' || crate::names::char_kind_forbidden(ch).is_none() {
            text.push(ch);
            continue;
        }
        text.push(match ch.len_utf8() {
            1 => '?',
            2 => '\u{bf}',
            3 => '\u{fffd}',
            _ => '\u{1f6ab}',
        });
    }
}

/// The byte offset `count` characters before `offset` in `text`, or 0.
fn chars_before(text: &str, offset: usize, count: usize) -> usize {
    let offset = text.floor_char_boundary(offset);
    text.get(..offset).map_or(0, |head| {
        head.char_indices()
            .rev()
            .take(count)
            .last()
            .map_or(offset, |(idx, _)| idx)
    })
}

/// The byte offset `count` characters after `offset` in `text`, or its end.
fn chars_after(text: &str, offset: usize, count: usize) -> usize {
    let offset = text.floor_char_boundary(offset);
    text.get(offset..).map_or(text.len(), |tail| {
        tail.char_indices()
            .nth(count)
            .map_or(text.len(), |(idx, _)| offset + idx)
    })
}

impl<'a> SnippetFile<'a> {
    /// The snippet of `file` for labels at the given original byte ranges (with whether each
    /// is primary).
    fn new(id: FileId, file: &'a SourceFile, ranges: &[(Range<usize>, bool)]) -> Self {
        // The positions codespan-reporting shows on each line: a label's start on its first line
        // and its end on its last, ranked so that a window starts at the position the
        // `file:line:column` header names: a primary start, then any start, then any end.
        let mut anchors: BTreeMap<usize, Vec<(u8, usize)>> = BTreeMap::new();
        for (range, primary) in ranges {
            let first = original_line(file, range.start);
            let last = original_line(file, range.end);
            let rank = if *primary { 0 } else { 1 };
            anchors.entry(first).or_default().push((rank, range.start));
            anchors.entry(last).or_default().push((2, range.end));
            // A label over several lines shows a few lines after its start and one before its end
            // (the defaults of `term::Config`).
            for index in (first + 1..last).take(3) {
                anchors.entry(index).or_default();
            }
            if last > first + 1 {
                anchors.entry(last - 1).or_default();
            }
        }
        // A line between two shown lines is shown too, instead of a `·` break.
        let indices: Vec<usize> = anchors.keys().copied().collect();
        for pair in indices.windows(2) {
            if let [before, after] = pair
                && after - before == 2
            {
                anchors.entry(before + 1).or_default();
            }
        }
        let mut text = String::new();
        let mut lines = Vec::with_capacity(anchors.len());
        for (index, positions) in anchors {
            let (start, content_end) = line_bounds(file, index);
            let text_start = text.len();
            let line = file.text.get(start..content_end).unwrap_or("");
            // Every shown line ends in `\n`, whatever break the file has: codespan-reporting
            // splits its source at `\n` only, and a raw CR or U+2028 would garble the terminal.
            let (window_start, window_end, prefix) = if line.len() <= LONG_LINE_BYTES {
                push_visible(&mut text, line);
                text.push('\n');
                (start, content_end, 0)
            } else {
                let anchor = positions.iter().min().map_or(0, |&(_, position)| {
                    position.clamp(start, content_end) - start
                });
                let from = chars_before(line, anchor, WINDOW_BEFORE);
                let to = chars_after(line, from, WINDOW_CHARS);
                let prefix = if from > 0 { ELLIPSIS.len() } else { 0 };
                if from > 0 {
                    text.push_str(ELLIPSIS);
                }
                push_visible(&mut text, line.get(from..to).unwrap_or(""));
                if to < line.len() {
                    text.push_str(ELLIPSIS);
                }
                text.push('\n');
                (start + from, start + to, prefix)
            };
            lines.push(SnippetLine {
                index,
                text_start,
                text_end: text.len(),
                window_start,
                window_end,
                prefix,
            });
        }
        Self {
            id,
            file,
            text,
            lines,
        }
    }
}

/// The files of one diagnostic, as codespan-reporting reads them.
struct Snippets<'a> {
    files: Vec<SnippetFile<'a>>,
}

impl<'a> Snippets<'a> {
    fn new(diagnostic: &Diagnostic, sources: &'a SourceMap) -> Self {
        let mut by_file: BTreeMap<FileId, Vec<(Range<usize>, bool)>> = BTreeMap::new();
        for label in &diagnostic.labels {
            by_file
                .entry(label.span.file)
                .or_default()
                .push((label.span.range(), label.primary));
        }
        let files = by_file
            .into_iter()
            .filter_map(|(id, ranges)| {
                let file = sources.get(id)?;
                Some(SnippetFile::new(id, file, &ranges))
            })
            .collect();
        Self { files }
    }

    fn get(&self, id: FileId) -> Result<&SnippetFile<'a>, FilesError> {
        self.files
            .iter()
            .find(|file| file.id == id)
            .ok_or(FilesError::FileMissing)
    }
}

impl<'a> Files<'a> for Snippets<'a> {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, FilesError> {
        self.get(id).map(|file| file.file.path.as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, FilesError> {
        self.get(id).map(|file| file.text.as_str())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, FilesError> {
        let file = self.get(id)?;
        let after = file
            .lines
            .partition_point(|line| line.text_start <= byte_index);
        Ok(file
            .lines
            .get(after.saturating_sub(1))
            .map_or(0, |line| line.index))
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, FilesError> {
        let file = self.get(id)?;
        if let Some(line) = file.line(line_index) {
            return Ok(line.text_start..line.text_end);
        }
        let count = file.file.line_starts().len();
        if line_index < count {
            // A line inside a long label that is not shown; codespan-reporting only asks.
            Ok(file.text.len()..file.text.len())
        } else {
            Err(FilesError::LineTooLarge {
                given: line_index,
                max: count.saturating_sub(1),
            })
        }
    }

    fn column_number(
        &'a self,
        id: FileId,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, FilesError> {
        let file = self.get(id)?;
        let offset = file
            .line(line_index)
            .map_or(0, |line| line.to_original(byte_index));
        Ok(file.file.line_col(offset).1)
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
    for diagnostic in diagnostics {
        let files = Snippets::new(diagnostic, sources);
        let rendered = to_codespan(diagnostic, &files);
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

fn to_codespan(diagnostic: &Diagnostic, files: &Snippets<'_>) -> cs::Diagnostic<FileId> {
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
            let range = files.get(label.span.file).map_or(0..0, |file| {
                file.to_snippet(label.span.start as usize)..file.to_snippet(label.span.end as usize)
            });
            cs::Label::new(style, label.span.file, range).with_message(label.message.clone())
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

/// A one-line summary such as `3 errors, 1 warning`; findings hidden by [`super::truncate`]
/// are counted, and said to be not shown.
pub fn summary(diagnostics: &[Diagnostic]) -> String {
    let (errors, warnings) = super::count_findings(diagnostics);
    let plural =
        |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    let hidden = hidden_count(diagnostics);
    let hidden = if hidden > 0 {
        format!(" ({hidden} not shown)")
    } else {
        String::new()
    };
    format!(
        "{}, {}{hidden}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
}

/// [`summary`], with `, N warnings silenced` when `allow` entries silenced any.
pub fn summary_with_silenced(diagnostics: &[Diagnostic], silenced: usize) -> String {
    let mut text = summary(diagnostics);
    if silenced > 0 {
        text.push_str(&format!(
            ", {silenced} warning{} silenced",
            if silenced == 1 { "" } else { "s" }
        ));
    }
    text
}

/// How many findings [`super::truncate`] hid.
fn hidden_count(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .flat_map(|diagnostic| &diagnostic.hidden)
        .map(|hidden| hidden.errors + hidden.warnings)
        .sum()
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hidden: Vec<JsonHidden>,
}

#[derive(Serialize)]
struct JsonHidden {
    code: &'static str,
    errors: usize,
    warnings: usize,
}

#[derive(Serialize)]
struct JsonStale<'a> {
    path: &'a str,
    change: &'a str,
}

#[derive(Serialize)]
struct JsonSuppressed<'a> {
    #[serde(flatten)]
    diagnostic: JsonDiagnostic<'a>,
    reason: &'a str,
    allow: JsonPosition<'a>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tenantc: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    errors: usize,
    warnings: usize,
    #[serde(skip_serializing_if = "is_zero")]
    hidden: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    silenced: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suppressed: Option<Vec<JsonSuppressed<'a>>>,
    stale: Vec<JsonStale<'a>>,
}

/// The version of the JSON envelope every `--format json` document of the CLI carries as
/// `"tenantc"` (see `docs/json.md`); it changes only when a field is removed or changes meaning.
pub const JSON_ENVELOPE_VERSION: u32 = 1;

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

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// Renders diagnostics as one pretty-printed JSON document with a trailing newline.
///
/// `errors` and `warnings` count every finding, including those [`super::truncate`] hid; `hidden`
/// (present only when not zero) counts the hidden ones, and each `diagnostics-truncated`
/// diagnostic lists them per code under `hidden`.
pub fn json(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    json_with_stale(diagnostics, sources, &[])
}

/// Like [`json`], with the `(path, change)` pairs of a stale output folder.
pub fn json_with_stale(
    diagnostics: &[Diagnostic],
    sources: &SourceMap,
    stale: &[(String, String)],
) -> String {
    report_json(None, diagnostics, &[], sources, stale)
}

/// The diagnostics of a `build` or `check` run as the CLI prints them for `--format json`: the
/// envelope (`"tenantc"`, `"kind"`), the fields of [`json_with_stale`], `silenced` (how many
/// warnings `allow` entries silenced) and `suppressed` (each of them, with its `reason` and the
/// position of its `allow`).
pub fn json_report(
    kind: &str,
    diagnostics: &[Diagnostic],
    suppressed: &[super::allow::Suppressed],
    sources: &SourceMap,
    stale: &[(String, String)],
) -> String {
    report_json(Some(kind), diagnostics, suppressed, sources, stale)
}

fn json_diagnostic<'a>(diagnostic: &'a Diagnostic, sources: &'a SourceMap) -> JsonDiagnostic<'a> {
    JsonDiagnostic {
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
        hidden: diagnostic
            .hidden
            .iter()
            .map(|hidden| JsonHidden {
                code: hidden.code.as_str(),
                errors: hidden.errors,
                warnings: hidden.warnings,
            })
            .collect(),
    }
}

fn report_json(
    kind: Option<&str>,
    diagnostics: &[Diagnostic],
    suppressed: &[super::allow::Suppressed],
    sources: &SourceMap,
    stale: &[(String, String)],
) -> String {
    let items = diagnostics
        .iter()
        .map(|diagnostic| json_diagnostic(diagnostic, sources))
        .collect();
    let (errors, warnings) = super::count_findings(diagnostics);
    let report = JsonReport {
        tenantc: kind.map(|_| JSON_ENVELOPE_VERSION),
        kind,
        diagnostics: items,
        errors,
        warnings,
        hidden: hidden_count(diagnostics),
        silenced: kind.map(|_| suppressed.len()),
        suppressed: kind.map(|_| {
            suppressed
                .iter()
                .map(|silenced| JsonSuppressed {
                    diagnostic: json_diagnostic(&silenced.diagnostic, sources),
                    reason: &silenced.reason,
                    allow: position(sources, silenced.allow),
                })
                .collect()
        }),
        stale: stale
            .iter()
            .map(|(path, change)| JsonStale { path, change })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

/// A relative path as a URI reference: every byte but the unreserved characters and `/`
/// percent-encoded (a space, a non-ASCII letter, `%`, `#` or `?` in a file name).
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A SARIF physical location of `span`: the file relative to the repository root (resolved
/// by code scanning against `%SRCROOT%`) and the region, with 1-based lines and columns in
/// Unicode code points.
fn sarif_location(sources: &SourceMap, span: crate::source::Span, base: &str) -> serde_json::Value {
    let at = position(sources, span);
    let mut region = serde_json::Map::new();
    region.insert("startLine".into(), at.line.max(1).into());
    region.insert("startColumn".into(), at.column.max(1).into());
    if at.end_line >= at.line && (at.end_line, at.end_column) != (at.line, at.column) {
        region.insert("endLine".into(), at.end_line.into());
        region.insert("endColumn".into(), at.end_column.max(1).into());
    }
    serde_json::json!({
        "artifactLocation": { "uri": uri_path(&format!("{base}{}", at.file)), "uriBaseId": "%SRCROOT%" },
        "region": region,
    })
}

/// Renders diagnostics, and the `(path, change)` pairs of a stale output folder, as one SARIF
/// 2.1.0 log (pretty-printed, with a trailing newline) for code scanning.
///
/// One run of the `tenantc` driver; its rules are the codes that occur, in registry order, each
/// with its one-line description, stage and a pointer to `tenantc explain`. Each diagnostic is a result at its primary label, with its other
/// labels as related locations, and its notes and help in the message; a stale output file is an
/// `out-stale` result at that file. Paths are relative to the repository root, so the log holds
/// no absolute path, timestamp or version.
///
/// `base` is prefixed to every path (empty, or the declarations' root relative to the
/// repository root with a final `/`), so code scanning finds the files when `--root` is a
/// subfolder.
pub fn sarif(
    diagnostics: &[Diagnostic],
    sources: &SourceMap,
    stale: &[(String, String)],
    base: &str,
) -> String {
    sarif_report(diagnostics, &[], sources, stale, base)
}

/// Like [`sarif`], with the warnings that `allow` entries silenced: each is a result with one
/// `inSource` suppression whose justification is the allow's reason and whose location is the
/// allow, so code scanning shows it as suppressed rather than dropping it.
pub fn sarif_report(
    diagnostics: &[Diagnostic],
    suppressed: &[super::allow::Suppressed],
    sources: &SourceMap,
    stale: &[(String, String)],
    base: &str,
) -> String {
    let mut used: Vec<Code> = diagnostics
        .iter()
        .chain(suppressed.iter().map(|silenced| &silenced.diagnostic))
        .map(|d| d.code)
        .collect();
    used.sort_by_key(|code| Code::ALL.iter().position(|c| c == code));
    used.dedup();
    let mut rules: Vec<serde_json::Value> = used
        .iter()
        .map(|code| {
            serde_json::json!({
                "id": code.as_str(),
                "shortDescription": { "text": code.description() },
                "help": { "text": format!("`tenantc explain {}` prints its section of docs/diagnostics.md", code.as_str()) },
                "properties": { "stage": code.stage() },
            })
        })
        .collect();
    let stale_rule = (!stale.is_empty()).then_some(rules.len());
    if stale_rule.is_some() {
        rules.push(serde_json::json!({
            "id": "out-stale",
            "shortDescription": { "text": "the committed output folder differs from what `tenantc build` writes" },
            "help": { "text": "`tenantc explain out-stale` prints its section of docs/diagnostics.md" },
            "properties": { "stage": "check" },
        }));
    }
    let suppressions = diagnostics
        .iter()
        .map(|_| None)
        .chain(suppressed.iter().map(|silenced| {
            Some(serde_json::json!([{
                "kind": "inSource",
                "justification": silenced.reason,
                "location": { "physicalLocation": sarif_location(sources, silenced.allow, base) },
            }]))
        }));
    let mut results: Vec<serde_json::Value> = diagnostics
        .iter()
        .chain(suppressed.iter().map(|silenced| &silenced.diagnostic))
        .zip(suppressions)
        .map(|(diagnostic, suppression)| {
            let mut text = diagnostic.message.clone();
            for note in &diagnostic.notes {
                text.push_str("\nnote: ");
                text.push_str(note);
            }
            if !diagnostic.help.is_empty() {
                text.push_str("\nhelp: ");
                text.push_str(&diagnostic.help);
            }
            let primary = diagnostic.primary_span();
            let mut result = serde_json::Map::new();
            result.insert("ruleId".into(), diagnostic.code.as_str().into());
            result.insert(
                "ruleIndex".into(),
                used.iter()
                    .position(|code| *code == diagnostic.code)
                    .unwrap_or(0)
                    .into(),
            );
            result.insert("level".into(), diagnostic.severity.as_str().into());
            result.insert("message".into(), serde_json::json!({ "text": text }));
            if let Some(span) = primary {
                result.insert(
                    "locations".into(),
                    serde_json::json!([{ "physicalLocation": sarif_location(sources, span, base) }]),
                );
            }
            let related: Vec<serde_json::Value> = diagnostic
                .labels
                .iter()
                .filter(|label| Some(label.span) != primary || !label.primary)
                .enumerate()
                .map(|(idx, label)| {
                    serde_json::json!({
                        "id": idx,
                        "physicalLocation": sarif_location(sources, label.span, base),
                        "message": { "text": label.message },
                    })
                })
                .collect();
            if !related.is_empty() {
                result.insert("relatedLocations".into(), related.into());
            }
            if let Some(suppression) = suppression {
                result.insert("suppressions".into(), suppression);
            }
            serde_json::Value::Object(result)
        })
        .collect();
    if let Some(index) = stale_rule {
        for (path, change) in stale {
            results.push(serde_json::json!({
                "ruleId": "out-stale",
                "ruleIndex": index,
                "level": "error",
                "message": { "text": format!("{path} is {change} compared with what `tenantc build` writes\nhelp: run `tenantc build` and commit the result; never edit out/ by hand") },
                "locations": [{ "physicalLocation": {
                    "artifactLocation": { "uri": uri_path(&format!("{base}out/{path}")), "uriBaseId": "%SRCROOT%" },
                }}],
            }));
        }
    }
    let log = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "tenantc", "rules": rules } },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

/// A SARIF 2.1.0 log for a run that could not finish (exit 2): no results, the message as a
/// tool execution notification, and `executionSuccessful: false`.
pub fn sarif_fatal(message: &str) -> String {
    let log = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "tenantc" } },
            "invocations": [{
                "executionSuccessful": false,
                "toolExecutionNotifications": [{ "level": "error", "message": { "text": message } }],
            }],
            "results": [],
        }],
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;
    use crate::source::Span;

    fn render_one(sources: &SourceMap, diagnostic: Diagnostic) -> String {
        human(&[diagnostic], sources, Color::Never)
    }

    #[test]
    fn a_label_on_a_very_long_line_shows_a_window_of_it() {
        let fields: String = (0..6_000).map(|idx| format!(" f{idx} 1;")).collect();
        let text = format!("tenant \"a\" {{{fields} }}\n");
        let at = text.find(" f3000 ").unwrap() + 1;
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", text.clone());
        let rendered = render_one(
            &sources,
            Diagnostic::error(
                Code::FieldUnknown,
                Span::new(file, at..at + 5),
                "no `f3000`",
            )
            .with_label("unknown field")
            .with_help("remove it"),
        );
        assert!(
            rendered.len() < 1_000,
            "{} bytes:\n{rendered}",
            rendered.len()
        );
        let column = at + 1;
        assert!(
            rendered.contains(&format!("tenants/a.kdl:1:{column}\n")),
            "{rendered}"
        );
        // The window is cut on both sides, and the caret sits under the field it names.
        let source_line = rendered
            .lines()
            .find(|line| line.starts_with("1 │ "))
            .unwrap();
        assert!(source_line.starts_with("1 │ …") && source_line.ends_with('…'));
        let caret_line = rendered.lines().find(|line| line.contains('^')).unwrap();
        let caret = caret_line.chars().position(|ch| ch == '^').unwrap();
        let under: String = source_line.chars().skip(caret).take(5).collect();
        assert_eq!(under, "f3000");
        assert!(caret_line.ends_with("^^^^^ unknown field"));
    }

    #[test]
    fn short_lines_are_shown_whole() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "a\ntenant \"x\" {\n  bad 1\n}\n");
        let rendered = render_one(
            &sources,
            Diagnostic::error(Code::FieldUnknown, Span::new(file, 17..20), "no `bad`")
                .with_label("unknown field")
                .with_help("remove it"),
        );
        let expected = "error[field-unknown]: no `bad`\n  ┌─ tenants/a.kdl:3:3\n  │\n3 │   bad 1\n  │   ^^^ unknown field\n  │\n  = help: remove it\n\n";
        assert_eq!(rendered, expected);
    }

    #[test]
    fn control_characters_of_the_source_are_shown_as_stand_ins() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x \"\u{1b}[2J\0\u{202e}\"\ny\n");
        let rendered = render_one(
            &sources,
            Diagnostic::error(Code::KdlSyntax, Span::new(file, 7..8), "a NUL")
                .with_label("here")
                .with_help("remove it"),
        );
        let expected = "error[kdl-syntax]: a NUL\n  ┌─ tenants/a.kdl:1:8\n  │\n1 │ x \"?[2J?\u{fffd}\"\n  │        ^ here\n  │\n  = help: remove it\n\n";
        assert_eq!(rendered, expected);
    }

    use crate::testing::Rng;

    #[test]
    fn labels_anywhere_render_with_the_position_of_the_source_and_bounded_size() {
        let mut rng = Rng(0x5eed_d1a6);
        let pieces = [
            "a",
            "é",
            "字",
            "😀",
            " ",
            "\t",
            "\n",
            "\r\n",
            "x",
            "\r",
            "\u{1b}[31m",
            "\0",
            "\u{85}",
            "\u{202e}",
            "\u{2028}",
            "\u{7f}",
            "\u{e0001}",
            "\u{1fffe}",
            "\u{ad}",
        ];
        for _ in 0..300 {
            let mut text = String::new();
            let long = rng.below(3) == 0;
            for _ in 0..rng.below(if long { 4_000 } else { 60 }) {
                let piece = pieces[rng.below(pieces.len())];
                // Long texts get few line breaks, so some lines are long.
                if long && piece.contains('\n') && rng.below(50) != 0 {
                    continue;
                }
                text.push_str(piece);
            }
            // A CRLF is one line break: no parser puts a span between its two bytes.
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&idx| text.is_char_boundary(idx))
                .filter(|&idx| {
                    !(text.as_bytes().get(idx.wrapping_sub(1)) == Some(&b'\r')
                        && text.as_bytes().get(idx) == Some(&b'\n'))
                })
                .collect();
            let mut sources = SourceMap::new();
            let file = sources.add("t/x.kdl", text.clone());
            let other = sources.add("t/y.kdl", text.clone());
            let mut pick = || {
                let mut ends = [
                    boundaries[rng.below(boundaries.len())],
                    boundaries[rng.below(boundaries.len())],
                ];
                ends.sort_unstable();
                ends[0]..ends[1]
            };
            let primary = pick();
            let diagnostic =
                Diagnostic::error(Code::FieldUnknown, Span::new(file, primary.clone()), "m")
                    .with_label("here")
                    .with_secondary(Span::new(file, pick()), "there")
                    .with_secondary(Span::new(other, pick()), "elsewhere")
                    .with_help("h");
            let rendered = render_one(&sources, diagnostic);
            assert!(
                rendered.starts_with("error[field-unknown]: m\n"),
                "{rendered}"
            );
            let (line, column) = sources.get(file).unwrap().line_col(primary.start);
            assert!(
                rendered.contains(&format!("t/x.kdl:{line}:{column}\n")),
                "{primary:?} {text:?}\n{rendered}"
            );
            // Nothing of the file reaches the terminal as a control or formatting character.
            assert!(
                rendered.chars().all(|ch| ch == '\n'
                    || ch == '\t'
                    || crate::names::char_kind_forbidden(ch).is_none()),
                "{text:?}\n{rendered:?}"
            );
            // Every shown line is a window, never a whole long line (a tab is shown as four
            // spaces).
            for shown in rendered.lines() {
                assert!(shown.chars().count() < 4 * WINDOW_CHARS + 40, "{shown}");
            }
        }
    }

    #[test]
    fn summary_and_json_count_the_findings_that_are_not_shown() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(1_000));
        let mut diagnostics: Vec<Diagnostic> = (0..60)
            .map(|at| {
                Diagnostic::error(Code::FieldUnknown, Span::new(file, at..at + 1), "e")
                    .with_help("h")
            })
            .collect();
        crate::diag::sort(&mut diagnostics, &sources);
        let shown = crate::diag::truncate(diagnostics);
        assert_eq!(summary(&shown), "60 errors, 0 warnings (10 not shown)");
        let json: serde_json::Value = serde_json::from_str(&json(&shown, &sources)).unwrap();
        assert_eq!(json["errors"], 60);
        assert_eq!(json["warnings"], 0);
        assert_eq!(json["hidden"], 10);
        let items = json["diagnostics"].as_array().unwrap();
        assert_eq!(items.len(), 51);
        assert_eq!(items[50]["code"], "diagnostics-truncated");
        assert_eq!(items[50]["hidden"][0]["code"], "field-unknown");
        assert_eq!(items[50]["hidden"][0]["errors"], 10);
        assert!(items[0].get("hidden").is_none());
    }
}
