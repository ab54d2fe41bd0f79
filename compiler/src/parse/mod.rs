//! Parsing of declaration files into one spanned tree.
//!
//! Consumes: a [`SourceFile`](crate::source::SourceFile) in KDL v2 or YAML.
//! Produces: a [`Document`]: the kind of the top-level declaration (`tenant` or `cell`) and a
//! format-neutral [`Node`] tree, plus diagnostics for everything that did not parse.
//!
//! KDL and YAML say the same things in different shapes. This tree keeps both shapes as they are
//! (KDL positional arguments stay arguments, repeated KDL nodes stay repeated entries) and
//! `schema` reads either with one set of rules; see `docs/declarations.md` for the mapping.
//!
//! Invariant: every node carries a byte span into its file; parsers never panic on input.

pub mod kdl;
#[cfg(test)]
mod kdl_parity;
pub mod yaml;

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};

/// The surface syntax of a declaration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// KDL v2 (`*.kdl`).
    Kdl,
    /// YAML 1.2 (`*.yaml`, `*.yml`).
    Yaml,
}

/// A value with its source span.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where it was written.
    pub span: Span,
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null` (KDL `#null`, YAML `null`, `~` or nothing).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A YAML sequence.
    Seq(Vec<Node>),
    /// A YAML mapping or a KDL node.
    Map(Map),
}

impl Value {
    /// A short name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(map) if map.format == Format::Kdl && map.entries.is_empty() => {
                if map.args.is_empty() {
                    "an empty node"
                } else {
                    "several values"
                }
            }
            Value::Map(_) => "a mapping",
        }
    }
}

/// A key-value entry of a [`Map`].
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key: a YAML mapping key, a KDL property name or a KDL child node name.
    pub key: String,
    /// Where the key was written.
    pub key_span: Span,
    /// The value.
    pub value: Node,
}

/// A YAML mapping or a KDL node (its arguments, properties and children).
#[derive(Debug, Clone, PartialEq)]
pub struct Map {
    /// Which syntax produced it.
    pub format: Format,
    /// KDL positional arguments, in order; always empty for YAML.
    pub args: Vec<Node>,
    /// Entries in source order; KDL children may repeat a key.
    pub entries: Vec<Entry>,
}

/// One parsed declaration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The file.
    pub file: FileId,
    /// Its syntax.
    pub format: Format,
    /// The top-level declaration: for KDL the node name and the node; for YAML `None` and the
    /// root mapping. `None` when the file is empty or did not parse.
    pub root: Option<Root>,
}

/// The top-level declaration of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    /// The KDL top-level node name (`tenant`, `cell`) and its span; `None` for YAML, whose kind
    /// comes from the folder.
    pub kind: Option<(String, Span)>,
    /// The declaration body.
    pub node: Node,
}

/// Parses one file in the given format.
pub fn parse(file: FileId, text: &str, format: Format) -> (Document, Vec<Diagnostic>) {
    match format {
        Format::Kdl => kdl::parse(file, text),
        Format::Yaml => yaml::parse(file, text),
    }
}
