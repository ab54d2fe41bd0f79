//! A canonical writer for the YAML subset tenantc emits.
//!
//! Consumes: [`Yaml`] trees built by `lower`. Produces: block-style YAML text.
//!
//! Invariants:
//! - Mapping keys are written in the order the tree holds them; `lower` builds objects in the
//!   conventional Kubernetes order (`apiVersion`, `kind`, `metadata`, `spec`) and sorts free-form
//!   maps (labels, quota keys) by key.
//! - A string is written plain only when every YAML 1.1 and 1.2 reader reads it back as the same
//!   string: it starts with a letter, holds only letters, digits and `-._/`, and is not a
//!   boolean or null word of either version (`on`, `off`, `yes`, `no`, `y`, `n`, `true`, `null`,
//!   …). Everything else is double-quoted with JSON escapes, which YAML reads identically.
//! - Output is `\n`-terminated lines with two-space indentation and no trailing spaces.

/// A YAML value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A sequence.
    Seq(Vec<Yaml>),
    /// A mapping, in the order given.
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// A string value.
    pub fn str(text: impl Into<String>) -> Self {
        Yaml::Str(text.into())
    }

    /// A mapping from `(key, value)` pairs.
    pub fn map<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Yaml)>) -> Self {
        Yaml::Map(
            pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value))
                .collect(),
        )
    }

    /// A mapping of strings to strings, sorted by key.
    pub fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut pairs: Vec<(String, Yaml)> = pairs
            .into_iter()
            .map(|(key, value)| (key.to_string(), Yaml::str(value)))
            .collect();
        pairs.sort_by(|left, right| left.0.cmp(&right.0));
        pairs.dedup_by(|left, right| left.0 == right.0);
        Yaml::Map(pairs)
    }
}

/// Words that some YAML version reads as a boolean or null when plain.
const RESERVED_WORDS: &[&str] = &[
    "y", "yes", "n", "no", "true", "false", "on", "off", "null", "~",
];

/// Whether `text` can be written without quotes and still read back as this exact string by a
/// YAML 1.1 or 1.2 reader.
pub fn is_plain_safe(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_ascii_alphabetic() {
        return false;
    }
    if !text
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '.' | '_' | '/'))
    {
        return false;
    }
    // YAML 1.1 also reads `.inf`/`.nan` forms, but those start with `.` and are quoted above.
    text.len() > 5
        || !RESERVED_WORDS
            .iter()
            .any(|word| word.eq_ignore_ascii_case(text))
}

fn write_scalar_string(out: &mut String, text: &str) {
    if is_plain_safe(text) {
        out.push_str(text);
    } else {
        write_double_quoted(out, text);
    }
}

/// Writes a JSON string literal, which is a YAML double-quoted scalar with the same value.
fn write_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ch if (ch as u32) < 0x20 || ch == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", ch as u32));
            }
            ch => out.push(ch),
        }
    }
    out.push('"');
}

/// Whether a multi-line string can be written as a literal block (`|` or `|-`) that every reader
/// reads back unchanged: printable text, no tabs, no trailing spaces, a first line that does not
/// start with a space, and at most one final newline.
fn is_literal_safe(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text.ends_with("\n\n")
        && !text.chars().any(|ch| ch.is_control() && ch != '\n')
        && text.lines().all(|line| !line.ends_with(' '))
}

fn write_literal(out: &mut String, text: &str, level: usize) {
    out.push_str(if text.ends_with('\n') { "|\n" } else { "|-\n" });
    for line in text.lines() {
        if !line.is_empty() {
            indent(out, level);
            out.push_str(line);
        }
        out.push('\n');
    }
}

fn is_block(value: &Yaml) -> bool {
    match value {
        Yaml::Seq(items) => !items.is_empty(),
        Yaml::Map(pairs) => !pairs.is_empty(),
        _ => false,
    }
}

fn write_inline(out: &mut String, value: &Yaml) {
    match value {
        Yaml::Str(text) => write_scalar_string(out, text),
        Yaml::Int(number) => out.push_str(&number.to_string()),
        Yaml::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Yaml::Seq(_) => out.push_str("[]"),
        Yaml::Map(_) => out.push_str("{}"),
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_map(out: &mut String, pairs: &[(String, Yaml)], level: usize, first_inline: bool) {
    for (idx, (key, value)) in pairs.iter().enumerate() {
        if !(idx == 0 && first_inline) {
            indent(out, level);
        }
        write_scalar_string(out, key);
        out.push(':');
        if let Yaml::Str(text) = value
            && is_literal_safe(text)
        {
            out.push(' ');
            write_literal(out, text, level + 1);
        } else if is_block(value) {
            out.push('\n');
            match value {
                Yaml::Map(inner) => write_map(out, inner, level + 1, false),
                // Sequences inside mappings are not indented further (the Kubernetes style).
                Yaml::Seq(items) => write_seq(out, items, level),
                _ => {}
            }
        } else {
            out.push(' ');
            write_inline(out, value);
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Yaml], level: usize) {
    for item in items {
        indent(out, level);
        out.push('-');
        match item {
            Yaml::Map(pairs) if !pairs.is_empty() => {
                out.push(' ');
                write_map(out, pairs, level + 1, true);
            }
            Yaml::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq(out, inner, level + 1);
            }
            other => {
                out.push(' ');
                write_inline(out, other);
                out.push('\n');
            }
        }
    }
}

/// Writes one document (without `---`).
pub fn to_string(value: &Yaml) -> String {
    let mut out = String::new();
    match value {
        Yaml::Map(pairs) if !pairs.is_empty() => write_map(&mut out, pairs, 0, false),
        Yaml::Seq(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        other => {
            write_inline(&mut out, other);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_every_string_a_yaml_1_1_reader_would_retype() {
        for word in [
            "on", "off", "yes", "no", "y", "n", "Y", "N", "YES", "On", "true", "False", "null",
            "~", "0755", "010", "1e3", "1.5", "64", "0x1F", ".inf", "-.inf", ".NaN", "12:30", "",
            " lead", "a: b", "- x", "#c", "2Gi", "500m", "1g.10gb",
        ] {
            assert!(!is_plain_safe(word), "{word:?} must be quoted");
        }
        for word in [
            "acme",
            "nvidia.com/gpu",
            "requests.nvidia.com/mig-1g.10gb",
            "v1.33",
            "Namespace",
        ] {
            assert!(is_plain_safe(word), "{word:?} can stay plain");
        }
    }

    #[test]
    fn writes_block_style_with_kubernetes_indentation() {
        let doc = Yaml::map([
            ("kind", Yaml::str("LimitRange")),
            (
                "spec",
                Yaml::map([(
                    "limits",
                    Yaml::Seq(vec![Yaml::map([
                        ("type", Yaml::str("Container")),
                        ("default", Yaml::map([("memory", Yaml::str("1Gi"))])),
                    ])]),
                )]),
            ),
            ("empty", Yaml::Map(vec![])),
            ("flag", Yaml::Bool(false)),
            ("count", Yaml::Int(3)),
            ("on", Yaml::str("no")),
        ]);
        let expected = "kind: LimitRange\nspec:\n  limits:\n  - type: Container\n    default:\n      memory: \"1Gi\"\nempty: {}\nflag: false\ncount: 3\n\"on\": \"no\"\n";
        assert_eq!(to_string(&doc), expected);
    }

    #[test]
    fn double_quoted_strings_are_json_string_literals() {
        for text in [
            "a\"b",
            "back\\slash",
            "tab\there",
            "bell\u{7}",
            "caf\u{e9} \u{1f600}",
            "\r\n",
        ] {
            let mut out = String::new();
            write_double_quoted(&mut out, text);
            let parsed: String = serde_json::from_str(&out).unwrap();
            assert_eq!(parsed, text, "{out}");
        }
    }

    #[test]
    fn escapes_quotes_and_newlines() {
        let doc = Yaml::map([("description", Yaml::str("say \"hi\"\n\tthere"))]);
        assert_eq!(
            to_string(&doc),
            "description: \"say \\\"hi\\\"\\n\\tthere\"\n"
        );
    }

    #[test]
    fn writes_multi_line_strings_as_literal_blocks() {
        let doc = Yaml::map([(
            "data",
            Yaml::map([
                (
                    "config.yaml",
                    Yaml::str("version: v1\nmig-configs:\n  a: 1\n"),
                ),
                ("no-final-newline", Yaml::str("a\n\nb")),
                ("trailing-space", Yaml::str("a \nb\n")),
            ]),
        )]);
        let expected = "data:\n  config.yaml: |\n    version: v1\n    mig-configs:\n      a: 1\n  no-final-newline: |-\n    a\n\n    b\n  trailing-space: \"a \\nb\\n\"\n";
        assert_eq!(to_string(&doc), expected);
    }
}
