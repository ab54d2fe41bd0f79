//! The bounded, deterministic variant of the fuzz targets, run by `cargo test`.
//!
//! Consumes: KDL and YAML documents generated from the declaration model (real field names,
//! nesting, every KDL string form, odd unicode, every line ending, BOMs, huge integers), byte
//! mutations of the fixture fleets, deeply nested documents, and the minimised reproducers of
//! past fuzz crashes in `fuzz/regressions/`.
//! Produces: test failures when the oracle of `fuzz/src/lib.rs` (included below) finds a broken
//! invariant: a panic, a diagnostic without help or with a label outside its file, an internal
//! error, output beside errors, unsafe output, or a result that depends on the input order.
//!
//! Invariant: every test is bounded (fixed case counts, a fixed proptest seed source, nesting
//! run in a thread with a bounded stack inside a child process) so the file runs in seconds in a
//! debug build; `docs/fuzzing.md` explains how it relates to the cargo-fuzz targets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

#[path = "../fuzz/src/lib.rs"]
mod oracle;

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use tenantc::InputFile;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// Every fixture fleet of the repository: the frozen fixture fleet, the twins and each case
/// input (with the fixtures it shares).
fn fixture_fleets() -> &'static [(String, Vec<InputFile>)] {
    static FLEETS: OnceLock<Vec<(String, Vec<InputFile>)>> = OnceLock::new();
    FLEETS.get_or_init(|| {
        let repo = support::repo();
        let mut roots: Vec<(String, support::CaseRoot)> = vec![
            ("fleet".to_string(), support::fleet().into()),
            ("twins/kdl".to_string(), repo.join("tests/twins/kdl").into()),
            (
                "twins/yaml".to_string(),
                repo.join("tests/twins/yaml").into(),
            ),
        ];
        for kind in ["ok", "err"] {
            for case in support::subdirs(&repo.join("tests/cases").join(kind)) {
                let name = case.file_name().unwrap().to_string_lossy().into_owned();
                roots.push((format!("{kind}/{name}"), support::case_root(&case, "input")));
            }
        }
        roots
            .into_iter()
            // A case whose files the loader refuses (unsafe names, links out of the root)
            // tests the loader, not the compiler: its inputs never reach `compile`.
            .filter_map(|(name, root)| {
                let loaded = tenantc::load::load(&root).ok()?;
                loaded.findings.is_empty().then_some((name, loaded.inputs))
            })
            .filter(|(_, inputs)| !inputs.is_empty())
            .collect()
    })
}

/// The small valid fleet that generated files are compiled beside, so references resolve.
fn base_fleet(format: &str) -> Vec<InputFile> {
    let case = if format == "kdl" {
        "ok/001-single-hard-tenant"
    } else {
        "ok/003-yaml-soft-tenant-on-time-sliced-pool"
    };
    fixture_fleets()
        .iter()
        .find(|(name, _)| name == case)
        .map(|(_, inputs)| inputs.clone())
        .expect("the base fixture fleet exists")
}

/// Puts `file` into `fleet`, replacing a file of the same path.
fn with_file(mut fleet: Vec<InputFile>, file: InputFile) -> Vec<InputFile> {
    fleet.retain(|input| input.path != file.path);
    fleet.push(file);
    fleet
}

thread_local! {
    /// Set while a proptest runner shrinks a failure, whose every step panics.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `cases` cases of `strategy` with a fixed seed (so `cargo test` is reproducible) and
/// fails with the minimal failing input. Panics inside the runner are not printed one by one
/// (the final message has the minimal case), while other tests keep the default hook.
fn check<S: Strategy>(
    cases: u32,
    seed: u8,
    strategy: &S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                default(info);
            }
        }));
    });
    QUIET.with(|quiet| quiet.set(true));
    let result = runner(cases, seed).run(strategy, test);
    QUIET.with(|quiet| quiet.set(false));
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// A proptest runner with a fixed seed, so `cargo test` is reproducible, and `cases` cases.
fn runner(cases: u32, seed: u8) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

// ---------------------------------------------------------------------------------------------
// Generated text.

/// The field and node names of the declaration model, so generated documents reach the schema.
const FIELD_NAMES: &[&str] = &[
    "tenant",
    "cell",
    "org",
    "team",
    "trust",
    "groups",
    "admin",
    "member",
    "viewer",
    "quota",
    "quotas",
    "pool",
    "pools",
    "reserved",
    "burst",
    "profile",
    "workload",
    "workloads",
    "kind",
    "service-account",
    "priority",
    "priorities",
    "registries",
    "models",
    "name",
    "version",
    "prefix",
    "cpu",
    "memory",
    "pods",
    "description",
    "container-defaults",
    "cloud",
    "region",
    "kubernetes",
    "driver",
    "value",
    "preempt",
    "gpu",
    "nodes",
    "gpus-per-node",
    "sharing",
    "mig-layout",
    "mig-layouts",
    "gpu-model",
    "gpu-models",
    "gpu-operator",
    "namespace",
    "labels",
    "taints",
    "key",
    "effect",
    "replicas",
    "compute-slices",
    "memory-slices",
    "starts",
    "placement-units",
    "pci-ids",
    "product",
    "nvlink-domain",
    "price",
    "per-gpu-hour",
    "cell",
    "selector",
    "time-slice",
    "id",
    "size",
    "max",
    "count",
    "dns",
    "provider",
    "type",
];

/// Values that mean something in the model.
const FIELD_VALUES: &[&str] = &[
    "alpha",
    "alpha-corp",
    "c1",
    "c3",
    "train",
    "infer",
    "batch",
    "serving",
    "hard",
    "soft",
    "mig",
    "exclusive",
    "time-slice",
    "mps",
    "mig-single",
    "H100-80GB-SXM",
    "A100-80GB",
    "1g.10gb",
    "2g.20gb",
    "3g.40gb",
    "7g.80gb",
    "1c.2g.48gb",
    "570",
    "1.33",
    "aws",
    "us-east-1",
    "32",
    "128Gi",
    "0",
    "-1",
    "NoSchedule",
    "system:masters",
    "*",
    " alpha ",
    "kube-system",
    "default",
];

/// Characters that parsers and writers get wrong: controls, line breaks of every standard,
/// byte-order marks, non-characters, wide and combining characters, syntax of both formats.
const ODD_CHARS: &[char] = &[
    '\0',
    '\u{1}',
    '\u{7}',
    '\u{8}',
    '\t',
    '\u{b}',
    '\u{c}',
    '\r',
    '\n',
    '\u{1b}',
    '\u{7f}',
    '\u{80}',
    '\u{85}',
    '\u{86}',
    '\u{9f}',
    '\u{a0}',
    '\u{ad}',
    '\u{200b}',
    '\u{200e}',
    '\u{2028}',
    '\u{2029}',
    '\u{202e}',
    '\u{feff}',
    '\u{fffd}',
    '\u{fffe}',
    '\u{ffff}',
    '\u{10ffff}',
    'é',
    'ß',
    'ǅ',
    '\u{301}',
    '日',
    '😀',
    '"',
    '\'',
    '\\',
    '#',
    '{',
    '}',
    '[',
    ']',
    ':',
    '=',
    ';',
    ',',
    '/',
    '*',
    '-',
    '&',
    '!',
    '|',
    '>',
    '%',
    '@',
    '`',
    ' ',
];

/// Text of odd and ordinary characters.
fn odd_text() -> impl Strategy<Value = String> {
    let char_strategy = prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => proptest::char::range('0', '9'),
        3 => proptest::sample::select(ODD_CHARS),
        1 => any::<char>(),
    ];
    prop_oneof![
        2 => proptest::sample::select(FIELD_VALUES).prop_map(str::to_string),
        3 => proptest::collection::vec(char_strategy, 0..12).prop_map(String::from_iter),
    ]
}

/// The line ending a generated document uses; the index picks one per line when mixed.
#[derive(Debug, Clone, Copy)]
enum LineEnd {
    Lf,
    CrLf,
    Cr,
    /// U+2028, a KDL newline.
    LineSeparator,
    /// U+0085, a KDL newline and a YAML 1.1 one.
    NextLine,
    /// Any of the above, line by line.
    Mixed,
}

impl LineEnd {
    fn text(self, line: usize) -> &'static str {
        match self {
            LineEnd::Lf => "\n",
            LineEnd::CrLf => "\r\n",
            LineEnd::Cr => "\r",
            LineEnd::LineSeparator => "\u{2028}",
            LineEnd::NextLine => "\u{85}",
            LineEnd::Mixed => ["\n", "\r\n", "\r", "\u{2028}", "\u{85}", "\u{c}"][line % 6],
        }
    }
}

fn line_end() -> impl Strategy<Value = LineEnd> {
    prop_oneof![
        6 => Just(LineEnd::Lf),
        1 => Just(LineEnd::CrLf),
        1 => Just(LineEnd::Cr),
        1 => Just(LineEnd::LineSeparator),
        1 => Just(LineEnd::NextLine),
        1 => Just(LineEnd::Mixed),
    ]
}

/// Joins lines with the chosen ending, after an optional byte-order mark.
fn join_lines(lines: &[String], end: LineEnd, bom: bool) -> String {
    let mut text = String::new();
    if bom {
        text.push('\u{feff}');
    }
    for (idx, line) in lines.iter().enumerate() {
        text.push_str(line);
        text.push_str(end.text(idx));
    }
    text
}

/// Numbers in every notation, rarely (so that most documents still parse) beyond `i128`.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0_u32..64).prop_map(|n| n.to_string()),
        3 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<i128>().prop_map(|n| n.to_string()),
        1 => any::<u16>().prop_map(|n| format!("0x{n:x}")),
        1 => any::<u16>().prop_map(|n| format!("0o{n:o}")),
        1 => any::<u8>().prop_map(|n| format!("0b{n:b}")),
        1 => proptest::sample::select(&["1_000", "1e400", "-0.0", "1.5", "2.5e42"][..])
            .prop_map(str::to_string),
        1 => any::<f64>().prop_map(|n| format!("{n:?}")),
        1 => prop_oneof![
            any::<u128>().prop_map(|n| n.to_string()),
            (39_usize..80).prop_map(|digits| "9".repeat(digits)),
            Just("340282366920938463463374607431768211456".to_string()),
            Just("-170141183460469231731687303715884105729".to_string()),
        ],
    ]
}

// ---------------------------------------------------------------------------------------------
// KDL documents.

/// Whether KDL v2 forbids a character written literally in a string (it must be escaped).
fn kdl_forbids_literally(ch: char) -> bool {
    ch.is_control()
        || matches!(ch, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(ch, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// Whether `text` can be written as a KDL identifier string.
fn is_kdl_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && chars.all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.' | ':'))
        && !matches!(text, "true" | "false" | "null" | "inf" | "nan")
}

/// A KDL string in one of the forms KDL v2 has. `strict` strings are valid KDL (forbidden
/// characters escaped or left out); the others write every character literally, as an
/// attacker would.
#[derive(Debug, Clone)]
enum KdlString {
    /// An identifier string, written bare when it is one (quoted otherwise).
    Bare(String),
    /// A quoted string; each character is written literally or as an escape.
    Quoted {
        text: String,
        escaped: Vec<bool>,
        strict: bool,
    },
    /// A raw string with `hashes` hashes.
    Raw {
        text: String,
        hashes: usize,
        strict: bool,
    },
    /// A multi-line string, quoted (`"""`) or raw (`#"""`).
    MultiLine(Vec<String>, bool),
}

impl KdlString {
    fn quoted(text: &str) -> Self {
        KdlString::Quoted {
            text: text.to_string(),
            escaped: Vec::new(),
            strict: true,
        }
    }

    /// The value a KDL reader gets from a single-line string, if this is one.
    fn value(&self) -> Option<String> {
        match self {
            KdlString::Bare(text) => Some(text.clone()),
            KdlString::Quoted { text, .. } => Some(text.clone()),
            KdlString::Raw { text, strict, .. } => Some(if *strict {
                raw_safe(text)
            } else {
                text.clone()
            }),
            KdlString::MultiLine(..) => None,
        }
    }

    fn render(&self, end: LineEnd) -> String {
        match self {
            KdlString::Bare(text) if is_kdl_identifier(text) => text.clone(),
            KdlString::Bare(text) => KdlString::quoted(text).render(end),
            KdlString::Quoted {
                text,
                escaped,
                strict,
            } => {
                let mut out = String::from("\"");
                for (idx, ch) in text.chars().enumerate() {
                    let escape = escaped.get(idx).copied().unwrap_or(false)
                        || ch == '"'
                        || ch == '\\'
                        || (*strict && (kdl_forbids_literally(ch) || ch == '\u{85}'));
                    if escape {
                        match ch {
                            '\n' => out.push_str("\\n"),
                            '\t' => out.push_str("\\t"),
                            '"' => out.push_str("\\\""),
                            '\\' => out.push_str("\\\\"),
                            other => out.push_str(&format!("\\u{{{:x}}}", other as u32)),
                        }
                    } else {
                        out.push(ch);
                    }
                }
                out.push('"');
                out
            }
            KdlString::Raw {
                text,
                hashes,
                strict,
            } => {
                let (text, hashes) = if *strict {
                    (raw_safe(text), (*hashes).max(1))
                } else {
                    (text.clone(), *hashes)
                };
                let hashes = "#".repeat(hashes);
                format!("{hashes}\"{text}\"{hashes}")
            }
            KdlString::MultiLine(lines, raw) => {
                let (open, close) = if *raw {
                    ("#\"\"\"", "\"\"\"#")
                } else {
                    ("\"\"\"", "\"\"\"")
                };
                let mut out = open.to_string();
                out.push_str(end.text(0));
                for line in lines {
                    out.push_str("    ");
                    out.push_str(&raw_safe(line).replace('\\', ""));
                    out.push_str(end.text(1));
                }
                out.push_str("    ");
                out.push_str(close);
                out
            }
        }
    }
}

/// The text of a strict raw string: without characters KDL forbids and without `"`, which could
/// end it.
fn raw_safe(text: &str) -> String {
    text.chars()
        .filter(|&ch| !kdl_forbids_literally(ch) && ch != '"' && ch != '\u{85}')
        .collect()
}

fn kdl_string() -> impl Strategy<Value = KdlString> {
    prop_oneof![
        3 => proptest::sample::select(FIELD_VALUES).prop_map(|s| KdlString::Bare(s.to_string())),
        4 => (odd_text(), proptest::bool::weighted(0.97)).prop_flat_map(|(text, strict)| {
            let len = text.chars().count();
            proptest::collection::vec(proptest::bool::weighted(0.3), len).prop_map(move |escaped| {
                KdlString::Quoted {
                    text: text.clone(),
                    escaped,
                    strict,
                }
            })
        }),
        2 => (odd_text(), 0_usize..3, proptest::bool::weighted(0.97))
            .prop_map(|(text, hashes, strict)| KdlString::Raw { text, hashes, strict }),
        1 => (proptest::collection::vec(odd_text(), 0..3), any::<bool>())
            .prop_map(|(lines, raw)| KdlString::MultiLine(lines, raw)),
    ]
}

/// A KDL value: a string, a number, a keyword, maybe with a type annotation.
#[derive(Debug, Clone)]
enum KdlValue {
    Str(KdlString),
    Number(String),
    Keyword(&'static str),
    Annotated(&'static str, Box<KdlValue>),
}

impl KdlValue {
    fn render(&self, end: LineEnd) -> String {
        match self {
            KdlValue::Str(text) => text.render(end),
            KdlValue::Number(number) => number.clone(),
            KdlValue::Keyword(keyword) => (*keyword).to_string(),
            KdlValue::Annotated(annotation, inner) => {
                format!("({annotation}){}", inner.render(end))
            }
        }
    }
}

fn kdl_value() -> impl Strategy<Value = KdlValue> {
    let plain = prop_oneof![
        5 => kdl_string().prop_map(KdlValue::Str),
        3 => number_text().prop_map(KdlValue::Number),
        1 => proptest::sample::select(&["#true", "#false", "#null", "#inf", "#-inf", "#nan"][..])
            .prop_map(KdlValue::Keyword),
    ];
    prop_oneof![
        9 => plain.clone(),
        1 => (proptest::sample::select(&["u8", "i128", "date", "\"quoted type\""][..]), plain)
            .prop_map(|(annotation, value)| KdlValue::Annotated(annotation, Box::new(value))),
    ]
}

/// A KDL node with arguments, properties and maybe children.
#[derive(Debug, Clone)]
struct KdlNode {
    name: KdlString,
    args: Vec<KdlValue>,
    props: Vec<(KdlString, KdlValue)>,
    children: Option<Vec<KdlNode>>,
    /// Written as `/-` (commented out), or followed by a comment.
    decoration: u8,
}

impl KdlNode {
    fn render(&self, indent: usize, end: LineEnd, lines: &mut Vec<String>) {
        let mut line = "    ".repeat(indent);
        if self.decoration == 1 {
            line.push_str("/-");
        }
        line.push_str(&self.name.render(end));
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.render(end));
        }
        for (key, value) in &self.props {
            line.push(' ');
            line.push_str(&key.render(end));
            line.push('=');
            line.push_str(&value.render(end));
        }
        match &self.children {
            None => {
                if self.decoration == 2 {
                    line.push_str(" // a comment");
                } else if self.decoration == 3 {
                    line.push_str(" /* a /* nested */ comment */");
                }
                lines.push(line);
            }
            Some(children) => {
                line.push_str(" {");
                lines.push(line);
                for child in children {
                    child.render(indent + 1, end, lines);
                }
                lines.push(format!("{}}}", "    ".repeat(indent)));
            }
        }
    }
}

fn kdl_name() -> impl Strategy<Value = KdlString> {
    prop_oneof![
        8 => proptest::sample::select(FIELD_NAMES).prop_map(|s| KdlString::Bare(s.to_string())),
        1 => kdl_string(),
    ]
}

fn kdl_node() -> impl Strategy<Value = KdlNode> {
    let leaf = (
        kdl_name(),
        proptest::collection::vec(kdl_value(), 0..3),
        proptest::collection::vec((kdl_name(), kdl_value()), 0..3),
        0_u8..8,
    )
        .prop_map(|(name, args, props, decoration)| KdlNode {
            name,
            args,
            props,
            children: None,
            decoration,
        });
    leaf.prop_recursive(4, 48, 5, |inner| {
        (
            kdl_name(),
            proptest::collection::vec(kdl_value(), 0..2),
            proptest::collection::vec((kdl_name(), kdl_value()), 0..2),
            proptest::collection::vec(inner, 0..5),
        )
            .prop_map(|(name, args, props, children)| KdlNode {
                name,
                args,
                props,
                children: Some(children),
                decoration: 0,
            })
    })
}

/// A whole KDL declaration file: its path and its bytes.
fn kdl_document() -> impl Strategy<Value = InputFile> {
    (
        prop_oneof![Just("tenant"), Just("cell"), Just("tenat")],
        prop_oneof![Just("tenants"), Just("cells")],
        proptest::sample::select(&["alpha", "c1", "beta", "Alpha", "a.b"][..]),
        proptest::collection::vec(kdl_node(), 0..8),
        line_end(),
        proptest::bool::weighted(0.1),
        proptest::collection::vec(kdl_node(), 0..2),
    )
        .prop_map(|(top, folder, stem, children, end, bom, extra)| {
            let root = KdlNode {
                name: KdlString::Bare(top.to_string()),
                args: vec![KdlValue::Str(KdlString::quoted(stem))],
                props: Vec::new(),
                children: Some(children),
                decoration: 0,
            };
            let mut lines = Vec::new();
            root.render(0, end, &mut lines);
            for node in extra {
                node.render(0, end, &mut lines);
            }
            InputFile {
                path: format!("{folder}/{stem}.kdl"),
                contents: join_lines(&lines, end, bom).into_bytes(),
            }
        })
}

// ---------------------------------------------------------------------------------------------
// YAML documents.

/// A YAML scalar in one of its styles.
#[derive(Debug, Clone)]
enum YamlScalar {
    Plain(String),
    SingleQuoted(String),
    /// Characters flagged `true` are escaped; so is every non-printable one when `strict`.
    DoubleQuoted(String, Vec<bool>, bool),
    Block(Vec<String>, &'static str),
    Special(&'static str),
}

impl YamlScalar {
    fn render(&self, indent: usize, end: LineEnd) -> String {
        match self {
            YamlScalar::Plain(text) => text.clone(),
            YamlScalar::SingleQuoted(text) => format!(
                "'{}'",
                text.replace('\'', "''")
                    .replace(|ch: char| ch.is_control(), "")
            ),
            YamlScalar::DoubleQuoted(text, escaped, strict) => {
                let mut out = String::from("\"");
                for (idx, ch) in text.chars().enumerate() {
                    if escaped.get(idx).copied().unwrap_or(false)
                        || ch == '"'
                        || ch == '\\'
                        || (*strict && !oracle::is_plain_yaml_char(ch))
                        || (*strict && ch == '\n')
                    {
                        match ch {
                            '"' => out.push_str("\\\""),
                            '\\' => out.push_str("\\\\"),
                            '\u{85}' => out.push_str("\\N"),
                            '\u{2028}' => out.push_str("\\L"),
                            other if (other as u32) < 0x100 => {
                                out.push_str(&format!("\\x{:02x}", other as u32));
                            }
                            other if (other as u32) < 0x10000 => {
                                out.push_str(&format!("\\u{:04x}", other as u32));
                            }
                            other => out.push_str(&format!("\\U{:08x}", other as u32)),
                        }
                    } else {
                        out.push(ch);
                    }
                }
                out.push('"');
                out
            }
            YamlScalar::Block(lines, indicator) => {
                let pad = "  ".repeat(indent + 1);
                let mut out = (*indicator).to_string();
                for (idx, line) in lines.iter().enumerate() {
                    out.push_str(end.text(idx));
                    out.push_str(&pad);
                    out.push_str(line);
                }
                out
            }
            YamlScalar::Special(text) => (*text).to_string(),
        }
    }
}

fn yaml_scalar() -> impl Strategy<Value = YamlScalar> {
    prop_oneof![
        4 => proptest::sample::select(FIELD_VALUES).prop_map(|s| YamlScalar::Plain(s.to_string())),
        3 => number_text().prop_map(YamlScalar::Plain),
        2 => odd_text().prop_map(YamlScalar::SingleQuoted),
        4 => (odd_text(), proptest::bool::weighted(0.97)).prop_flat_map(|(text, strict)| {
            let len = text.chars().count();
            proptest::collection::vec(proptest::bool::weighted(0.3), len).prop_map(
                move |escaped| YamlScalar::DoubleQuoted(text.clone(), escaped, strict),
            )
        }),
        1 => (
            proptest::collection::vec(odd_text(), 0..3),
            proptest::sample::select(&["|", "|-", "|+", ">", ">-", "|2"][..]),
        )
            .prop_map(|(lines, indicator)| YamlScalar::Block(lines, indicator)),
        2 => proptest::sample::select(
            &["~", "null", "true", "false", "yes", "no", "on", ".inf", "-.inf", ".nan", "0o17",
              "0x1f", "1e3", ""][..]
        )
        .prop_map(YamlScalar::Special),
    ]
}

/// A YAML value tree; each collection picks block or flow style.
#[derive(Debug, Clone)]
enum YamlTree {
    Scalar(YamlScalar),
    Seq(Vec<YamlTree>, bool),
    Map(Vec<(String, YamlTree)>, bool),
}

impl YamlTree {
    /// Renders in flow style on one line.
    fn flow(&self, end: LineEnd) -> String {
        match self {
            YamlTree::Scalar(YamlScalar::Block(lines, _)) => {
                YamlScalar::DoubleQuoted(lines.join("\n"), Vec::new(), true).render(0, end)
            }
            YamlTree::Scalar(YamlScalar::Special("")) => "null".to_string(),
            YamlTree::Scalar(scalar) => scalar.render(0, end),
            YamlTree::Seq(items, _) => {
                let items: Vec<String> = items.iter().map(|item| item.flow(end)).collect();
                format!("[{}]", items.join(", "))
            }
            YamlTree::Map(entries, _) => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| format!("{key}: {}", value.flow(end)))
                    .collect();
                format!("{{{}}}", entries.join(", "))
            }
        }
    }

    /// Renders the value of a key or list item that starts after `prefix` on the current line.
    fn block(&self, indent: usize, prefix: String, end: LineEnd, lines: &mut Vec<String>) {
        let pad = "  ".repeat(indent);
        match self {
            YamlTree::Scalar(scalar) => {
                lines.push(format!("{prefix}{}", scalar.render(indent, end)));
            }
            YamlTree::Seq(_, true) | YamlTree::Map(_, true) => {
                lines.push(format!("{prefix}{}", self.flow(end)));
            }
            YamlTree::Seq(items, _) if items.is_empty() => {
                lines.push(format!("{prefix}[]"));
            }
            YamlTree::Map(entries, _) if entries.is_empty() => {
                lines.push(format!("{prefix}{{}}"));
            }
            YamlTree::Seq(items, _) => {
                if !prefix.trim().is_empty() {
                    lines.push(prefix);
                }
                for item in items {
                    item.block(indent + 1, format!("{pad}- "), end, lines);
                }
            }
            YamlTree::Map(entries, _) => {
                if !prefix.trim().is_empty() {
                    lines.push(prefix);
                }
                for (key, value) in entries {
                    value.block(indent + 1, format!("{pad}{key}: "), end, lines);
                }
            }
        }
    }
}

fn yaml_key() -> impl Strategy<Value = String> {
    prop_oneof![
        9 => proptest::sample::select(FIELD_NAMES).prop_map(str::to_string),
        1 => odd_text().prop_map(|text| format!("\"{}\"", text.replace(['"', '\\'], ""))),
    ]
}

fn yaml_tree() -> impl Strategy<Value = YamlTree> {
    yaml_scalar()
        .prop_map(YamlTree::Scalar)
        .prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                (
                    proptest::collection::vec(inner.clone(), 0..5),
                    proptest::bool::weighted(0.3)
                )
                    .prop_map(|(items, flow)| YamlTree::Seq(items, flow)),
                (
                    proptest::collection::vec((yaml_key(), inner), 0..6),
                    proptest::bool::weighted(0.3)
                )
                    .prop_map(|(entries, flow)| YamlTree::Map(entries, flow)),
            ]
        })
}

/// A whole YAML declaration file: a mapping of model fields at the top.
fn yaml_document() -> impl Strategy<Value = InputFile> {
    (
        prop_oneof![Just("tenants"), Just("cells")],
        proptest::sample::select(&["gamma", "c3", "beta", "Gamma"][..]),
        proptest::collection::vec((yaml_key(), yaml_tree()), 0..10),
        line_end(),
        proptest::bool::weighted(0.1),
        proptest::sample::select(&["", "---", "%YAML 1.2\n---", "--- # doc"][..]),
        proptest::sample::select(
            &[
                "",
                "...",
                "---\nname: second",
                "? complex\n: key",
                "&a anchored: *a",
                "tagged: !!str x",
                "custom: !custom x",
                "plain: a: b",
                "unclosed: [a, {b",
                "- a list",
                "\u{85}odd: \u{7f}\u{1b}",
                "dup: 1\ndup: 2",
            ][..],
        ),
    )
        .prop_map(|(folder, stem, entries, end, bom, head, tail)| {
            let mut lines: Vec<String> = head.lines().map(str::to_string).collect();
            lines.push(format!("name: {stem}"));
            if !entries.is_empty() {
                YamlTree::Map(entries, false).block(0, String::new(), end, &mut lines);
            }
            lines.extend(tail.lines().map(str::to_string));
            InputFile {
                path: format!("{folder}/{stem}.yaml"),
                contents: join_lines(&lines, end, bom).into_bytes(),
            }
        })
}

// ---------------------------------------------------------------------------------------------
// Byte mutations of the fixtures.

/// Byte strings a mutation inserts: syntax of both formats and odd encodings.
const PIECES: &[&[u8]] = &[
    b"\"",
    b"#\"",
    b"\"#",
    b"\"\"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b"=",
    b"-",
    b"\n",
    b"\r",
    b"\r\n",
    b"\xe2\x80\xa8",
    b"\xc2\x85",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"#",
    b"/-",
    b"/*",
    b"*/",
    b"//",
    b"\\",
    b"(u8)",
    b"0",
    b"-1",
    b"340282366920938463463374607431768211456",
    b"1e400",
    b"#true",
    b"#null",
    b": ",
    b"- ",
    b"&a ",
    b"*a",
    b"!!str ",
    b"? ",
    b"|",
    b"---\n",
    b"\t",
    b"pool",
    b"profile",
    b"quota",
    b"mig-layout",
    b"system:masters",
];

/// One edit of a file.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(Index, usize),
    Delete(Index, usize),
    SetByte(Index, u8),
    Duplicate(Index, usize),
    /// Replaces every `\n` with one of the other line endings.
    LineEnds(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 0..PIECES.len()).prop_map(|(at, piece)| Mutation::Insert(at, piece)),
        3 => (any::<Index>(), 1_usize..24).prop_map(|(at, len)| Mutation::Delete(at, len)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte(at, byte)),
        1 => (any::<Index>(), 1_usize..200).prop_map(|(at, len)| Mutation::Duplicate(at, len)),
        1 => (0_usize..4).prop_map(Mutation::LineEnds),
    ]
}

fn apply(file: &mut Vec<u8>, mutation: &Mutation) {
    let len = file.len();
    let at = |index: &Index| if len == 0 { 0 } else { index.index(len + 1) };
    match mutation {
        Mutation::Insert(index, piece) => {
            let at = at(index);
            file.splice(at..at, PIECES[*piece].iter().copied());
        }
        Mutation::Delete(index, count) => {
            let at = at(index);
            file.drain(at..(at + count).min(len));
        }
        Mutation::SetByte(index, byte) => {
            if len > 0 {
                file[index.index(len)] = *byte;
            }
        }
        Mutation::Duplicate(index, count) => {
            let at = at(index);
            let piece: Vec<u8> = file[at..(at + count).min(len)].to_vec();
            file.splice(at..at, piece);
        }
        Mutation::LineEnds(which) => {
            let end: &[u8] = [&b"\r"[..], b"\r\n", b"\xe2\x80\xa8", b"\xc2\x85"][*which % 4];
            let mut out = Vec::with_capacity(len);
            for &byte in file.iter() {
                if byte == b'\n' {
                    out.extend_from_slice(end);
                } else {
                    out.push(byte);
                }
            }
            *file = out;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The properties.

#[test]
fn generated_kdl_documents_keep_every_invariant() {
    check(160, 1, &kdl_document(), |file| {
        let context = format!(
            "{}:\n{}",
            file.path,
            oracle::describe(&file.contents, 2_000)
        );
        let text = String::from_utf8_lossy(&file.contents).into_owned();
        oracle::check_front_end(&text, tenantc::parse::Format::Kdl, &context);
        oracle::check_compile(&with_file(base_fleet("kdl"), file), &context);
        Ok(())
    });
}

#[test]
fn generated_yaml_documents_keep_every_invariant() {
    check(160, 2, &yaml_document(), |file| {
        let context = format!(
            "{}:\n{}",
            file.path,
            oracle::describe(&file.contents, 2_000)
        );
        let text = String::from_utf8_lossy(&file.contents).into_owned();
        oracle::check_front_end(&text, tenantc::parse::Format::Yaml, &context);
        oracle::check_compile(&with_file(base_fleet("yaml"), file), &context);
        Ok(())
    });
}

#[test]
fn mutated_fixture_fleets_keep_every_invariant() {
    let fleets = fixture_fleets();
    let strategy = (
        0..fleets.len(),
        any::<Index>(),
        proptest::collection::vec(mutation(), 1..6),
    );
    check(200, 3, &strategy, |(fleet, file, mutations)| {
        let (name, inputs) = &fleets[fleet];
        let mut inputs = inputs.clone();
        let target = file.index(inputs.len());
        for mutation in &mutations {
            apply(&mut inputs[target].contents, mutation);
        }
        let context = format!(
            "fleet {name}, {} after {mutations:?}:\n{}",
            inputs[target].path,
            oracle::describe(&inputs[target].contents, 4_000)
        );
        oracle::check_compile(&inputs, &context);
        Ok(())
    });
}

#[test]
fn fixture_fleets_keep_every_invariant_unmutated() {
    // The oracle itself must accept every fixture, or its findings would be noise.
    for (name, inputs) in fixture_fleets() {
        oracle::check_compile(inputs, name);
        let joined = oracle::join_inputs(inputs);
        assert_eq!(
            &oracle::split_inputs(&joined),
            inputs,
            "{name}: split(join(x)) == x"
        );
    }
}

#[test]
fn odd_file_names_never_reach_the_output_unescaped() {
    // The family of issue 6, defect 5: any character in a declaration's path.
    let strategy = (
        proptest::sample::select(&["tenants", "cells"][..]),
        odd_text(),
        proptest::sample::select(&["", "/", "/sub/"][..]),
    );
    let base = base_fleet("kdl");
    check(96, 4, &strategy, |(folder, odd, sub)| {
        let original = if folder == "tenants" {
            "tenants/alpha.kdl"
        } else {
            "cells/c1.kdl"
        };
        let stem = original
            .rsplit('/')
            .next()
            .unwrap()
            .trim_end_matches(".kdl");
        let path = format!("{folder}{sub}{odd}/{stem}.kdl");
        let mut inputs = base.clone();
        for input in &mut inputs {
            if input.path == original {
                input.path = path.clone();
            }
        }
        oracle::check_compile(&inputs, &format!("path {path:?}"));
        Ok(())
    });
}

/// The value of `key` in the top-level mapping of a YAML file, and of `subkey` below it.
fn yaml_lookup(text: &str, path: &[&str]) -> Option<String> {
    use tenantc::parse::Value;
    let (document, diagnostics) = tenantc::parse::yaml::parse(tenantc::source::FileId(0), text);
    assert!(
        diagnostics.is_empty(),
        "emitted YAML does not read back: {diagnostics:?}\n{text}"
    );
    let mut node = document.root?.node;
    for key in path {
        node = match node.value {
            Value::Map(map) => {
                map.entries
                    .into_iter()
                    .find(|entry| entry.key == *key)?
                    .value
            }
            Value::Seq(items) => items.into_iter().next()?,
            _ => return None,
        };
    }
    match node.value {
        Value::Str(text) => Some(text),
        _ => None,
    }
}

#[test]
fn declared_text_reaches_the_output_as_written() {
    // The family of issue 6, defect 10: any string the model accepts (a PriorityClass
    // description, an RBAC group) is written so that a YAML reader gets it back unchanged, and
    // with only characters every YAML 1.1 and 1.2 reader reads as written (the oracle).
    let strategy = (
        kdl_string().prop_filter("a single-line string", |text| text.value().is_some()),
        any::<bool>(),
    );
    let base = base_fleet("kdl");
    check(128, 5, &strategy, |(text, in_group)| {
        let value = text.value().unwrap();
        let rendered = text.render(LineEnd::Lf);
        let (path, from, to) = if in_group {
            (
                "tenants/alpha.kdl",
                "groups admin=\"alpha-admins\"".to_string(),
                format!("groups admin={rendered}"),
            )
        } else {
            (
                "cells/c1.kdl",
                "priority \"batch\" value=1000".to_string(),
                format!("priority \"batch\" value=1000 description={rendered}"),
            )
        };
        let mut inputs = base.clone();
        let file = inputs.iter_mut().find(|input| input.path == path).unwrap();
        let original = String::from_utf8(file.contents.clone()).unwrap();
        assert!(original.contains(&from));
        file.contents = original.replacen(&from, &to, 1).into_bytes();
        let context = format!("{path} with {to:?}");
        let compilation = oracle::check_compile(&inputs, &context);
        let Some(tree) = &compilation.output else {
            return Ok(());
        };
        let (emitted, key_path): (&str, &[&str]) = if in_group {
            (
                "c1/tenants/alpha/train/rolebinding-admin.yaml",
                &["subjects", "", "name"],
            )
        } else {
            ("c1/cluster/priorityclass-batch.yaml", &["description"])
        };
        let emitted_text = String::from_utf8(tree[emitted].clone()).unwrap();
        let read_back = yaml_lookup(&emitted_text, key_path);
        prop_assert_eq!(
            read_back.as_deref(),
            Some(value.as_str()),
            "{}: {} reads back differently:\n{}",
            context,
            emitted,
            emitted_text
        );
        Ok(())
    });
}

/// Every diagnostic of a compilation as `(code, line, column)` of its primary label, as the JSON
/// report (and so the human one) gives them.
fn locations(compilation: &tenantc::Compilation) -> Vec<(String, u64, u64)> {
    let json = tenantc::diag::render::json(&compilation.diagnostics, &compilation.sources);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            let location = &diagnostic["location"];
            (
                diagnostic["code"].as_str().unwrap_or_default().to_string(),
                location["line"].as_u64().unwrap_or(0),
                location["column"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// Edits of a valid tenant file that each cause one finding at a known place: an unknown field
/// inserted before a top-level line (and before line 1 in YAML), and, in KDL, a declared name
/// that differs from the file name, on line 1.
fn located_edits(format: &str, lines: &[&str]) -> Vec<(String, Vec<String>, (u64, u64))> {
    let mut edits = Vec::new();
    let top_level: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(idx, line)| {
            if format == "kdl" {
                *idx > 0 && line.starts_with("    ") && !line.starts_with("     ")
            } else {
                !line.starts_with([' ', '#', '-'])
            }
        })
        .map(|(idx, _)| idx)
        .collect();
    let picks = [
        top_level.first(),
        top_level.get(top_level.len() / 2),
        top_level.last(),
    ];
    for &idx in picks.into_iter().flatten() {
        let (indent, field) = if format == "kdl" {
            ("    ", "colour \"blue\"")
        } else {
            ("", "colour: blue")
        };
        let mut edited: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
        edited.insert(idx, format!("{indent}{field}"));
        let at = (idx as u64 + 1, indent.len() as u64 + 1);
        edits.push((format!("unknown field before line {}", idx + 1), edited, at));
    }
    if format == "yaml" {
        let mut edited: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
        edited.insert(0, "colour: blue".to_string());
        edits.push(("unknown field on line 1".to_string(), edited, (1, 1)));
    } else {
        let mut edited: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
        edited[0] = edited[0].replacen("\"alpha\"", "\"alphx\"", 1);
        let column = lines[0].find("\"alpha\"").unwrap() as u64 + 1;
        edits.push(("declared name on line 1".to_string(), edited, (1, column)));
    }
    edits
}

#[test]
fn findings_are_located_whatever_the_line_endings_and_bom() {
    // The family of issue 6, defect 14: every line ending each format knows (KDL v2: LF, CRLF,
    // CR, NEL, FF, LS, PS; YAML 1.2: LF, CRLF, CR), with and without a byte-order mark, puts
    // each finding on the line and column where it is written, as it is with LF line endings.
    let kdl_ends: &[&str] = &[
        "\n", "\r\n", "\r", "\u{85}", "\u{c}", "\u{2028}", "\u{2029}",
    ];
    let yaml_ends: &[&str] = &["\n", "\r\n", "\r"];
    let mut failures = Vec::new();
    for (format, ends) in [("kdl", kdl_ends), ("yaml", yaml_ends)] {
        let base = base_fleet(format);
        let tenant = base
            .iter()
            .find(|input| input.path.starts_with("tenants/"))
            .unwrap();
        let text = String::from_utf8(tenant.contents.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (edit, edited, at) in located_edits(format, &lines) {
            let compile_with = |end: &str, bom: bool| {
                let mut contents = if bom {
                    "\u{feff}".to_string()
                } else {
                    String::new()
                };
                contents.push_str(&edited.join(end));
                contents.push_str(end);
                let file = InputFile {
                    path: tenant.path.clone(),
                    contents: contents.into_bytes(),
                };
                locations(&tenantc::compile(&with_file(base.clone(), file)))
            };
            let reference = compile_with("\n", false);
            assert_eq!(
                reference.len(),
                1,
                "{format}, {edit}: one finding expected, found {reference:?}"
            );
            assert_eq!(
                (reference[0].1, reference[0].2),
                at,
                "{format}, {edit}: {reference:?}"
            );
            for end in ends {
                for bom in [false, true] {
                    let found = compile_with(end, bom);
                    if found != reference {
                        failures.push(format!(
                            "{format}, {edit}, line end {end:?}, bom {bom}: expected {reference:?}, found {found:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} misplaced findings:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Deep nesting, in a child process whose work runs in a thread with a bounded stack.

/// The stack the nesting cases run on: the size of a test thread, less than a main thread.
const NESTING_STACK: usize = 2 * 1024 * 1024;

/// Documents that nest `depth` levels, in every way each format nests, including the ways that
/// fooled the pre-parse guard of issue 6, defect 1 (raw strings, nested comments).
fn nested_documents(depth: usize) -> Vec<(String, String)> {
    let kdl = |open: &str| {
        format!(
            "tenant \"alpha\" {{\n{}{}\n}}\n",
            "a {"
                .repeat(depth)
                .replacen("a {", &format!("{open} a {{"), 1),
            "}".repeat(depth)
        )
    };
    vec![
        ("plain KDL children".into(), kdl("")),
        (
            "KDL after a raw string with a backslash".into(),
            kdl("x #\"\\\"#"),
        ),
        (
            "KDL after a raw string with a quote".into(),
            kdl("x #\"a\"b\"#"),
        ),
        (
            "KDL after a nested block comment".into(),
            kdl("/* /* */ \" */"),
        ),
        (
            "KDL after a multi-line raw string".into(),
            kdl("x #\"\"\"\n\\\"\n\"\"\"#\n"),
        ),
        (
            "KDL type annotations".into(),
            format!(
                "tenant \"alpha\" {{\n{}\n}}\n",
                "(t)a {".repeat(depth) + &"}".repeat(depth)
            ),
        ),
        (
            "YAML flow lists".into(),
            format!(
                "name: alpha\nx: {}{}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            ),
        ),
        (
            "YAML flow mappings".into(),
            format!(
                "name: alpha\nx: {}1{}\n",
                "{a: ".repeat(depth),
                "}".repeat(depth)
            ),
        ),
        (
            "YAML block mappings".into(),
            (0..depth.min(1_000)).fold("name: alpha\n".to_string(), |mut text, level| {
                text.push_str(&" ".repeat(level));
                text.push_str("a:\n");
                text
            }),
        ),
        (
            "YAML block lists".into(),
            format!("name: alpha\nx:\n{}1\n", "- ".repeat(depth)),
        ),
    ]
}

/// Every nesting case: its name, format and text.
fn nesting_cases() -> Vec<(String, &'static str, String)> {
    let mut cases = Vec::new();
    for depth in [65, 1_000, 100_000] {
        for (name, text) in nested_documents(depth) {
            let format = if name.starts_with("YAML") {
                "yaml"
            } else {
                "kdl"
            };
            cases.push((format!("{name}, depth {depth}"), format, text));
        }
    }
    cases
}

/// The environment variable that makes this test binary run one isolated case.
const ISOLATED: &str = "TENANTC_FUZZ_PROPS_ISOLATED_CASE";

/// Runs `work` isolated: in a child process of this test binary (running only `test`), on a
/// thread with a bounded stack, because a stack overflow aborts the whole process and would
/// take every other test with it. Returns why the case failed, if it did.
///
/// In the child, only the case whose `key` is selected runs; the others return `Ok` at once.
fn isolated(test: &str, key: &str, work: impl FnOnce() + Send + 'static) -> Result<(), String> {
    if let Some(selected) = std::env::var_os(ISOLATED) {
        if selected == key {
            let worker = std::thread::Builder::new()
                .stack_size(NESTING_STACK)
                .spawn(work)
                .unwrap();
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        return Ok(());
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(ISOLATED, key)
        .output()
        .unwrap();
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let reason = match lines.iter().position(|line| line.contains("panicked at")) {
        Some(at) => lines
            .get(at + 1)
            .map(|line| line.chars().take(400).collect::<String>())
            .unwrap_or_default(),
        None => lines
            .iter()
            .find(|line| line.contains("overflowed its stack"))
            .map(|line| line.to_string())
            .unwrap_or_else(|| "no message".to_string()),
    };
    Err(format!("{}: {reason}", output.status))
}

#[test]
fn deeply_nested_documents_give_a_diagnostic_not_a_stack_overflow() {
    let mut failures = Vec::new();
    for (idx, (name, format, text)) in nesting_cases().into_iter().enumerate() {
        let case = name.clone();
        let result = isolated(
            "deeply_nested_documents_give_a_diagnostic_not_a_stack_overflow",
            &idx.to_string(),
            move || {
                let inputs = with_file(
                    base_fleet(format),
                    InputFile {
                        path: format!("tenants/alpha.{format}"),
                        contents: text.into_bytes(),
                    },
                );
                let compilation = oracle::check_compile(&inputs, &case);
                assert!(
                    compilation.has_errors(),
                    "{case}: nesting this deep must be an error"
                );
            },
        );
        if let Err(reason) = result {
            failures.push(format!("{name}: {reason}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} nesting cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions found by cargo-fuzz.

/// Runs one committed reproducer from `fuzz/regressions/<target>/` through its target's checks,
/// isolated (see [`isolated`]) since a reproducer may overflow the stack.
fn replay(test: &str, target: &'static str, name: &str) {
    let path = support::repo()
        .join("fuzz/regressions")
        .join(target)
        .join(name);
    let data = std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let context = format!("fuzz/regressions/{target}/{name}");
    let result = isolated(test, name, move || run_target(target, &data, &context));
    if let Err(reason) = result {
        panic!("fuzz/regressions/{target}/{name} still fails: {reason}");
    }
}

fn run_target(target: &str, data: &[u8], context: &str) {
    match target {
        "kdl" => oracle::check_front_end(
            &String::from_utf8_lossy(data),
            tenantc::parse::Format::Kdl,
            context,
        ),
        "yaml" => oracle::check_front_end(
            &String::from_utf8_lossy(data),
            tenantc::parse::Format::Yaml,
            context,
        ),
        "compile" => {
            oracle::check_compile(&oracle::split_inputs(data), context);
        }
        other => panic!("unknown fuzz target {other}"),
    }
}

/// A test that replays one reproducer of `fuzz/regressions/`, named after its defect.
macro_rules! fuzz_regression {
    ($(#[$doc:meta])* $test:ident, $target:literal, $file:literal) => {
        $(#[$doc])*
        #[test]
        fn $test() {
            replay(stringify!($test), $target, $file);
        }
    };
}

fuzz_regression!(
    /// Issue 6, defect 1: a raw string ending in a backslash hid 3,000 levels of children from
    /// the nesting guard, and kdl-rs overflowed the stack.
    fuzz_regression_defect_01_raw_string_fools_the_nesting_guard,
    "kdl",
    "defect-01-raw-string-fools-the-nesting-guard"
);

fuzz_regression!(
    /// Issue 6, defect 5: a vertical tab in a folder name reached the generated headers (found
    /// by `odd_file_names_never_reach_the_output_unescaped`).
    fuzz_regression_defect_05_control_character_in_a_folder_name,
    "compile",
    "defect-05-control-character-in-a-folder-name"
);

fuzz_regression!(
    /// Issue 6, defect 10: a PriorityClass description with U+2028 was written raw, a line break
    /// to YAML 1.1 readers (found by `declared_text_reaches_the_output_as_written`).
    fuzz_regression_defect_10_line_separator_written_raw_into_yaml,
    "compile",
    "defect-10-line-separator-written-raw-into-yaml"
);

fuzz_regression!(
    /// New (not in issue 6): a YAML key with a line break in it (`{\u{fffd}\n\r\u{fffd}}` folds to
    /// one) is echoed raw in the `field-unknown` message, so declared text can forge lines of the
    /// human report in a CI log, or send escape sequences to a terminal (found by the `yaml`
    /// fuzz target in its first minute).
    fuzz_regression_new_diagnostic_echoes_a_line_break_of_a_key,
    "yaml",
    "new-diagnostic-echoes-a-line-break-of-a-key"
);

fuzz_regression!(
    /// New, the same family: the `file-ignored` warning prints a file name raw, so a file named
    /// with escape sequences can erase report lines and print a fake `0 errors` in a terminal
    /// (the `compile` fuzz target found 25 such names in eight minutes; this one is written by
    /// hand to show the impact).
    fuzz_regression_new_diagnostic_echoes_an_escape_sequence_of_a_file_name,
    "compile",
    "new-diagnostic-echoes-an-escape-sequence-of-a-file-name"
);

#[test]
fn every_committed_fuzz_reproducer_has_a_named_regression_test() {
    // A reproducer in fuzz/regressions/ without a test below would be forgotten.
    let source = std::fs::read_to_string(support::repo().join("tests/fuzz_props.rs")).unwrap();
    let root = support::repo().join("fuzz/regressions");
    for target in support::subdirs(&root) {
        for entry in std::fs::read_dir(&target).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if Path::new(&name).extension().is_some_and(|ext| ext == "md") {
                continue;
            }
            assert!(
                source.contains(&format!("\"{name}\"")),
                "fuzz/regressions/{}/{name} is not replayed by a test",
                target.file_name().unwrap().to_string_lossy()
            );
        }
    }
}
