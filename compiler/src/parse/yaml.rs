//! YAML front end, for declarations that a portal generates.
//!
//! Consumes: the text of a `*.yaml` declaration file.
//! Produces: a [`Document`] whose root is the top-level mapping. Plain scalars are typed with
//! the YAML 1.2 core schema (`yes` and `on` stay strings, so a YAML 1.1 habit becomes a type
//! error instead of a silent boolean); quoted scalars are always strings.
//!
//! Invariant: anchors, aliases, tags, complex keys and multiple documents are rejected, so a
//! declaration means the same to every reader; spans are converted from the parser's character
//! positions to byte offsets here.

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span as YamlSpan};

use super::{Document, Entry, Format, Map, Node, Root, Value};
use crate::diag::{Code, Diagnostic, FileFindings, Severity};
use crate::limits::MAX_NESTING;
use crate::source::{CharOffsets, FileId, Span};

/// Parses a YAML file.
pub fn parse(file: FileId, text: &str) -> (Document, Vec<Diagnostic>) {
    parse_counting(file, text).0
}

/// Parses a YAML file and says how many characters the position conversions walked over.
fn parse_counting(file: FileId, text: &str) -> ((Document, Vec<Diagnostic>), u64) {
    // A character YAML does not allow in a stream is named where it stands; the YAML parser
    // would report it as the end of the enclosing scalar or stream, far from it.
    let disallowed = disallowed_code_points(file, text);
    if !disallowed.is_empty() {
        let document = Document {
            file,
            format: Format::Yaml,
            root: None,
        };
        return ((document, disallowed), 0);
    }
    // The parser reports character positions; checkpoints convert them to bytes.
    let positions = CharOffsets::new(text);
    let mut reader = Reader {
        file,
        text,
        positions: &positions,
        parser: Parser::new_from_str(text),
        diagnostics: FileFindings::new(),
        peeked: None,
        depth: 0,
    };
    // A syntax error has been reported already; the file then has no root.
    let node = reader
        .documents(false)
        .ok()
        .and_then(|nodes| nodes.into_iter().next());
    let mut diagnostics = reader.diagnostics;
    let root = match node {
        Some(
            node @ Node {
                value: Value::Map(_),
                ..
            },
        ) => Some(Root { kind: None, node }),
        Some(other) => {
            diagnostics.push(
                Diagnostic::error(
                    Code::DocumentShape,
                    other.span,
                    format!(
                        "a declaration is a mapping, found {}",
                        other.value.type_name()
                    ),
                )
                .with_help("write the declaration as `name: …` followed by its other fields"),
            );
            None
        }
        None => {
            if diagnostics.reported() == 0 {
                diagnostics.push(
                    Diagnostic::error(
                        Code::DocumentShape,
                        Span::new(file, 0..0),
                        "file declares nothing",
                    )
                    .with_help("write one tenant or cell as a YAML mapping"),
                );
            }
            None
        }
    };
    (
        (
            Document {
                file,
                format: Format::Yaml,
                root,
            },
            diagnostics.finish(),
        ),
        positions.steps(),
    )
}

/// Parses a stream of YAML documents, such as the rendered text of a template: every
/// document that holds something, in order, with the same rules as a declaration (no anchors,
/// aliases, tags or complex keys) except that a stream may hold several documents; empty
/// documents (`---` with nothing after it) are left out. Spans are byte offsets into `text`.
pub fn parse_stream(file: FileId, text: &str) -> (Vec<Node>, Vec<Diagnostic>) {
    let disallowed = disallowed_code_points(file, text);
    if !disallowed.is_empty() {
        return (Vec::new(), disallowed);
    }
    let positions = CharOffsets::new(text);
    let mut reader = Reader {
        file,
        text,
        positions: &positions,
        parser: Parser::new_from_str(text),
        diagnostics: FileFindings::new(),
        peeked: None,
        depth: 0,
    };
    let nodes = reader.documents(true).unwrap_or_default();
    (nodes, reader.diagnostics.finish())
}

/// Every character outside YAML 1.2's printable set (`c-printable`: tab, line feed, carriage
/// return, NEL, and the printable ranges), each at its position; at most the diagnostics a file
/// shows, plus one so the cap still reports that more were hidden.
fn disallowed_code_points(file: FileId, text: &str) -> Vec<Diagnostic> {
    text.char_indices()
        .filter(|&(_, ch)| {
            matches!(ch,
                '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{7f}'
                | '\u{80}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
        })
        .take(crate::limits::MAX_DIAGNOSTICS_PER_FILE + 1)
        .map(|(idx, ch)| {
            Diagnostic::error(
                Code::YamlSyntax,
                Span::new(file, idx..idx + ch.len_utf8()),
                format!(
                    "{} is not allowed in a YAML file",
                    super::kdl::code_point_name(ch)
                ),
            )
            .with_label("disallowed character")
            .with_help(
                "remove the character; inside a double-quoted string, write it as an escape \
                 such as `\\0` or `\\x1b` if it is really meant",
            )
        })
        .collect()
}

struct Reader<'a> {
    file: FileId,
    /// The text parsed, to find the tab a tab error is about.
    text: &'a str,
    positions: &'a CharOffsets<'a>,
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    /// Capped as they are reported, like every parse finding (`diag::FileFindings`).
    diagnostics: FileFindings,
    peeked: Option<(Event<'a>, YamlSpan)>,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn offset(&self, marker: &Marker) -> usize {
        self.positions.byte_offset(marker.index())
    }

    fn span(&self, span: &YamlSpan) -> Span {
        Span::new(self.file, self.offset(&span.start)..self.offset(&span.end))
    }

    fn next(&mut self) -> Result<(Event<'a>, YamlSpan), ()> {
        if let Some(peeked) = self.peeked.take() {
            return Ok(peeked);
        }
        match self.parser.next_event() {
            Some(Ok(event)) => Ok(event),
            Some(Err(error)) => {
                self.syntax(&error);
                Err(())
            }
            None => Ok((Event::StreamEnd, YamlSpan::empty(Marker::default()))),
        }
    }

    fn syntax(&mut self, error: &ScanError) {
        let offset = self.offset(error.marker());
        let info = error.info().to_lowercase();
        if let Some(diagnostic) = tab_error(self.file, self.text, offset, &info) {
            self.diagnostics.push(diagnostic);
            return;
        }
        self.diagnostics.push(
            Diagnostic::error(Code::YamlSyntax, Span::new(self.file, offset..offset), info)
                .with_help("check the indentation and quoting near this point"),
        );
    }

    fn unsupported(&mut self, span: Span, what: &str) {
        self.diagnostics
            .report(Code::YamlUnsupported, Severity::Error, span, || {
                Diagnostic::error(
                    Code::YamlUnsupported,
                    span,
                    format!("{what} are not allowed in declarations"),
                )
                .with_help("write every value out in full; declarations use plain YAML only")
            });
    }

    /// Reads the stream: at most one document unless `multi`; an empty stream has none.
    /// A document that holds nothing (`---` alone) is left out.
    fn documents(&mut self, multi: bool) -> Result<Vec<Node>, ()> {
        let mut root = Vec::new();
        loop {
            let (event, span) = self.next()?;
            match event {
                Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
                Event::StreamEnd => return Ok(root),
                Event::DocumentStart(_) => {
                    if !root.is_empty() && !multi {
                        let span = self.span(&span);
                        self.diagnostics.push(
                            Diagnostic::error(
                                Code::DocumentShape,
                                span,
                                "a file declares exactly one tenant or cell",
                            )
                            .with_label("second YAML document")
                            .with_help("move this document into a file of its own"),
                        );
                        return Ok(root);
                    }
                    let (event, span) = self.next()?;
                    if multi && matches!(event, Event::DocumentEnd) {
                        continue;
                    }
                    let node = self.value(event, span)?;
                    if !(multi && node.value == Value::Null) {
                        root.push(node);
                    }
                }
                other => {
                    // A stream without an explicit document start still starts with a value.
                    let node = self.value(other, span)?;
                    if !(multi && node.value == Value::Null) {
                        root.push(node);
                    }
                }
            }
        }
    }

    fn value(&mut self, event: Event<'a>, span: YamlSpan) -> Result<Node, ()> {
        let start = self.span(&span);
        if matches!(event, Event::SequenceStart(..) | Event::MappingStart(..)) {
            self.depth += 1;
            if self.depth > MAX_NESTING {
                self.diagnostics.push(
                    Diagnostic::error(
                        Code::YamlUnsupported,
                        start,
                        format!("lists and mappings nest deeper than {MAX_NESTING} levels"),
                    )
                    .with_help("declarations nest a few levels; check for a runaway `[` or `{`"),
                );
                return Err(());
            }
        }
        let result = self.value_inner(event, start);
        if result.is_ok()
            && matches!(
                result,
                Ok(Node {
                    value: Value::Seq(_) | Value::Map(_),
                    ..
                })
            )
        {
            self.depth = self.depth.saturating_sub(1);
        }
        result
    }

    fn value_inner(&mut self, event: Event<'a>, start: Span) -> Result<Node, ()> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 {
                    self.unsupported(start, "anchors");
                }
                if tag.is_some() {
                    self.unsupported(start, "tags");
                }
                Ok(Node {
                    value: scalar(&text, style),
                    span: start,
                })
            }
            Event::SequenceStart(anchor, tag) => {
                if anchor != 0 {
                    self.unsupported(start, "anchors");
                }
                if tag.is_some() {
                    self.unsupported(start, "tags");
                }
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if let Event::SequenceEnd = event {
                        let end = self.span(&span);
                        return Ok(Node {
                            value: Value::Seq(items),
                            span: Span::new(self.file, start.start as usize..end.end as usize),
                        });
                    }
                    items.push(self.value(event, span)?);
                }
            }
            Event::MappingStart(anchor, tag) => {
                if anchor != 0 {
                    self.unsupported(start, "anchors");
                }
                if tag.is_some() {
                    self.unsupported(start, "tags");
                }
                let mut entries = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    let key_span = self.span(&span);
                    let key = match event {
                        Event::MappingEnd => {
                            return Ok(Node {
                                value: Value::Map(Map {
                                    format: Format::Yaml,
                                    args: Vec::new(),
                                    entries,
                                }),
                                // A mapping is labelled at its first key, as KDL nodes are at
                                // their name: a whole-mapping span would cover many lines.
                                span: Span::new(
                                    self.file,
                                    start.start as usize..start.start as usize,
                                ),
                            });
                        }
                        Event::Scalar(text, _, anchor, tag) => {
                            if anchor != 0 || tag.is_some() {
                                self.unsupported(key_span, "anchors and tags on keys");
                            }
                            text.into_owned()
                        }
                        other => {
                            self.unsupported(key_span, "complex mapping keys");
                            // Read the complex key to stay in step, then drop it.
                            let _ = self.value(other, span)?;
                            String::new()
                        }
                    };
                    let (event, span) = self.next()?;
                    let value = self.value(event, span)?;
                    entries.push(Entry {
                        key,
                        key_span,
                        value,
                    });
                }
            }
            Event::Alias(_) => {
                self.unsupported(start, "aliases");
                Ok(Node {
                    value: Value::Null,
                    span: start,
                })
            }
            _ => Ok(Node {
                value: Value::Null,
                span: start,
            }),
        }
    }
}

/// Types a scalar with the YAML 1.2 core schema.
fn scalar(text: &str, style: ScalarStyle) -> Value {
    if style != ScalarStyle::Plain {
        return Value::Str(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Some(number) = parse_int(text) {
        return Value::Int(number);
    }
    let looks_float = text
        .chars()
        .all(|ch| ch.is_ascii_digit() || matches!(ch, '.' | 'e' | 'E' | '+' | '-'))
        && text.chars().any(|ch| ch.is_ascii_digit());
    if looks_float && let Ok(number) = text.parse::<f64>() {
        return Value::Float(number);
    }
    Value::Str(text.to_string())
}

/// The diagnostic of a syntax error about a tab, at the tab itself: the parser reports some of
/// them where the value before the tab starts, a line or more above it, and in words that never
/// say what is wrong. `None` when the error is not about a tab or no tab is near.
fn tab_error(file: FileId, text: &str, offset: usize, info: &str) -> Option<Diagnostic> {
    // The parser refuses a tab after `:` with a message about whitespace in general, just
    // after the tab.
    let about_tab = info.contains("tab")
        || info.contains("valid yaml whitespace")
            && (text.get(offset..)?.starts_with('\t') || text.get(..offset)?.ends_with('\t'));
    if !about_tab {
        return None;
    }
    let at = find_tab(text, offset)?;
    let line_start = text.get(..at)?.rfind(['\n', '\r']).map_or(0, |idx| idx + 1);
    let indents = text
        .get(line_start..at)?
        .chars()
        .all(|ch| ch == ' ' || ch == '\t');
    let span = Span::new(file, at..at + 1);
    Some(if indents {
        Diagnostic::error(Code::YamlSyntax, span, "tabs cannot indent YAML")
            .with_label("a tab in the indentation")
            .with_help(
                "indent with spaces only: replace the tab with the spaces the lines around it use",
            )
    } else {
        Diagnostic::error(
            Code::YamlSyntax,
            span,
            "a tab cannot separate a YAML value here",
        )
        .with_label("a tab")
        .with_help("write a space instead of the tab")
    })
}

/// The tab a tab error at `offset` is about: the character at `offset`, else the first tab of
/// the blanks just before it on its line, else the first tab in the indentation of a later line.
fn find_tab(text: &str, offset: usize) -> Option<usize> {
    let rest = text.get(offset..)?;
    if rest.starts_with('\t') {
        return Some(offset);
    }
    let before = text.get(..offset)?;
    let blanks = before.len() - before.trim_end_matches([' ', '\t']).len();
    if let Some(idx) = before.get(before.len() - blanks..)?.find('\t') {
        return Some(before.len() - blanks + idx);
    }
    // A later line: the first that holds something and has a tab in its indentation (a tab on a
    // line of blanks only is allowed).
    let mut at = offset + rest.find(['\n', '\r'])?;
    loop {
        let line = text.get(at..)?.trim_start_matches(['\n', '\r']);
        let start = text.len() - line.len();
        let end = line
            .find(['\n', '\r'])
            .map_or(text.len(), |idx| start + idx);
        let content = text.get(start..end)?;
        let indent = content.len() - content.trim_start_matches([' ', '\t']).len();
        if indent < content.len()
            && let Some(idx) = content.get(..indent)?.find('\t')
        {
            return Some(start + idx);
        }
        if end >= text.len() {
            return None;
        }
        at = end;
    }
}

fn parse_int(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if let Some(octal) = digits.strip_prefix("0o") {
        i128::from_str_radix(octal, 8).ok()?
    } else if !digits.is_empty() && digits.chars().all(|ch| ch.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finding_is_capped_as_it_is_reported() {
        // Issue 24: the YAML reader caps its findings as the KDL reader does, so a file with a
        // tag on every line keeps a few hundred findings and counts the rest exactly.
        let tagged = format!(
            "name: a\n{}",
            (0..100_000)
                .map(|idx| format!("k{idx}: !t &a{idx} v\n"))
                .collect::<String>()
        );
        let (_, diagnostics) = parse(FileId(0), &tagged);
        assert!(
            diagnostics.len() <= crate::limits::MAX_DIAGNOSTICS_PER_FILE + 1,
            "{} diagnostics",
            diagnostics.len()
        );
        let shown = diagnostics
            .iter()
            .filter(|d| d.code == Code::YamlUnsupported)
            .count();
        let hidden: usize = diagnostics
            .iter()
            .filter(|d| d.code == Code::DiagnosticsTruncated)
            .flat_map(|d| d.hidden.iter())
            .filter(|h| h.code == Code::YamlUnsupported)
            .map(|h| h.errors)
            .sum();
        // A tag and an anchor on each of the 100,000 values.
        assert_eq!(shown + hidden, 200_000, "{shown} shown, {hidden} hidden");
    }

    #[test]
    fn characters_yaml_does_not_allow_are_named_at_their_position() {
        for ch in ['\u{0}', '\u{1b}', '\u{7f}', '\u{86}', '\u{ffff}'] {
            for line in [
                format!("team: \"data{ch}science\""),
                format!("team: 'data{ch}science'"),
                format!("team: data{ch}science"),
            ] {
                let text = format!("name: a\n{line}\n");
                let (_, diagnostics) = parse(FileId(0), &text);
                assert_eq!(diagnostics.len(), 1, "{line:?}: {diagnostics:?}");
                let diagnostic = &diagnostics[0];
                let at = text.find(ch).unwrap();
                assert_eq!(diagnostic.primary_span().unwrap().start as usize, at);
                assert!(
                    diagnostic
                        .message
                        .contains(&format!("U+{:04X}", u32::from(ch))),
                    "{}",
                    diagnostic.message
                );
            }
        }
        // Tab, NEL and the printable ranges are YAML's own.
        let (_, diagnostics) = parse(FileId(0), "name: a\nteam: \"a\tb\u{85}c\u{e9}\"\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
    }

    fn root(text: &str) -> (Option<Root>, Vec<Diagnostic>) {
        let (document, diagnostics) = parse(FileId(0), text);
        (document.root, diagnostics)
    }

    #[test]
    fn types_plain_scalars_with_the_core_schema() {
        assert_eq!(scalar("64", ScalarStyle::Plain), Value::Int(64));
        assert_eq!(scalar("2.10", ScalarStyle::Plain), Value::Float(2.1));
        assert_eq!(scalar("yes", ScalarStyle::Plain), Value::Str("yes".into()));
        assert_eq!(
            scalar("64", ScalarStyle::DoubleQuoted),
            Value::Str("64".into())
        );
        assert_eq!(scalar("~", ScalarStyle::Plain), Value::Null);
    }

    #[test]
    fn spans_are_bytes_even_after_non_ascii_text() {
        let text = "# caf\u{e9} \u{1f600}\nname: acme\norg: \u{e9}t\u{e9}\n";
        let (root, diagnostics) = root(text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let Value::Map(map) = root.unwrap().node.value else {
            panic!()
        };
        assert_eq!(&text[map.entries[0].key_span.range()], "name");
        assert_eq!(&text[map.entries[0].value.span.range()], "acme");
        assert_eq!(&text[map.entries[1].value.span.range()], "\u{e9}t\u{e9}");
    }

    #[test]
    fn rejects_anchors_and_aliases() {
        let (_, diagnostics) = root("a: &x 1\nb: *x\n");
        let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::YamlUnsupported, Code::YamlUnsupported]);
    }

    #[test]
    fn reports_syntax_errors_with_a_position() {
        let (root, diagnostics) = root("name: a\n  org: [b\n");
        assert!(root.is_none());
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::YamlSyntax);
    }

    /// Issue 18 item 3: a tab error points at the tab, and says that tabs cannot indent YAML,
    /// wherever the parser noticed it (at the value above, or after the tab).
    #[test]
    fn a_tab_error_points_at_the_tab_and_says_tabs_cannot_indent() {
        for text in [
            // The parser stops at the start of `t`, a line above the tab.
            "name: t\nworkloads:\n  - kind: train\n    service-account: t\n\tpriority: x\n",
            // The parser stops after the tab.
            "name: t\ngroups:\n\tadmin: x\n",
            // A tab after spaces, in a nested mapping.
            "name: t\ngroups:\n  admin:\n  \t member: x\n",
        ] {
            let (parsed, diagnostics) = root(text);
            assert!(parsed.is_none());
            assert_eq!(diagnostics.len(), 1, "{text:?}: {diagnostics:?}");
            let diagnostic = &diagnostics[0];
            assert_eq!(diagnostic.code, Code::YamlSyntax);
            assert_eq!(diagnostic.message, "tabs cannot indent YAML", "{text:?}");
            let span = diagnostic.primary_span().unwrap();
            assert_eq!(&text[span.range()], "\t", "{text:?}");
            assert!(diagnostic.help.contains("spaces"), "{}", diagnostic.help);
        }
        // A tab on a line of blanks only is allowed, and is never blamed for a later error.
        let (blank, diagnostics) = root("name: t\n\t\ngroups:\n  admin: x\n");
        assert!(blank.is_some(), "{diagnostics:?}");
        // A tab after `:`, which this parser refuses, is named as such.
        let text = "name: t\norg:\tacme\n";
        let (_, diagnostics) = root(text);
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        assert_eq!(&text[diagnostics[0].primary_span().unwrap().range()], "\t");
        assert_eq!(
            diagnostics[0].message,
            "a tab cannot separate a YAML value here"
        );
    }

    #[test]
    fn rejects_deep_nesting() {
        let deep = format!("name: {}{}\n", "[".repeat(1000), "]".repeat(1000));
        let (root, diagnostics) = root(&deep);
        assert!(root.is_none());
        // saphyr stops at its own recursion limit first; either way it is one finding, no crash.
        assert!(matches!(
            diagnostics[0].code,
            Code::YamlUnsupported | Code::YamlSyntax
        ));
    }

    #[test]
    fn rejects_a_second_document() {
        let (_, diagnostics) = root("---\nname: a\n---\nname: b\n");
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::DocumentShape);
    }

    #[test]
    fn rejects_a_scalar_document() {
        let (root, diagnostics) = root("just text\n");
        assert!(root.is_none());
        assert_eq!(diagnostics[0].code, Code::DocumentShape);
    }

    fn one_line_list(items: usize) -> String {
        let list: Vec<String> = (0..items).map(|idx| format!("r{idx}.io")).collect();
        format!("name: a\nregistries: [{}]\n", list.join(", "))
    }

    #[test]
    fn position_conversion_is_linear_in_the_file() {
        // A long one-line list made every event walk from the start of the line.
        let (small_result, small) = parse_counting(FileId(0), &one_line_list(2_000));
        let (large_result, large) = parse_counting(FileId(0), &one_line_list(8_000));
        assert!(small_result.1.is_empty() && large_result.1.is_empty());
        assert!(small > 0);
        assert!(
            large <= small * 9 / 2,
            "4x the input took {large} steps against {small}"
        );
    }

    #[test]
    fn a_stream_holds_several_documents_and_still_refuses_aliases() {
        let (nodes, diagnostics) = parse_stream(FileId(0), "a: 1\n---\n---\nb: 2\n...\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(nodes.len(), 2);
        let (_, diagnostics) = parse_stream(FileId(0), "a: &x 1\n---\nb: *x\n");
        assert_eq!(diagnostics.len(), 2, "{diagnostics:?}");
        let (nodes, diagnostics) = parse_stream(FileId(0), "");
        assert!(nodes.is_empty() && diagnostics.is_empty());
    }

    #[test]
    fn carriage_return_line_ends_give_the_right_lines() {
        let text = "name: a\rorg: [b\r";
        let (_, diagnostics) = root(text);
        let mut map = crate::source::SourceMap::new();
        let id = map.add("t.yaml", text);
        let (line, _) = map
            .get(id)
            .unwrap()
            .line_col(diagnostics[0].labels[0].span.start as usize);
        assert_eq!(line, 3, "{diagnostics:?}");
        let (root, _) = root("name: a\rorg: b\r");
        let Value::Map(map) = root.unwrap().node.value else {
            panic!()
        };
        assert_eq!(map.entries[1].key_span, Span::new(FileId(0), 8..11));
    }

    /// Deep flow and block nesting, on a thread with a 1 MiB stack (the main thread has 8 MiB):
    /// saphyr and the reader stop at their limits with a diagnostic, never a crash.
    #[test]
    fn deep_nesting_never_exhausts_a_small_stack() {
        let handle = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                let depth = 20_000;
                let mut block = String::from("name: a\n");
                for level in 0..depth {
                    block.push_str(&" ".repeat(level % 200));
                    block.push_str("k:\n");
                }
                let inputs = [
                    format!("name: {}{}\n", "[".repeat(depth), "]".repeat(depth)),
                    format!("name: {}{}\n", "{a: ".repeat(depth), "}".repeat(depth)),
                    format!("name: {}\n", "- ".repeat(depth)),
                    format!("name: {}\n", "[{a: ".repeat(depth)),
                    block,
                ];
                for text in inputs {
                    let _ = parse(FileId(0), &text);
                }
            })
            .unwrap();
        assert!(
            handle.join().is_ok(),
            "the YAML reader overflowed a 1 MiB stack"
        );
    }
}
