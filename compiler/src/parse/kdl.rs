//! KDL v2 front end.
//!
//! Consumes: the text of a `*.kdl` declaration file.
//! Produces: a [`Document`] whose root is the single top-level node, converted node by node:
//! arguments become [`Map::args`], properties and children become [`Map::entries`] in source
//! order. All syntax errors of the file are reported, each with its span.
//!
//! Invariant: spans are byte offsets (kdl-rs reports byte offsets; a test with non-ASCII text
//! pins this down).

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};

use super::{Document, Entry, Format, Map, Node, Root, Value};
use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Parses a KDL v2 file.
pub fn parse(file: FileId, text: &str) -> (Document, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut document = Document {
        file,
        format: Format::Kdl,
        root: None,
    };
    if let Some(offset) = too_deep(text) {
        diagnostics.push(
            Diagnostic::error(
                Code::KdlUnsupported,
                Span::new(file, offset..offset + 1),
                format!("nodes nest deeper than {MAX_NESTING} levels"),
            )
            .with_label("too deep")
            .with_help("declarations nest a few levels; check for a runaway `{`"),
        );
        return (document, diagnostics);
    }
    let parsed = match KdlDocument::parse_v2(text) {
        Ok(parsed) => parsed,
        Err(error) => {
            for item in error.diagnostics {
                let start = item.span.offset();
                let span = Span::new(file, start..start + item.span.len());
                let message = house_style(item.message.as_deref().unwrap_or("invalid KDL"));
                let help = item.help.as_deref().map_or_else(
                    || "declarations use KDL v2: strings with spaces or punctuation need double quotes, booleans are `#true`/`#false`".to_string(),
                    house_style,
                );
                diagnostics.push(
                    Diagnostic::error(Code::KdlSyntax, span, message)
                        .with_label(item.label.unwrap_or_default())
                        .with_help(help),
                );
            }
            return (document, diagnostics);
        }
    };
    let nodes = parsed.nodes();
    let Some(first) = nodes.first() else {
        diagnostics.push(
            Diagnostic::error(
                Code::DocumentShape,
                Span::new(file, 0..0),
                "file declares nothing",
            )
            .with_help("declare one `tenant \"<name>\" { … }` or `cell \"<name>\" { … }` node"),
        );
        return (document, diagnostics);
    };
    for extra in nodes.iter().skip(1) {
        diagnostics.push(
            Diagnostic::error(
                Code::DocumentShape,
                span_of(file, extra.name().span()),
                "a file declares exactly one tenant or cell",
            )
            .with_label("second top-level node")
            .with_secondary(span_of(file, first.name().span()), "first declaration")
            .with_help("move this declaration into a file of its own"),
        );
    }
    let converter = Converter { file, text };
    let node = converter.node(first, &mut diagnostics);
    document.root = Some(Root {
        kind: Some((
            first.name().value().to_string(),
            span_of(file, first.name().span()),
        )),
        node,
    });
    (document, diagnostics)
}

/// The deepest `{ … }` nesting accepted; kdl-rs recurses per level, and declarations need few.
pub const MAX_NESTING: usize = 64;

/// The offset of the first `{` that opens a level deeper than [`MAX_NESTING`], skipping strings
/// and comments; a cheap guard that runs before the recursive parser.
fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0_usize;
    let mut idx = 0;
    while let Some(&byte) = bytes.get(idx) {
        match byte {
            b'"' => {
                idx += 1;
                while let Some(&inner) = bytes.get(idx) {
                    match inner {
                        b'\\' => idx += 1,
                        b'"' => break,
                        _ => {}
                    }
                    idx += 1;
                }
            }
            b'/' if bytes.get(idx + 1) == Some(&b'/') => {
                while bytes.get(idx).is_some_and(|&b| b != b'\n') {
                    idx += 1;
                }
            }
            b'/' if bytes.get(idx + 1) == Some(&b'*') => {
                idx += 2;
                while bytes.get(idx).is_some()
                    && !(bytes.get(idx) == Some(&b'*') && bytes.get(idx + 1) == Some(&b'/'))
                {
                    idx += 1;
                }
                idx += 1;
            }
            b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(idx);
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        idx += 1;
    }
    None
}

/// kdl-rs messages start with a capital and end with a period; ours do neither.
fn house_style(text: &str) -> String {
    let text = text.trim().trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn span_of(file: FileId, span: miette::SourceSpan) -> Span {
    Span::new(file, span.offset()..span.offset() + span.len())
}

struct Converter<'a> {
    file: FileId,
    text: &'a str,
}

impl Converter<'_> {
    fn node(&self, node: &KdlNode, diagnostics: &mut Vec<Diagnostic>) -> Node {
        let name_span = span_of(self.file, node.name().span());
        if let Some(ty) = node.ty() {
            diagnostics.push(self.annotation(ty.span()));
        }
        let mut map = Map {
            format: Format::Kdl,
            args: Vec::new(),
            entries: Vec::new(),
        };
        for entry in node.entries() {
            if let Some(ty) = entry.ty() {
                diagnostics.push(self.annotation(ty.span()));
            }
            match entry.name() {
                None => map.args.push(Node {
                    value: scalar(entry.value()),
                    span: self.value_span(entry),
                }),
                Some(name) => map.entries.push(Entry {
                    key: name.value().to_string(),
                    key_span: span_of(self.file, name.span()),
                    value: Node {
                        value: scalar(entry.value()),
                        span: self.value_span(entry),
                    },
                }),
            }
        }
        if let Some(children) = node.children() {
            for child in children.nodes() {
                map.entries.push(Entry {
                    key: child.name().value().to_string(),
                    key_span: span_of(self.file, child.name().span()),
                    value: self.node(child, diagnostics),
                });
            }
        }
        Node {
            value: Value::Map(map),
            span: name_span,
        }
    }

    /// The span of an entry's value: the entry without leading whitespace and without `name=`.
    fn value_span(&self, entry: &KdlEntry) -> Span {
        let whole = span_of(self.file, entry.span());
        let text = self.text.get(whole.range()).unwrap_or("");
        let mut start = whole.start as usize;
        let mut body = text;
        if entry.name().is_some()
            && let Some(eq) = find_unquoted_eq(text)
        {
            start += eq + 1;
            body = text.get(eq + 1..).unwrap_or("");
        }
        let trimmed = body.trim_start();
        start += body.len() - trimmed.len();
        let end = start + trimmed.trim_end().len();
        Span::new(self.file, start..end)
    }

    fn annotation(&self, span: miette::SourceSpan) -> Diagnostic {
        Diagnostic::error(
            Code::KdlUnsupported,
            span_of(self.file, span),
            "type annotations are not part of the declaration language",
        )
        .with_label("remove this annotation")
        .with_help("write the plain value; quantities such as `\"500m\"` are strings")
    }
}

/// Finds the `=` that separates a property name from its value, skipping a quoted name.
fn find_unquoted_eq(text: &str) -> Option<usize> {
    let mut in_quotes = false;
    let mut escaped = false;
    for (idx, ch) in text.char_indices() {
        match ch {
            '\\' if in_quotes && !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => in_quotes = !in_quotes,
            '=' if !in_quotes => return Some(idx),
            _ => {}
        }
        escaped = false;
    }
    None
}

fn scalar(value: &KdlValue) -> Value {
    match value {
        KdlValue::String(text) => Value::Str(text.clone()),
        KdlValue::Integer(number) => Value::Int(*number),
        KdlValue::Float(number) => Value::Float(*number),
        KdlValue::Bool(flag) => Value::Bool(*flag),
        KdlValue::Null => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_map(text: &str) -> (Map, Vec<Diagnostic>) {
        let (document, diagnostics) = parse(FileId(0), text);
        let root = document.root.expect("root");
        match root.node.value {
            Value::Map(map) => (map, diagnostics),
            other => panic!("not a map: {other:?}"),
        }
    }

    #[test]
    fn keeps_arguments_properties_and_children_apart() {
        let (map, diagnostics) =
            root_map("tenant \"a\" {\n  org \"acme\"\n  groups admin=\"x\"\n}\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(map.args.len(), 1);
        assert_eq!(map.entries.len(), 2);
        assert_eq!(map.entries[0].key, "org");
        assert_eq!(map.entries[1].key, "groups");
    }

    #[test]
    fn spans_are_bytes_even_after_non_ascii_text() {
        let text = "// caf\u{e9} \u{1f600}\ntenant \"a\" {\n  org \"acme\"\n}\n";
        let (map, _) = root_map(text);
        let org = &map.entries[0];
        assert_eq!(&text[org.key_span.range()], "org");
        let Value::Map(inner) = &org.value.value else {
            panic!()
        };
        assert_eq!(&text[inner.args[0].span.range()], "\"acme\"");
    }

    #[test]
    fn property_value_span_excludes_the_name() {
        let text = "tenant \"a\" {\n  groups admin=\"x\" \"member\"=\"y\"\n}\n";
        let (map, _) = root_map(text);
        let Value::Map(groups) = &map.entries[0].value.value else {
            panic!()
        };
        assert_eq!(&text[groups.entries[0].value.span.range()], "\"x\"");
        assert_eq!(&text[groups.entries[1].value.span.range()], "\"y\"");
        assert_eq!(&text[groups.entries[1].key_span.range()], "\"member\"");
    }

    #[test]
    fn reports_several_syntax_errors_in_one_run() {
        let (document, diagnostics) = parse(FileId(0), "tenant \"a {\n");
        assert!(document.root.is_none());
        assert!(!diagnostics.is_empty());
        assert!(diagnostics.iter().all(|d| d.code == Code::KdlSyntax));
    }

    #[test]
    fn rejects_a_second_top_level_node() {
        let (_, diagnostics) = parse(FileId(0), "tenant \"a\"\ntenant \"b\"\n");
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::DocumentShape);
    }

    #[test]
    fn rejects_deep_nesting_before_the_recursive_parser_sees_it() {
        let deep = format!("tenant \"a\" {}{}\n", "x {".repeat(5000), "}".repeat(5000));
        let (document, diagnostics) = parse(FileId(0), &deep);
        assert!(document.root.is_none());
        assert_eq!(diagnostics[0].code, Code::KdlUnsupported);
        let braces_in_strings = format!("tenant \"a\" {{ org \"{}\" }}\n", "{".repeat(500));
        assert!(too_deep(&braces_in_strings).is_none());
    }

    #[test]
    fn rejects_type_annotations() {
        let (_, diagnostics) = parse(FileId(0), "tenant \"a\" {\n  org (u8)1\n}\n");
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::KdlUnsupported);
    }
}
