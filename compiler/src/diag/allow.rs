//! Silencing warnings with a reason: the `allow` entries of the declarations.
//!
//! Consumes: a parsed [`Document`], and later the sorted diagnostics of a run. Produces: the
//! [`Allow`]s of the document (taken out of its tree, so the schema reader never sees them),
//! `allow-invalid` errors for malformed ones, and, when applied, the diagnostics that remain,
//! the [`Suppressed`] ones with their reason, and an `allow-unused` warning per allow that
//! silenced nothing.
//!
//! An allow applies to the node it is written in and everything inside it; one written directly
//! in the `tenant` or `cell` declaration (or at the top of a YAML file) applies to the whole file.
//! Only a KDL child node or a YAML list named `allow` is an allow entry: a scalar of that name
//! (a YAML label key, a KDL property) is data, left in the tree for the schema.
//! Invariants: only warnings are ever silenced, never errors, so an allow cannot change whether
//! a build fails; every allow has a known code and a reason; an allow is reported unused only
//! when the run has no error (an error stops the later stages, whose warnings it may be for).

use super::{Code, Diagnostic, FileFindings, Severity};
use crate::parse::{Document, Format, Node, Value};
use crate::source::Span;

/// The key of an allow entry, in both syntaxes.
pub const KEY: &str = "allow";

/// One `allow` entry of a declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    /// The code it silences.
    pub code: Code,
    /// Why the warning is acknowledged, as written.
    pub reason: String,
    /// Where the entry is written.
    pub span: Span,
    /// The node it applies to: a warning is silenced when its primary span lies inside.
    pub scope: Span,
}

/// A warning silenced by an allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppressed {
    /// The warning, as it would have been shown.
    pub diagnostic: Diagnostic,
    /// The reason of the allow that silenced it.
    pub reason: String,
    /// Where that allow is written.
    pub allow: Span,
}

/// Takes every `allow` entry out of a document's tree and returns the valid ones, with an
/// `allow-invalid` error for each malformed one.
pub fn extract(document: &mut Document) -> (Vec<Allow>, Vec<Diagnostic>) {
    let mut allows = Vec::new();
    // Through the file's cap as they are found: a file may hold an allow per line.
    let mut diagnostics = FileFindings::new();
    if let Some(root) = document.root.as_mut() {
        // An allow of the declaration itself covers the whole file, comments and all.
        let whole_file = Span {
            file: root.node.span.file,
            start: 0,
            end: u32::MAX,
        };
        walk(&mut root.node, whole_file, &mut allows, &mut diagnostics);
    }
    (allows, diagnostics.finish())
}

/// Takes the allows out of `node` (which covers `scope`) and out of every node inside it.
fn walk(node: &mut Node, scope: Span, allows: &mut Vec<Allow>, diagnostics: &mut FileFindings) {
    match &mut node.value {
        Value::Map(map) => {
            let entries = std::mem::take(&mut map.entries);
            for mut entry in entries {
                // Only a KDL node or a YAML list is an allow entry; a scalar named `allow` (a
                // YAML label key, a KDL property) is data, left for the schema to judge.
                let is_allow = entry.key == KEY
                    && matches!(
                        (&entry.value.value, map.format),
                        (Value::Map(_), Format::Kdl) | (Value::Seq(_), Format::Yaml)
                    );
                if is_allow {
                    read_allow(
                        map.format,
                        &entry.value,
                        entry.key_span,
                        scope,
                        allows,
                        diagnostics,
                    );
                    continue;
                }
                let inner = extent(&entry.value);
                walk(&mut entry.value, inner, allows, diagnostics);
                map.entries.push(entry);
            }
        }
        Value::Seq(items) => {
            for item in items {
                let inner = extent(item);
                walk(item, inner, allows, diagnostics);
            }
        }
        _ => {}
    }
}

/// The source range a node covers with everything inside it: a KDL node's own span is its name,
/// so its children and values widen it.
fn extent(node: &Node) -> Span {
    let mut span = node.span;
    let mut widen = |other: Span| {
        if other.file == span.file {
            span.start = span.start.min(other.start);
            span.end = span.end.max(other.end);
        }
    };
    match &node.value {
        Value::Map(map) => {
            for arg in &map.args {
                widen(extent(arg));
            }
            for entry in &map.entries {
                widen(entry.key_span);
                widen(extent(&entry.value));
            }
        }
        Value::Seq(items) => {
            for item in items {
                widen(extent(item));
            }
        }
        _ => {}
    }
    span
}

/// Reads one `allow` entry: in KDL `allow "<code>" reason="<why>"` (repeatable), in YAML a
/// list of `{code: <code>, reason: <why>}`.
fn read_allow(
    format: Format,
    value: &Node,
    key_span: Span,
    scope: Span,
    allows: &mut Vec<Allow>,
    diagnostics: &mut FileFindings,
) {
    match (&value.value, format) {
        (Value::Map(map), Format::Kdl) => {
            let code = match map.args.as_slice() {
                [code] => Some(code),
                _ => None,
            };
            let reason = map.entries.iter().find(|entry| entry.key == "reason");
            let extra = map.entries.iter().find(|entry| entry.key != "reason");
            one_allow(
                code,
                reason.map(|entry| &entry.value),
                extra.map(|entry| (entry.key.as_str(), entry.key_span)),
                extent(value),
                scope,
                allows,
                diagnostics,
            );
        }
        (Value::Seq(items), Format::Yaml) => {
            for item in items {
                let Value::Map(map) = &item.value else {
                    diagnostics.push(malformed(item.span, "an `allow` item is not a mapping"));
                    continue;
                };
                let field = |key: &str| {
                    map.entries
                        .iter()
                        .find(|entry| entry.key == key)
                        .map(|entry| &entry.value)
                };
                let extra = map
                    .entries
                    .iter()
                    .find(|entry| entry.key != "code" && entry.key != "reason");
                one_allow(
                    field("code"),
                    field("reason"),
                    extra.map(|entry| (entry.key.as_str(), entry.key_span)),
                    item.span,
                    scope,
                    allows,
                    diagnostics,
                );
            }
        }
        _ => diagnostics.push(malformed(
            key_span,
            match format {
                Format::Kdl => "`allow` takes a code and a `reason`",
                Format::Yaml => "`allow` is not a list of codes with reasons",
            },
        )),
    }
}

/// An `allow-invalid` error about the shape of an entry.
fn malformed(span: Span, message: &str) -> Diagnostic {
    Diagnostic::error(Code::AllowInvalid, span, message)
        .with_label("expected a code and a reason")
        .with_help(
            "write `allow \"<code>\" reason=\"<why>\"` in KDL, or `allow: [{code: <code>, reason: <why>}]` in YAML",
        )
}

/// Checks one entry's code and reason, and keeps it if both are sound.
fn one_allow(
    code: Option<&Node>,
    reason: Option<&Node>,
    extra: Option<(&str, Span)>,
    span: Span,
    scope: Span,
    allows: &mut Vec<Allow>,
    diagnostics: &mut FileFindings,
) {
    if let Some((key, key_span)) = extra {
        diagnostics.push(
            Diagnostic::error(
                Code::AllowInvalid,
                key_span,
                format!("`allow` has no field `{key}`"),
            )
            .with_label("unknown field")
            .with_help("an `allow` has a code and a `reason`, nothing else"),
        );
        return;
    }
    let Some(Node {
        value: Value::Str(name),
        span: code_span,
    }) = code
    else {
        diagnostics.push(malformed(
            code.map_or(span, |node| node.span),
            "`allow` names no diagnostic code",
        ));
        return;
    };
    let Some(found) = Code::ALL.iter().copied().find(|code| code.as_str() == name) else {
        let hint = super::did_you_mean(name, Code::ALL.iter().map(|code| code.as_str()))
            .map_or("not a diagnostic code".to_string(), |close| {
                format!("did you mean `{close}`?")
            });
        diagnostics.push(
            Diagnostic::error(
                Code::AllowInvalid,
                *code_span,
                format!("`{name}` is not a diagnostic code"),
            )
            .with_label(hint)
            .with_help("`tenantc explain` lists every code with its severity"),
        );
        return;
    };
    let reason_text = match reason {
        Some(Node {
            value: Value::Str(text),
            ..
        }) if !text.trim().is_empty() => text.trim().to_string(),
        _ => {
            diagnostics.push(
                Diagnostic::error(
                    Code::AllowInvalid,
                    reason.map_or(span, |node| node.span),
                    format!("the `allow` of `{name}` gives no reason"),
                )
                .with_label("a reason is required")
                .with_help(
                    "say why the warning is acknowledged, such as `reason=\"H200 tables confirmed with NVIDIA, ticket 123\"`",
                ),
            );
            return;
        }
    };
    allows.push(Allow {
        code: found,
        reason: reason_text,
        span,
        scope,
    });
}

/// Whether `inner` lies inside `scope`.
fn covers(scope: Span, inner: Span) -> bool {
    scope.file == inner.file && scope.start <= inner.start && inner.end <= scope.end
}

/// Silences every warning an allow covers, and, when `report_unused` is set, reports each
/// allow that silenced nothing as `allow-unused`.
///
/// Returns the diagnostics that remain (in their order, then the `allow-unused` warnings) and
/// the silenced ones. Errors are never silenced, nor are `allow-*` findings themselves.
pub fn apply(
    diagnostics: Vec<Diagnostic>,
    allows: &[Allow],
    report_unused: bool,
) -> (Vec<Diagnostic>, Vec<Suppressed>) {
    let mut used = vec![false; allows.len()];
    let mut kept = Vec::with_capacity(diagnostics.len());
    let mut suppressed = Vec::new();
    for diagnostic in diagnostics {
        let silenceable = diagnostic.severity == Severity::Warning
            && diagnostic.hidden.is_empty()
            && !matches!(diagnostic.code, Code::AllowUnused | Code::AllowInvalid);
        let matching = diagnostic.primary_span().and_then(|span| {
            allows
                .iter()
                .enumerate()
                .find(|(_, allow)| allow.code == diagnostic.code && covers(allow.scope, span))
        });
        match matching {
            Some((idx, allow)) if silenceable => {
                if let Some(flag) = used.get_mut(idx) {
                    *flag = true;
                }
                suppressed.push(Suppressed {
                    diagnostic,
                    reason: allow.reason.clone(),
                    allow: allow.span,
                });
            }
            _ => kept.push(diagnostic),
        }
    }
    if report_unused {
        for (allow, _) in allows.iter().zip(&used).filter(|(_, used)| !**used) {
            let blocked_error = kept.iter().any(|diagnostic| {
                diagnostic.code == allow.code
                    && diagnostic.is_error()
                    && diagnostic
                        .primary_span()
                        .is_some_and(|span| covers(allow.scope, span))
            });
            let help = if blocked_error {
                format!(
                    "`{}` is an error here, and errors cannot be silenced: fix the declaration",
                    allow.code.as_str()
                )
            } else {
                format!(
                    "remove the `allow`, or move it to the node whose `{}` warning it acknowledges",
                    allow.code.as_str()
                )
            };
            kept.push(
                Diagnostic::warning(
                    Code::AllowUnused,
                    allow.span,
                    format!("`allow` of `{}` silences nothing", allow.code.as_str()),
                )
                .with_label(format!(
                    "no `{}` warning in the node it applies to",
                    allow.code.as_str()
                ))
                .with_help(help),
            );
        }
    }
    (kept, suppressed)
}

/// Whether `--deny` makes a warning of `code` an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deny {
    /// Every warning (`--deny warnings`).
    pub all: bool,
    /// Warnings of these codes (`--deny <code>`).
    pub codes: Vec<Code>,
}

impl Deny {
    /// Whether nothing is denied.
    pub fn is_empty(&self) -> bool {
        !self.all && self.codes.is_empty()
    }

    /// Makes every denied warning an error, with a note that says why, and returns how many
    /// it changed. Silenced warnings stay silenced: an `allow` with a reason is the reviewed
    /// exception to `--deny`.
    pub fn apply(&self, diagnostics: &mut [Diagnostic]) -> usize {
        let mut changed = 0;
        for diagnostic in diagnostics {
            if diagnostic.severity != Severity::Warning {
                continue;
            }
            let flag = if self.all {
                "--deny warnings".to_string()
            } else if self.codes.contains(&diagnostic.code) {
                format!("--deny {}", diagnostic.code.as_str())
            } else {
                continue;
            };
            diagnostic.severity = Severity::Error;
            diagnostic
                .notes
                .push(format!("a warning made an error by `{flag}`"));
            for hidden in &mut diagnostic.hidden {
                hidden.errors += hidden.warnings;
                hidden.warnings = 0;
            }
            changed += 1;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{FileId, SourceMap};

    fn allows_of(path: &str, text: &str) -> (Vec<Allow>, Vec<Code>, SourceMap) {
        let mut sources = SourceMap::new();
        let file = sources.add(path, text.to_string());
        let format = if path.ends_with(".kdl") {
            Format::Kdl
        } else {
            Format::Yaml
        };
        let (mut document, parse) = crate::parse::parse(file, text, format);
        assert!(parse.is_empty(), "{parse:?}");
        let (allows, diagnostics) = extract(&mut document);
        // Nothing named `allow` is left for the schema reader.
        let remaining = format!("{:?}", document.root);
        assert!(!remaining.contains("\"allow\""), "{remaining}");
        let codes = diagnostics.iter().map(|d| d.code).collect();
        (allows, codes, sources)
    }

    #[test]
    fn reads_allows_in_both_syntaxes_with_the_node_they_apply_to() {
        let kdl = "cell \"c\" {\n  allow \"file-ignored\" reason=\"notes live here\"\n  pool \"p\" {\n    allow \"mig-table-inferred\" reason=\"confirmed, ticket 123\"\n  }\n}\n";
        let (allows, errors, _) = allows_of("cells/c.kdl", kdl);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(allows.len(), 2);
        assert_eq!(allows[0].code, Code::FileIgnored);
        assert_eq!(allows[0].scope.end, u32::MAX);
        assert_eq!(allows[1].code, Code::MigTableInferred);
        assert_eq!(allows[1].reason, "confirmed, ticket 123");
        let pool_start = u32::try_from(kdl.find("pool").unwrap()).unwrap();
        assert!(allows[1].scope.start >= pool_start && allows[1].scope.end < u32::MAX);
        let yaml = "name: c\nallow:\n  - code: mig-table-inferred\n    reason: confirmed\n";
        let (allows, errors, _) = allows_of("cells/c.yaml", yaml);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(allows.len(), 1);
        assert_eq!(allows[0].scope.end, u32::MAX);
    }

    /// A label or group key `allow` in a YAML mapping is data, not an allow entry: only a list
    /// (YAML) or a node (KDL) named `allow` is one.
    #[test]
    fn leaves_scalar_values_named_allow_to_the_schema() {
        for (path, text) in [
            (
                "cells/c.yaml",
                "name: c\npools:\n  - name: p\n    labels:\n      allow: \"yes\"\n",
            ),
            (
                "tenants/t.kdl",
                "tenant \"t\" allow=\"mig-table-inferred\"\n",
            ),
        ] {
            let mut sources = SourceMap::new();
            let file = sources.add(path, text.to_string());
            let format = if path.ends_with(".kdl") {
                Format::Kdl
            } else {
                Format::Yaml
            };
            let (mut document, _) = crate::parse::parse(file, text, format);
            let before = document.clone();
            let (allows, diagnostics) = extract(&mut document);
            assert!(allows.is_empty() && diagnostics.is_empty(), "{path}");
            assert_eq!(document, before, "{path}");
        }
    }

    #[test]
    fn refuses_allows_without_a_reason_or_with_an_unknown_code() {
        for text in [
            "tenant \"t\" {\n  allow \"mig-table-inferred\"\n}\n",
            "tenant \"t\" {\n  allow \"mig-table-inferred\" reason=\"  \"\n}\n",
            "tenant \"t\" {\n  allow \"mig-table-infered\" reason=\"x\"\n}\n",
            "tenant \"t\" {\n  allow \"mig-table-inferred\" reason=\"x\" until=\"2027\"\n}\n",
            "tenant \"t\" {\n  allow\n}\n",
        ] {
            let (allows, errors, _) = allows_of("tenants/t.kdl", text);
            assert!(allows.is_empty(), "{text}");
            assert_eq!(errors, [Code::AllowInvalid], "{text}");
        }
    }

    fn warning(code: Code, file: FileId, at: usize) -> Diagnostic {
        Diagnostic::warning(code, Span::new(file, at..at + 1), "w").with_help("h")
    }

    #[test]
    fn silences_only_covered_warnings_never_errors_and_reports_unused_allows() {
        let file = FileId(0);
        let other = FileId(1);
        let allow = |code, start, end| Allow {
            code,
            reason: "r".into(),
            span: Span::new(file, start..start + 1),
            scope: Span::new(file, start..end),
        };
        let allows = [
            allow(Code::MigTableInferred, 10, 20),
            allow(Code::FileIgnored, 30, 40),
        ];
        let diagnostics = vec![
            warning(Code::MigTableInferred, file, 12),
            warning(Code::MigTableInferred, file, 25),
            warning(Code::MigTableInferred, other, 12),
            Diagnostic::error(Code::FileIgnored, Span::new(file, 35..36), "e").with_help("h"),
        ];
        let (kept, suppressed) = apply(diagnostics.clone(), &allows, true);
        assert_eq!(suppressed.len(), 1);
        assert_eq!(suppressed[0].diagnostic, diagnostics[0]);
        let codes: Vec<Code> = kept.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            [
                Code::MigTableInferred,
                Code::MigTableInferred,
                Code::FileIgnored,
                Code::AllowUnused
            ]
        );
        assert!(
            kept[3].help.contains("cannot be silenced"),
            "{}",
            kept[3].help
        );
        let (kept, _) = apply(diagnostics, &allows, false);
        assert_eq!(kept.len(), 3);
    }

    /// For generated diagnostics and allows: no error is ever silenced, the errors and the
    /// silenced plus remaining warnings add up to the input, and a warning is silenced exactly
    /// when an allow of its code covers its primary span.
    #[test]
    fn silencing_never_touches_errors_and_loses_nothing() {
        let mut rng = crate::testing::Rng(0x0a11_07ed);
        let codes = [
            Code::MigTableInferred,
            Code::FileIgnored,
            Code::FieldUnknown,
        ];
        for _ in 0..500 {
            let files = [FileId(0), FileId(1)];
            let diagnostics: Vec<Diagnostic> = (0..rng.below(12))
                .map(|_| {
                    let code = codes[rng.below(codes.len())];
                    let file = files[rng.below(2)];
                    let at = rng.below(100);
                    if rng.below(3) == 0 {
                        Diagnostic::error(code, Span::new(file, at..at + 1), "e").with_help("h")
                    } else {
                        warning(code, file, at)
                    }
                })
                .collect();
            let allows: Vec<Allow> = (0..rng.below(4))
                .map(|_| {
                    let file = files[rng.below(2)];
                    let start = rng.below(100);
                    let end = start + rng.below(60);
                    Allow {
                        code: codes[rng.below(codes.len())],
                        reason: "r".into(),
                        span: Span::new(file, start..start + 1),
                        scope: Span::new(file, start..end),
                    }
                })
                .collect();
            let (kept, suppressed) = apply(diagnostics.clone(), &allows, true);
            assert!(suppressed.iter().all(|item| !item.diagnostic.is_error()));
            let errors = |list: &[Diagnostic]| list.iter().filter(|d| d.is_error()).count();
            assert_eq!(errors(&kept), errors(&diagnostics));
            let unused = kept.iter().filter(|d| d.code == Code::AllowUnused).count();
            assert_eq!(kept.len() - unused + suppressed.len(), diagnostics.len());
            for diagnostic in &diagnostics {
                let span = diagnostic.primary_span().unwrap();
                let covered = allows
                    .iter()
                    .any(|allow| allow.code == diagnostic.code && covers(allow.scope, span));
                let silenced = suppressed.iter().any(|item| &item.diagnostic == diagnostic);
                assert_eq!(
                    silenced,
                    covered && !diagnostic.is_error(),
                    "{diagnostic:?}"
                );
            }
            let used = allows
                .iter()
                .filter(|allow| {
                    suppressed
                        .iter()
                        .any(|item| item.allow == allow.span && item.diagnostic.code == allow.code)
                })
                .count();
            assert!(unused + used >= allows.len());
        }
    }

    /// The YAML form silences the same warning as the KDL form, from a pool.
    #[test]
    fn a_yaml_allow_in_a_pool_silences_its_warning_end_to_end() {
        let cell = "name: c1\ncloud: {provider: aws, region: us-east-1}\nkubernetes: \"1.33\"\ndriver: \"575\"\npriorities: [{name: batch, value: 1000}]\npools:\n  - name: b200\n    allow: [{code: mig-table-inferred, reason: \"confirmed, ticket 123\"}]\n    gpu: B200-180GB\n    nodes: {count: 1, gpus-per-node: 8}\n    sharing: mig\n    mig-layouts: [{name: sevens, profiles: {1g.23gb: 7}}]\n";
        let compilation = crate::compile(&[crate::InputFile {
            path: "cells/c1.yaml".into(),
            contents: cell.as_bytes().to_vec(),
        }]);
        let codes: Vec<Code> = compilation.diagnostics.iter().map(|d| d.code).collect();
        assert!(!codes.contains(&Code::MigTableInferred), "{codes:?}");
        assert!(!codes.contains(&Code::AllowUnused), "{codes:?}");
        assert_eq!(compilation.suppressed.len(), 1, "{codes:?}");
        assert_eq!(compilation.suppressed[0].reason, "confirmed, ticket 123");
    }

    #[test]
    fn deny_makes_the_named_warnings_errors() {
        let file = FileId(0);
        let mut diagnostics = vec![
            warning(Code::MigTableInferred, file, 1),
            warning(Code::FileIgnored, file, 2),
        ];
        let deny = Deny {
            all: false,
            codes: vec![Code::FileIgnored],
        };
        assert_eq!(deny.apply(&mut diagnostics), 1);
        assert!(!diagnostics[0].is_error() && diagnostics[1].is_error());
        let all = Deny {
            all: true,
            codes: Vec::new(),
        };
        assert_eq!(all.apply(&mut diagnostics), 1);
        assert!(diagnostics.iter().all(Diagnostic::is_error));
        assert!(diagnostics[0].notes[0].contains("--deny warnings"));
    }
}
