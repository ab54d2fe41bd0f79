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
//! - Every character that is not printable in both YAML 1.1 and 1.2 (`c-printable`: C0 controls
//!   other than tab and line breaks, DEL, C1 controls, U+FFFE, U+FFFF), or that one of them reads
//!   as a line break or strips (U+0085, U+2028, U+2029, U+FEFF), is written as a `\uXXXX`
//!   escape, and a string holding one is never plain or a literal block; so PyYAML (1.1) and
//!   saphyr (1.2) read every string back unchanged (property tests below).
//! - Output is `\n`-terminated lines with two-space indentation and no trailing spaces.

/// A mapping key.
pub type Key = std::borrow::Cow<'static, str>;

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
    /// A mapping, in the order given. Keys are borrowed when they are static (struct field
    /// names), so serializing a typed object allocates only for the keys of free-form maps.
    Map(Vec<(Key, Yaml)>),
}

impl Yaml {
    /// A string value.
    pub fn str(text: impl Into<String>) -> Self {
        Yaml::Str(text.into())
    }

    /// A mapping from `(key, value)` pairs.
    pub fn map<K: Into<Key>>(pairs: impl IntoIterator<Item = (K, Yaml)>) -> Self {
        Yaml::Map(
            pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value))
                .collect(),
        )
    }

    /// A mapping of strings to strings, sorted by key.
    pub fn string_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut pairs: Vec<(Key, Yaml)> = pairs
            .into_iter()
            .map(|(key, value)| (Key::Owned(key.to_string()), Yaml::str(value)))
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

pub(super) fn write_scalar_string(out: &mut String, text: &str) {
    if is_plain_safe(text) {
        out.push_str(text);
    } else {
        write_double_quoted(out, text);
    }
}

/// Whether a character must be escaped for every YAML 1.1 and 1.2 reader to read it back: it
/// is outside the `c-printable` set of either version, or one of them reads it as a line break
/// (U+0085, U+2028, U+2029) or may drop it (U+FEFF). Tab and line feed are handled by the
/// callers. Surrogates cannot occur in a Rust string.
fn needs_escape(ch: char) -> bool {
    matches!(
        ch,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{feff}'
            | '\u{fffe}'
            | '\u{ffff}'
    )
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
            ch if needs_escape(ch) => {
                out.push_str(&format!("\\u{:04x}", ch as u32));
            }
            ch => out.push(ch),
        }
    }
    out.push('"');
}

/// Whether a multi-line string can be written as a literal block (`|` or `|-`) that every reader
/// reads back unchanged: printable text without escapes (see [`needs_escape`]), no tabs, no
/// trailing spaces, a first line that does not start with a space, and at most one final newline.
pub(super) fn is_literal_safe(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text.ends_with("\n\n")
        && !text
            .chars()
            .any(|ch| ch != '\n' && (ch == '\t' || needs_escape(ch)))
        && text.lines().all(|line| !line.ends_with(' '))
}

pub(super) fn write_literal(out: &mut String, text: &str, level: usize) {
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

pub(super) fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_map(out: &mut String, pairs: &[(Key, Yaml)], level: usize, first_inline: bool) {
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

    #[test]
    fn escapes_characters_that_yaml_1_1_or_1_2_does_not_print() {
        for (text, escaped) in [
            ("a\u{fffe}", "\"a\\ufffe\""),
            ("\u{ffff}", "\"\\uffff\""),
            ("grp\u{86}", "\"grp\\u0086\""),
            ("nel\u{85}x", "\"nel\\u0085x\""),
            ("ls\u{2028}ps\u{2029}", "\"ls\\u2028ps\\u2029\""),
            ("\u{feff}bom", "\"\\ufeffbom\""),
            ("del\u{7f}", "\"del\\u007f\""),
            ("esc\u{1b}", "\"esc\\u001b\""),
        ] {
            let mut out = String::new();
            write_scalar_string(&mut out, text);
            assert_eq!(out, escaped);
            // As a multi-line string it is quoted too, never a literal block.
            let multi = format!("{text}\nsecond\n");
            assert!(!is_literal_safe(&multi), "{multi:?}");
        }
        // Printable text beyond ASCII stays as it is.
        let mut out = String::new();
        write_scalar_string(&mut out, "caf\u{e9} \u{a0}\u{1f600}\u{1fffe}");
        assert_eq!(out, "\"caf\u{e9} \u{a0}\u{1f600}\u{1fffe}\"");
    }

    use crate::testing::Rng;

    /// Strings made of the characters and words YAML readers treat specially.
    fn generated_strings(count: usize, seed: u64) -> Vec<String> {
        const PIECES: &[&str] = &[
            "a",
            "Z",
            "0",
            "1.5",
            "-",
            ".",
            "_",
            "/",
            " ",
            "  ",
            "\n",
            "\t",
            "\r",
            "\r\n",
            ":",
            ": ",
            "#",
            " #",
            "'",
            "\"",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ",",
            "&",
            "*",
            "!",
            "|",
            ">",
            "%",
            "@",
            "`",
            "?",
            "~",
            "yes",
            "No",
            "on",
            "null",
            "0x1F",
            ".inf",
            "---",
            "...",
            "\u{0}",
            "\u{7}",
            "\u{1b}",
            "\u{7f}",
            "\u{80}",
            "\u{85}",
            "\u{86}",
            "\u{9f}",
            "\u{a0}",
            "\u{e9}",
            "\u{5b57}",
            "\u{1f600}",
            "\u{2028}",
            "\u{2029}",
            "\u{202e}",
            "\u{2066}",
            "\u{200b}",
            "\u{feff}",
            "\u{fdd0}",
            "\u{fffd}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{1fffe}",
            "\u{10ffff}",
            "\u{e000}",
        ];
        let mut rng = Rng(seed);
        (0..count)
            .map(|_| {
                (0..rng.below(12))
                    .map(|_| PIECES[rng.below(PIECES.len())])
                    .collect()
            })
            .collect()
    }

    /// A document with each string as a key and as a value, plus fixed strings that take the
    /// literal-block path.
    fn corpus_document(strings: &[String]) -> (Yaml, Vec<String>) {
        let mut expected = Vec::new();
        let mut items = Vec::new();
        for (idx, text) in strings.iter().enumerate() {
            let multi = format!("line {idx}\n{text}\nend\n");
            items.push(Yaml::map([
                (text.clone(), Yaml::str(text.clone())),
                ("multi".to_string(), Yaml::str(multi.clone())),
            ]));
            expected.extend([text.clone(), text.clone(), "multi".to_string(), multi]);
        }
        (Yaml::Seq(items), expected)
    }

    /// Every scalar of a YAML text in document order, as saphyr (a YAML 1.2 reader) reads them.
    fn saphyr_scalars(text: &str) -> Vec<String> {
        let mut parser = saphyr_parser::Parser::new_from_str(text);
        let mut scalars = Vec::new();
        while let Some(event) = parser.next_event() {
            match event {
                Ok((saphyr_parser::Event::Scalar(value, ..), _)) => {
                    scalars.push(value.into_owned());
                }
                Ok(_) => {}
                Err(error) => panic!("saphyr rejects the writer's output: {error}\n{text}"),
            }
        }
        scalars
    }

    #[test]
    fn every_string_round_trips_through_a_yaml_1_2_reader() {
        let strings = generated_strings(3_000, 0x9e37_79b9_7f4a_7c15);
        // Every string the declaration model accepts is among them, and many it refuses.
        assert!(
            strings
                .iter()
                .filter(|text| crate::names::forbidden_char(text).is_none())
                .count()
                > 300
        );
        let (document, expected) = corpus_document(&strings);
        let text = to_string(&document);
        assert_eq!(saphyr_scalars(&text), expected);
    }

    #[test]
    fn every_string_round_trips_through_a_yaml_1_1_reader() {
        let has_pyyaml = std::process::Command::new("python3")
            .args(["-c", "import yaml"])
            .output()
            .is_ok_and(|output| output.status.success());
        if !has_pyyaml {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "CI must have python3 with PyYAML (installed by .ci/run)"
            );
            println!("skipped: python3 with PyYAML is not installed");
            return;
        }
        let strings = generated_strings(3_000, 0x2545_f491_4f6c_dd1d);
        let (document, expected) = corpus_document(&strings);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("corpus.yaml");
        std::fs::write(&path, to_string(&document)).unwrap();
        let script = "import json, sys, yaml\n\
            doc = yaml.safe_load(open(sys.argv[1], encoding='utf-8'))\n\
            out = []\n\
            for item in doc:\n\
            \x20   for key, value in item.items():\n\
            \x20       out += [key, value]\n\
            sys.stdout.write(json.dumps(out))\n";
        let output = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "PyYAML rejects the writer's output: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let read: Vec<String> = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(read.len(), expected.len());
        for (got, want) in read.iter().zip(&expected) {
            assert_eq!(got, want, "PyYAML reads {want:?} back as {got:?}");
        }
    }
}
