//! A reader over one parsed object that records which fields were read.
//!
//! Consumes: a [`Node`] from `parse`. Produces: typed values and diagnostics. The same calls read
//! a KDL node and a YAML mapping: a positional KDL argument is a named YAML key, a repeated KDL
//! child node is a YAML list under a plural key, and a KDL node with one argument is a scalar.
//!
//! Invariant: after [`Obj::finish`], every key and argument of the object was either read or
//! reported (`field-unknown`, `argument-unexpected`), with a did-you-mean among the keys read.

use std::cell::RefCell;

use crate::diag::{Code, Diagnostic, FileFindings, did_you_mean, list_names};
use crate::model::Spanned;
use crate::parse::{Entry, Format, Map, Node, Value};
use crate::quantity::Quantity;
use crate::source::Span;

/// Collects diagnostics while objects are read, through the file's cap as they are recorded
/// (a declaration with a finding per field holds what one file shows, and counts the rest).
#[derive(Debug, Default)]
pub struct Ctx {
    diagnostics: RefCell<FileFindings>,
}

impl Ctx {
    /// Records a diagnostic.
    pub fn push(&self, diagnostic: Diagnostic) {
        self.diagnostics.borrow_mut().push(diagnostic);
    }

    /// How many diagnostics were recorded so far, shown or not: a reader compares counts to
    /// tell whether a field it read was present but refused, and so avoid a follow-on finding.
    pub fn count(&self) -> usize {
        self.diagnostics.borrow().reported()
    }

    /// Takes every diagnostic recorded so far, capped, sorted by position.
    pub fn take(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.diagnostics.borrow_mut()).finish()
    }
}

/// Reads the fields of one object.
pub struct Obj<'a, 'c> {
    ctx: &'c Ctx,
    map: &'a Map,
    /// Where the object is named (a KDL node name or the first key of a YAML mapping).
    pub span: Span,
    what: &'static str,
    used: Vec<bool>,
    args_used: usize,
    known: Vec<&'static str>,
    /// Missing required fields, reported at [`Obj::finish`] unless an unknown field is a typo
    /// of one of them (then the typo is the one finding).
    missing: Vec<(&'static str, Diagnostic)>,
}

impl<'a, 'c> Obj<'a, 'c> {
    /// Starts reading `node` as an object called `what` in messages; `None` (with a diagnostic)
    /// if the node is not an object.
    pub fn new(ctx: &'c Ctx, node: &'a Node, what: &'static str) -> Option<Self> {
        match &node.value {
            Value::Map(map) => Some(Self {
                ctx,
                map,
                span: node.span,
                what,
                used: vec![false; map.entries.len()],
                args_used: 0,
                known: Vec::new(),
                missing: Vec::new(),
            }),
            other => {
                ctx.push(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        node.span,
                        format!("expected {what} as a mapping, found {}", other.type_name()),
                    )
                    .with_help(format!("write {what} as a mapping of its fields")),
                );
                None
            }
        }
    }

    /// The syntax the object was written in.
    pub fn format(&self) -> Format {
        self.map.format
    }

    fn key_for(&self, kdl_key: &'static str, yaml_key: &'static str) -> &'static str {
        match self.map.format {
            Format::Kdl => kdl_key,
            Format::Yaml => yaml_key,
        }
    }

    /// Takes the single entry under `key`; reports later repeats as duplicates.
    pub fn entry(&mut self, key: &'static str) -> Option<&'a Entry> {
        self.known.push(key);
        let mut first: Option<&'a Entry> = None;
        for (idx, entry) in self.map.entries.iter().enumerate() {
            if entry.key != key {
                continue;
            }
            if let Some(used) = self.used.get_mut(idx) {
                *used = true;
            }
            match first {
                None => first = Some(entry),
                Some(earlier) => self.ctx.push(
                    Diagnostic::error(
                        Code::FieldDuplicate,
                        entry.key_span,
                        format!("`{key}` is given more than once in {}", self.what),
                    )
                    .with_label("repeated here")
                    .with_secondary(earlier.key_span, "first given here")
                    .with_help(format!("keep one `{key}`")),
                ),
            }
        }
        first
    }

    /// Takes the single field `key` (any value shape).
    pub fn field(&mut self, key: &'static str) -> Option<&'a Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    /// Takes positional argument `idx` in KDL, or the field `yaml_key` in YAML.
    pub fn arg(&mut self, idx: usize, yaml_key: &'static str) -> Option<&'a Node> {
        match self.map.format {
            Format::Kdl => {
                self.args_used = self.args_used.max(idx + 1);
                self.map.args.get(idx)
            }
            Format::Yaml => self.field(yaml_key),
        }
    }

    /// Takes every item of a repeated field: all `kdl_key` children in KDL, the items of the list
    /// `yaml_key` in YAML.
    pub fn items(&mut self, kdl_key: &'static str, yaml_key: &'static str) -> Vec<&'a Node> {
        match self.map.format {
            Format::Kdl => {
                self.known.push(kdl_key);
                let mut items = Vec::new();
                for (idx, entry) in self.map.entries.iter().enumerate() {
                    if entry.key == kdl_key {
                        if let Some(used) = self.used.get_mut(idx) {
                            *used = true;
                        }
                        items.push(&entry.value);
                    }
                }
                items
            }
            Format::Yaml => match self.entry(yaml_key) {
                None => Vec::new(),
                Some(Entry {
                    value:
                        Node {
                            value: Value::Seq(items),
                            ..
                        },
                    ..
                }) => items.iter().collect(),
                Some(Entry {
                    key_span,
                    value: other,
                    ..
                }) => {
                    self.ctx.push(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            *key_span,
                            format!(
                                "`{yaml_key}` must be a list, found {}",
                                other.value.type_name()
                            ),
                        )
                        .with_help(format!("write `{yaml_key}:` followed by `- …` items")),
                    );
                    Vec::new()
                }
            },
        }
    }

    /// Takes a key-value map: KDL children `kdl_key "key" value`, or the YAML mapping `yaml_key`.
    pub fn pairs(
        &mut self,
        kdl_key: &'static str,
        yaml_key: &'static str,
    ) -> Vec<(Spanned<String>, &'a Node)> {
        let mut pairs = Vec::new();
        match self.map.format {
            Format::Kdl => {
                for item in self.items(kdl_key, yaml_key) {
                    let Value::Map(map) = &item.value else {
                        continue;
                    };
                    match (map.args.as_slice(), map.entries.as_slice()) {
                        ([key, value], []) => match &key.value {
                            Value::Str(text) => {
                                if checked_text(
                                    self.ctx,
                                    text,
                                    key.span,
                                    &format!("`{kdl_key}` key"),
                                )
                                .is_some()
                                {
                                    pairs.push((Spanned::new(text.clone(), key.span), value));
                                }
                            }
                            other => self.ctx.push(
                                Diagnostic::error(
                                    Code::TypeMismatch,
                                    key.span,
                                    format!(
                                        "`{kdl_key}` key must be a string, found {}",
                                        other.type_name()
                                    ),
                                )
                                .with_help("quote the key"),
                            ),
                        },
                        _ => self.ctx.push(
                            Diagnostic::error(
                                Code::TypeMismatch,
                                item.span,
                                format!("`{kdl_key}` takes exactly two values: a key and a value"),
                            )
                            .with_help(format!("write `{kdl_key} \"<key>\" <value>`")),
                        ),
                    }
                }
            }
            Format::Yaml => match self.field(yaml_key) {
                None => {}
                Some(Node {
                    value: Value::Map(map),
                    ..
                }) => {
                    for entry in &map.entries {
                        let what = format!("`{yaml_key}` key");
                        if checked_text(self.ctx, &entry.key, entry.key_span, &what).is_some() {
                            pairs.push((
                                Spanned::new(entry.key.clone(), entry.key_span),
                                &entry.value,
                            ));
                        }
                    }
                }
                Some(other) => self.ctx.push(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        other.span,
                        format!(
                            "`{yaml_key}` must be a mapping, found {}",
                            other.value.type_name()
                        ),
                    )
                    .with_help(format!(
                        "write `{yaml_key}:` followed by `key: value` lines"
                    )),
                ),
            },
        }
        pairs
    }

    /// Takes a list of values: the arguments of one KDL node `key a b c`, or the YAML list `key`.
    /// `Some(empty)` when the field is absent or empty; `None` (reported) when it is not a list.
    pub fn values(&mut self, key: &'static str) -> Option<Vec<&'a Node>> {
        let Some(node) = self.field(key) else {
            return Some(Vec::new());
        };
        match &node.value {
            Value::Map(map) if map.format == Format::Kdl && map.entries.is_empty() => {
                Some(map.args.iter().collect())
            }
            Value::Seq(items) => Some(items.iter().collect()),
            other => {
                self.ctx.push(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        node.span,
                        format!(
                            "`{key}` must be a list of values, found {}",
                            other.type_name()
                        ),
                    )
                    .with_help(match self.map.format {
                        Format::Kdl => format!("write `{key} <value> <value> …`"),
                        Format::Yaml => format!("write `{key}: [<value>, …]`"),
                    }),
                );
                None
            }
        }
    }

    /// Reports a required field that was not given.
    pub fn missing(&mut self, kdl_key: &'static str, yaml_key: &'static str, example: &str) {
        let key = self.key_for(kdl_key, yaml_key);
        let help = match self.map.format {
            Format::Kdl => format!("add `{example}` to {}", self.what),
            Format::Yaml => format!("add `{key}: …` to {}", self.what),
        };
        self.missing.push((
            key,
            Diagnostic::error(
                Code::FieldMissing,
                self.span,
                format!("{} has no `{key}`", self.what),
            )
            .with_label(format!("`{key}` is required here"))
            .with_help(help),
        ));
    }

    /// Reports every field and argument that no call read.
    pub fn finish(mut self) {
        let mut typo_of = Vec::new();
        // Sorted once for every unknown key, so an object with thousands of them costs linear time.
        let mut known = self.known.clone();
        known.sort_unstable();
        known.dedup();
        let mut known_list: Option<String> = None;
        for (entry, used) in self.map.entries.iter().zip(&self.used) {
            if *used {
                continue;
            }
            let mut diagnostic = Diagnostic::error(
                Code::FieldUnknown,
                entry.key_span,
                format!("{} has no field `{}`", self.what, entry.key),
            );
            let close = did_you_mean(&entry.key, known.iter().copied());
            if let Some(close) = close {
                typo_of.push(close);
            }
            diagnostic = match close {
                Some(close) => diagnostic
                    .with_label(format!("did you mean `{close}`?"))
                    .with_help(format!("rename it to `{close}`")),
                None => {
                    let names = known_list.get_or_insert_with(|| list_names(known.iter().copied()));
                    diagnostic
                        .with_label("unknown field")
                        .with_help(format!("{} fields are {names}", self.what))
                }
            };
            self.ctx.push(diagnostic);
        }
        for (key, diagnostic) in std::mem::take(&mut self.missing) {
            if !typo_of.contains(&key) {
                self.ctx.push(diagnostic);
            }
        }
        if self.map.format == Format::Kdl {
            for extra in self.map.args.iter().skip(self.args_used) {
                self.ctx.push(
                    Diagnostic::error(
                        Code::ArgumentUnexpected,
                        extra.span,
                        format!(
                            "{} takes {} positional value{} here",
                            self.what,
                            self.args_used,
                            if self.args_used == 1 { "" } else { "s" }
                        ),
                    )
                    .with_label("unexpected value")
                    .with_help("remove it, or give it as a named property `name=value`"),
                );
            }
        }
    }

    /// The diagnostics context.
    pub fn ctx(&self) -> &'c Ctx {
        self.ctx
    }

    // Typed helpers: the field is read, converted and range-checked in one call.

    /// A required string field.
    pub fn req_str(&mut self, key: &'static str, example: &str) -> Option<Spanned<String>> {
        match self.field(key) {
            Some(node) => string(self.ctx, node, key),
            None => {
                self.missing(key, key, example);
                None
            }
        }
    }

    /// An optional string field.
    pub fn opt_str(&mut self, key: &'static str) -> Option<Spanned<String>> {
        self.field(key).and_then(|node| string(self.ctx, node, key))
    }

    /// A required string from positional argument `idx` (KDL) or field `yaml_key` (YAML).
    pub fn req_arg_str(
        &mut self,
        idx: usize,
        yaml_key: &'static str,
        example: &str,
    ) -> Option<Spanned<String>> {
        match self.arg(idx, yaml_key) {
            Some(node) => string(self.ctx, node, yaml_key),
            None => {
                self.missing_arg(yaml_key, example);
                None
            }
        }
    }

    /// Reports a missing positional argument (KDL) or field (YAML).
    pub fn missing_arg(&mut self, yaml_key: &'static str, example: &str) {
        match self.map.format {
            Format::Kdl => self.ctx.push(
                Diagnostic::error(
                    Code::FieldMissing,
                    self.span,
                    format!("{} has no {yaml_key}", self.what),
                )
                .with_label(format!("the {yaml_key} goes after this"))
                .with_help(format!("write `{example}`")),
            ),
            Format::Yaml => self.missing(yaml_key, yaml_key, example),
        }
    }

    /// A required integer field within `range`.
    pub fn req_int(
        &mut self,
        key: &'static str,
        range: std::ops::RangeInclusive<i64>,
        example: &str,
    ) -> Option<Spanned<i64>> {
        match self.field(key) {
            Some(node) => integer(self.ctx, node, key, range),
            None => {
                self.missing(key, key, example);
                None
            }
        }
    }

    /// An optional integer field within `range`.
    pub fn opt_int(
        &mut self,
        key: &'static str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Option<Spanned<i64>> {
        self.field(key)
            .and_then(|node| integer(self.ctx, node, key, range))
    }

    /// A required quantity field.
    pub fn req_quantity(&mut self, key: &'static str, example: &str) -> Option<Spanned<Quantity>> {
        match self.field(key) {
            Some(node) => quantity(self.ctx, node, key),
            None => {
                self.missing(key, key, example);
                None
            }
        }
    }

    /// An optional quantity field.
    pub fn opt_quantity(&mut self, key: &'static str) -> Option<Spanned<Quantity>> {
        self.field(key)
            .and_then(|node| quantity(self.ctx, node, key))
    }
}

/// The single value of a scalar field: the node itself in YAML, the one argument of a KDL node.
pub fn scalar<'a>(ctx: &Ctx, node: &'a Node, key: &str) -> Option<&'a Node> {
    match &node.value {
        Value::Map(map) if map.format == Format::Kdl => {
            match (map.args.as_slice(), map.entries.as_slice()) {
                ([only], []) => Some(only),
                _ => {
                    ctx.push(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            node.span,
                            format!("`{key}` takes exactly one value"),
                        )
                        .with_help(format!("write `{key} <value>`")),
                    );
                    None
                }
            }
        }
        _ => Some(node),
    }
}

fn mismatch(ctx: &Ctx, node: &Node, key: &str, expected: &str) {
    ctx.push(
        Diagnostic::error(
            Code::TypeMismatch,
            node.span,
            format!(
                "`{key}` must be {expected}, found {}",
                node.value.type_name()
            ),
        )
        .with_label(format!("expected {expected}"))
        .with_help(match expected {
            "a string" => {
                "write a string; quote it if it looks like a number or a boolean".to_string()
            }
            _ => format!("write {expected} without quotes"),
        }),
    );
}

/// Refuses a string with a character that no declaration may hold (see
/// [`crate::names::forbidden_char`]), at the string; `what` names it in the message.
pub fn checked_text(ctx: &Ctx, text: &str, span: Span, what: &str) -> Option<()> {
    let Some((ch, kind)) = crate::names::forbidden_char(text) else {
        return Some(());
    };
    ctx.push(
        Diagnostic::error(
            Code::StringCharacterForbidden,
            span,
            format!("{what} holds U+{:04X}, {kind}", ch as u32),
        )
        .with_label(format!("U+{:04X} is in this string", ch as u32))
        .with_help(
            "remove the character; control, bidirectional-formatting, separator and \
             noncharacter code points hide text in review and break YAML readers",
        ),
    );
    None
}

/// Reads a string that may be empty (label values).
pub fn string_or_empty(ctx: &Ctx, node: &Node, key: &str) -> Option<Spanned<String>> {
    let node = scalar(ctx, node, key)?;
    match &node.value {
        Value::Str(text) => {
            checked_text(ctx, text, node.span, &format!("`{key}`"))?;
            Some(Spanned::new(text.clone(), node.span))
        }
        _ => {
            mismatch(ctx, node, key, "a string");
            None
        }
    }
}

/// Reads a string value; apart from label values, declarations have no meaningful empty strings.
pub fn string(ctx: &Ctx, node: &Node, key: &str) -> Option<Spanned<String>> {
    let node = scalar(ctx, node, key)?;
    match &node.value {
        Value::Str(text) if text.trim().is_empty() => {
            ctx.push(
                Diagnostic::error(Code::TypeMismatch, node.span, format!("`{key}` is empty"))
                    .with_label("expected a non-empty string")
                    .with_help(format!(
                        "write a value for `{key}`, or leave the field out if it is optional"
                    )),
            );
            None
        }
        Value::Str(text) => {
            checked_text(ctx, text, node.span, &format!("`{key}`"))?;
            Some(Spanned::new(text.clone(), node.span))
        }
        _ => {
            mismatch(ctx, node, key, "a string");
            None
        }
    }
}

/// Reads an integer value within `range`.
pub fn integer(
    ctx: &Ctx,
    node: &Node,
    key: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Option<Spanned<i64>> {
    let node = scalar(ctx, node, key)?;
    let Value::Int(number) = node.value else {
        mismatch(ctx, node, key, "an integer");
        return None;
    };
    match i64::try_from(number) {
        Ok(value) if range.contains(&value) => Some(Spanned::new(value, node.span)),
        _ => {
            ctx.push(
                Diagnostic::error(
                    Code::NumberOutOfRange,
                    node.span,
                    format!(
                        "`{key}` is {number}, outside {}..={}",
                        range.start(),
                        range.end()
                    ),
                )
                .with_label("out of range")
                .with_help(format!(
                    "use a value from {} to {}",
                    range.start(),
                    range.end()
                )),
            );
            None
        }
    }
}

/// Reads a number (integer or decimal) within `range`.
pub fn number(
    ctx: &Ctx,
    node: &Node,
    key: &str,
    range: std::ops::RangeInclusive<f64>,
) -> Option<Spanned<f64>> {
    let node = scalar(ctx, node, key)?;
    let value = match node.value {
        Value::Float(value) => value,
        Value::Int(value) => value as f64,
        _ => {
            mismatch(ctx, node, key, "a number");
            return None;
        }
    };
    if value.is_finite() && range.contains(&value) {
        Some(Spanned::new(value, node.span))
    } else {
        ctx.push(
            Diagnostic::error(
                Code::NumberOutOfRange,
                node.span,
                format!(
                    "`{key}` is {value}, outside {}..={}",
                    range.start(),
                    range.end()
                ),
            )
            .with_label("out of range")
            .with_help(format!(
                "use a value from {} to {}",
                range.start(),
                range.end()
            )),
        );
        None
    }
}

/// Reads a boolean value.
pub fn boolean(ctx: &Ctx, node: &Node, key: &str) -> Option<Spanned<bool>> {
    let node = scalar(ctx, node, key)?;
    match node.value {
        Value::Bool(flag) => Some(Spanned::new(flag, node.span)),
        _ => {
            ctx.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    node.span,
                    format!(
                        "`{key}` must be a boolean, found {}",
                        node.value.type_name()
                    ),
                )
                .with_label("expected a boolean")
                .with_help("write `#true` or `#false` in KDL, `true` or `false` in YAML"),
            );
            None
        }
    }
}

/// Reads a string that must be one of `choices`.
pub fn choice<T: Copy>(
    ctx: &Ctx,
    node: &Node,
    key: &str,
    choices: &[(&'static str, T)],
) -> Option<Spanned<T>> {
    let text = string(ctx, node, key)?;
    if let Some((_, value)) = choices.iter().find(|(name, _)| *name == text.value) {
        return Some(Spanned::new(*value, text.span));
    }
    let names = choices.iter().map(|(name, _)| *name);
    let mut diagnostic = Diagnostic::error(
        Code::ValueUnknown,
        text.span,
        format!("`{}` is not a valid `{key}`", text.value),
    );
    diagnostic = match did_you_mean(&text.value, names.clone()) {
        Some(close) => diagnostic
            .with_label(format!("did you mean `{close}`?"))
            .with_help(format!("`{key}` is one of {}", list_names(names))),
        None => diagnostic
            .with_label("unknown value")
            .with_help(format!("`{key}` is one of {}", list_names(names))),
    };
    ctx.push(diagnostic);
    None
}

/// Reads a Kubernetes quantity given as a string (or a plain integer).
pub fn quantity(ctx: &Ctx, node: &Node, key: &str) -> Option<Spanned<Quantity>> {
    let node = scalar(ctx, node, key)?;
    let text = match &node.value {
        Value::Str(text) => text.clone(),
        Value::Int(number) => number.to_string(),
        _ => {
            ctx.push(
                Diagnostic::error(
                    Code::TypeMismatch,
                    node.span,
                    format!(
                        "`{key}` must be a quantity, found {}",
                        node.value.type_name()
                    ),
                )
                .with_label("expected a quantity")
                .with_help(
                    "write a whole number, or a quoted quantity such as \"500m\" or \"4Gi\"",
                ),
            );
            return None;
        }
    };
    match Quantity::parse(&text) {
        Ok(value) if value.milli() >= 0 => Some(Spanned::new(value, node.span)),
        Ok(_) => {
            ctx.push(
                Diagnostic::error(
                    Code::QuantityInvalid,
                    node.span,
                    format!("`{key}` is negative"),
                )
                .with_help("quantities here are zero or more"),
            );
            None
        }
        Err(error) => {
            ctx.push(
                Diagnostic::error(
                    Code::QuantityInvalid,
                    node.span,
                    format!("`{text}` is not a valid `{key}`"),
                )
                .with_label(error.to_string())
                .with_help(
                    "write a number with an optional suffix, such as \"500m\", \"4\" or \"16Gi\"",
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Document, parse};
    use crate::source::FileId;

    fn document(text: &str, format: Format) -> Document {
        let (document, diagnostics) = parse(FileId(0), text, format);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        document
    }

    /// Reads `name` and the `labels` pairs of one declaration, and returns what was accepted
    /// and the codes reported.
    fn read(text: &str, format: Format) -> (Option<String>, Vec<String>, Vec<Code>) {
        let document = document(text, format);
        let ctx = Ctx::default();
        let node = &document.root.as_ref().unwrap().node;
        let mut obj = Obj::new(&ctx, node, "cell").unwrap();
        let name = obj
            .req_arg_str(0, "name", "cell \"c1\"")
            .map(|name| name.value);
        let keys = obj
            .pairs("label", "labels")
            .into_iter()
            .map(|(key, _)| key.value)
            .collect();
        obj.finish();
        let codes = ctx
            .take()
            .iter()
            .map(|diagnostic| diagnostic.code)
            .collect();
        (name, keys, codes)
    }

    #[test]
    fn refuses_forbidden_characters_in_strings_and_keys_of_both_syntaxes() {
        let (name, keys, codes) = read(
            "cell \"c\\u{1b}[2J\" {\n    label \"ok\" \"v\"\n    label \"k\\u{2066}\" \"v\"\n}\n",
            Format::Kdl,
        );
        assert_eq!(name, None);
        assert_eq!(keys, ["ok"]);
        assert_eq!(codes, [Code::StringCharacterForbidden; 2]);

        let (name, keys, codes) = read(
            "name: \"c\\u2028\"\nlabels:\n  ok: v\n  \"k\\uFEFF\": v\n",
            Format::Yaml,
        );
        assert_eq!(name, None);
        assert_eq!(keys, ["ok"]);
        assert_eq!(codes, [Code::StringCharacterForbidden; 2]);
    }

    #[test]
    fn accepts_multi_line_text_and_printable_unicode() {
        let (name, _, codes) = read("name: |\n  two\n  lines \u{5b57}\u{1f600}\n", Format::Yaml);
        assert_eq!(name.as_deref(), Some("two\nlines \u{5b57}\u{1f600}\n"));
        assert!(codes.is_empty(), "{codes:?}");
    }

    #[test]
    fn the_diagnostic_names_the_field_and_the_code_point() {
        let document = document("name: \"a\\x86\"\n", Format::Yaml);
        let ctx = Ctx::default();
        let node = &document.root.as_ref().unwrap().node;
        let mut obj = Obj::new(&ctx, node, "tenant").unwrap();
        assert_eq!(obj.opt_str("name"), None);
        let diagnostics = ctx.take();
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(
            diagnostics[0].message,
            "`name` holds U+0086, a C1 control character"
        );
        assert_eq!(diagnostics[0].primary_span().unwrap().range(), 6..13);
        assert!(!diagnostics[0].help.is_empty());
    }
}
