//! The one diagnostic type of the compiler.
//!
//! Consumes: findings from every stage. Produces: [`Diagnostic`] values that the human and
//! JSON renderers in [`render`] both work from.
//!
//! Invariant: every diagnostic carries a [`Code`], a lowercase message without a final period,
//! and a help line; every diagnostic about a file carries a primary label in that file.

pub mod code;
pub mod render;

pub use code::Code;

use crate::source::{SourceMap, Span};

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
            message: message.into(),
            labels: vec![Label {
                span,
                message: String::new(),
                primary: true,
            }],
            notes: Vec::new(),
            help: String::new(),
        }
    }

    /// Sets the text of the primary label.
    pub fn with_label(mut self, message: impl Into<String>) -> Self {
        if let Some(label) = self.labels.iter_mut().find(|label| label.primary) {
            label.message = message.into();
        }
        self
    }

    /// Adds a secondary label.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = help.into();
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
    for candidate in candidates {
        let score = strsim::jaro_winkler(&wanted.to_lowercase(), &candidate.to_lowercase());
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

    #[test]
    fn list_names_joins_with_and() {
        assert_eq!(list_names(["a"]), "`a`");
        assert_eq!(list_names(["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(list_names([]), "none");
    }
}
