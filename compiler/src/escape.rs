//! Escaping to printable ASCII: how a path, a name or a revision that came from a pull request
//! is shown in a finding, a generated-file header or on a terminal.
//!
//! Consumes: text or bytes. Produces: the same as printable ASCII, `\\`, `\n`, `\r` and `\t`
//! as in Rust, every other character outside `' '..='~'` as `\u{…}` and every byte that is not
//! UTF-8 as `\x…`.
//!
//! Invariant: the escaped form holds no line break or control character, and two different
//! inputs never escape to the same text (a property test checks both).

/// Escapes bytes to printable ASCII: `\\`, `\n`, `\r` and `\t` as in Rust, every other
/// character outside `' '..='~'` as `\u{…}`, and bytes that are not UTF-8 as `\x…`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        push_escaped(&mut out, chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// Escapes a string to printable ASCII, as [`escape_bytes`] does.
pub fn escape_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(ch),
            _ => out.push_str(&format!("\\u{{{:x}}}", u32::from(ch))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_printable_ascii_only() {
        assert_eq!(
            escape_bytes(b"x\nnamespace: kube-system\n#"),
            "x\\nnamespace: kube-system\\n#"
        );
        assert_eq!(
            escape_bytes(b"a\\b\r\t\x1b\xff"),
            "a\\\\b\\r\\t\\u{1b}\\xff"
        );
        assert_eq!(
            escape_str("\u{85}\u{2028}\u{202e}\u{e9}"),
            "\\u{85}\\u{2028}\\u{202e}\\u{e9}"
        );
        // Property: whatever the bytes, the escaped form is printable ASCII (no line break or
        // control character) and distinct inputs stay distinct.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..2000 {
            let mut bytes = Vec::new();
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.push(seed.to_le_bytes()[3]);
            }
            seed = seed.wrapping_add(1);
            let escaped = escape_bytes(&bytes);
            assert!(
                escaped.chars().all(|ch| (' '..='~').contains(&ch)),
                "{escaped}"
            );
            if let Some(previous) = seen.insert(escaped.clone(), bytes.clone()) {
                assert_eq!(previous, bytes, "two inputs escape to {escaped}");
            }
        }
    }
}
