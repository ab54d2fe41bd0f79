//! One strict reading of the JSON documents tenantc verifies or trusts: sigstore bundles, the
//! DSSE envelopes and in-toto statements they carry, Rekor entry bodies, trust roots and lock
//! files.
//!
//! Consumes: the bytes of one JSON document (a file, or a document decoded from a string field of
//! another) and the JSON path it sits at.
//! Produces: the document read into the caller's type (a `serde_json::Value` or a serde struct),
//! or an [`Error`]: a key that appears twice in one object ([`Duplicate`], naming the key, the
//! object's JSON path and the key's line and column), or what serde_json refused.
//!
//! Invariants:
//! - No document with a duplicated key is read, at any depth, whether or not a reader looks at
//!   that part: `serde_json::Value` and serde's maps keep the last of two values, serde's
//!   derived structs refuse a duplicated field, and another verifier may keep the first, so a
//!   document with a duplicate can mean two things to two readers (a parser differential).
//! - Keys are compared after unescaping, as every reader sees them: `"a"` and `"\u0061"` are the
//!   same key.
//! - The check and the typed read run serde_json's one tokenizer over the same bytes, so they
//!   see the same tokens; serde_json's nesting limit bounds both, so no input exhausts the stack.
//! - The modules that read signing material (`weights/`, `keyless/`) parse JSON only through
//!   [`from_slice`]; a test below refuses a direct `serde_json::from_*` call there.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The most characters of a key a message quotes; a longer key is cut and marked with `...`.
const MAX_KEY_CHARS: usize = 64;
/// The most characters of a path a message quotes, roughly: beyond them the path's first
/// segments after the root are left out.
const MAX_PATH_CHARS: usize = 256;

/// Where a document sits, for the paths of findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root<'a> {
    path: &'a str,
    decoded: bool,
}

impl<'a> Root<'a> {
    /// A document that is a whole file, named `path` in findings (`bundle`, `trustedRoot`, `lock`).
    pub fn file(path: &'a str) -> Self {
        Root {
            path,
            decoded: false,
        }
    }

    /// A document decoded (from base64) out of the string field at `path` of another document,
    /// such as `bundle.dsseEnvelope.payload`; its lines and columns are the decoded text's.
    pub fn decoded(path: &'a str) -> Self {
        Root {
            path,
            decoded: true,
        }
    }
}

/// A key that appears twice in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The key, unescaped.
    pub key: String,
    /// The JSON path of the object that holds it twice, from the document's root.
    pub path: String,
    /// The line of the second occurrence (1-based, lines end at `\n`).
    pub line: usize,
    /// The column of the second occurrence's opening quote (1-based, in characters).
    pub column: usize,
    /// The field the document was decoded from, for a document inside another.
    pub decoded_from: Option<String>,
}

impl fmt::Display for Duplicate {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "the key `{}` appears twice in `{}`, at line {} column {}",
            shorten(&self.key),
            self.path,
            self.line,
            self.column
        )?;
        if let Some(field) = &self.decoded_from {
            write!(formatter, " of the decoded `{field}`")?;
        }
        Ok(())
    }
}

/// Why a document was not read.
#[derive(Debug)]
pub enum Error {
    /// A key appears twice in one object.
    Duplicate(Duplicate),
    /// serde_json refused the document: not JSON, or not of the caller's type.
    Json(serde_json::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Duplicate(duplicate) => duplicate.fmt(formatter),
            Error::Json(error) => error.fmt(formatter),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The reason for a message: a duplicate in its own words, anything else as `not_json` words
    /// serde_json's error.
    pub fn reason(self, not_json: impl FnOnce(serde_json::Error) -> String) -> String {
        match self {
            Error::Duplicate(duplicate) => duplicate.to_string(),
            Error::Json(error) => not_json(error),
        }
    }
}

/// Reads one JSON document into `T`, refusing a key that appears twice in any object of it.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8], root: Root<'_>) -> Result<T, Error> {
    check(bytes, root)?;
    serde_json::from_slice(bytes).map_err(Error::Json)
}

/// Walks the whole document and stops at the first duplicated key.
fn check(bytes: &[u8], root: Root<'_>) -> Result<(), Error> {
    let mut state = State::default();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let walked = Walk { state: &mut state }
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    let Err(error) = walked else {
        return Ok(());
    };
    let Some((key, segments)) = state.found else {
        return Err(Error::Json(error));
    };
    let (line, column) = key_position(bytes, &key, error.line(), error.column());
    Err(Error::Duplicate(Duplicate {
        key,
        path: render_path(root.path, &segments),
        line,
        column,
        decoded_from: root.decoded.then(|| root.path.to_string()),
    }))
}

/// One step of a JSON path.
#[derive(Debug, Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

/// The walk's path to the current value and, once found, the duplicated key and its object's path.
#[derive(Default)]
struct State {
    path: Vec<Segment>,
    found: Option<(String, Vec<Segment>)>,
}

/// Visits one value and everything inside it.
struct Walk<'a> {
    state: &'a mut State,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut idx = 0;
        loop {
            self.state.path.push(Segment::Index(idx));
            let element = seq.next_element_seed(Walk {
                state: &mut *self.state,
            });
            self.state.path.pop();
            if element?.is_none() {
                return Ok(());
            }
            idx += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                let message = format!("the key `{}` appears twice", shorten(&key));
                self.state.found = Some((key, self.state.path.clone()));
                return Err(de::Error::custom(message));
            }
            self.state.path.push(Segment::Key(key));
            let value = map.next_value_seed(Walk {
                state: &mut *self.state,
            });
            if let Some(Segment::Key(key)) = self.state.path.pop() {
                seen.insert(key);
            }
            value?;
        }
        Ok(())
    }
}

/// A key as a message quotes it: at most [`MAX_KEY_CHARS`] characters.
fn shorten(key: &str) -> String {
    let mut chars = key.chars();
    let mut short: String = chars.by_ref().take(MAX_KEY_CHARS).collect();
    if chars.next().is_some() {
        short.push_str("...");
    }
    short
}

/// `root` followed by each segment: `.key` for a plain key, `["…"]` (JSON-quoted) for any
/// other, `[idx]` for an array element; segments after the root are left out, from the first,
/// while the path is longer than [`MAX_PATH_CHARS`], and `...` stands for them.
fn render_path(root: &str, segments: &[Segment]) -> String {
    let rendered: Vec<String> = segments
        .iter()
        .map(|segment| match segment {
            Segment::Index(idx) => format!("[{idx}]"),
            Segment::Key(key) => {
                let plain = key
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_')
                    && key
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
                let short = shorten(key);
                if plain {
                    format!(".{short}")
                } else {
                    format!("[{}]", serde_json::to_string(&short).unwrap_or_default())
                }
            }
        })
        .collect();
    let mut length: usize = rendered.iter().map(|part| part.chars().count()).sum();
    let mut first = 0;
    while length + root.chars().count() > MAX_PATH_CHARS && first + 1 < rendered.len() {
        length -= rendered.get(first).map_or(0, |part| part.chars().count());
        first += 1;
    }
    let mut path = root.to_string();
    if first > 0 {
        path.push_str("...");
    }
    for part in rendered.iter().skip(first) {
        path.push_str(part);
    }
    path
}

/// The line and column of the opening quote of the key that serde_json's error position
/// follows (serde_json stops just past the key's closing quote and any whitespace after it, and
/// counts columns in bytes); serde_json's own position when the bytes there are not that key.
fn key_position(bytes: &[u8], key: &str, line: usize, column: usize) -> (usize, usize) {
    let fallback = (line, column);
    let line_start = if line <= 1 {
        Some(0)
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .nth(line - 2)
            .map(|(idx, _)| idx + 1)
    };
    let Some(end) = line_start.map(|start| (start + column).min(bytes.len())) else {
        return fallback;
    };
    let Some(before) = bytes.get(..end) else {
        return fallback;
    };
    let trimmed = before.trim_ascii_end();
    let Some(closing) = trimmed.len().checked_sub(1) else {
        return fallback;
    };
    if trimmed.get(closing) != Some(&b'"') {
        return fallback;
    }
    // Inside a JSON string every `"` follows an odd run of backslashes, and the byte before the
    // opening quote is never a backslash, so the first quote back that follows an even run opens.
    let Some(opening) = (0..closing).rev().find(|&idx| {
        trimmed.get(idx) == Some(&b'"')
            && trimmed
                .get(..idx)
                .unwrap_or_default()
                .iter()
                .rev()
                .take_while(|byte| **byte == b'\\')
                .count()
                % 2
                == 0
    }) else {
        return fallback;
    };
    let quoted = trimmed.get(opening..=closing).unwrap_or_default();
    if serde_json::from_slice::<String>(quoted).ok().as_deref() != Some(key) {
        return fallback;
    }
    let line_start = line_start.unwrap_or_default();
    let on_line = bytes.get(line_start..opening).unwrap_or_default();
    // Characters, not bytes: every UTF-8 byte but a continuation byte starts one.
    let chars = on_line
        .iter()
        .filter(|byte| (**byte & 0xC0) != 0x80)
        .count();
    (line, chars + 1)
}

/// Test support: every way to duplicate one key of a document, for the readers' tests.
#[cfg(test)]
pub(crate) mod duplicates {
    use std::collections::BTreeSet;

    use serde_json::Value;

    /// A document with one key written twice.
    pub(crate) struct Duplicated {
        /// The whole document as compact JSON text.
        pub text: Vec<u8>,
        /// The duplicated key.
        pub key: String,
        /// The JSON path of the object holding it twice, written independently of the reader:
        /// `root`, then `.key` per key and `[idx]` per array element.
        pub path: String,
        /// The column (1-based, in characters) of the second occurrence's opening quote; the
        /// text is one line.
        pub column: usize,
    }

    impl Duplicated {
        /// The reason a reader should give, written here from the duplicate's own facts.
        pub(crate) fn reason(&self) -> String {
            format!(
                "the key `{}` appears twice in `{}`, at line 1 column {}",
                self.key, self.path, self.column
            )
        }
    }

    /// Runs `refused` (which asserts that the reader refuses the text) on every duplicate of
    /// [`every_duplicate`], and returns the paths of the objects they were written in.
    pub(crate) fn each_refused(
        document: &[u8],
        root: &str,
        mut refused: impl FnMut(&Duplicated),
    ) -> BTreeSet<String> {
        every_duplicate(document, root)
            .into_iter()
            .map(|case| {
                refused(&case);
                case.path
            })
            .collect()
    }

    /// Asserts that a duplicate was written in each object of `levels`.
    pub(crate) fn assert_reached<S: AsRef<str>>(paths: &BTreeSet<String>, levels: &[S]) {
        for level in levels {
            let level = level.as_ref();
            assert!(paths.contains(level), "no duplicate tried in `{level}`");
        }
    }

    /// The document re-written as compact JSON without any change, the control of
    /// [`every_duplicate`]'s texts.
    pub(crate) fn rewritten(document: &[u8]) -> Vec<u8> {
        let value: Value = serde_json::from_slice(document).unwrap();
        let mut out = String::new();
        write(&value, "", None, &mut out, &mut None);
        out.into_bytes()
    }

    /// For every object of the document, at any depth, and every key of it: the document with
    /// that key's pair written twice in a row (the same value both times, so a reader that keeps
    /// either value reads the original document).
    pub(crate) fn every_duplicate(document: &[u8], root: &str) -> Vec<Duplicated> {
        let value: Value = serde_json::from_slice(document).unwrap();
        let mut targets = Vec::new();
        objects(&value, root, &mut targets);
        targets
            .into_iter()
            .map(|(path, key)| {
                let mut out = String::new();
                let mut second = None;
                write(&value, root, Some((&path, &key)), &mut out, &mut second);
                let offset = second.unwrap();
                Duplicated {
                    column: out[..offset].chars().count() + 1,
                    text: out.into_bytes(),
                    key,
                    path,
                }
            })
            .collect()
    }

    fn objects(value: &Value, path: &str, found: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    assert!(
                        key.chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_'),
                        "the helper writes `.{key}` paths only for plain keys"
                    );
                    found.push((path.to_string(), key.clone()));
                    objects(inner, &format!("{path}.{key}"), found);
                }
            }
            Value::Array(items) => {
                for (idx, inner) in items.iter().enumerate() {
                    objects(inner, &format!("{path}[{idx}]"), found);
                }
            }
            _ => {}
        }
    }

    /// Writes `value` at `path`, the pair of `target` twice; `second` is set to the offset of
    /// the second copy's key.
    fn write(
        value: &Value,
        path: &str,
        target: Option<(&str, &str)>,
        out: &mut String,
        second: &mut Option<usize>,
    ) {
        match value {
            Value::Object(map) => {
                out.push('{');
                let mut first = true;
                for (key, inner) in map {
                    let times = if target == Some((path, key.as_str())) {
                        2
                    } else {
                        1
                    };
                    for copy in 0..times {
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        if copy == 1 {
                            *second = Some(out.len());
                        }
                        out.push_str(&serde_json::to_string(key).unwrap());
                        out.push(':');
                        write(inner, &format!("{path}.{key}"), target, out, second);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (idx, inner) in items.iter().enumerate() {
                    if idx > 0 {
                        out.push(',');
                    }
                    write(inner, &format!("{path}[{idx}]"), target, out, second);
                }
                out.push(']');
            }
            scalar => out.push_str(&serde_json::to_string(scalar).unwrap()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(text: &str) -> Duplicate {
        match from_slice::<serde_json::Value>(text.as_bytes(), Root::file("doc")) {
            Err(Error::Duplicate(duplicate)) => duplicate,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn refuses_a_duplicated_key_at_every_depth_and_names_it_with_its_path() {
        for (text, key, path) in [
            (r#"{"a":1,"a":1}"#, "a", "doc"),
            (r#"{"a":{"b":1,"c":2,"b":1}}"#, "b", "doc.a"),
            (r#"{"a":[{"x":1},{"x":1,"x":1}]}"#, "x", "doc.a[1]"),
            (r#"[[{"k":[]}],[{"k":[],"k":[]}]]"#, "k", "doc[1][0]"),
            (
                r#"{"a b":{"c.d":{"e":{"e":0,"f":0,"f":1}}}}"#,
                "f",
                r#"doc["a b"]["c.d"].e"#,
            ),
        ] {
            let found = duplicate(text);
            assert_eq!(
                (found.key.as_str(), found.path.as_str()),
                (key, path),
                "{text}"
            );
        }
    }

    #[test]
    fn keys_are_compared_unescaped() {
        let found = duplicate(r#"{"mediaType":1,"media\u0054ype":2}"#);
        assert_eq!(found.key, "mediaType");
        assert_eq!(found.column, 16);
    }

    #[test]
    fn locates_the_second_occurrence_at_its_opening_quote() {
        let text = "{\n  \"é\": {\n    \"k\\\"q\": 1,\n    \"k\\\"q\"  : 2\n  }\n}\n";
        let found = duplicate(text);
        assert_eq!(found.key, "k\"q");
        assert_eq!(found.path, r#"doc["é"]"#);
        assert_eq!((found.line, found.column), (4, 5));
        assert_eq!(
            found.to_string(),
            r#"the key `k"q` appears twice in `doc["é"]`, at line 4 column 5"#
        );
        // Columns count characters, not bytes.
        let found = duplicate("{\"é\":1, \"é\":2}");
        assert_eq!((found.line, found.column), (1, 9));
    }

    #[test]
    fn a_decoded_document_says_which_field_it_came_from() {
        let error = from_slice::<serde_json::Value>(
            br#"{"subject":[{"digest":{"sha256":"aa","sha256":"bb"}}]}"#,
            Root::decoded("bundle.dsseEnvelope.payload"),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the key `sha256` appears twice in `bundle.dsseEnvelope.payload.subject[0].digest`, \
             at line 1 column 38 of the decoded `bundle.dsseEnvelope.payload`"
        );
    }

    #[test]
    fn deep_paths_are_cut_from_the_root_side() {
        let depth = 100;
        let text = format!(
            "{}{{\"k\":1,\"k\":1}}{}",
            "{\"level\":".repeat(depth),
            "}".repeat(depth)
        );
        let found = duplicate(&text);
        assert!(found.path.starts_with("doc..."), "{}", found.path);
        assert!(found.path.ends_with(".level.level"), "{}", found.path);
        assert!(found.path.len() <= MAX_PATH_CHARS + 3, "{}", found.path);
        // A short path is whole.
        assert_eq!(duplicate(r#"{"a":{"b":{"c":1,"c":1}}}"#).path, "doc.a.b");
    }

    #[test]
    fn long_keys_are_cut_in_messages() {
        let key = "k".repeat(200);
        let found = duplicate(&format!(r#"{{"{key}":{{"{key}":1,"{key}":2}}}}"#));
        assert_eq!(found.key, key);
        let message = found.to_string();
        assert!(message.len() < 250, "{message}");
        assert!(message.contains(&format!("`{}...`", "k".repeat(64))));
    }

    #[test]
    fn documents_without_duplicates_read_as_serde_json_reads_them() {
        for text in [
            r#"{"a":1,"b":{"a":1},"c":[{"a":1},{"a":1}]}"#,
            r#"[1,"two",null,true,-3.5e2,{"":{}}]"#,
            r#"{"a":"\ud83d\ude00","A":1}"#,
        ] {
            let strict: serde_json::Value = from_slice(text.as_bytes(), Root::file("doc")).unwrap();
            let plain: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(strict, plain);
        }
        // What serde_json refuses is still refused, with its own reason.
        for text in ["{\"a\":1,}", "{\"a\":1} x", "", "{\"a\":\"\\ud800\"}"] {
            assert!(
                matches!(
                    from_slice::<serde_json::Value>(text.as_bytes(), Root::file("doc")),
                    Err(Error::Json(_))
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn typed_reads_keep_serde_json_reasons() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Small {
            a: u32,
        }
        let error = from_slice::<Small>(br#"{"a":1,"b":2}"#, Root::file("doc")).unwrap_err();
        assert!(error.to_string().contains("unknown field `b`"), "{error}");
        // A duplicate is found first, even in a part the type would not read.
        let error =
            from_slice::<Small>(br#"{"a":1,"b":{"c":1,"c":1}}"#, Root::file("doc")).unwrap_err();
        assert!(matches!(error, Error::Duplicate(_)), "{error}");
    }

    #[test]
    fn deep_documents_stop_at_serde_jsons_nesting_limit() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(
            from_slice::<serde_json::Value>(deep.as_bytes(), Root::file("doc")),
            Err(Error::Json(_))
        ));
        let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
        assert!(matches!(
            from_slice::<serde_json::Value>(deep.as_bytes(), Root::file("doc")),
            Err(Error::Json(_))
        ));
    }

    /// What a reader of signing material must not call: serde_json's own parsing entry points.
    const DIRECT_READS: [&str; 4] = [
        "serde_json::from_",
        "serde_json::Deserializer",
        "serde_json::de::",
        "serde_json::StreamDeserializer",
    ];

    /// The lines of a source file's non-test code that parse JSON without [`from_slice`]: a call
    /// of one of [`DIRECT_READS`], or a `use serde_json::…` that imports one. The code stops at
    /// the file's test module (`#[cfg(test)]` before a `mod … {` block, which ends each file).
    fn direct_reads(text: &str) -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let end = lines
            .windows(2)
            .position(|pair| {
                let next = pair[1].trim();
                pair[0].trim() == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{')
            })
            .unwrap_or(lines.len());
        lines[..end]
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.starts_with("//"))
            .filter(|line| {
                DIRECT_READS.iter().any(|call| line.contains(call))
                    || (line.starts_with("use serde_json")
                        && (line.contains("from_") || line.contains("Deserializer")))
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn readers_of_signing_material_parse_json_only_through_the_strict_reader() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("compiler/src");
        let mut files = Vec::new();
        for folder in ["weights", "keyless"] {
            for entry in std::fs::read_dir(root.join(folder)).unwrap() {
                let path = entry.unwrap().path();
                // `keyless/tests.rs` is test code: it edits fixtures, it verifies nothing.
                if path.extension().is_some_and(|ext| ext == "rs") && !path.ends_with("tests.rs") {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() >= 8, "{files:?}");
        let mut found = Vec::new();
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for line in direct_reads(&text) {
                found.push(format!("{}: {line}", path.display()));
            }
        }
        assert!(
            found.is_empty(),
            "read signing material with `crate::json_strict::from_slice`, not serde_json directly:\n{}",
            found.join("\n")
        );
        // The check itself finds what it looks for, and skips only the test module.
        let source = "use serde_json::{Value, from_slice};\nfn f(b: &[u8]) {\n    let v: Value = serde_json::from_slice(b).unwrap();\n    let mut d = serde_json::Deserializer::from_slice(b);\n}\n#[cfg(test)]\nmod tests {\n    fn g() { serde_json::from_str(\"1\"); }\n}\n";
        assert_eq!(direct_reads(source).len(), 3, "{:?}", direct_reads(source));
        assert_eq!(
            direct_reads("#[cfg(test)]\nmod tests;\nfn f() { serde_json::from_str(\"1\"); }\n")
                .len(),
            1
        );
    }
}
