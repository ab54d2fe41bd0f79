//! KDL v2 front end: a hand-written parser whose stack use is bounded by the nesting limit.
//!
//! Consumes: the text of a `*.kdl` declaration file.
//! Produces: a [`Document`] whose root is the single top-level node, converted node by node:
//! arguments become [`Map::args`], properties and children become [`Map::entries`] in source
//! order. All syntax errors of the file are reported, each at its own span; after an error the
//! parser skips to the end of the node and goes on.
//!
//! Invariants: spans are byte offsets into the text; the parser recurses only into children
//! blocks, at most [`MAX_NESTING`] levels deep, and reads everything else (comments, strings,
//! slashdashes, recovery after errors) in loops, so no input can exhaust the stack.
//! Lines end at every KDL v2 newline (CRLF, CR, LF, NEL, VT, FF, LS, PS), and the disallowed
//! literal code points of the KDL v2 specification are reported by name at their position.
//! Every finding (`kdl-syntax`, `kdl-unsupported`, `document-shape`) goes through the file's
//! cap as it is reported ([`FileFindings`]), so a file that repeats a mistake on every line
//! costs a count per line, not a diagnostic.
//! The parser was written because kdl-rs recurses once per comment piece, per misplaced `}` and
//! per chained slashdash; `kdl_parity.rs` checks that both read valid input alike.

use super::{Document, Entry, Format, Map, Node, Root, Value};
use crate::diag::{Code, Diagnostic, FileFindings, Severity};
use crate::limits::MAX_NESTING;
use crate::source::{FileId, Span};

/// Parses a KDL v2 file.
pub fn parse(file: FileId, text: &str) -> (Document, Vec<Diagnostic>) {
    let mut parser = Parser::start(file, text);
    let nodes = parser.document();
    let mut findings = parser.findings;
    let mut document = Document {
        file,
        format: Format::Kdl,
        root: None,
    };
    if parser.failed {
        return (document, findings.finish());
    }
    let mut nodes = nodes.into_iter();
    let Some(first) = nodes.next() else {
        findings.push(
            Diagnostic::error(
                Code::DocumentShape,
                Span::new(file, 0..0),
                "file declares nothing",
            )
            .with_help("declare one `tenant \"<name>\" { … }` or `cell \"<name>\" { … }` node"),
        );
        return (document, findings.finish());
    };
    for extra in nodes {
        // One finding per extra node, through the cap: a file of many nodes makes few.
        findings.report(
            Code::DocumentShape,
            Severity::Error,
            extra.name_span,
            || {
                Diagnostic::error(
                    Code::DocumentShape,
                    extra.name_span,
                    "a file declares exactly one tenant or cell",
                )
                .with_label("second top-level node")
                .with_secondary(first.name_span, "first declaration")
                .with_help("move this declaration into a file of its own")
            },
        );
    }
    document.root = Some(Root {
        kind: Some((first.name, first.name_span)),
        node: first.node,
    });
    (document, findings.finish())
}

/// Every top-level node of a KDL v2 file that is not commented out, in order, as its name and
/// node, or `None` after a syntax error; with the file's findings, capped as [`parse`] caps
/// them, but without the `document-shape` ones (any number of nodes is a KDL document).
/// [`parse`] keeps the first node as the declaration; the parity tests against kdl-rs and the
/// KDL test suite (`tests/kdl_suite.rs`) read them all.
pub fn parse_nodes(file: FileId, text: &str) -> (Option<Vec<(String, Node)>>, Vec<Diagnostic>) {
    let mut parser = Parser::start(file, text);
    let nodes = parser.document();
    let nodes = (!parser.failed).then(|| nodes.into_iter().map(|n| (n.name, n.node)).collect());
    (nodes, parser.findings.finish())
}

const BOM: char = '\u{feff}';

/// The help of syntax errors that have no more specific one.
const SYNTAX_HELP: &str = "declarations use KDL v2: strings with spaces or punctuation need double quotes, booleans are `#true`/`#false`";

/// Whether a character is one of the KDL v2 unicode spaces.
fn is_space(ch: char) -> bool {
    matches!(
        ch,
        '\u{9}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// Whether a character starts a KDL v2 newline (CR, LF, NEL, VT, FF, LS, PS).
pub fn is_newline(ch: char) -> bool {
    matches!(
        ch,
        '\r' | '\n' | '\u{85}' | '\u{b}' | '\u{c}' | '\u{2028}' | '\u{2029}'
    )
}

/// The length in bytes of the newline at the start of `text`, if it starts with one (CRLF is one
/// newline).
pub fn newline_len(text: &str) -> Option<usize> {
    if text.starts_with("\r\n") {
        return Some(2);
    }
    text.chars()
        .next()
        .filter(|&ch| is_newline(ch))
        .map(char::len_utf8)
}

/// Whether KDL v2 forbids a code point anywhere in a document (a BOM only after the start).
pub fn is_disallowed(ch: char) -> bool {
    matches!(
        ch,
        '\u{0}'..='\u{8}'
            | '\u{e}'..='\u{1f}'
            | '\u{7f}'
            | '\u{200e}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | BOM
    )
}

/// A short name of a disallowed code point, for messages.
pub(crate) fn code_point_name(ch: char) -> String {
    let name = match ch {
        '\u{0}' => "null",
        '\u{7f}' => "delete",
        '\u{1b}' => "escape",
        '\u{200e}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            "bidirectional control"
        }
        BOM => "byte order mark",
        '\u{fffe}' | '\u{ffff}' => "noncharacter",
        _ => "control character",
    };
    format!("`U+{:04X}` ({name})", u32::from(ch))
}

/// Whether a character may appear in an identifier string.
fn is_identifier_char(ch: char) -> bool {
    !(is_space(ch)
        || is_newline(ch)
        || is_disallowed(ch)
        || matches!(
            ch,
            '\\' | '/' | '(' | ')' | '{' | '}' | '[' | ']' | ';' | '"' | '#' | '='
        ))
}

/// A parsed node before it becomes a [`Node`]: its name is the key it is filed under.
struct Parsed {
    name: String,
    name_span: Span,
    node: Node,
}

/// A value token: the value, its span, and whether it was written as a string.
struct Token {
    value: Value,
    span: Span,
    is_string: bool,
}

struct Parser<'a> {
    file: FileId,
    text: &'a str,
    pos: usize,
    /// Every finding goes through the file's cap as it is reported, so a file that repeats a
    /// mistake costs a count per repeat, not a diagnostic.
    findings: FileFindings,
    /// Whether findings are dropped, while recovery reads leniently over what it skips.
    quiet: bool,
    /// Whether a syntax error was reported; the file then has no root.
    failed: bool,
    /// How many times the parser looked at the text; tests compare it across input sizes to
    /// prove the work linear without timing anything.
    steps: std::cell::Cell<u64>,
}

/// A property name and its span.
type Key = (String, Span);

/// A syntax error has been reported; the caller recovers.
type Parse<T> = Result<T, ()>;

impl<'a> Parser<'a> {
    /// A parser at the start of `text`: disallowed code points are reported, and a leading
    /// byte order mark is skipped.
    fn start(file: FileId, text: &'a str) -> Self {
        let mut parser = Parser::at(file, text, 0, false);
        parser.disallowed_code_points();
        if parser.peek() == Some(BOM) {
            parser.pos += BOM.len_utf8();
        }
        parser
    }

    /// A parser at `pos` of `text`, with no findings yet.
    fn at(file: FileId, text: &'a str, pos: usize, quiet: bool) -> Self {
        Parser {
            file,
            text,
            pos,
            findings: FileFindings::new(),
            quiet,
            failed: false,
            steps: std::cell::Cell::new(0),
        }
    }

    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.steps.set(self.steps.get() + 1);
        self.rest().chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn starts_with(&self, prefix: &str) -> bool {
        self.steps.set(self.steps.get() + 1);
        self.rest().starts_with(prefix)
    }

    fn bump(&mut self) {
        if let Some(ch) = self.peek() {
            self.pos += ch.len_utf8();
        }
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start..end)
    }

    fn error(&mut self, span: Span, message: impl Into<String>, label: &str, help: &str) {
        self.failed = true;
        self.report(Code::KdlSyntax, span, || {
            Diagnostic::error(Code::KdlSyntax, span, message)
                .with_label(label)
                .with_help(help)
        });
    }

    /// Reports an error finding through the file's cap, unless the parser is quiet.
    fn report(&mut self, code: Code, span: Span, make: impl FnOnce() -> Diagnostic) {
        if !self.quiet {
            self.findings.report(code, Severity::Error, span, make);
        }
    }

    /// Reports every disallowed literal code point, by name, at its position.
    fn disallowed_code_points(&mut self) {
        let text = self.text;
        for (idx, ch) in text.char_indices() {
            if is_disallowed(ch) && !(idx == 0 && ch == BOM) {
                let span = self.span(idx, idx + ch.len_utf8());
                self.error(
                    span,
                    format!("{} is not allowed in a KDL file", code_point_name(ch)),
                    "disallowed character",
                    "remove the character; inside a quoted string, write it as an escape such as `\\u{0}` if it is really meant",
                );
            }
        }
    }

    /// Reads the top-level nodes; a `}` without a block is reported and skipped.
    fn document(&mut self) -> Vec<Parsed> {
        let mut nodes = Vec::new();
        loop {
            self.nodes(0, &mut nodes);
            if self.peek() == Some('}') {
                let span = self.span(self.pos, self.pos + 1);
                self.error(
                    span,
                    "unmatched `}`",
                    "no block to close",
                    "remove the `}` or add the `{` it closes",
                );
                self.bump();
            } else {
                return nodes;
            }
        }
    }

    /// Reads nodes until the end of the text or a `}`, which is left unread.
    fn nodes(&mut self, depth: usize, nodes: &mut Vec<Parsed>) {
        loop {
            if self.line_space().is_err() {
                self.recover();
                continue;
            }
            match self.peek() {
                None | Some('}') => return,
                Some(';') => {
                    let span = self.span(self.pos, self.pos + 1);
                    self.error(
                        span,
                        "`;` ends no node",
                        "nothing to end",
                        "remove the `;`; it only ends a node written before it",
                    );
                    self.bump();
                    continue;
                }
                _ => {}
            }
            let mut keep = true;
            if self.starts_with("/-") {
                if self.slashdash().is_err() {
                    self.recover();
                    continue;
                }
                keep = false;
                if matches!(self.peek(), None | Some('}')) {
                    let span = self.span(self.pos, self.pos);
                    self.error(
                        span,
                        "`/-` comments out nothing",
                        "expected a node after `/-`",
                        "put `/-` right before the node to comment out, or remove it",
                    );
                    continue;
                }
            }
            match self.node(depth, keep) {
                Ok(node) => {
                    if keep {
                        nodes.push(node);
                    }
                }
                Err(()) => self.recover(),
            }
        }
    }

    /// Reads one node, up to and including its terminator (a `}` is left unread).
    fn node(&mut self, depth: usize, keep: bool) -> Parse<Parsed> {
        if self.peek() == Some('(') {
            self.annotation(keep)?;
            self.node_space()?;
        }
        if self.peek() == Some('{') {
            let span = self.span(self.pos, self.pos + 1);
            self.error(
                span,
                "found a child block instead of a node name",
                "node name expected",
                "write the node name before `{`, or join this block to the node it belongs to",
            );
            return Err(());
        }
        let token = self.value("node name")?;
        let Token {
            value: Value::Str(name),
            span: name_span,
            is_string: true,
        } = token
        else {
            self.error(
                token.span,
                "a node name must be a string",
                "not a node name",
                "node names are identifiers such as `pool`, or quoted strings",
            );
            return Err(());
        };
        let mut map = Map {
            format: Format::Kdl,
            args: Vec::new(),
            entries: Vec::new(),
        };
        let mut children: Option<Vec<Parsed>> = None;
        let mut saw_block = false;
        loop {
            let spaced = self.node_space()?;
            match self.peek() {
                None | Some('}') => break,
                Some(';') => {
                    self.bump();
                    break;
                }
                Some(ch) if is_newline(ch) => {
                    self.newline();
                    break;
                }
                _ if self.starts_with("//") => {
                    self.line_comment();
                    break;
                }
                Some('{') => {
                    if children.is_some() {
                        let span = self.span(self.pos, self.pos + 1);
                        self.error(
                            span,
                            "a node has at most one child block",
                            "second child block",
                            "merge the two blocks into one",
                        );
                        return Err(());
                    }
                    saw_block = true;
                    children = Some(self.children(depth, keep)?);
                }
                _ if self.starts_with("/-") => {
                    self.slashdash()?;
                    if self.peek() == Some('{') {
                        saw_block = true;
                        self.children(depth, false)?;
                    } else if saw_block {
                        return self.entry_after_block();
                    } else {
                        self.entry(false)?;
                    }
                }
                _ => {
                    if saw_block {
                        return self.entry_after_block();
                    }
                    if !spaced {
                        let span = self.span(self.pos, self.pos);
                        self.error(
                            span,
                            "expected a space before the next value",
                            "space needed here",
                            SYNTAX_HELP,
                        );
                        return Err(());
                    }
                    if let Some(entry) = self.entry(keep)? {
                        match entry {
                            (None, value) => map.args.push(value),
                            (Some((key, key_span)), value) => map.entries.push(Entry {
                                key,
                                key_span,
                                value,
                            }),
                        }
                    }
                }
            }
        }
        for child in children.unwrap_or_default() {
            map.entries.push(Entry {
                key: child.name,
                key_span: child.name_span,
                value: child.node,
            });
        }
        Ok(Parsed {
            name,
            name_span,
            node: Node {
                value: Value::Map(map),
                span: name_span,
            },
        })
    }

    fn entry_after_block<T>(&mut self) -> Parse<T> {
        let span = self.span(self.pos, self.pos);
        self.error(
            span,
            "values must come before the child block",
            "value after `{ … }`",
            "move the value before the `{`, or end the node with a newline or `;`",
        );
        Err(())
    }

    /// Reads a `{ … }` block; `depth` is the depth of its node.
    fn children(&mut self, depth: usize, keep: bool) -> Parse<Vec<Parsed>> {
        let open = self.pos;
        if depth >= MAX_NESTING {
            self.failed = true;
            let span = self.span(open, open + 1);
            self.report(Code::KdlUnsupported, span, || {
                Diagnostic::error(
                    Code::KdlUnsupported,
                    span,
                    format!("nodes nest deeper than {MAX_NESTING} levels"),
                )
                .with_label("too deep")
                .with_help("declarations nest a few levels; check for a runaway `{`")
            });
            self.skip_block();
            return Err(());
        }
        self.bump();
        let mut nodes = Vec::new();
        self.nodes(depth + 1, &mut nodes);
        if self.peek() == Some('}') {
            self.bump();
            Ok(if keep { nodes } else { Vec::new() })
        } else {
            let span = self.span(open, open + 1);
            self.error(
                span,
                "child block is never closed",
                "this `{` has no `}`",
                "add the missing `}`",
            );
            Err(())
        }
    }

    /// Reads an argument or a property; `None` when it was not kept.
    fn entry(&mut self, keep: bool) -> Parse<Option<(Option<Key>, Node)>> {
        let start = self.pos;
        let typed = self.peek() == Some('(');
        if typed {
            self.annotation(keep)?;
            self.node_space()?;
        }
        let token = self.value("value")?;
        if token.is_string {
            let after = self.pos;
            self.node_space()?;
            if self.peek() == Some('=') {
                if typed {
                    let span = self.span(start, token.span.end as usize);
                    self.error(
                        span,
                        "a property name cannot have a type annotation",
                        "annotated name",
                        "remove the annotation",
                    );
                    return Err(());
                }
                self.bump();
                self.node_space()?;
                let value_start = self.pos;
                if self.peek() == Some('(') {
                    self.annotation(keep)?;
                    self.node_space()?;
                }
                let value = self.value("property value")?;
                let Value::Str(key) = token.value else {
                    return Err(());
                };
                let node = Node {
                    value: value.value,
                    span: self.span(value_start, value.span.end as usize),
                };
                return Ok(keep.then_some((Some((key, token.span)), node)));
            }
            self.pos = after;
        }
        let node = Node {
            value: token.value,
            span: self.span(start, token.span.end as usize),
        };
        Ok(keep.then_some((None, node)))
    }

    /// Reads `(type)`, reporting it when `keep`: declarations do not use type annotations.
    fn annotation(&mut self, keep: bool) -> Parse<()> {
        self.bump();
        self.node_space()?;
        let token = self.value("type name")?;
        if !token.is_string {
            self.error(
                token.span,
                "a type annotation must be a string",
                "not a type name",
                "remove the annotation",
            );
            return Err(());
        }
        self.node_space()?;
        if self.peek() != Some(')') {
            let span = self.span(self.pos, self.pos);
            self.error(
                span,
                "type annotation is not closed",
                "`)` expected",
                "remove the annotation",
            );
            return Err(());
        }
        self.bump();
        if keep {
            self.report(Code::KdlUnsupported, token.span, || {
                Diagnostic::error(
                    Code::KdlUnsupported,
                    token.span,
                    "type annotations are not part of the declaration language",
                )
                .with_label("remove this annotation")
                .with_help("write the plain value; quantities such as `\"500m\"` are strings")
            });
        }
        Ok(())
    }

    /// Reads a string, number or keyword, and checks that something that may follow a value
    /// follows it.
    fn value(&mut self, what: &str) -> Parse<Token> {
        let start = self.pos;
        let token = match self.peek() {
            Some('"') => self.quoted_string()?,
            Some('#') if matches!(self.peek_second(), Some('"' | '#')) => self.raw_string()?,
            Some('#') => self.keyword()?,
            Some(ch) if is_identifier_char(ch) => self.bare()?,
            _ => {
                let end = self.pos + self.peek().map_or(0, char::len_utf8);
                let span = self.span(start, end);
                self.error(
                    span,
                    format!("expected a {what}"),
                    &format!("not a {what}"),
                    SYNTAX_HELP,
                );
                return Err(());
            }
        };
        // A slashdash may follow a value directly (kdl-org/kdl #499); kdl-rs 6.7 still refuses
        // it, a deviation `kdl_parity.rs` names.
        let terminated = match self.peek() {
            None => true,
            Some(ch) => {
                is_space(ch)
                    || is_newline(ch)
                    || matches!(ch, ';' | '=' | ')' | '{' | '}' | '\\')
                    || self.starts_with("//")
                    || self.starts_with("/*")
                    || self.starts_with("/-")
            }
        };
        if !terminated {
            let span = self.span(self.pos, self.pos);
            self.error(
                span,
                format!("expected a space after this {what}"),
                "space needed here",
                SYNTAX_HELP,
            );
            return Err(());
        }
        Ok(token)
    }

    /// Reads `#true`, `#false`, `#null`, `#inf`, `#-inf` or `#nan`.
    fn keyword(&mut self) -> Parse<Token> {
        let start = self.pos;
        self.bump();
        let word_len = self
            .rest()
            .find(|ch: char| !is_identifier_char(ch))
            .unwrap_or(self.rest().len());
        let word = self.rest().get(..word_len).unwrap_or("");
        let value = match word {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "inf" => Value::Float(f64::INFINITY),
            "-inf" => Value::Float(f64::NEG_INFINITY),
            "nan" => Value::Float(f64::NAN),
            _ => {
                let span = self.span(start, self.pos + word_len);
                self.error(
                    span,
                    format!("`#{word}` is not a KDL keyword"),
                    "unknown keyword",
                    "the keywords are `#true`, `#false`, `#null`, `#inf`, `#-inf` and `#nan`",
                );
                return Err(());
            }
        };
        self.pos += word_len;
        Ok(Token {
            value,
            span: self.span(start, self.pos),
            is_string: false,
        })
    }

    /// Reads an identifier string or a number: a run of identifier characters.
    fn bare(&mut self) -> Parse<Token> {
        let start = self.pos;
        let len = self
            .rest()
            .find(|ch: char| !is_identifier_char(ch))
            .unwrap_or(self.rest().len());
        let word = self.rest().get(..len).unwrap_or("");
        self.pos += len;
        let span = self.span(start, self.pos);
        let mut chars = word.chars();
        let first = chars.next();
        let second = chars.next();
        let third = chars.next();
        let numeric = match (first, second, third) {
            (Some(ch), _, _) if ch.is_ascii_digit() => true,
            (Some('+' | '-'), Some(ch), _) if ch.is_ascii_digit() => true,
            (Some('+' | '-'), Some('.'), Some(ch)) | (Some('.'), Some(ch), _)
                if ch.is_ascii_digit() =>
            {
                true
            }
            _ => false,
        };
        if numeric {
            return match number(word) {
                Ok(value) => Ok(Token {
                    value,
                    span,
                    is_string: false,
                }),
                Err(NumberError::TooLarge) => {
                    self.error(
                        span,
                        "integer is too large",
                        "does not fit in 128 bits",
                        "integers in declarations are between -2^127 and 2^127 - 1; check for extra digits",
                    );
                    Err(())
                }
                Err(NumberError::Invalid) => {
                    self.error(
                        span,
                        format!("`{}` is not a valid number", shorten(word)),
                        "invalid number",
                        "write a number such as `4`, `-1.5`, `1e3`, `0xff`, or quote the text to make it a string",
                    );
                    Err(())
                }
            };
        }
        if matches!(word, "true" | "false" | "null" | "inf" | "nan") {
            self.error(
                span,
                format!("`{word}` is a keyword and must be written `#{word}`"),
                "bare keyword",
                &format!("write `#{word}`, or `\"{word}\"` for the string"),
            );
            return Err(());
        }
        Ok(Token {
            value: Value::Str(word.to_string()),
            span,
            is_string: true,
        })
    }

    /// Reads a `"…"` string or a `"""` multi-line string.
    fn quoted_string(&mut self) -> Parse<Token> {
        let start = self.pos;
        if self.starts_with("\"\"\"") {
            return self.multi_line_string(start, 0);
        }
        self.bump();
        let mut value = String::new();
        loop {
            match self.peek() {
                None => {
                    let span = self.span(start, self.pos);
                    self.error(
                        span,
                        "string is not closed",
                        "no closing `\"`",
                        "add the closing `\"`",
                    );
                    return Err(());
                }
                Some(ch) if is_newline(ch) => {
                    let span = self.span(start, self.pos);
                    self.error(
                        span,
                        "unexpected newline in single-line quoted string",
                        "string not closed on its line",
                        "close the string on its line; a multi-line string starts with `\"\"\"` and a newline",
                    );
                    return Err(());
                }
                Some('"') => {
                    self.bump();
                    break;
                }
                Some('\\') => {
                    if let Some(ch) = self.escape()? {
                        value.push(ch);
                    }
                }
                Some(ch) => {
                    value.push(ch);
                    self.bump();
                }
            }
        }
        Ok(Token {
            value: Value::Str(value),
            span: self.span(start, self.pos),
            is_string: true,
        })
    }

    /// Reads an escape after `\`; `None` for a whitespace escape, which stands for nothing.
    fn escape(&mut self) -> Parse<Option<char>> {
        let start = self.pos;
        self.bump();
        let ch = match self.peek() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('s') => ' ',
            Some('u') => return self.unicode_escape(start).map(Some),
            Some(ch) if is_space(ch) || is_newline(ch) => {
                while self.peek().is_some_and(|ch| is_space(ch) || is_newline(ch)) {
                    self.bump();
                }
                return Ok(None);
            }
            other => {
                let end = self.pos + other.map_or(0, char::len_utf8);
                let span = self.span(start, end);
                self.error(
                    span,
                    "unknown escape in a string",
                    "unknown escape",
                    "the escapes are `\\\"`, `\\\\`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t`, `\\s` and `\\u{…}`; write a backslash as `\\\\`",
                );
                return Err(());
            }
        };
        self.bump();
        Ok(Some(ch))
    }

    fn unicode_escape(&mut self, start: usize) -> Parse<char> {
        self.bump();
        let rest = self.rest();
        let digits = rest
            .strip_prefix('{')
            .map(|inner| {
                let len = inner
                    .find(|ch: char| !ch.is_ascii_hexdigit())
                    .unwrap_or(inner.len());
                (inner.get(..len).unwrap_or(""), inner.get(len..))
            })
            .filter(|(digits, after)| {
                (1..=6).contains(&digits.len()) && after.is_some_and(|after| after.starts_with('}'))
            })
            .map(|(digits, _)| digits);
        let decoded = digits
            .and_then(|digits| u32::from_str_radix(digits, 16).ok())
            .and_then(char::from_u32);
        match (digits, decoded) {
            (Some(digits), Some(ch)) => {
                self.pos += digits.len() + 2;
                Ok(ch)
            }
            _ => {
                let end = self.pos + rest.find('}').map_or(0, |idx| idx + 1).min(16);
                let end = (start..=end.min(self.text.len()))
                    .rev()
                    .find(|&idx| self.text.is_char_boundary(idx))
                    .unwrap_or(start);
                let span = self.span(start, end);
                self.error(
                    span,
                    "invalid unicode escape",
                    "not a unicode scalar value",
                    "write `\\u{` with one to six hex digits of a code point (not a surrogate) and `}`",
                );
                Err(())
            }
        }
    }

    /// Reads a raw string `#"…"#` (with any number of `#`) or its multi-line form.
    fn raw_string(&mut self) -> Parse<Token> {
        let start = self.pos;
        let hashes = self.rest().chars().take_while(|&ch| ch == '#').count();
        self.pos += hashes;
        if self.peek() != Some('"') {
            let span = self.span(start, self.pos);
            self.error(
                span,
                "expected `\"` after the `#` of a raw string",
                "not a raw string",
                "a raw string is written `#\"…\"#`",
            );
            return Err(());
        }
        if self.starts_with("\"\"\"") {
            return self.multi_line_string(start, hashes);
        }
        self.bump();
        let body_start = self.pos;
        let closing: String = std::iter::once('"')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        loop {
            match self.peek() {
                None => {
                    let span = self.span(start, self.pos);
                    self.error(
                        span,
                        "raw string is not closed",
                        &format!("no closing `{closing}`"),
                        &format!("add the closing `{closing}`"),
                    );
                    return Err(());
                }
                Some(ch) if is_newline(ch) => {
                    let span = self.span(start, self.pos);
                    self.error(
                        span,
                        "unexpected newline in single-line raw string",
                        "string not closed on its line",
                        "close the string on its line; a multi-line raw string starts with `#\"\"\"` and a newline",
                    );
                    return Err(());
                }
                _ if self.starts_with(&closing) => break,
                _ => self.bump(),
            }
        }
        let body = self
            .text
            .get(body_start..self.pos)
            .unwrap_or("")
            .to_string();
        self.pos += closing.len();
        if body == "\"" {
            let span = self.span(start, self.pos);
            self.error(
                span,
                "a single-line raw string cannot look like a multi-line one",
                "triple quotes",
                "write a lone quote as `\"\\\"\"`",
            );
            return Err(());
        }
        Ok(Token {
            value: Value::Str(body),
            span: self.span(start, self.pos),
            is_string: true,
        })
    }

    /// Reads a multi-line string whose `"""` is at the current position, after `hashes` `#`s
    /// (zero for an escaped string) that start at `start`.
    fn multi_line_string(&mut self, start: usize, hashes: usize) -> Parse<Token> {
        let raw = hashes > 0;
        self.pos += 3;
        let Some(len) = newline_len(self.rest()) else {
            let span = self.span(start, self.pos);
            self.error(
                span,
                "multi-line string opening quotes must be followed by a newline",
                "newline expected after `\"\"\"`",
                "start the text on the next line, or use a single-line string",
            );
            return Err(());
        };
        self.pos += len;
        let closing: String = "\"\"\""
            .chars()
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        // Lines of the body, each without its newline, up to the line that closes the string.
        let mut lines: Vec<(usize, &str)> = Vec::new();
        let text = self.text;
        let prefix = loop {
            let line_start = self.pos;
            let rest = text.get(line_start..).unwrap_or("");
            let line_len = rest.find(is_newline).unwrap_or(rest.len());
            let line = rest.get(..line_len).unwrap_or("");
            if let Some((prefix, end)) = closing_line(rest, &closing, raw) {
                self.pos = line_start + end;
                break prefix;
            }
            match newline_len(rest.get(line_len..).unwrap_or("")) {
                Some(newline) => {
                    lines.push((line_start, line));
                    self.pos = line_start + line_len + newline;
                }
                None => {
                    self.pos = text.len();
                    let span = self.span(start, start + 3 + hashes);
                    self.error(
                        span,
                        "multi-line string is not closed",
                        "no closing `\"\"\"` line",
                        &format!(
                            "close the string with `{closing}` on a line of its own, indented like the text"
                        ),
                    );
                    return Err(());
                }
            }
        };
        let mut value = String::new();
        let mut joined = false;
        // Where the value ended before a run of lines that hold nothing but whitespace escapes:
        // such a run may reach the closing quotes (kdl-rs reads it so).
        let mut pure_chain: Option<usize> = None;
        for (idx, (line_start, line)) in lines.iter().enumerate() {
            let blank = line.chars().all(is_space);
            if joined && blank {
                // The whitespace escape goes on over blank lines.
                continue;
            }
            let is_pure_escape = |body: &str| {
                body.strip_prefix('\\')
                    .is_some_and(|after| after.chars().all(is_space))
            };
            if !joined {
                pure_chain = None;
                let before_newline = value.len();
                if idx > 0 {
                    value.push('\n');
                }
                if !raw
                    && line
                        .strip_prefix(prefix.as_str())
                        .is_some_and(is_pure_escape)
                {
                    pure_chain = Some(before_newline);
                }
            } else if !is_pure_escape(line.trim_start_matches(is_space)) {
                pure_chain = None;
            }
            let body = if joined {
                line.trim_start_matches(is_space)
            } else if blank {
                ""
            } else if let Some(body) = line.strip_prefix(prefix.as_str()) {
                body
            } else {
                let span = self.span(*line_start, line_start + line.len());
                self.error(
                    span,
                    "multi-line string line is not indented like its closing quotes",
                    "indentation differs",
                    "indent every line of the text at least as far as the closing `\"\"\"`, with the same spaces or tabs",
                );
                return Err(());
            };
            let body_start = line_start + (line.len() - body.len());
            joined = false;
            if raw {
                value.push_str(body);
                continue;
            }
            let mut sub = Parser::at(self.file, self.text, body_start, self.quiet);
            let body_end = body_start + body.len();
            while sub.pos < body_end {
                if sub.starts_with("\"\"\"") {
                    let span = sub.span(sub.pos, sub.pos + 3);
                    sub.error(
                        span,
                        "`\"\"\"` inside a multi-line string",
                        "closes nothing here",
                        "escape one of the quotes (`\\\"\"\"`), or put the closing `\"\"\"` on a line of its own",
                    );
                    break;
                }
                if sub.peek() == Some('\\') {
                    let escape_start = sub.pos;
                    let is_line_end = text
                        .get(escape_start + 1..body_end)
                        .is_some_and(|after| after.chars().all(is_space));
                    if is_line_end {
                        // A whitespace escape at the end of the line joins the next line.
                        joined = true;
                        break;
                    }
                    match sub.escape() {
                        Ok(Some(ch)) => value.push(ch),
                        Ok(None) => {}
                        Err(()) => break,
                    }
                } else if let Some(ch) = sub.peek() {
                    value.push(ch);
                    sub.bump();
                }
            }
            if sub.failed {
                self.failed = true;
                for diagnostic in sub.findings.finish() {
                    self.findings.push(diagnostic);
                }
                return Err(());
            }
        }
        if joined && let Some(len) = pure_chain {
            value.truncate(len);
        } else if joined {
            let span = self.span(self.pos - closing.len(), self.pos);
            self.error(
                span,
                "the last line of a multi-line string ends in `\\`",
                "the `\\` joins these closing quotes",
                "remove the `\\` at the end of the last line of the text",
            );
            return Err(());
        }
        Ok(Token {
            value: Value::Str(value),
            span: self.span(start, self.pos),
            is_string: true,
        })
    }

    /// Skips whitespace and `/* */` comments and escaped line ends; returns whether any was
    /// skipped.
    fn node_space(&mut self) -> Parse<bool> {
        let start = self.pos;
        loop {
            match self.peek() {
                Some(ch) if is_space(ch) => self.bump(),
                _ if self.starts_with("/*") => self.block_comment()?,
                Some('\\') => self.escaped_line_end()?,
                _ => return Ok(self.pos > start),
            }
        }
    }

    /// Skips node space, newlines and `//` comments.
    fn line_space(&mut self) -> Parse<()> {
        loop {
            self.node_space()?;
            match self.peek() {
                Some(ch) if is_newline(ch) => self.newline(),
                _ if self.starts_with("//") => self.line_comment(),
                _ => return Ok(()),
            }
        }
    }

    /// Reads `/-` and the space after it.
    fn slashdash(&mut self) -> Parse<()> {
        self.pos += 2;
        self.line_space()
    }

    fn newline(&mut self) {
        self.pos += newline_len(self.rest()).unwrap_or(0);
    }

    /// Skips a `//` comment and the newline that ends it.
    fn line_comment(&mut self) {
        let rest = self.rest();
        let len = rest.find(is_newline).unwrap_or(rest.len());
        self.pos += len;
        self.newline();
    }

    /// Skips a `/* */` comment, which may nest.
    fn block_comment(&mut self) -> Parse<()> {
        let start = self.pos;
        let mut depth = 0_usize;
        loop {
            if self.starts_with("/*") {
                depth += 1;
                self.pos += 2;
            } else if self.starts_with("*/") {
                depth -= 1;
                self.pos += 2;
                if depth == 0 {
                    return Ok(());
                }
            } else if self.peek().is_some() {
                self.bump();
            } else {
                let span = self.span(start, start + 2);
                self.error(
                    span,
                    "comment is not closed",
                    "no closing `*/`",
                    "close every `/*` with a `*/`; comments nest",
                );
                return Err(());
            }
        }
    }

    /// Reads `\` followed by optional space and a comment or a newline.
    fn escaped_line_end(&mut self) -> Parse<()> {
        let start = self.pos;
        self.bump();
        loop {
            match self.peek() {
                Some(ch) if is_space(ch) => self.bump(),
                _ if self.starts_with("/*") => self.block_comment()?,
                _ => break,
            }
        }
        match self.peek() {
            None => Ok(()),
            Some(ch) if is_newline(ch) => {
                self.newline();
                Ok(())
            }
            _ if self.starts_with("//") => {
                self.line_comment();
                Ok(())
            }
            _ => {
                let span = self.span(start, start + 1);
                self.error(
                    span,
                    "a `\\` outside a string must end the line",
                    "line continuation not at the line end",
                    "remove the `\\`, or put it at the end of the line to continue the node on the next one",
                );
                Err(())
            }
        }
    }

    /// After an error: skips to the end of the current node, over strings, comments and
    /// blocks, and stops before a `}` that closes the enclosing block.
    fn recover(&mut self) {
        let mut depth = 0_usize;
        loop {
            match self.peek() {
                None => return,
                Some('}') if depth == 0 => return,
                Some('}') => {
                    depth -= 1;
                    self.bump();
                }
                Some('{') => {
                    depth += 1;
                    self.bump();
                }
                Some(';') if depth == 0 => {
                    self.bump();
                    return;
                }
                Some(ch) if is_newline(ch) => {
                    self.newline();
                    if depth == 0 {
                        return;
                    }
                }
                _ => self.skip_token(),
            }
        }
    }

    /// Skips a `{ … }` block whatever it holds, without recursion.
    fn skip_block(&mut self) {
        let mut depth = 0_usize;
        loop {
            match self.peek() {
                None => return,
                Some('{') => {
                    depth += 1;
                    self.bump();
                }
                Some('}') => {
                    self.bump();
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => self.skip_token(),
            }
        }
    }

    /// Skips one character, or a whole string or comment, leniently and without reporting.
    fn skip_token(&mut self) {
        let saved = (self.quiet, self.failed);
        self.quiet = true;
        let start = self.pos;
        let read = if self.starts_with("/*") {
            Some(self.block_comment().is_ok())
        } else if self.starts_with("//") {
            let rest = self.rest();
            self.pos += rest.find(is_newline).unwrap_or(rest.len());
            Some(true)
        } else if self.peek() == Some('"') {
            Some(self.quoted_string().is_ok())
        } else if self.peek() == Some('#') && matches!(self.peek_second(), Some('"' | '#')) {
            Some(self.raw_string().is_ok())
        } else {
            None
        };
        self.quiet = saved.0;
        self.failed = saved.1;
        // A string or comment that did not parse ends where its reading stopped: at the end of
        // its line, at a bad escape, or at the end of the text for an unclosed comment or
        // multi-line string. Going back would read the rest of the file again for every one.
        if read.is_none() || self.pos == start {
            self.bump();
        }
    }
}

/// Whether `text` starts with the closing line of a multi-line string: spaces (and, in an
/// escaped string, whitespace escapes, which may span lines) before the closing quotes. Returns
/// the spaces, which every line of the text must start with, and the length read.
fn closing_line(text: &str, closing: &str, raw: bool) -> Option<(String, usize)> {
    let mut prefix = String::new();
    let mut pos = 0;
    loop {
        let rest = text.get(pos..)?;
        let ch = rest.chars().next()?;
        if is_space(ch) {
            prefix.push(ch);
            pos += ch.len_utf8();
        } else if !raw && ch == '\\' {
            let after = rest.get(1..)?;
            let len = after
                .find(|ch: char| !(is_space(ch) || is_newline(ch)))
                .unwrap_or(after.len());
            if len == 0 {
                return None;
            }
            pos += 1 + len;
        } else if rest.starts_with(closing) {
            return Some((prefix, pos + closing.len()));
        } else {
            return None;
        }
    }
}

/// Why a numeric-looking word is not a number.
#[derive(Debug, PartialEq)]
enum NumberError {
    Invalid,
    TooLarge,
}

/// Reads a KDL v2 number: decimal, `0x`, `0o` or `0b` integers with `_` separators, and
/// decimals with a fraction or an exponent as floats.
fn number(word: &str) -> Result<Value, NumberError> {
    let (negative, unsigned) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = unsigned.strip_prefix(prefix) {
            return integer(digits, radix, negative).map(Value::Int);
        }
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(idx) => (
            unsigned.get(..idx).unwrap_or(""),
            Some(unsigned.get(idx + 1..).unwrap_or("")),
        ),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let exponent_digits = exponent.map(|exp| exp.strip_prefix(['+', '-']).unwrap_or(exp));
    let parts_valid = is_decimal_digits(whole)
        && fraction.is_none_or(is_decimal_digits)
        && exponent_digits.is_none_or(is_decimal_digits);
    if !parts_valid {
        return Err(NumberError::Invalid);
    }
    if fraction.is_none() && exponent.is_none() {
        return integer(whole, 10, negative).map(Value::Int);
    }
    let cleaned: String = word.chars().filter(|&ch| ch != '_').collect();
    cleaned
        .parse::<f64>()
        .map(Value::Float)
        .map_err(|_| NumberError::Invalid)
}

/// Whether a word is a digit followed by digits and `_`.
fn is_decimal_digits(text: &str) -> bool {
    text.starts_with(|ch: char| ch.is_ascii_digit())
        && text.chars().all(|ch| ch.is_ascii_digit() || ch == '_')
}

/// Reads integer digits (the first a digit, then digits and `_`) in a radix, exactly.
fn integer(digits: &str, radix: u32, negative: bool) -> Result<i128, NumberError> {
    if !digits.starts_with(|ch: char| ch.is_digit(radix))
        || !digits.chars().all(|ch| ch.is_digit(radix) || ch == '_')
    {
        return Err(NumberError::Invalid);
    }
    let mut value: i128 = 0;
    for ch in digits.chars().filter(|&ch| ch != '_') {
        let digit = i128::from(ch.to_digit(radix).ok_or(NumberError::Invalid)?);
        value = value
            .checked_mul(i128::from(radix))
            .and_then(|value| {
                if negative {
                    value.checked_sub(digit)
                } else {
                    value.checked_add(digit)
                }
            })
            .ok_or(NumberError::TooLarge)?;
    }
    Ok(value)
}

/// A word cut to a length that fits in a message.
fn shorten(word: &str) -> String {
    if word.chars().count() <= 40 {
        word.to_string()
    } else {
        let head: String = word.chars().take(40).collect();
        format!("{head}…")
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

    fn errors(text: &str) -> Vec<(Code, String, String)> {
        let (document, diagnostics) = parse(FileId(0), text);
        assert!(document.root.is_none(), "{text:?} parsed");
        diagnostics
            .iter()
            .map(|d| {
                let span = d.labels[0].span;
                (
                    d.code,
                    d.message.clone(),
                    text.get(span.range()).unwrap_or("<bad span>").to_string(),
                )
            })
            .collect()
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
        let found = errors("tenant \"a\" {\n  org \"acme\n  trust hard x=true\n  y 1abc\n}\n");
        let messages: Vec<_> = found.iter().map(|(_, m, _)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "unexpected newline in single-line quoted string",
                "`true` is a keyword and must be written `#true`",
                "`1abc` is not a valid number",
            ]
        );
        assert!(found.iter().all(|(code, _, _)| *code == Code::KdlSyntax));
    }

    #[test]
    fn rejects_a_second_top_level_node() {
        let (_, diagnostics) = parse(FileId(0), "tenant \"a\"\ntenant \"b\"\n");
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::DocumentShape);
    }

    #[test]
    fn rejects_deep_nesting_without_deep_recursion() {
        let deep = format!("tenant \"a\" {}{}\n", "x {".repeat(5000), "}".repeat(5000));
        let found = errors(&deep);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Code::KdlUnsupported);
        let braces_in_strings = format!("tenant \"a\" {{ org \"{}\" }}\n", "{".repeat(500));
        assert!(parse(FileId(0), &braces_in_strings).0.root.is_some());
    }

    #[test]
    fn rejects_type_annotations() {
        let (_, diagnostics) = parse(FileId(0), "tenant \"a\" {\n  org (u8)1\n}\n");
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, Code::KdlUnsupported);
    }

    #[test]
    fn reads_every_string_form() {
        let text = concat!(
            "tenant a {\n",
            "  s \"q\\\"\\u{e9}\\n\\s\" #\"\\\"# ##\"a\"#b\"##\n",
            "  m \"\"\"\n    one\n\n      two \\\n      three\n    \"\"\"\n",
            "  n #\"\"\"\n    raw \\n\n    \"\"\"#\n",
            "}\n"
        );
        let (map, diagnostics) = root_map(text);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let strings: Vec<Vec<Value>> = map
            .entries
            .iter()
            .map(|entry| match &entry.value.value {
                Value::Map(inner) => inner.args.iter().map(|n| n.value.clone()).collect(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            strings,
            vec![
                vec![
                    Value::Str("q\"\u{e9}\n ".into()),
                    Value::Str("\\".into()),
                    Value::Str("a\"#b".into()),
                ],
                vec![Value::Str("one\n\n  two three".into())],
                vec![Value::Str("raw \\n".into())],
            ]
        );
    }

    #[test]
    fn reads_numbers_and_keywords() {
        let (map, diagnostics) =
            root_map("n 1_000 -0xf_f 0o17 0b101 1.5e3 -2E-1 #true #null #-inf\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let values: Vec<_> = map.args.iter().map(|n| n.value.clone()).collect();
        assert_eq!(
            values[..5],
            [
                Value::Int(1000),
                Value::Int(-255),
                Value::Int(15),
                Value::Int(5),
                Value::Float(1500.0)
            ]
        );
    }

    #[test]
    fn a_too_large_integer_is_reported_at_the_number() {
        let big = "340282366920938463463374607431768211456";
        let text = format!("tenant \"a\" {{\n  nodes {big}\n}}\n");
        let found = errors(&text);
        assert_eq!(
            found,
            [(
                Code::KdlSyntax,
                "integer is too large".to_string(),
                big.to_string()
            )]
        );
        // The extremes of i128 still parse.
        let (map, _) = root_map(&format!("n {} {}\n", i128::MAX, i128::MIN));
        assert_eq!(map.args[1].value, Value::Int(i128::MIN));
    }

    #[test]
    fn disallowed_code_points_are_named_at_their_position() {
        for ch in ['\u{0}', '\u{7f}', '\u{202e}', '\u{feff}', '\u{1b}'] {
            let text = format!("tenant \"a\" {{\n  org \"a{ch}b\"\n}}\n");
            let found = errors(&text);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].1.contains(&format!("U+{:04X}", u32::from(ch))),
                "{found:?}"
            );
            assert_eq!(found[0].2, ch.to_string());
        }
        // A BOM at the very start is allowed.
        assert!(parse(FileId(0), "\u{feff}tenant \"a\"\n").0.root.is_some());
    }

    #[test]
    fn every_kdl_newline_ends_a_node() {
        for newline in [
            "\n", "\r\n", "\r", "\u{85}", "\u{b}", "\u{c}", "\u{2028}", "\u{2029}",
        ] {
            let text = format!("tenant \"a\" {{{newline}org \"x\"{newline}team \"y\"{newline}}}");
            let (map, diagnostics) = root_map(&text);
            assert!(diagnostics.is_empty(), "{newline:?}: {diagnostics:?}");
            assert_eq!(map.entries.len(), 2, "{newline:?}");
        }
    }

    #[test]
    fn slashdash_comments_out_nodes_entries_and_blocks() {
        let (map, diagnostics) =
            root_map("/- x { y }\ntenant a /-b c=1 /-d=2 /-{ e } {\n  /- f\n  g\n} /-{ h }\n");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(map.args.len(), 1);
        let keys: Vec<_> = map.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["c", "g"]);
    }

    /// KDL v2 has allowed a slashdash right after a value since kdl-org/kdl #499 (2025-01-29):
    /// `(node-space | slashdash)` before each entry, `node-space*` before a slashdashed block.
    #[test]
    fn slashdash_needs_no_space_before_it() {
        for (text, args, keys) in [
            (
                "node \"string\"/-1\n",
                vec![Value::Str("string".into())],
                vec![],
            ),
            (
                "node \"string\"/-{}\n",
                vec![Value::Str("string".into())],
                vec![],
            ),
            (
                "node \"string\" {}/-{}\n",
                vec![Value::Str("string".into())],
                vec![],
            ),
            (
                "node \"string\"/-foo=1\n",
                vec![Value::Str("string".into())],
                vec![],
            ),
            ("node/-1 2\n", vec![Value::Int(2)], vec![]),
            (
                "node 1/-2/-3 4\n",
                vec![Value::Int(1), Value::Int(4)],
                vec![],
            ),
            (
                "node k=1/-2 #true/-{ x }\n",
                vec![Value::Bool(true)],
                vec!["k"],
            ),
            (
                "node #\"r\"#/-\"\"\"\n  x\n  \"\"\"/- y\n",
                vec![Value::Str("r".into())],
                vec![],
            ),
            ("node {\n  a\n}/-{ b }\n", vec![], vec!["a"]),
        ] {
            let (map, diagnostics) = root_map(text);
            assert!(diagnostics.is_empty(), "{text:?}: {diagnostics:?}");
            let values: Vec<_> = map.args.iter().map(|n| n.value.clone()).collect();
            assert_eq!(values, args, "{text:?}");
            let found: Vec<_> = map.entries.iter().map(|e| e.key.as_str()).collect();
            assert_eq!(found, keys, "{text:?}");
        }
        // A `/` that starts no comment still needs a space before the next value.
        for text in [
            "node \"a\"/x\n",
            "node 1/ 2\n",
            "node \"a\"/\n",
            "node \"a\"/-\n",
        ] {
            let found = errors(text);
            assert!(
                found.iter().all(|(code, _, _)| *code == Code::KdlSyntax) && !found.is_empty(),
                "{text:?}: {found:?}"
            );
        }
    }

    /// Every finding of the parser goes through the file's cap as it is reported (issue 24):
    /// whatever a file repeats, the parser returns what one file shows, and counts the rest.
    #[test]
    fn every_finding_is_capped_as_it_is_reported() {
        let nested = format!(
            "{}{}{}",
            "x {".repeat(MAX_NESTING),
            "y {}\n".repeat(50_000),
            "}".repeat(MAX_NESTING)
        );
        let cases = [
            (
                "(t)n (u)1 k=(v)2\n".repeat(100_000),
                vec![
                    (Code::KdlUnsupported, 300_000),
                    (Code::DocumentShape, 99_999),
                ],
            ),
            ("n 1abc\n".repeat(100_000), vec![(Code::KdlSyntax, 100_000)]),
            (nested, vec![(Code::KdlUnsupported, 50_000)]),
        ];
        for (text, expected) in cases {
            let (_, diagnostics) = parse(FileId(0), &text);
            assert!(
                diagnostics.len() <= crate::limits::MAX_DIAGNOSTICS_PER_FILE + 1,
                "{} diagnostics",
                diagnostics.len()
            );
            let mut found: Vec<(Code, usize)> = Vec::new();
            for diagnostic in &diagnostics {
                let counts = if diagnostic.code == Code::DiagnosticsTruncated {
                    diagnostic
                        .hidden
                        .iter()
                        .map(|h| (h.code, h.errors))
                        .collect()
                } else {
                    vec![(diagnostic.code, 1)]
                };
                for (code, count) in counts {
                    match found.iter_mut().find(|(seen, _)| *seen == code) {
                        Some((_, total)) => *total += count,
                        None => found.push((code, count)),
                    }
                }
            }
            found.sort();
            let mut expected = expected;
            expected.sort();
            assert_eq!(found, expected);
        }
    }

    #[test]
    fn the_issue_reproducers_are_diagnostics() {
        for opener in ["#\"\\\"#", "#\"a\"b\"#", "\"\\\"\"", "/* /* */ */"] {
            let text = format!(
                "tenant \"acme-research\" {opener} {{{}{} }}",
                " a {".repeat(3000),
                " }".repeat(3000)
            );
            let found = errors(&text);
            assert!(
                found
                    .iter()
                    .any(|(code, _, _)| *code == Code::KdlUnsupported),
                "{opener}: {found:?}"
            );
        }
    }

    /// Deep input of every form that fooled the old guard or made kdl-rs recurse, parsed on a
    /// thread with a 1 MiB stack (the main thread has 8 MiB; 256 KiB is too little for 64 levels
    /// in an unoptimised build): every document gives a diagnostic or a tree, never a crash.
    #[test]
    fn deep_hostile_input_never_exhausts_a_small_stack() {
        const PIECES: &[&str] = &[
            "#\"\\\"# ",
            "#\"a\"b\"# ",
            "##\"a\"#\"## ",
            "\"\\\"\" ",
            "\"\"\"\n{\n\"\"\" ",
            "#\"\"\"\n}\n\"\"\"# ",
            "/* /* */ */ ",
            "/* * / * */",
            "// {\n",
            "/- ",
            "/-{ ",
            "\\\n",
            "\\ // }\n",
            "\u{2028}",
            "\r",
            "\u{85}",
            "x {",
            "{",
            "}",
            "\"{\" ",
            "(t)",
            "\"unclosed",
            "/* unclosed",
            ";",
        ];
        let handle = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
                for round in 0..60 {
                    let mut text = String::from("tenant \"a\" ");
                    let length = 500 + round * 100;
                    for _ in 0..length {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let pick = (seed % (PIECES.len() as u64 + 4)) as usize;
                        // Openers come more often than anything else, to build depth.
                        text.push_str(PIECES.get(pick).copied().unwrap_or(" a {"));
                    }
                    let (document, diagnostics) = parse(FileId(0), &text);
                    assert!(document.root.is_some() || !diagnostics.is_empty());
                }
                // Long runs of one piece: pieces of one comment, misplaced braces, slashdashes.
                for piece in ["* ", "}", "/- ", "{", " a {", "/* "] {
                    let text = format!("tenant \"a\" /* {} */\n", piece.repeat(20_000));
                    let _ = parse(FileId(0), &text);
                    let text = format!("tenant \"a\"\n{}", piece.repeat(20_000));
                    let _ = parse(FileId(0), &text);
                }
            })
            .unwrap();
        assert!(handle.join().is_ok(), "the parser overflowed a 1 MiB stack");
    }

    /// The parser's work on input shapes that invite rescanning (recovery over unclosed
    /// comments and strings, deep blocks, long comments, many errors) grows linearly: four times
    /// the input takes at most five times the steps.
    #[test]
    fn work_is_linear_in_the_input() {
        let shapes: &[(&str, &str, &str)] = &[
            ("tenant a 1abc {\n", "x /*\n", ""),
            ("tenant a {\n", "x \"unclosed\n", "}"),
            ("tenant a {\n", "x \"\"\"\n", "}"),
            ("tenant a {\n", "x #\"\"\"\n", "}"),
            ("tenant a {\n", "x #\"a\n", "}"),
            ("tenant a 1abc {\n", "x \"\"\"\n", "}"),
            ("tenant a ", "/* ", ""),
            ("tenant a ", "a {", ""),
            ("tenant a\n", "}", ""),
            ("tenant a ", "\\\n", ""),
            ("tenant a {\n", "b 1abc \"x\" /* y */ {\n", ""),
            ("tenant a \"\"\"\n", "  \\\n", "  \"\"\""),
        ];
        let steps = |head: &str, piece: &str, tail: &str, count: usize| {
            let text = format!("{head}{}{tail}", piece.repeat(count));
            let mut parser = Parser::at(FileId(0), &text, 0, false);
            parser.document();
            parser.steps.get()
        };
        for &(head, piece, tail) in shapes {
            let small = steps(head, piece, tail, 2_000);
            let large = steps(head, piece, tail, 8_000);
            assert!(
                large <= small * 5,
                "{piece:?}: 4x the input took {large} steps against {small}"
            );
        }
    }
}
