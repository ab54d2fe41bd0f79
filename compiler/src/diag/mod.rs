//! The one diagnostic type of the compiler.
//!
//! Consumes: findings from every stage. Produces: [`Diagnostic`] values that the human and
//! JSON renderers in [`render`] both work from.
//!
//! Invariant: every diagnostic carries a [`Code`], a lowercase message without a final period,
//! and a help line; every diagnostic about a file carries a primary label in that file.
//! [`truncate`] caps what is shown per file (`limits.rs`) without changing whether a run has
//! errors: the hidden findings are counted in one `diagnostics-truncated` diagnostic per file.
//! [`FileFindings`] applies the same cap while a stage reports, so a stage may report one finding
//! per element of its input: memory stays within a few times the cap, and a finding the cap
//! would hide is counted without being made.

pub mod allow;
pub mod code;
pub mod render;

pub use code::Code;

use std::collections::BTreeMap;

use crate::limits::{
    MAX_DIAGNOSTICS_PER_CODE_PER_FILE, MAX_DIAGNOSTICS_PER_FILE, MAX_DIAGNOSTICS_PER_RUN,
};
use crate::source::{FileId, SourceMap, Span};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Compilation fails; nothing is written.
    Error,
    /// Compilation goes on; the user should look.
    Warning,
}

impl Severity {
    /// The lowercase name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A labelled source range of a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What is there, shown next to the caret; may be empty.
    pub message: String,
    /// The primary label is the location of the finding; secondary labels give context.
    pub primary: bool,
}

/// One finding about the declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What was found.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// One lowercase line without a final period.
    pub message: String,
    /// Source locations; the first primary label is the position reported as `file:line:col`.
    pub labels: Vec<Label>,
    /// Extra facts, one line each.
    pub notes: Vec<String>,
    /// A concrete next step.
    pub help: String,
    /// Findings not shown because of the caps of [`truncate`], per code; empty except on the
    /// `diagnostics-truncated` diagnostic that stands for them.
    pub hidden: Vec<Hidden>,
}

/// How many findings of one code a `diagnostics-truncated` diagnostic stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hidden {
    /// The code of the findings not shown.
    pub code: Code,
    /// How many of them are errors.
    pub errors: usize,
    /// How many of them are warnings.
    pub warnings: usize,
}

/// `text` with every character that could break a line or drive a terminal (a control,
/// bidirectional-formatting, separator or noncharacter code point, see
/// [`crate::names::char_kind_forbidden`]) written as a `\u{..}` escape. Messages quote declared
/// keys, values and file names; escaped, a pull request cannot fake lines of a CI log (such as a
/// `0 errors` summary) or send escape sequences to a reviewer's terminal.
pub fn printable(text: String) -> String {
    if !text
        .chars()
        .any(|ch| crate::names::char_kind_forbidden(ch).is_some())
    {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if crate::names::char_kind_forbidden(ch).is_some() {
            escaped.push_str(&format!("\\u{{{:x}}}", ch as u32));
        } else {
            escaped.push(ch);
        }
    }
    escaped
}

impl Diagnostic {
    /// An error at a span.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Error, span, message)
    }

    /// A warning at a span.
    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self::new(code, Severity::Warning, span, message)
    }

    fn new(code: Code, severity: Severity, span: Span, message: impl Into<String>) -> Self {
        Self {
            code,
            severity,
            message: printable(message.into()),
            labels: vec![Label {
                span,
                message: String::new(),
                primary: true,
            }],
            notes: Vec::new(),
            help: String::new(),
            hidden: Vec::new(),
        }
    }

    /// Sets the text of the primary label.
    pub fn with_label(mut self, message: impl Into<String>) -> Self {
        if let Some(label) = self.labels.iter_mut().find(|label| label.primary) {
            label.message = printable(message.into());
        }
        self
    }

    /// Adds a secondary label.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: printable(message.into()),
            primary: false,
        });
        self
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(printable(note.into()));
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = printable(help.into());
        self
    }

    /// The primary span, used for sorting and for `file:line:col`.
    pub fn primary_span(&self) -> Option<Span> {
        self.labels
            .iter()
            .find(|label| label.primary)
            .or(self.labels.first())
            .map(|label| label.span)
    }

    /// Whether this diagnostic fails the build.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// How many findings this diagnostic stands for, as `(errors, warnings)`: itself, or, for a
    /// `diagnostics-truncated` diagnostic, the findings it hides.
    pub fn finding_counts(&self) -> (usize, usize) {
        if self.hidden.is_empty() {
            return match self.severity {
                Severity::Error => (1, 0),
                Severity::Warning => (0, 1),
            };
        }
        self.hidden
            .iter()
            .fold((0, 0), |(errors, warnings), hidden| {
                (errors + hidden.errors, warnings + hidden.warnings)
            })
    }
}

/// Counts the findings of a list of diagnostics as `(errors, warnings)`, including those that
/// [`truncate`] hid.
pub fn count_findings(diagnostics: &[Diagnostic]) -> (usize, usize) {
    diagnostics.iter().map(Diagnostic::finding_counts).fold(
        (0, 0),
        |(errors, warnings), (more_errors, more_warnings)| {
            (errors + more_errors, warnings + more_warnings)
        },
    )
}

/// Caps the diagnostics shown per file with the limits of `limits.rs`.
///
/// `diagnostics` must be sorted by [`sort`], so each file's findings are contiguous and the
/// first ones in source order are kept. Of each file, at most [`MAX_DIAGNOSTICS_PER_CODE_PER_FILE`]
/// of one code and [`MAX_DIAGNOSTICS_PER_FILE`] in all are kept; the rest are replaced by one
/// `diagnostics-truncated` diagnostic after the file's last shown one, which counts them per code
/// and is an error when any of them is, so [`count_findings`] and whether the run has errors do
/// not change.
pub fn truncate(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    cap_run(cap_files(diagnostics))
}

/// The caps per file of [`truncate`], without the cap of the whole run.
fn cap_files(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut kept = Vec::with_capacity(diagnostics.len().min(MAX_DIAGNOSTICS_PER_FILE + 1));
    let mut group: Option<Option<FileId>> = None;
    let mut state = FileCap::default();
    for diagnostic in diagnostics {
        let file = diagnostic.primary_span().map(|span| span.file);
        if group != Some(file) {
            kept.extend(std::mem::take(&mut state).finish());
            group = Some(file);
        }
        if let Some(shown) = state.admit(diagnostic) {
            kept.push(shown);
        }
    }
    kept.extend(state.finish());
    kept
}

/// Keeps the first [`MAX_DIAGNOSTICS_PER_RUN`] of diagnostics already capped per file; the rest,
/// hidden ones included, are counted in one `diagnostics-truncated` diagnostic at the first
/// one not shown, so a pull request of many files cannot flood the CI log either.
fn cap_run(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if diagnostics.len() <= MAX_DIAGNOSTICS_PER_RUN {
        return diagnostics;
    }
    let mut kept = Vec::with_capacity(MAX_DIAGNOSTICS_PER_RUN + 1);
    let mut state = FileCap {
        run: true,
        ..FileCap::default()
    };
    for diagnostic in diagnostics {
        if kept.len() < MAX_DIAGNOSTICS_PER_RUN {
            kept.push(diagnostic);
        } else {
            state.hide(&diagnostic);
        }
    }
    kept.extend(state.finish());
    kept
}

/// How many findings a [`FileFindings`] holds before it caps them again: a few times what a
/// file shows, so that capping sorts a few hundred findings once every few hundred made.
const CAP_AGAIN_AT: usize = 4 * MAX_DIAGNOSTICS_PER_FILE;

/// The findings of a stage while it reads a file, capped as they are reported.
///
/// [`FileFindings::finish`] returns exactly what [`truncate`] returns for every finding reported
/// (sorted by position, which is [`sort`]'s order within a file; a hidden exact duplicate, which
/// [`sort`] would drop and no stage reports, is counted), but the findings are capped
/// whenever [`CAP_AGAIN_AT`] of them are held, so a file with a finding per byte holds a few
/// hundred at a time. After the first cap, a finding that comes after the last one shown of its
/// code (when that code shows no more) or of its file (when the file shows no more) would be
/// hidden whatever is reported later; [`FileFindings::report`] then only counts it, without
/// making its message, so such a finding costs a comparison and a count.
#[derive(Debug, Default)]
pub struct FileFindings {
    /// The findings that may still be shown, and the notes of earlier caps.
    kept: Vec<Diagnostic>,
    /// The findings counted without being made since the last cap, per file.
    counted: BTreeMap<FileId, FileCap>,
    /// As of the last cap, per file and code (and per file, as `None`) whose cap is full: the
    /// position of the last finding shown.
    full: BTreeMap<(FileId, Option<Code>), (u32, u32)>,
    /// How many findings were reported, shown or not.
    reported: usize,
}

impl FileFindings {
    /// No findings yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a finding that `make` builds, with the code, severity and primary span it will
    /// have; `make` is not called when the cap hides the finding anyway.
    pub fn report(
        &mut self,
        code: Code,
        severity: Severity,
        span: Span,
        make: impl FnOnce() -> Diagnostic,
    ) {
        self.reported += 1;
        if self.hides(code, span) {
            self.count(code, severity, span);
        } else {
            self.keep(make());
        }
    }

    /// Records a finding that is already made.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.reported += 1;
        match diagnostic.primary_span() {
            Some(span)
                if diagnostic.code != Code::DiagnosticsTruncated
                    && self.hides(diagnostic.code, span) =>
            {
                self.count(diagnostic.code, diagnostic.severity, span);
            }
            _ => self.keep(diagnostic),
        }
    }

    /// How many findings were reported so far, shown or not: a reader compares counts to tell
    /// whether something it read was refused.
    pub fn reported(&self) -> usize {
        self.reported
    }

    /// The findings capped as [`truncate`] caps them, sorted by position.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        if !self.kept.is_empty() || !self.counted.is_empty() {
            self.cap();
        }
        self.kept
    }

    /// Whether a finding of `code` at `span` comes after the last shown finding of a full cap.
    fn hides(&self, code: Code, span: Span) -> bool {
        let at = (span.start, span.end);
        [Some(code), None].into_iter().any(|code| {
            self.full
                .get(&(span.file, code))
                .is_some_and(|last| at > *last)
        })
    }

    fn count(&mut self, code: Code, severity: Severity, span: Span) {
        let cap = self.counted.entry(span.file).or_default();
        let (errors, warnings) = match severity {
            Severity::Error => (1, 0),
            Severity::Warning => (0, 1),
        };
        cap.add(code, errors, warnings);
        // Counted findings come in any order: the note stands at the first of them.
        if cap
            .first_hidden
            .is_none_or(|first| (span.start, span.end) < (first.start, first.end))
        {
            cap.first_hidden = Some(span);
        }
    }

    fn keep(&mut self, diagnostic: Diagnostic) {
        self.kept.push(diagnostic);
        if self.kept.len() >= CAP_AGAIN_AT {
            self.cap();
        }
    }

    /// Caps what is held: the counted findings join as the notes of a cap, whose counts the
    /// next cap merges, as a cap merges an earlier one's.
    fn cap(&mut self) {
        let mut all = std::mem::take(&mut self.kept);
        all.extend(
            std::mem::take(&mut self.counted)
                .into_values()
                .filter_map(FileCap::finish),
        );
        all.sort_by(|left, right| position_key(left).cmp(&position_key(right)));
        all.dedup();
        self.kept = cap_files(all);
        let mut shown: BTreeMap<(FileId, Option<Code>), usize> = BTreeMap::new();
        self.full.clear();
        for diagnostic in &self.kept {
            let Some(span) = diagnostic.primary_span() else {
                continue;
            };
            if diagnostic.code == Code::DiagnosticsTruncated {
                continue;
            }
            for (key, limit) in [
                (
                    (span.file, Some(diagnostic.code)),
                    MAX_DIAGNOSTICS_PER_CODE_PER_FILE,
                ),
                ((span.file, None), MAX_DIAGNOSTICS_PER_FILE),
            ] {
                let count = shown.entry(key).or_insert(0);
                *count += 1;
                if *count == limit {
                    self.full.insert(key, (span.start, span.end));
                }
            }
        }
    }
}

/// [`sort`]'s key without the path: the same order within one file.
fn position_key(diagnostic: &Diagnostic) -> (Option<FileId>, u32, u32, &'static str, &str) {
    let span = diagnostic.primary_span();
    (
        span.map(|span| span.file),
        span.map_or(0, |span| span.start),
        span.map_or(0, |span| span.end),
        diagnostic.code.as_str(),
        diagnostic.message.as_str(),
    )
}

/// What [`truncate`] knows about the file it is in (or, for the cap of the whole run, about
/// the diagnostics after the last one shown).
#[derive(Debug, Default)]
struct FileCap {
    /// Whether this counts what the cap of the whole run hides, not one file's.
    run: bool,
    shown: usize,
    shown_per_code: BTreeMap<Code, usize>,
    hidden: BTreeMap<Code, Hidden>,
    first_hidden: Option<Span>,
    any_hidden_error: bool,
}

impl FileCap {
    /// Returns the diagnostic if it is to be shown, or counts it as hidden.
    fn admit(&mut self, diagnostic: Diagnostic) -> Option<Diagnostic> {
        // An earlier cap of part of this file's diagnostics: its counts join this one's, so
        // capping early (to bound memory) and capping once at the end report the same.
        if diagnostic.code == Code::DiagnosticsTruncated {
            self.hide(&diagnostic);
            return None;
        }
        let of_code = self.shown_per_code.entry(diagnostic.code).or_insert(0);
        if self.shown < MAX_DIAGNOSTICS_PER_FILE && *of_code < MAX_DIAGNOSTICS_PER_CODE_PER_FILE {
            *of_code += 1;
            self.shown += 1;
            return Some(diagnostic);
        }
        self.hide(&diagnostic);
        None
    }

    /// Counts a diagnostic that is not shown: itself, or, for an earlier
    /// `diagnostics-truncated` one, the findings it counted.
    fn hide(&mut self, diagnostic: &Diagnostic) {
        if diagnostic.code == Code::DiagnosticsTruncated {
            for earlier in &diagnostic.hidden {
                self.add(earlier.code, earlier.errors, earlier.warnings);
            }
        } else {
            let (errors, warnings) = diagnostic.finding_counts();
            self.add(diagnostic.code, errors, warnings);
        }
        if self.first_hidden.is_none() {
            self.first_hidden = diagnostic.primary_span();
        }
    }

    /// Counts hidden findings of one code.
    fn add(&mut self, code: Code, errors: usize, warnings: usize) {
        let hidden = self.hidden.entry(code).or_insert(Hidden {
            code,
            errors: 0,
            warnings: 0,
        });
        hidden.errors += errors;
        hidden.warnings += warnings;
        self.any_hidden_error |= errors > 0;
    }

    /// The `diagnostics-truncated` diagnostic of the file, if anything was hidden.
    fn finish(self) -> Option<Diagnostic> {
        if self.hidden.is_empty() {
            return None;
        }
        let hidden: Vec<Hidden> = self.hidden.into_values().collect();
        let total: usize = hidden.iter().map(|h| h.errors + h.warnings).sum();
        let severity = if self.any_hidden_error {
            Severity::Error
        } else {
            Severity::Warning
        };
        let notes = hidden
            .iter()
            .map(|h| {
                let count = |number: usize, word: &str| {
                    format!("{number} {word}{}", if number == 1 { "" } else { "s" })
                };
                let parts: Vec<String> = [(h.errors, "error"), (h.warnings, "warning")]
                    .into_iter()
                    .filter(|(number, _)| *number > 0)
                    .map(|(number, word)| count(number, word))
                    .collect();
                format!("`{}` not shown: {}", h.code.as_str(), parts.join(" and "))
            })
            .collect();
        let message = format!(
            "{total} more diagnostic{} {} {} not shown",
            if total == 1 { "" } else { "s" },
            if self.run {
                "from here on"
            } else {
                "in this file"
            },
            if total == 1 { "is" } else { "are" }
        );
        let help = if self.run {
            format!(
                "fix the diagnostics shown and run again; at most {MAX_DIAGNOSTICS_PER_RUN} are \
                 shown per run"
            )
        } else {
            format!(
                "fix the diagnostics shown and run again; at most {MAX_DIAGNOSTICS_PER_FILE} are \
                 shown per file, and {MAX_DIAGNOSTICS_PER_CODE_PER_FILE} of one code"
            )
        };
        let mut diagnostic = Diagnostic {
            code: Code::DiagnosticsTruncated,
            severity,
            message,
            labels: Vec::new(),
            notes,
            help,
            hidden,
        };
        if let Some(span) = self.first_hidden {
            diagnostic.labels.push(Label {
                span,
                message: "the first diagnostic not shown is here".to_string(),
                primary: true,
            });
        }
        Some(diagnostic)
    }
}

/// Sorts diagnostics by file path, position and code, and drops exact duplicates.
pub fn sort(diagnostics: &mut Vec<Diagnostic>, sources: &SourceMap) {
    diagnostics.sort_by(|left, right| sort_key(left, sources).cmp(&sort_key(right, sources)));
    diagnostics.dedup();
}

fn sort_key<'a>(
    diagnostic: &'a Diagnostic,
    sources: &'a SourceMap,
) -> (&'a str, u32, u32, &'static str, &'a str) {
    let span = diagnostic.primary_span();
    (
        span.map_or("", |span| sources.path(span.file)),
        span.map_or(0, |span| span.start),
        span.map_or(0, |span| span.end),
        diagnostic.code.as_str(),
        diagnostic.message.as_str(),
    )
}

/// Suggests the closest candidate to `wanted`, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(f64, &'a str)> = None;
    let wanted = wanted.to_lowercase();
    for candidate in candidates {
        let score = strsim::jaro_winkler(&wanted, &candidate.to_lowercase());
        if score >= 0.8 && best.is_none_or(|(best_score, _)| score > best_score) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Formats a list of names for a help line: `a`, `b` and `c`.
pub fn list_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|name| format!("`{name}`")).collect();
    match names.as_slice() {
        [] => "none".to_string(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_finds_close_typos_only() {
        let fields = ["trust", "team", "org", "groups"];
        assert_eq!(did_you_mean("trsut", fields), Some("trust"));
        assert_eq!(did_you_mean("gruops", fields), Some("groups"));
        assert_eq!(did_you_mean("chargeback", fields), None);
    }

    /// `count` errors of `code` in one file, one per byte, after `offset`.
    fn errors_at(file: FileId, code: Code, offset: usize, count: usize) -> Vec<Diagnostic> {
        (offset..offset + count)
            .map(|at| {
                Diagnostic::error(code, Span::new(file, at..at + 1), format!("finding {at}"))
                    .with_help("fix it")
            })
            .collect()
    }

    #[test]
    fn every_text_of_a_diagnostic_is_printable() {
        let mut sources = SourceMap::new();
        let span = Span::new(sources.add("tenants/a.kdl", ""), 0..0);
        let hostile = "a\nb\u{1b}[2J\u{202e}c\u{2028}\t\0";
        let diagnostic = Diagnostic::error(Code::FieldUnknown, span, hostile)
            .with_label(hostile)
            .with_secondary(span, hostile)
            .with_note(hostile)
            .with_help(hostile);
        let expected = "a\\u{a}b\\u{1b}[2J\\u{202e}c\\u{2028}\\u{9}\\u{0}";
        assert_eq!(diagnostic.message, expected);
        assert!(
            diagnostic
                .labels
                .iter()
                .all(|label| label.message == expected)
        );
        assert_eq!(diagnostic.notes, [expected]);
        assert_eq!(diagnostic.help, expected);
        // Plain text is kept as it is.
        let plain = Diagnostic::error(Code::FieldUnknown, span, "tenant has no `x` é 字");
        assert_eq!(plain.message, "tenant has no `x` é 字");
    }

    #[test]
    fn capping_part_of_a_file_early_reports_the_same_as_capping_once() {
        // The compiler caps each file's parse and schema findings as soon as it has them (so a
        // hostile file cannot hold memory for all of them) and caps everything again at the end.
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(100_000));
        let other = sources.add("tenants/b.kdl", "x".repeat(100_000));
        let codes = [Code::FieldUnknown, Code::TypeMismatch, Code::NameInvalid];
        let mut rng = crate::testing::Rng(0x1234_5678_9abc_def1);
        let mut next = |bound: usize| rng.below(bound);
        for _ in 0..200 {
            let mut early = Vec::new();
            let mut late = Vec::new();
            // Distinct positions: `sort` drops exact duplicates, which the compiler's stages
            // never report twice.
            for idx in 0..next(700) {
                let at = idx * 100 + next(100);
                let code = codes[next(codes.len())];
                let target = if next(4) == 0 { other } else { file };
                let diagnostic = if next(3) == 0 {
                    Diagnostic::warning(code, Span::new(target, at..at + 1), format!("w{at}"))
                } else {
                    Diagnostic::error(code, Span::new(target, at..at + 1), format!("e{at}"))
                }
                .with_help("h");
                if next(2) == 0 {
                    early.push(diagnostic);
                } else {
                    late.push(diagnostic);
                }
            }
            let mut all: Vec<Diagnostic> = early.iter().chain(&late).cloned().collect();
            sort(&mut all, &sources);
            let once = truncate(all);
            sort(&mut early, &sources);
            let mut twice = truncate(early);
            twice.extend(late);
            sort(&mut twice, &sources);
            let twice = truncate(twice);
            assert_eq!(once, twice);
        }
    }

    #[test]
    fn capping_as_findings_are_reported_gives_what_capping_once_gives() {
        // Files added in path order, so that `FileFindings`' order (by file id) is `sort`'s.
        let mut sources = SourceMap::new();
        let files = [
            sources.add("tenants/a.kdl", "x".repeat(100_000)),
            sources.add("tenants/b.kdl", "x".repeat(100_000)),
        ];
        // Six codes, so that a file can show its whole cap of findings.
        let codes = [
            Code::FieldUnknown,
            Code::TypeMismatch,
            Code::KdlUnsupported,
            Code::KdlSyntax,
            Code::DocumentShape,
            Code::NameInvalid,
        ];
        let mut rng = crate::testing::Rng(0x0bad_cafe_1234_5678);
        for round in 0..300 {
            // Mostly in source order, as stages report, with stretches out of order; in every
            // other round many findings share a span (the messages keep them distinct), so the
            // order of code and message decides what is shown.
            let mut findings = Vec::new();
            let mut at = 0;
            let count = [10, 300, 1_500, 5_000][round % 4];
            let dense = round % 8 >= 4;
            for idx in 0..count {
                at = if dense {
                    rng.below(40)
                } else if rng.below(10) == 0 {
                    rng.below(100_000)
                } else {
                    at + rng.below(3)
                };
                let file = files[usize::from(rng.below(8) == 0)];
                let code = codes[rng.below(codes.len())];
                let span = Span::new(file, at..at + rng.below(3));
                // Distinct, in an order of their own.
                let message = format!("finding {} {idx}", rng.below(1_000));
                findings.push(if rng.below(4) == 0 {
                    Diagnostic::warning(code, span, message)
                } else {
                    Diagnostic::error(code, span, message)
                });
            }
            let mut all = findings.clone();
            sort(&mut all, &sources);
            let once = truncate(all);
            let mut capped = FileFindings::new();
            for finding in findings {
                if rng.below(2) == 0 {
                    capped.push(finding);
                } else {
                    let (code, severity) = (finding.code, finding.severity);
                    let span = finding.primary_span().unwrap();
                    capped.report(code, severity, span, || finding);
                }
                assert!(capped.kept.len() < CAP_AGAIN_AT, "round {round}");
            }
            assert_eq!(capped.reported(), count);
            let mut got = capped.finish();
            assert_eq!(got, once, "round {round}");
            // And the compiler's final cap leaves it as it is.
            sort(&mut got, &sources);
            assert_eq!(truncate(got), once, "round {round}");
        }
    }

    #[test]
    fn findings_reported_out_of_order_after_a_cap_land_where_one_cap_puts_them() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(20_000));
        let at = |code: Code, start: usize| {
            Diagnostic::error(
                code,
                Span::new(file, start..start + 1),
                format!("at {start}"),
            )
        };
        // 200 shown at even positions (50 of each of four codes), then enough of a fifth code
        // after them for a cap, which hides all of those.
        let mut findings: Vec<Diagnostic> =
            (0..50).map(|idx| at(Code::KdlSyntax, 2 * idx)).collect();
        for idx in 0..150 {
            let code = [Code::FieldUnknown, Code::TypeMismatch, Code::NameInvalid][idx % 3];
            findings.push(at(code, 100 + 2 * idx));
        }
        findings.extend((0..600).map(|idx| at(Code::DocumentShape, 10_000 + idx)));
        // After the cap: one between the last two shown, which is shown and hides the last;
        // then findings past the last shown of their code, counted at once, the first of them
        // the first finding hidden.
        findings.push(at(Code::ArgumentUnexpected, 397));
        findings.extend((0..40).map(|idx| at(Code::KdlSyntax, 101 + 2 * idx)));
        let mut capped = FileFindings::new();
        for finding in findings.clone() {
            capped.push(finding);
        }
        sort(&mut findings, &sources);
        let once = truncate(findings);
        let note = once.last().unwrap();
        assert_eq!(note.primary_span(), Some(Span::new(file, 101..102)));
        assert!(once.iter().any(|d| d.message == "at 397"));
        assert_eq!(capped.finish(), once);
    }

    #[test]
    fn a_finding_per_element_is_made_only_while_it_may_be_shown() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(200_000));
        let mut capped = FileFindings::new();
        let mut made = 0;
        for at in 0..200_000 {
            let code = if at % 2 == 0 {
                Code::KdlUnsupported
            } else {
                Code::DocumentShape
            };
            capped.report(code, Severity::Error, Span::new(file, at..at + 1), || {
                made += 1;
                Diagnostic::error(code, Span::new(file, at..at + 1), "m").with_help("h")
            });
        }
        // Made until the first cap, then only what comes before the last one shown.
        assert!(made <= CAP_AGAIN_AT, "{made} made");
        let kept = capped.finish();
        assert_eq!(kept.len(), 2 * MAX_DIAGNOSTICS_PER_CODE_PER_FILE + 1);
        assert_eq!(count_findings(&kept), (200_000, 0));
        let note = kept.last().unwrap();
        assert_eq!(note.primary_span(), Some(Span::new(file, 100..101)));
    }

    #[test]
    fn many_files_show_at_most_the_run_cap_and_count_the_rest() {
        let mut sources = SourceMap::new();
        let mut diagnostics = Vec::new();
        for idx in 0..600 {
            let file = sources.add(format!("tenants/t{idx:04}.yaml"), "x".repeat(300));
            // Each file: 4 errors of one code and 300 warnings of another, so files are capped
            // too and their caps' counts must reach the run's cap.
            diagnostics.extend(errors_at(file, Code::FieldUnknown, 0, 4));
            diagnostics.extend((0..300).map(|at| {
                Diagnostic::warning(Code::FileIgnored, Span::new(file, at..at), "w").with_help("h")
            }));
        }
        sort(&mut diagnostics, &sources);
        let before = count_findings(&diagnostics);
        let kept = truncate(diagnostics);
        assert_eq!(kept.len(), MAX_DIAGNOSTICS_PER_RUN + 1);
        assert_eq!(count_findings(&kept), before);
        let last = kept.last().unwrap();
        assert_eq!(last.code, Code::DiagnosticsTruncated);
        assert!(last.is_error(), "hidden errors keep the run failing");
        assert!(last.message.contains("from here on"), "{}", last.message);
        assert!(
            last.primary_span().is_some(),
            "located at the first one not shown"
        );
        // Still sorted: the note stands at the first diagnostic it hides.
        let mut resorted = kept.clone();
        sort(&mut resorted, &sources);
        assert_eq!(resorted, kept);
    }

    #[test]
    fn truncation_caps_each_code_and_each_file_and_counts_the_rest() {
        let mut sources = SourceMap::new();
        let first = sources.add("tenants/a.kdl", "x".repeat(10_000));
        let second = sources.add("tenants/b.kdl", "x".repeat(10_000));
        let mut diagnostics = errors_at(first, Code::FieldUnknown, 0, 6_000);
        diagnostics.extend(errors_at(first, Code::TypeMismatch, 6_000, 10));
        diagnostics.extend(errors_at(second, Code::FieldUnknown, 0, 3));
        sort(&mut diagnostics, &sources);
        let before = count_findings(&diagnostics);
        let kept = truncate(diagnostics);
        // One code is capped per file, the other code of the file is still shown in full.
        let of = |file: FileId, code: Code| {
            kept.iter()
                .filter(|d| d.code == code && d.primary_span().is_some_and(|s| s.file == file))
                .count()
        };
        assert_eq!(
            of(first, Code::FieldUnknown),
            MAX_DIAGNOSTICS_PER_CODE_PER_FILE
        );
        assert_eq!(of(first, Code::TypeMismatch), 10);
        assert_eq!(of(second, Code::FieldUnknown), 3);
        assert_eq!(of(first, Code::DiagnosticsTruncated), 1);
        assert_eq!(of(second, Code::DiagnosticsTruncated), 0);
        // The note closes its file's findings and counts exactly what is missing.
        let note_at = kept
            .iter()
            .position(|d| d.code == Code::DiagnosticsTruncated)
            .unwrap();
        assert_eq!(kept[note_at + 1].primary_span().unwrap().file, second);
        let note = &kept[note_at];
        assert_eq!(
            note.hidden,
            vec![Hidden {
                code: Code::FieldUnknown,
                errors: 6_000 - MAX_DIAGNOSTICS_PER_CODE_PER_FILE,
                warnings: 0,
            }]
        );
        assert!(note.is_error());
        assert_eq!(
            note.message,
            "5950 more diagnostics in this file are not shown"
        );
        assert_eq!(
            note.primary_span(),
            Some(Span::new(first, 50..51)),
            "the label points at the first finding not shown"
        );
        assert!(!note.help.is_empty());
        assert_eq!(count_findings(&kept), before);
    }

    #[test]
    fn truncation_caps_a_file_with_many_codes() {
        let mut sources = SourceMap::new();
        let file = sources.add("cells/c.kdl", "x".repeat(10_000));
        let mut diagnostics = Vec::new();
        for (idx, code) in Code::ALL.iter().take(6).enumerate() {
            diagnostics.extend(errors_at(file, *code, idx * 1_000, 45));
        }
        sort(&mut diagnostics, &sources);
        let kept = truncate(diagnostics);
        assert_eq!(kept.len(), MAX_DIAGNOSTICS_PER_FILE + 1);
        let note = kept.last().unwrap();
        assert_eq!(note.code, Code::DiagnosticsTruncated);
        assert_eq!(
            note.finding_counts(),
            (6 * 45 - MAX_DIAGNOSTICS_PER_FILE, 0)
        );
    }

    #[test]
    fn truncation_keeps_hidden_errors_errors() {
        // The shown findings are warnings and the hidden ones errors: the run still has errors.
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(1_000));
        let mut diagnostics: Vec<Diagnostic> = (0..MAX_DIAGNOSTICS_PER_CODE_PER_FILE)
            .map(|at| {
                Diagnostic::warning(Code::FileIgnored, Span::new(file, at..at), "w").with_help("h")
            })
            .collect();
        diagnostics.extend(errors_at(file, Code::FileIgnored, 500, 1));
        diagnostics.push(
            Diagnostic::warning(Code::FileIgnored, Span::new(file, 600..600), "w").with_help("h"),
        );
        sort(&mut diagnostics, &sources);
        let kept = truncate(diagnostics);
        let note = kept.last().unwrap();
        assert!(kept.iter().any(Diagnostic::is_error));
        assert!(note.is_error());
        assert_eq!(note.finding_counts(), (1, 1));
        assert_eq!(
            note.notes,
            ["`file-ignored` not shown: 1 error and 1 warning"]
        );
    }

    #[test]
    fn truncation_leaves_small_runs_alone() {
        let mut sources = SourceMap::new();
        let file = sources.add("tenants/a.kdl", "x".repeat(1_000));
        let mut diagnostics = errors_at(file, Code::FieldUnknown, 0, 50);
        sort(&mut diagnostics, &sources);
        assert_eq!(truncate(diagnostics.clone()), diagnostics);
    }

    #[test]
    fn list_names_joins_with_and() {
        assert_eq!(list_names(["a"]), "`a`");
        assert_eq!(list_names(["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(list_names([]), "none");
    }
}
