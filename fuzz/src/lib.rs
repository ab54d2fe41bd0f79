//! The fuzzing oracle of tenantc: how a fuzz input becomes files, and what must hold for any
//! input.
//!
//! Consumes: raw fuzz bytes, or the [`Compilation`] and parse results they produce.
//! Produces: [`InputFile`]s ([`split_inputs`]) and panics with a message when an invariant is
//! broken ([`check_compilation`], [`check_diagnostics`]); libFuzzer records a panic as a crash.
//!
//! Invariant: the same checks run in the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`) and in the
//! bounded property test `tests/fuzz_props.rs`, which includes this file by path, so a fuzz
//! crash and a failing property mean the same thing.

#![allow(
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code
)] // An oracle: a panic is the finding.

use std::fmt::Write as _;

use tenantc::diag::render::{self, Color};
use tenantc::diag::{Diagnostic, Severity};
use tenantc::layout::DeclKind;
use tenantc::parse::Format;
use tenantc::source::{FileId, SourceMap};
use tenantc::{Compilation, InputFile, compile};

/// The environment variable that names checks to skip, comma-separated, so that a long fuzzing
/// run can look past a known finding: `terminal` (terminal-safe diagnostic text), `output-chars`
/// (characters of output files), `header` (one-line headers of input paths) and `locations`
/// (labels inside their files). `cargo test` never sets it.
pub const SKIP_VARIABLE: &str = "TENANTC_FUZZ_SKIP";

/// Whether the check `name` is skipped through [`SKIP_VARIABLE`].
pub fn skipped(name: &str) -> bool {
    static SKIPPED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SKIPPED
        .get_or_init(|| {
            std::env::var(SKIP_VARIABLE)
                .unwrap_or_default()
                .split(',')
                .map(|part| part.trim().to_string())
                .filter(|part| !part.is_empty())
                .collect()
        })
        .iter()
        .any(|skip| skip == name)
}

/// The line that starts each file of a multi-file fuzz input: `=== <path>\n<contents>`.
pub const FILE_MARKER: &[u8] = b"=== ";

/// The most files one fuzz input is split into; more would only slow each run down.
/// The example fleet with its signing material (keys, lock files and signatures) is 12 files.
pub const MAX_FILES: usize = 16;

/// Splits a fuzz input into declaration files.
///
/// An input that starts with `=== ` is a list of files, each `=== <path>\n<contents>`, the next
/// one starting at the next `\n=== `; the path is the rest of the marker line, taken verbatim
/// (lossy UTF-8), so the fuzzer also tries odd file names; a file whose path came before is
/// dropped. Any other input is one file, `tenants/fuzz.kdl`.
pub fn split_inputs(data: &[u8]) -> Vec<InputFile> {
    let Some(rest) = data.strip_prefix(FILE_MARKER) else {
        return vec![InputFile {
            path: "tenants/fuzz.kdl".to_string(),
            contents: data.to_vec(),
        }];
    };
    let mut files = Vec::new();
    let mut remaining = rest;
    while files.len() < MAX_FILES {
        let (record, next) = match find(remaining, b"\n=== ") {
            Some(at) => (&remaining[..at], Some(&remaining[at + 5..])),
            None => (remaining, None),
        };
        let (path, contents) = match record.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&record[..at], &record[at + 1..]),
            None => (record, &b""[..]),
        };
        let mut contents = contents.to_vec();
        if next.is_some() {
            // The newline before the next marker belongs to this file.
            contents.push(b'\n');
        }
        let path = String::from_utf8_lossy(path).into_owned();
        // Paths are unique on disk, and `compile` orders files by path: a second file of the
        // same path would make the result depend on the input order for no real input.
        if files.iter().all(|file: &InputFile| file.path != path) {
            files.push(InputFile { path, contents });
        }
        match next {
            Some(next) => remaining = next,
            None => break,
        }
    }
    files
}

/// Joins files into one fuzz input, the inverse of [`split_inputs`] for paths without newlines.
pub fn join_inputs(files: &[InputFile]) -> Vec<u8> {
    let mut data = Vec::new();
    for (idx, file) in files.iter().enumerate() {
        if idx > 0 && !data.ends_with(b"\n") {
            data.push(b'\n');
        }
        data.extend_from_slice(FILE_MARKER);
        data.extend_from_slice(file.path.as_bytes());
        data.push(b'\n');
        let contents = if idx + 1 < files.len() {
            file.contents.strip_suffix(b"\n").unwrap_or(&file.contents)
        } else {
            &file.contents
        };
        data.extend_from_slice(contents);
    }
    data
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Checks every diagnostic against the house rules: a code, a message in house style, a help
/// line, text that is safe to print (see [`is_terminal_safe`]), and a primary label whose span
/// lies inside its file, on character boundaries.
/// `context` is printed with a failure (the seed or the input).
pub fn check_diagnostics(diagnostics: &[Diagnostic], sources: &SourceMap, context: &str) {
    for diagnostic in diagnostics {
        let code = diagnostic.code.as_str();
        let what = format!("{context}: [{code}] {:?}", diagnostic.message);
        assert!(!code.is_empty(), "{what}: empty code");
        assert!(
            !diagnostic.message.trim().is_empty(),
            "{what}: empty message"
        );
        assert!(
            !diagnostic.message.ends_with('.'),
            "{what}: the message ends with a period"
        );
        let texts = std::iter::once(("message", &diagnostic.message))
            .chain(std::iter::once(("help", &diagnostic.help)))
            .chain(diagnostic.notes.iter().map(|note| ("note", note)))
            .chain(
                diagnostic
                    .labels
                    .iter()
                    .map(|label| ("label", &label.message)),
            );
        for (part, text) in texts.filter(|_| !skipped("terminal")) {
            if let Some(bad) = text.chars().find(|&ch| !is_terminal_safe(ch)) {
                panic!(
                    "{what}: the {part} {text:?} holds {bad:?}, which breaks the line or \
                     controls the terminal it is printed on"
                );
            }
        }
        assert!(
            !diagnostic.help.trim().is_empty(),
            "{what}: the diagnostic has no help line"
        );
        assert!(
            diagnostic.labels.iter().any(|label| label.primary),
            "{what}: no primary label"
        );
        for label in diagnostic.labels.iter().filter(|_| !skipped("locations")) {
            let Some(file) = sources.get(label.span.file) else {
                panic!(
                    "{what}: a label points into unknown file {:?}",
                    label.span.file
                );
            };
            let (start, end) = (label.span.start as usize, label.span.end as usize);
            let len = file.text.len();
            assert!(
                start <= end && end <= len,
                "{what}: label {start}..{end} is outside {} ({len} bytes)",
                file.path
            );
            assert!(
                file.text.is_char_boundary(start) && file.text.is_char_boundary(end),
                "{what}: label {start}..{end} splits a character of {}",
                file.path
            );
        }
    }
}

/// Whether a character may appear in diagnostic text printed to a terminal or a CI log: a tab,
/// or not a control character (line breaks, escape sequences), not a Unicode line or paragraph separator
/// and not a bidirectional override, any of which lets declared text forge or hide output lines.
pub fn is_terminal_safe(ch: char) -> bool {
    (ch == '\t' || !ch.is_control())
        && !matches!(ch, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Checks a compilation of `inputs`: the diagnostics ([`check_diagnostics`]), that both renderers
/// work, that errors and output exclude each other, that no internal error happened, and that
/// the output is safe to write and to read back (see [`check_output`]).
pub fn check_compilation(inputs: &[InputFile], compilation: &Compilation, context: &str) {
    check_diagnostics(&compilation.diagnostics, &compilation.sources, context);
    let _ = render::human(&compilation.diagnostics, &compilation.sources, Color::Never);
    let json = render::json(&compilation.diagnostics, &compilation.sources);
    let parsed: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|error| panic!("{context}: the JSON report does not parse: {error}"));
    assert!(
        parsed.is_object(),
        "{context}: the JSON report is not an object"
    );
    assert!(
        compilation.internal_error.is_none(),
        "{context}: internal error {:?}",
        compilation.internal_error
    );
    let has_errors = compilation
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error);
    assert_eq!(
        has_errors,
        compilation.output.is_none(),
        "{context}: output must exist exactly when there is no error"
    );
    if let Some(tree) = &compilation.output {
        check_output(inputs, tree, context);
    }
}

/// The characters every YAML 1.1 and 1.2 reader takes literally inside a scalar: printable,
/// and not a line break in either version (YAML 1.1 breaks lines at U+0085, U+2028 and U+2029).
pub fn is_plain_yaml_char(ch: char) -> bool {
    matches!(ch,
        '\t' | '\n' | ' '..='~' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
}

/// Checks the output tree: relative paths of plain segments, a one-line generated header that no
/// input path can break out of, and only characters that every YAML reader reads as written.
pub fn check_output(inputs: &[InputFile], tree: &tenantc::emit::OutputTree, context: &str) {
    for (path, bytes) in tree {
        assert!(
            !path.is_empty() && !path.starts_with('/') && !path.contains('\\'),
            "{context}: output path {path:?} is not relative"
        );
        for segment in path.split('/') {
            assert!(
                !segment.is_empty() && segment != "." && segment != "..",
                "{context}: output path {path:?} has segment {segment:?}"
            );
            assert!(
                !segment.chars().any(char::is_control),
                "{context}: output path {path:?} has a control character"
            );
        }
        let text =
            std::str::from_utf8(bytes).unwrap_or_else(|_| panic!("{context}: {path} is not UTF-8"));
        if let Some(bad) = text
            .chars()
            .find(|&ch| !is_plain_yaml_char(ch))
            .filter(|_| !skipped("output-chars"))
        {
            let line = text
                .lines()
                .find(|line| line.contains(bad))
                .unwrap_or_default();
            panic!(
                "{context}: {path} holds {bad:?}, which is not a plain printable character (YAML readers do not read it back as written): {line:?}"
            );
        }
        if path.ends_with(".yaml") && !skipped("header") {
            let header = text.split('\n').next().unwrap_or_default();
            assert!(
                header.starts_with("# Code generated by tenantc from ")
                    && header.ends_with(". DO NOT EDIT."),
                "{context}: {path} does not open with a one-line header: {header:?}"
            );
            let listed = &header["# Code generated by tenantc from ".len()..]
                .strip_suffix(". DO NOT EDIT.")
                .unwrap_or_default();
            assert!(
                lists_input_paths(listed, inputs),
                "{context}: the header of {path} names something other than input paths: {header:?}"
            );
        }
    }
}

/// Whether `listed` is input paths (or the `tenants/` folder, which a cell's kustomization
/// names for all its tenants) joined by `, `, so that no path ran past the header line.
fn lists_input_paths(listed: &str, inputs: &[InputFile]) -> bool {
    if listed.is_empty() {
        return true;
    }
    let names = inputs
        .iter()
        .map(|input| input.path.as_str())
        .chain(["tenants/"]);
    names.into_iter().any(|name| {
        listed.strip_prefix(name).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix(", ")
                    .is_some_and(|rest| lists_input_paths(rest, inputs))
        })
    })
}

/// Compiles `inputs` twice, the second time in reverse order, checks the first compilation and
/// that both give the same diagnostics and the same output bytes.
pub fn check_compile(inputs: &[InputFile], context: &str) -> Compilation {
    let first = compile(inputs);
    check_compilation(inputs, &first, context);
    let mut reversed = inputs.to_vec();
    reversed.reverse();
    let second = compile(&reversed);
    assert_eq!(
        render::json(&first.diagnostics, &first.sources),
        render::json(&second.diagnostics, &second.sources),
        "{context}: diagnostics depend on the input order"
    );
    assert_eq!(
        first.output, second.output,
        "{context}: output depends on the input order"
    );
    first
}

/// Parses one file in `format` and reads it as a tenant and as a cell, checking every diagnostic.
pub fn check_front_end(text: &str, format: Format, context: &str) {
    let mut sources = SourceMap::new();
    let extension = match format {
        Format::Kdl => "kdl",
        Format::Yaml => "yaml",
    };
    let file: FileId = sources.add(format!("tenants/fuzz.{extension}"), text);
    // Parse the text as the source map holds it (without a leading byte order mark), as
    // `compile` does: spans are offsets into that text.
    let text = sources.get(file).map_or("", |source| source.text.as_str());
    let (document, parse_diagnostics) = tenantc::parse::parse(file, text, format);
    check_diagnostics(&parse_diagnostics, &sources, context);
    for kind in [DeclKind::Tenant, DeclKind::Cell] {
        let (_, schema_diagnostics) = tenantc::schema::read(&document, kind, &sources);
        check_diagnostics(&schema_diagnostics, &sources, context);
    }
}

/// A printable description of a fuzz input for failure messages, cut to `limit` characters.
pub fn describe(data: &[u8], limit: usize) -> String {
    let mut text = String::new();
    let lossy = String::from_utf8_lossy(data);
    for ch in lossy.chars().take(limit) {
        let _ = write!(text, "{}", ch.escape_debug());
    }
    if lossy.chars().count() > limit {
        text.push('…');
    }
    text
}
