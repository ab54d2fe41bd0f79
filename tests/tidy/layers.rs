//! The stage order, enforced: every `crate::` (and `super::`) path in the library's non-test
//! code names a module that its own module may import, by the table [`LAYERS`], which
//! `ARCHITECTURE.md` mirrors in its "Layers" section.
//!
//! A module is a top-level module of `compiler/src/` or one of the few submodules the table
//! names on their own (`validate::audit` runs after `emit`, `diag::allow` after `parse`); a path
//! belongs to the longest module of the table it starts with, and a path to an item of the crate
//! root (`crate::compile`) to `lib`. Test code (`#[cfg(test)]` items and the files of test
//! modules) may import anything. The binary's `cli/` is the last row, one module whose
//! `tenantc::` paths are checked like the library's `crate::` paths (its own `crate::cli::` and
//! `super::` paths stay inside it); `main.rs` only calls `cli::main`.
//!
//! Each row may import only rows above it, so the table is a stack of layers and no two
//! modules can import each other; the test fails with the file and line of every path against
//! the table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::support;

/// Each module with the modules it may import, bottom-up: a row names only rows above it.
pub const LAYERS: &[(&str, &[&str])] = &[
    // Foundation: plain helpers with no knowledge of tenants or cells.
    ("limits", &[]),
    ("source", &[]),
    ("escape", &[]),
    ("json_strict", &[]),
    ("names", &[]),
    ("quantity", &[]),
    // Diagnostics and syntax.
    ("diag", &["limits", "names", "source"]),
    ("parse", &["diag", "limits", "source"]),
    ("diag::allow", &["diag", "parse", "source"]),
    ("diag::render", &["diag", "diag::allow", "names", "source"]),
    ("layout", &["parse"]),
    ("model", &["quantity", "source"]),
    ("catalog", &["diag", "limits", "names"]),
    // The writer and the typed objects it writes.
    ("emit", &["escape", "layout"]),
    ("kube", &["emit", "names", "quantity"]),
    // Facts shared by the stages after `schema`.
    ("hardware", &["catalog", "model"]),
    (
        "facts",
        &["catalog", "hardware", "kube", "model", "names", "quantity"],
    ),
    // The stages, in pipeline order.
    ("load", &["diag", "escape", "layout", "limits", "source"]),
    (
        "schema",
        &[
            "catalog", "diag", "layout", "model", "names", "parse", "quantity", "source",
        ],
    ),
    (
        "validate",
        &[
            "catalog", "diag", "facts", "hardware", "kube", "layout", "limits", "model", "names",
            "quantity", "schema", "source",
        ],
    ),
    ("keyless", &["json_strict", "names"]),
    (
        "weights",
        &["diag", "json_strict", "keyless", "layout", "model"],
    ),
    (
        "plan",
        &[
            "catalog", "diag", "facts", "hardware", "kube", "model", "quantity", "source",
            "weights",
        ],
    ),
    ("report", &["diag", "facts", "plan"]),
    (
        "lower",
        &["emit", "facts", "kube", "layout", "model", "plan", "report"],
    ),
    (
        "template",
        &[
            "diag", "emit", "kube", "layout", "limits", "names", "parse", "plan", "source",
        ],
    ),
    (
        "validate::audit",
        &["diag", "emit", "facts", "kube", "model", "plan", "source"],
    ),
    ("emit::fs", &["emit"]),
    // Views and tools over the plan and the output.
    ("describe", &["diag", "escape", "facts", "plan", "report"]),
    (
        "what_if",
        &["catalog", "diag", "escape", "hardware", "model", "plan"],
    ),
    (
        "review",
        &["diag::render", "emit", "facts", "names", "plan", "quantity"],
    ),
    (
        "policy",
        &["emit", "facts", "lower", "parse", "plan", "source"],
    ),
    ("git", &["escape", "layout", "limits", "load"]),
    // The driver: intake, then `compile` runs the stages in order.
    (
        "intake",
        &[
            "diag",
            "diag::allow",
            "escape",
            "layout",
            "load",
            "parse",
            "schema",
            "source",
            "template",
            "validate",
            "weights",
        ],
    ),
    (
        "lib",
        &[
            "catalog",
            "describe",
            "diag",
            "diag::allow",
            "diag::render",
            "emit",
            "escape",
            "facts",
            "git",
            "hardware",
            "intake",
            "json_strict",
            "keyless",
            "kube",
            "layout",
            "limits",
            "load",
            "lower",
            "model",
            "names",
            "parse",
            "plan",
            "policy",
            "quantity",
            "report",
            "review",
            "schema",
            "source",
            "template",
            "validate",
            "validate::audit",
            "weights",
            "what_if",
            "emit::fs",
        ],
    ),
    // The binary: the command line, which sees the library as `tenantc::`.
    (
        "cli",
        &[
            "catalog",
            "describe",
            "diag",
            "diag::allow",
            "diag::render",
            "emit",
            "emit::fs",
            "git",
            "lib",
            "load",
            "lower",
            "policy",
            "review",
            "weights",
            "what_if",
        ],
    ),
];

/// The rows of the binary, whose modules `lib.rs` does not declare.
const BINARY_ROWS: &[&str] = &["cli"];

/// Imports against the table that are still allowed, as `(file, module it imports)`, each
/// until the change named beside it lands. Empty when the order holds everywhere; an entry that
/// is no longer needed fails the test too, so the list only shrinks.
const EXCEPTIONS: &[(&str, &str)] = &[];

/// The library's source folder.
pub(super) fn source_root() -> PathBuf {
    support::repo().join("compiler/src")
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// `source` with every comment, string and character literal blanked out (line breaks kept),
/// so that what remains is code and its byte offsets and lines are the file's.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in out.iter_mut().take(to.min(bytes.len())).skip(from) {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let ident =
        |at: usize| at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&byte| byte == b'\n')
                .map_or(bytes.len(), |offset| at + offset);
            blank(&mut out, at, end);
            at = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut end = at;
            while end < bytes.len() {
                if bytes[end..].starts_with(b"/*") {
                    depth += 1;
                    end += 2;
                } else if bytes[end..].starts_with(b"*/") {
                    depth -= 1;
                    end += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    end += 1;
                }
            }
            blank(&mut out, at, end);
            at = end;
        } else if !ident(at) && raw_string_start(rest).is_some() {
            let (open, hashes) = raw_string_start(rest).unwrap();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = at + open;
            let end = bytes[body..]
                .windows(close.len())
                .position(|window| window == close.as_slice())
                .map_or(bytes.len(), |offset| body + offset + close.len());
            blank(&mut out, at, end);
            at = end;
        } else if rest[0] == b'"' || (!ident(at) && rest.starts_with(b"b\"")) {
            let mut end = at + if rest[0] == b'b' { 2 } else { 1 };
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, at, end + 1);
            at = end + 1;
        } else if rest[0] == b'\'' {
            // A character literal (`'a'`, `'\''`, `'é'`), or else a lifetime, left as it is.
            if rest.get(1) == Some(&b'\\') {
                // `'\n'`, `'\''`, `'\u{..}'`: the escaped character, then up to the quote.
                let mut end = at + 3;
                while end < bytes.len() && bytes[end] != b'\'' {
                    end += 1;
                }
                blank(&mut out, at, end + 1);
                at = end + 1;
            } else {
                let width = source[at + 1..].chars().next().map_or(1, char::len_utf8);
                if bytes.get(at + 1 + width) == Some(&b'\'') {
                    blank(&mut out, at, at + 2 + width);
                    at += 2 + width;
                } else {
                    at += 1;
                }
            }
        } else {
            at += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The length of the opening of a raw string (`r"`, `r#"`, `br##"`, …) at the start of `rest`,
/// and its number of `#`.
fn raw_string_start(rest: &[u8]) -> Option<(usize, usize)> {
    let after_b = if rest.first() == Some(&b'b') { 1 } else { 0 };
    if rest.get(after_b) != Some(&b'r') {
        return None;
    }
    let hashes = rest[after_b + 1..]
        .iter()
        .take_while(|&&byte| byte == b'#')
        .count();
    (rest.get(after_b + 1 + hashes) == Some(&b'"')).then_some((after_b + 2 + hashes, hashes))
}

/// The end of the item that starts at `from`: its first `;` outside brackets, or the end of its
/// first `{…}` block.
fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0i32;
    let mut at = from;
    while at < code.len() {
        match code[at] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return at + 1,
            b'{' if depth == 0 => {
                let mut braces = 0;
                while at < code.len() {
                    match code[at] {
                        b'{' => braces += 1,
                        b'}' => {
                            braces -= 1;
                            if braces == 0 {
                                return at + 1;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    code.len()
}

/// `code` with every `#[cfg(test)]` item blanked out, and the names of the test modules it
/// declares in other files (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let bytes = code.as_bytes();
    let mut out = bytes.to_vec();
    let mut test_modules = Vec::new();
    let attribute = "#[cfg(test)]";
    let mut search = 0;
    while let Some(offset) = code[search..].find(attribute) {
        let start = search + offset;
        let mut item = start + attribute.len();
        // Further attributes of the same item.
        loop {
            let rest = code[item..].trim_start();
            let skipped = code.len() - item - rest.len();
            if rest.starts_with("#[") {
                item += skipped + rest.find(']').map_or(rest.len(), |end| end + 1);
            } else {
                break;
            }
        }
        let declaration = code[item..].trim_start();
        let declaration = declaration
            .strip_prefix("pub(crate) ")
            .or_else(|| declaration.strip_prefix("pub "))
            .unwrap_or(declaration);
        if let Some(rest) = declaration.strip_prefix("mod ") {
            let name: String = rest
                .chars()
                .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                .collect();
            if rest[name.len()..].trim_start().starts_with(';') {
                test_modules.push(name);
            }
        }
        let end = item_end(bytes, item);
        for byte in out.iter_mut().take(end).skip(start) {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        search = end.max(start + 1);
    }
    (String::from_utf8(out).unwrap(), test_modules)
}

/// The module path of a file of `compiler/src/` (`validate/audit.rs` is `["validate",
/// "audit"]`, `lib.rs` is `[]`).
fn module_path(relative: &str) -> Vec<String> {
    let stem = relative.strip_suffix(".rs").unwrap_or(relative);
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    parts
}

/// The module of the table that a path of the crate belongs to: the longest that it starts
/// with; an item of the crate root belongs to `lib`.
fn module_of(path: &[String], modules: &BTreeSet<&str>) -> String {
    for length in (1..=path.len()).rev() {
        let candidate = path[..length].join("::");
        if modules.contains(candidate.as_str()) {
            return candidate;
        }
    }
    "lib".to_string()
}

/// The top-level names of a `{…}` group (`{a, b::{c, d}, e as f}` gives `a`, `b::…`, `e`) as
/// paths.
fn group_paths(group: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for ch in group.chars() {
        match ch {
            '{' => {
                depth += 1;
                continue;
            }
            '}' => {
                depth -= 1;
                continue;
            }
            ',' if depth == 0 => {
                paths.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            current.push(ch);
        }
    }
    paths.push(current);
    paths
        .iter()
        .map(|path| {
            path.split("::")
                .map(|segment| segment.split_whitespace().next().unwrap_or("").to_string())
                .filter(|segment| !segment.is_empty() && segment != "{")
                .collect::<Vec<String>>()
        })
        .filter(|path| !path.is_empty() && path[0] != "self")
        .collect()
}

/// One path of the crate in non-test code: where it is and what it names.
#[derive(Debug)]
struct Import {
    file: String,
    line: usize,
    module: String,
    target: String,
    text: String,
}

/// The non-test code of every source file of `compiler/src/` (comments, strings and
/// `#[cfg(test)]` items blanked out, test-module files left out), by relative path, with
/// `main.rs` and the files of `cli/`.
pub(super) fn non_test_code() -> BTreeMap<String, String> {
    let root = source_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let mut codes = BTreeMap::new();
    let mut test_files = BTreeSet::new();
    for path in &files {
        let relative = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let (code, test_modules) = without_tests(&code_only(&fs::read_to_string(path).unwrap()));
        let folder = match relative.rsplit_once('/') {
            Some((folder, "mod.rs")) => folder.to_string(),
            Some((folder, file)) => format!("{folder}/{}", file.trim_end_matches(".rs")),
            None if relative == "lib.rs" || relative == "main.rs" => String::new(),
            None => relative.trim_end_matches(".rs").to_string(),
        };
        for name in test_modules {
            let prefix = if folder.is_empty() {
                String::new()
            } else {
                format!("{folder}/")
            };
            test_files.insert(format!("{prefix}{name}.rs"));
            test_files.insert(format!("{prefix}{name}/mod.rs"));
        }
        codes.insert(relative, code);
    }
    codes.retain(|relative, _| !test_files.contains(relative) && !relative.ends_with("/tests.rs"));
    codes
}

/// Every path to another module of the table in the non-test code of the library and of `cli/`.
fn imports() -> Vec<Import> {
    let modules: BTreeSet<&str> = LAYERS.iter().map(|(module, _)| *module).collect();
    let codes = non_test_code();
    let mut found = Vec::new();
    for (relative, code) in &codes {
        let binary = relative.starts_with("cli/");
        if relative == "main.rs" {
            continue;
        }
        let own = module_path(relative);
        let module = if binary {
            "cli".to_string()
        } else if own.is_empty() {
            "lib".to_string()
        } else {
            module_of(&own, &modules)
        };
        let keywords: &[&str] = if binary {
            &["tenantc::", "crate::", "super::"]
        } else {
            &["crate::", "super::"]
        };
        for &keyword in keywords {
            let mut search = 0;
            while let Some(offset) = code[search..].find(keyword) {
                let start = search + offset;
                search = start + keyword.len();
                let before = code[..start].chars().next_back();
                if before
                    .is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '$' || ch == ':')
                {
                    continue;
                }
                let base: Vec<String> = if keyword == "crate::" || keyword == "tenantc::" {
                    Vec::new()
                } else {
                    own[..own.len().saturating_sub(1)].to_vec()
                };
                let rest = &code[search..];
                let paths: Vec<Vec<String>> = if rest.starts_with('{') {
                    let mut depth = 0;
                    let end = rest
                        .char_indices()
                        .find(|(_, ch)| {
                            match ch {
                                '{' => depth += 1,
                                '}' => depth -= 1,
                                _ => {}
                            }
                            depth == 0
                        })
                        .map_or(rest.len(), |(at, _)| at);
                    group_paths(&rest[1..end])
                } else {
                    let path: String = rest
                        .chars()
                        .take_while(|ch| ch.is_alphanumeric() || *ch == '_' || *ch == ':')
                        .collect();
                    vec![
                        path.split("::")
                            .filter(|segment| !segment.is_empty())
                            .map(str::to_string)
                            .collect(),
                    ]
                };
                let line = code[..start].matches('\n').count() + 1;
                for path in paths {
                    let full: Vec<String> = base.iter().cloned().chain(path.clone()).collect();
                    let target = if binary && keyword != "tenantc::" {
                        // The binary's own paths: all of it is `cli`, but for `main.rs`.
                        if full.first().is_some_and(|first| first == "cli") {
                            "cli".to_string()
                        } else {
                            "main".to_string()
                        }
                    } else {
                        module_of(&full, &modules)
                    };
                    if target != module {
                        found.push(Import {
                            file: relative.clone(),
                            line,
                            module: module.clone(),
                            target,
                            text: format!("{}{}", keyword, path.join("::")),
                        });
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_import_follows_the_stage_order() {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let found = imports();
    assert!(
        found.len() > 100,
        "the scan found only {} imports; is it reading the sources?",
        found.len()
    );
    assert!(
        found
            .iter()
            .any(|import| import.module == "cli" && import.target == "lib"),
        "the scan found no `tenantc::` path of `cli/`; is it reading the binary?"
    );
    let mut against = Vec::new();
    let mut excepted = BTreeSet::new();
    for import in &found {
        let permitted = allowed
            .get(import.module.as_str())
            .is_some_and(|targets| targets.contains(&import.target.as_str()));
        if permitted {
            continue;
        }
        if EXCEPTIONS.contains(&(import.file.as_str(), import.target.as_str())) {
            excepted.insert((import.file.as_str(), import.target.as_str()));
            continue;
        }
        against.push(format!(
            "compiler/src/{}:{}: `{}`: `{}` may not import `{}`",
            import.file, import.line, import.text, import.module, import.target
        ));
    }
    assert!(
        against.is_empty(),
        "imports against the stage order (the table is `LAYERS` in tests/tidy/layers.rs and \
         \"Layers\" in ARCHITECTURE.md; move the shared item down into a module both may import, \
         such as `facts`):\n{}",
        against.join("\n")
    );
    let stale: Vec<&(&str, &str)> = EXCEPTIONS
        .iter()
        .filter(|exception| !excepted.contains(*exception))
        .collect();
    assert!(
        stale.is_empty(),
        "exceptions no longer needed, remove them: {stale:?}"
    );
}

#[test]
fn each_layer_imports_only_layers_below_it() {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (module, targets) in LAYERS {
        for target in *targets {
            assert!(
                seen.contains(target),
                "`{module}` may import `{target}`, which is not a row above it"
            );
        }
        assert!(seen.insert(module), "`{module}` has two rows");
    }
}

#[test]
fn every_module_of_the_library_has_a_row() {
    let lib = fs::read_to_string(source_root().join("lib.rs")).unwrap();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.to_string())
        })
        .filter(|module| module != "testing")
        .collect();
    let rows: BTreeSet<String> = LAYERS
        .iter()
        .map(|(module, _)| module.split("::").next().unwrap().to_string())
        .filter(|module| module != "lib" && !BINARY_ROWS.contains(&module.as_str()))
        .collect();
    assert_eq!(
        declared, rows,
        "every module of lib.rs needs a row in LAYERS (and in ARCHITECTURE.md)"
    );
    for (module, _) in LAYERS {
        if *module == "lib" {
            continue;
        }
        let path = module.replace("::", "/");
        let root = source_root();
        assert!(
            root.join(format!("{path}.rs")).exists()
                || root.join(format!("{path}/mod.rs")).exists(),
            "row `{module}` names no file"
        );
    }
}

#[test]
fn architecture_mirrors_the_table() {
    let text = fs::read_to_string(support::repo().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## Layers\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<(String, Vec<String>)> = section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            let module = cells[0].trim().trim_end_matches('`').to_string();
            let targets = cells[1]
                .split(',')
                .map(|target| target.trim().trim_matches('`').to_string())
                .filter(|target| !target.is_empty() && target != "—")
                .collect();
            (module, targets)
        })
        .collect();
    let expected: Vec<(String, Vec<String>)> = LAYERS
        .iter()
        .map(|(module, targets)| {
            let mut targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            targets.sort();
            (module.to_string(), targets)
        })
        .collect();
    let rows: Vec<(String, Vec<String>)> = rows
        .into_iter()
        .map(|(module, mut targets)| {
            targets.sort();
            (module, targets)
        })
        .collect();
    assert_eq!(
        rows, expected,
        "the table in ARCHITECTURE.md's \"Layers\" must equal LAYERS in tests/tidy/layers.rs"
    );
}

#[test]
fn the_scan_reads_code_not_comments_or_strings() {
    let code = code_only(
        "use crate::a; // crate::b\n/* crate::c */ let s = \"crate::d\"; let r = r#\"crate::e\"#;\nlet c = '\"'; fn f<'a>(x: &'a str) { crate::g::h(); }\n",
    );
    assert!(code.contains("crate::a"));
    assert!(code.contains("crate::g::h"));
    for hidden in ["crate::b", "crate::c", "crate::d", "crate::e"] {
        assert!(!code.contains(hidden), "{hidden} in {code}");
    }
    assert_eq!(code.lines().count(), 3);
    let (code, modules) = without_tests(
        "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n#[cfg(test)]\nmod support;\nuse crate::c;\n",
    );
    assert!(code.contains("crate::a") && code.contains("crate::c"));
    assert!(!code.contains("crate::b"));
    assert_eq!(modules, ["support"]);
    assert_eq!(
        group_paths("a, b::{c, d}, e as f, self"),
        [
            vec!["a".to_string()],
            vec!["b".to_string()],
            vec!["e".to_string()]
        ]
    );
}
