//! CEL literals: the one way `lower` writes a value from the plan into a CEL expression.
//!
//! Consumes: strings from the plan (names, groups, label keys). Produces: CEL string and list
//! literals for the admission policies of `guard.rs` and `admission.rs`.
//!
//! Invariant: whatever the text, the literal reads back as exactly that text (a test evaluates
//! each with the `cel` crate); a quote, a backslash or a line break can never end the literal
//! or change the expression around it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A single-quoted CEL string literal of `text`: `\` and `'` escaped with a backslash, line
/// breaks and tabs by their letter escapes, and every other control character as `\uXXXX`.
pub fn string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for ch in text.chars() {
        match ch {
            '\\' => quoted.push_str("\\\\"),
            '\'' => quoted.push_str("\\'"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            ch if ch.is_control() => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(ch));
            }
            ch => quoted.push(ch),
        }
    }
    quoted.push('\'');
    quoted
}

/// A CEL list literal of `items` as strings, sorted and without repeats.
pub fn list<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let items: BTreeSet<&String> = items.into_iter().collect();
    let quoted: Vec<String> = items.into_iter().map(|item| string(item)).collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use std::sync::Arc;

    use super::*;

    /// What CEL reads a literal back as.
    fn read_back(literal: &str) -> cel::Value {
        let env = Arc::new(cel::Env::stdlib());
        let program = env.compile(literal).unwrap();
        program
            .execute(&cel::Context::with_env(env.clone()))
            .unwrap()
    }

    fn text_of(value: cel::Value) -> String {
        match value {
            cel::Value::String(text) => text.to_string(),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(string("a'b\\c"), "'a\\'b\\\\c'");
        assert_eq!(string("plain"), "'plain'");
    }

    #[test]
    fn line_breaks_and_controls_are_escaped_not_written_raw() {
        assert_eq!(string("a\nb\r\tc"), "'a\\nb\\r\\tc'");
        assert_eq!(string("bell\u{7}"), "'bell\\u0007'");
        assert!(!string("x\u{85}y").contains('\u{85}'));
    }

    #[test]
    fn every_literal_reads_back_as_its_text() {
        for text in [
            "",
            "plain",
            "it's",
            "back\\slash",
            "\\'",
            "' || true || '",
            "line\nbreak",
            "cr\rlf\n",
            "tab\there",
            "nul\u{0}bell\u{7}esc\u{1b}",
            "next\u{85}line",
            "ops\\\\team",
            "ünïcødé ✓",
        ] {
            let literal = string(text);
            assert_eq!(text_of(read_back(&literal)), text, "{literal}");
        }
    }

    #[test]
    fn lists_are_sorted_without_repeats_and_read_back() {
        let items = ["b'".to_string(), "a".to_string(), "b'".to_string()];
        let literal = list(&items);
        assert_eq!(literal, "['a', 'b\\'']");
        let cel::Value::List(values) = read_back(&literal) else {
            panic!("not a list");
        };
        let texts: Vec<String> = values.iter().cloned().map(text_of).collect();
        assert_eq!(texts, ["a", "b'"]);
        assert_eq!(list(&[]), "[]");
    }
}
