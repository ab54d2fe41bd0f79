//! The JSON Schemas in `schema/` agree with the declaration reader in `compiler/src/schema/`.
//!
//! Every fixture declaration (the frozen fixture fleet in `tests/fixtures/fleet/`, the KDL and
//! YAML twins in `tests/twins/`, and the inputs of the `ok` cases under `tests/cases/ok/`, with
//! the fixtures they share) must validate
//! against the schema of its folder: YAML files as they are, KDL files after conversion to the
//! YAML form by the mapping rules of `docs/declarations.md`, driven by the tables below. The
//! conversion is checked in turn: converted files compile to the same manifests as their KDL
//! originals, and the KDL twins convert to exactly their YAML twins. The full examples of
//! `docs/declarations.md` compile cleanly in both syntaxes. Negative checks show that invalid
//! values are rejected by both the schema and `tenantc::compile`, with the same bounds for every
//! numeric range, and positive checks that unusual but valid values pass both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use support::copy_dir;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map as JsonMap, Number, Value as Json, json};
use tenantc::parse::{Format, Map, Node, Value};
use tenantc::source::FileId;
use tenantc::{InputFile, compile};

/// Which declaration a file holds, from its folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tenant,
    Cell,
}

impl Kind {
    fn folder(self) -> &'static str {
        match self {
            Kind::Tenant => "tenants",
            Kind::Cell => "cells",
        }
    }

    fn schema_path(self) -> PathBuf {
        let file = match self {
            Kind::Tenant => "tenant.schema.json",
            Kind::Cell => "cell.schema.json",
        };
        support::repo().join("schema").join(file)
    }
}

// ---------------------------------------------------------------------------------------------
// KDL to YAML mapping table. Keys are `(parent KDL node, child KDL node)`: the same child name
// means different things under different parents (`profile` is a key-value pair in a
// `mig-layout` and a list item in a GPU model's `mig`).

/// Repeated children that are a YAML list under a plural key (`Obj::items`).
const LISTS: &[(&str, &str, &str)] = &[
    ("tenant", "quota", "quotas"),
    ("tenant", "workload", "workloads"),
    ("tenant", "registry", "registries"),
    ("tenant", "model", "models"),
    ("model", "key", "keys"),
    ("tenant", "fleet", "fleet"),
    ("tenant", "shared-base", "shared-bases"),
    ("storage", "bucket", "buckets"),
    ("storage", "shared-base", "shared-bases"),
    ("serving", "model", "models"),
    ("model", "tenant", "tenants"),
    ("fleet", "cell", "cells"),
    ("quota", "pool", "pools"),
    ("quota", "split", "splits"),
    ("cell", "pool", "pools"),
    ("cell", "priority", "priorities"),
    ("cell", "gpu-model", "gpu-models"),
    ("cell", "allow-group", "allow-groups"),
    ("cell", "org", "orgs"),
    ("workload", "exception", "exceptions"),
    ("cell", "endpoint", "endpoints"),
    ("cell", "dra-device-class", "dra-device-classes"),
    ("cell", "runtime-class", "runtime-classes"),
    ("topology", "level", "levels"),
    ("pool", "taint", "taints"),
    ("pool", "mig-layout", "mig-layouts"),
    ("mig", "profile", "profiles"),
];

/// Repeated `key "k" value` children that are a YAML mapping under a plural key (`Obj::pairs`).
const PAIRS: &[(&str, &str, &str)] = &[
    ("pool", "label", "labels"),
    ("chargeback", "label", "labels"),
    ("mig-layout", "profile", "profiles"),
];

/// Children whose arguments are a YAML list under the same key (`Obj::values`).
const VALUES: &[(&str, &str)] = &[
    ("gpu-model", "pci-ids"),
    ("gpu-model", "sharing"),
    ("profile", "starts"),
    ("runtime-class", "trust"),
    ("runtime-class", "pools"),
    ("org", "tenants"),
    ("shared-base", "tenants"),
    ("cell", "forbidden-label-keys"),
];

/// The YAML keys of the positional arguments of a node (`Obj::arg`).
const ARGS: &[(&str, &[&str])] = &[
    ("tenant", &["name"]),
    ("cell", &["name"]),
    ("pool", &["name"]),
    ("model", &["name"]),
    ("mig-layout", &["name"]),
    ("priority", &["name"]),
    ("gpu-model", &["name"]),
    ("profile", &["name"]),
    ("workload", &["kind"]),
    ("cloud", &["provider"]),
    ("nodes", &["count"]),
    ("taint", &["key", "value"]),
    ("split", &["workload"]),
    ("level", &["label"]),
    ("exception", &["name"]),
    ("endpoint", &["name"]),
    ("runtime-class", &["name"]),
    ("gitops", &["controller"]),
    ("gateway", &["kind"]),
];

/// Positional arguments of a node that only has them under one parent: `org "<org>"` is a
/// scalar in a tenant and a named item of `orgs` in a cell, and `shared-base "<prefix>"` a
/// scalar list item in a tenant and a prefixed item of `shared-bases` in a cell's storage.
const PARENT_ARGS: &[(&str, &str, &[&str])] = &[
    ("cell", "org", &["name"]),
    ("storage", "shared-base", &["prefix"]),
];

fn list_key(parent: &str, child: &str) -> Option<&'static str> {
    LISTS
        .iter()
        .find(|(p, c, _)| *p == parent && *c == child)
        .map(|(_, _, key)| *key)
}

fn pairs_key(parent: &str, child: &str) -> Option<&'static str> {
    PAIRS
        .iter()
        .find(|(p, c, _)| *p == parent && *c == child)
        .map(|(_, _, key)| *key)
}

fn is_values(parent: &str, child: &str) -> bool {
    VALUES.iter().any(|(p, c)| *p == parent && *c == child)
}

fn arg_names(parent: &str, node: &str) -> Option<&'static [&'static str]> {
    PARENT_ARGS
        .iter()
        .find(|(p, name, _)| *p == parent && *name == node)
        .map(|(_, _, names)| *names)
        .or_else(|| {
            ARGS.iter()
                .find(|(name, _)| *name == node)
                .map(|(_, names)| *names)
        })
}

// ---------------------------------------------------------------------------------------------
// Conversions of the compiler's parse tree to JSON.

fn scalar_to_json(value: &Value, at: &str) -> Result<Json, String> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Bool(flag) => Json::Bool(*flag),
        Value::Int(number) => {
            if let Ok(small) = i64::try_from(*number) {
                Json::from(small)
            } else if let Ok(big) = u64::try_from(*number) {
                Json::from(big)
            } else {
                return Err(format!("{at}: integer {number} does not fit JSON"));
            }
        }
        Value::Float(number) => Number::from_f64(*number)
            .map(Json::Number)
            .ok_or_else(|| format!("{at}: {number} is not a JSON number"))?,
        Value::Str(text) => Json::String(text.clone()),
        Value::Seq(_) | Value::Map(_) => return Err(format!("{at}: expected a scalar")),
    })
}

fn insert_once(
    object: &mut JsonMap<String, Json>,
    key: &str,
    value: Json,
    at: &str,
) -> Result<(), String> {
    if object.insert(key.to_string(), value).is_some() {
        return Err(format!("{at}: `{key}` is given twice"));
    }
    Ok(())
}

/// A YAML parse tree as JSON, as a YAML-to-JSON converter would see it.
fn yaml_to_json(node: &Node, at: &str) -> Result<Json, String> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .map(|(idx, item)| yaml_to_json(item, &format!("{at}/{idx}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array),
        Value::Map(map) => {
            if map.format != Format::Yaml || !map.args.is_empty() {
                return Err(format!("{at}: not a YAML mapping"));
            }
            let mut object = JsonMap::new();
            for entry in &map.entries {
                let path = format!("{at}/{}", entry.key);
                let value = yaml_to_json(&entry.value, &path)?;
                insert_once(&mut object, &entry.key, value, at)?;
            }
            Ok(Json::Object(object))
        }
        scalar => scalar_to_json(scalar, at),
    }
}

/// A KDL node as the YAML form of the declaration: the mapping rules of `Obj`, driven by the
/// tables above.
fn kdl_object(
    parent: &str,
    name: &str,
    map: &Map,
    at: &str,
) -> Result<JsonMap<String, Json>, String> {
    let mut object = JsonMap::new();
    let names = arg_names(parent, name).unwrap_or(&[]);
    if map.args.len() > names.len() {
        return Err(format!(
            "{at}: `{name}` has {} positional values, the table knows {}",
            map.args.len(),
            names.len()
        ));
    }
    for (arg, key) in map.args.iter().zip(names) {
        insert_once(&mut object, key, scalar_to_json(&arg.value, at)?, at)?;
    }
    for entry in &map.entries {
        let key = entry.key.as_str();
        let path = format!("{at}/{key}");
        let Value::Map(child) = &entry.value.value else {
            // A property.
            insert_once(
                &mut object,
                key,
                scalar_to_json(&entry.value.value, &path)?,
                at,
            )?;
            continue;
        };
        if let Some(plural) = list_key(name, key) {
            let item = kdl_child(name, key, child, &path)?;
            match object
                .entry(plural)
                .or_insert_with(|| Json::Array(Vec::new()))
            {
                Json::Array(items) => items.push(item),
                _ => return Err(format!("{at}: `{plural}` is both a list and a field")),
            }
        } else if let Some(plural) = pairs_key(name, key) {
            let ([pair_key, pair_value], []) = (child.args.as_slice(), child.entries.as_slice())
            else {
                return Err(format!("{path}: `{key}` takes a key and a value"));
            };
            let Value::Str(pair_key) = &pair_key.value else {
                return Err(format!("{path}: `{key}` key is not a string"));
            };
            let value = scalar_to_json(&pair_value.value, &path)?;
            match object
                .entry(plural)
                .or_insert_with(|| Json::Object(JsonMap::new()))
            {
                Json::Object(pairs) => insert_once(pairs, pair_key, value, &path)?,
                _ => return Err(format!("{at}: `{plural}` is both a mapping and a field")),
            }
        } else if is_values(name, key) {
            if !child.entries.is_empty() {
                return Err(format!("{path}: `{key}` takes values only"));
            }
            let values = child
                .args
                .iter()
                .map(|arg| scalar_to_json(&arg.value, &path))
                .collect::<Result<Vec<_>, _>>()?;
            insert_once(&mut object, key, Json::Array(values), at)?;
        } else {
            insert_once(&mut object, key, kdl_child(name, key, child, &path)?, at)?;
        }
    }
    Ok(object)
}

/// A KDL child node: a scalar field (one value, nothing else, no positional names in the
/// table) or an object.
fn kdl_child(parent: &str, name: &str, map: &Map, at: &str) -> Result<Json, String> {
    match (
        arg_names(parent, name),
        map.args.as_slice(),
        map.entries.is_empty(),
    ) {
        (None, [only], true) => scalar_to_json(&only.value, at),
        _ => kdl_object(parent, name, map, at).map(Json::Object),
    }
}

/// Parses a declaration file and returns its YAML form as JSON.
fn declaration_json(path: &Path) -> Result<Json, String> {
    let text = fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let is_kdl = path.extension().is_some_and(|ext| ext == "kdl");
    let (document, diagnostics) = if is_kdl {
        tenantc::parse::kdl::parse(FileId(0), &text)
    } else {
        tenantc::parse::yaml::parse(FileId(0), &text)
    };
    if !diagnostics.is_empty() {
        let codes: Vec<&str> = diagnostics.iter().map(|d| d.code.as_str()).collect();
        return Err(format!("{}: does not parse: {codes:?}", path.display()));
    }
    let root = document
        .root
        .ok_or_else(|| format!("{}: declares nothing", path.display()))?;
    let at = path.display().to_string();
    match (&root.kind, &root.node.value) {
        (Some((kind, _)), Value::Map(map)) => kdl_object("", kind, map, &at).map(Json::Object),
        (None, _) => yaml_to_json(&root.node, &at),
        (Some(_), _) => Err(format!("{at}: the top-level node is not a node")),
    }
}

// ---------------------------------------------------------------------------------------------
// Schemas.

fn read_schema(kind: Kind) -> Json {
    let path = kind.schema_path();
    let text =
        fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn validator(kind: Kind) -> jsonschema::Validator {
    jsonschema::draft202012::new(&read_schema(kind))
        .unwrap_or_else(|error| panic!("{:?} schema does not compile: {error}", kind))
}

/// Every schema error for `instance`, as `path: message` lines.
fn schema_errors(validator: &jsonschema::Validator, instance: &Json) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Example files.

/// Project roots whose declarations are valid: the frozen fixture fleet, the KDL and YAML twins,
/// and every `input` folder of the `ok` cases (with the fixtures the case shares), sorted by
/// where they are.
fn project_roots() -> Vec<support::CaseRoot> {
    let mut roots = vec![
        support::fleet(),
        support::repo().join("tests/twins/kdl"),
        support::repo().join("tests/twins/yaml"),
    ];
    let mut pending = vec![support::repo().join("tests/cases/ok")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect();
        children.sort();
        for child in children {
            if child.file_name().is_some_and(|name| name == "input") {
                roots.push(child);
            } else {
                pending.push(child);
            }
        }
    }
    roots.sort();
    roots
        .into_iter()
        .map(|root| match root.parent() {
            Some(case) if root.ends_with("input") => support::case_root(case, "input"),
            _ => root.into(),
        })
        .collect()
}

/// Every declaration file under `root`'s `tenants/` and `cells/`, recursively, as `load` sees
/// them, with the kind its folder gives.
fn declaration_files(root: &Path) -> Vec<(Kind, PathBuf)> {
    let mut files = Vec::new();
    for kind in [Kind::Tenant, Kind::Cell] {
        let mut pending = vec![root.join(kind.folder())];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                if hidden {
                    continue;
                }
                if path.is_dir() {
                    pending.push(path);
                } else if path
                    .extension()
                    .is_some_and(|ext| ext == "kdl" || ext == "yaml" || ext == "yml")
                {
                    files.push((kind, path));
                }
            }
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files
}

/// Every declaration file of the [`project_roots`], which are returned too: a root with shared
/// fixtures is a scratch folder that lives only as long as its `CaseRoot`.
fn all_declaration_files() -> (Vec<support::CaseRoot>, Vec<(Kind, PathBuf)>) {
    let roots = project_roots();
    let files = roots
        .iter()
        .flat_map(|root| declaration_files(root))
        .collect();
    (roots, files)
}

fn is_kdl(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "kdl")
}

/// Checks that every file of one syntax validates; returns how many there were.
fn validate_examples(kdl: bool) -> usize {
    let tenant = validator(Kind::Tenant);
    let cell = validator(Kind::Cell);
    let mut failures = Vec::new();
    let mut count = 0;
    let (_roots, files) = all_declaration_files();
    for (kind, path) in files {
        if is_kdl(&path) != kdl {
            continue;
        }
        count += 1;
        let instance = match declaration_json(&path) {
            Ok(instance) => instance,
            Err(error) => {
                failures.push(error);
                continue;
            }
        };
        let validator = match kind {
            Kind::Tenant => &tenant,
            Kind::Cell => &cell,
        };
        for error in schema_errors(validator, &instance) {
            failures.push(format!(
                "{}: {error}\n  as YAML: {instance}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    count
}

/// The inputs of a project root, as the binary would load them.
fn load_inputs(root: &Path) -> Vec<InputFile> {
    let loaded =
        tenantc::load::load(root).unwrap_or_else(|error| panic!("{}: {error}", root.display()));
    assert!(
        loaded.findings.is_empty(),
        "{}: {:?}",
        root.display(),
        loaded.findings
    );
    loaded.inputs
}

fn codes(diagnostics: &[tenantc::diag::Diagnostic]) -> Vec<String> {
    let mut codes: Vec<String> = diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.code.as_str(), d.message))
        .collect();
    codes.sort();
    codes
}

// ---------------------------------------------------------------------------------------------
// Tests: the schemas themselves.

#[test]
fn both_schemas_are_valid_draft_2020_12_schemas_with_an_id_and_a_title() {
    for kind in [Kind::Tenant, Kind::Cell] {
        let schema = read_schema(kind);
        if let Err(error) = jsonschema::draft202012::meta::validate(&schema) {
            panic!("{kind:?} schema violates the 2020-12 meta-schema: {error}");
        }
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{kind:?}"
        );
        assert!(schema["$id"].is_string(), "{kind:?} schema has no $id");
        assert!(schema["title"].is_string(), "{kind:?} schema has no title");
        // Compiling also compiles every pattern.
        validator(kind);
    }
}

/// Walks every subschema, calling `visit` with its JSON pointer.
fn walk_schema(schema: &Json, at: &str, visit: &mut dyn FnMut(&str, &JsonMap<String, Json>)) {
    let Json::Object(object) = schema else {
        return;
    };
    visit(at, object);
    for (keyword, value) in object {
        match (keyword.as_str(), value) {
            ("properties" | "$defs", Json::Object(children)) => {
                for (name, child) in children {
                    walk_schema(child, &format!("{at}/{keyword}/{name}"), visit);
                }
            }
            ("anyOf" | "oneOf" | "allOf", Json::Array(children)) => {
                for (idx, child) in children.iter().enumerate() {
                    walk_schema(child, &format!("{at}/{keyword}/{idx}"), visit);
                }
            }
            ("items" | "additionalProperties" | "propertyNames", child) => {
                walk_schema(child, &format!("{at}/{keyword}"), visit);
            }
            _ => {}
        }
    }
}

#[test]
fn every_object_in_the_schemas_is_closed_and_every_property_is_described() {
    let mut problems = Vec::new();
    for kind in [Kind::Tenant, Kind::Cell] {
        let schema = read_schema(kind);
        walk_schema(&schema, &format!("{kind:?}#"), &mut |at, object| {
            if object.get("type") == Some(&json!("object"))
                && object.contains_key("properties")
                && object.get("additionalProperties") != Some(&json!(false))
            {
                problems.push(format!(
                    "{at}: object without `additionalProperties: false`"
                ));
            }
            if let Some(Json::Object(properties)) = object.get("properties") {
                for (name, property) in properties {
                    if !property.get("description").is_some_and(Json::is_string) {
                        problems.push(format!("{at}/properties/{name}: no description"));
                    }
                }
            }
        });
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every property name of a schema, for the documentation check.
fn property_names(schema: &Json) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    walk_schema(schema, "#", &mut |_, object| {
        if let Some(Json::Object(properties)) = object.get("properties") {
            names.extend(properties.keys().cloned());
        }
    });
    names
}

#[test]
fn every_schema_field_is_documented_in_declarations_md() {
    let path = support::repo().join("docs/declarations.md");
    let docs =
        fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut missing = Vec::new();
    for kind in [Kind::Tenant, Kind::Cell] {
        for name in property_names(&read_schema(kind)) {
            if !docs.contains(&format!("`{name}`")) && !docs.contains(&format!("`{name}:")) {
                missing.push(format!("{kind:?}: `{name}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/declarations.md: {missing:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Tests: the examples.

#[test]
fn every_yaml_declaration_validates_against_the_schema_of_its_folder() {
    let count = validate_examples(false);
    assert!(
        count >= 1,
        "found {count} YAML declarations; tenants/initech-notebooks.yaml is one"
    );
}

#[test]
fn every_kdl_declaration_in_its_yaml_form_validates_against_the_schema_of_its_folder() {
    let count = validate_examples(true);
    assert!(
        count >= 5,
        "found {count} KDL declarations; the fixture fleet alone has 5"
    );
}

#[test]
fn every_example_project_compiles_without_any_diagnostic() {
    // Keeps the conversion table honest: the files the schemas accept above are files the
    // compiler accepts too, without even a warning.
    let roots = project_roots();
    assert!(roots.len() >= 4, "{roots:?}");
    for root in roots {
        let compilation = compile(&load_inputs(&root));
        assert_eq!(
            codes(&compilation.diagnostics),
            Vec::<String>::new(),
            "{}",
            root.display()
        );
    }
}

#[test]
fn kdl_examples_rewritten_in_yaml_form_compile_to_the_same_manifests() {
    let mut converted_files = 0;
    for root in project_roots() {
        let inputs = load_inputs(&root);
        if !inputs.iter().any(|input| input.path.ends_with(".kdl")) {
            continue;
        }
        let original = compile(&inputs);
        assert!(
            !original.has_errors(),
            "{}: {:?}",
            root.display(),
            codes(&original.diagnostics)
        );
        let mut rewritten = Vec::new();
        for input in &inputs {
            let Some(stem) = input.path.strip_suffix(".kdl") else {
                rewritten.push(input.clone());
                continue;
            };
            let path = root.join(&input.path);
            let instance = declaration_json(&path).unwrap_or_else(|error| panic!("{error}"));
            // JSON is YAML 1.2 flow syntax, so the YAML reader takes it as it is.
            let text = serde_json::to_string_pretty(&instance).unwrap_or_default();
            rewritten.push(InputFile {
                path: format!("{stem}.yaml"),
                contents: text.into_bytes(),
            });
            converted_files += 1;
        }
        let converted = compile(&rewritten);
        assert_eq!(
            codes(&converted.diagnostics),
            codes(&original.diagnostics),
            "{}: the YAML form is read differently",
            root.display()
        );
        let rename = |tree: &tenantc::emit::OutputTree| -> Vec<(String, String)> {
            tree.iter()
                .map(|(path, bytes)| {
                    let text = String::from_utf8_lossy(bytes).replace(".kdl", ".yaml");
                    (path.clone(), text)
                })
                .collect()
        };
        let expected = original.output.as_ref().map(rename);
        let actual = converted.output.as_ref().map(rename);
        assert!(expected.is_some(), "{}: no output", root.display());
        assert_eq!(actual, expected, "{}", root.display());
    }
    assert!(
        converted_files >= 5,
        "converted {converted_files} KDL files"
    );
}

#[test]
fn kdl_twins_convert_to_exactly_their_yaml_twins() {
    let twins = support::repo().join("tests/twins");
    let mut compared = 0;
    for (_, kdl_path) in declaration_files(&twins.join("kdl")) {
        let relative = kdl_path
            .strip_prefix(twins.join("kdl"))
            .unwrap_or_else(|error| panic!("{error}"));
        let yaml_path = twins.join("yaml").join(relative).with_extension("yaml");
        let from_kdl = declaration_json(&kdl_path).unwrap_or_else(|error| panic!("{error}"));
        let from_yaml = declaration_json(&yaml_path).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(from_kdl, from_yaml, "{}", relative.display());
        compared += 1;
    }
    assert!(compared >= 3, "compared {compared} twins");
}

/// The full examples of `docs/declarations.md`: fenced blocks whose first line is a comment
/// naming their path, as `(path, text)`.
fn documented_examples() -> Vec<(String, String)> {
    let path = support::repo().join("docs/declarations.md");
    let docs =
        fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut examples = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in docs.lines() {
        match (&mut block, line.starts_with("```")) {
            (None, true) if line.len() > 3 => block = Some(Vec::new()),
            (Some(lines), true) => {
                let first = lines.first().copied().unwrap_or_default();
                let named = first
                    .strip_prefix("// ")
                    .or_else(|| first.strip_prefix("# "))
                    .filter(|name| name.starts_with("tenants/") || name.starts_with("cells/"));
                if let Some(name) = named {
                    examples.push((name.to_string(), lines.join("\n") + "\n"));
                }
                block = None;
            }
            (Some(lines), false) => lines.push(line),
            (None, _) => {}
        }
    }
    examples
}

#[test]
fn the_documented_examples_compile_cleanly_in_both_syntaxes_and_agree() {
    let examples = documented_examples();
    let paths: Vec<&str> = examples.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths.len(),
        4,
        "expected a tenant and a cell in KDL and YAML: {paths:?}"
    );
    let mut forms = Vec::new();
    for extension in [".kdl", ".yaml"] {
        let inputs: Vec<InputFile> = examples
            .iter()
            .filter(|(path, _)| path.ends_with(extension))
            .map(|(path, text)| InputFile {
                path: path.clone(),
                contents: text.clone().into_bytes(),
            })
            .collect();
        assert_eq!(inputs.len(), 2, "{extension}: {paths:?}");
        let compilation = compile(&inputs);
        assert_eq!(
            codes(&compilation.diagnostics),
            Vec::<String>::new(),
            "{extension}"
        );
        assert!(compilation.output.is_some(), "{extension}");
        let scratch = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let mut jsons = Vec::new();
        for input in &inputs {
            let file = scratch.path().join(input.path.replace('/', "-"));
            fs::write(&file, &input.contents).unwrap_or_else(|error| panic!("{error}"));
            let instance = declaration_json(&file).unwrap_or_else(|error| panic!("{error}"));
            let kind = if input.path.starts_with("tenants/") {
                Kind::Tenant
            } else {
                Kind::Cell
            };
            let errors = schema_errors(&validator(kind), &instance);
            assert!(errors.is_empty(), "{}: {errors:?}", input.path);
            jsons.push(instance);
        }
        forms.push(jsons);
    }
    assert_eq!(
        forms.first(),
        forms.last(),
        "the KDL and YAML examples say different things"
    );
}

// ---------------------------------------------------------------------------------------------
// Negative checks: a valid tenant and cell, then one change at a time.

const BASE_TENANT: &str = r#"# A tenant that uses every field.
name: x
org: acme
team: research
trust: mig
groups:
  admin: x-admins
  member: x-members
  viewer: x-viewers
container-defaults:
  cpu: 500m
  memory: 2Gi
quotas:
  - cell: c1
    cpu: "64"
    memory: 512Gi
    pods: 200
    weight: 2
    pools:
      - name: train
        reserved: 8
        burst: 8
        lend: 4
        gang: 16
        within: example.com/rack
        workload: train
        cpu: "32"
        memory: 256Gi
        pods: 100
      - name: infer
        profile: 1g.10gb
        reserved: 4
        workload: infer
        cpu: "8"
        memory: 64Gi
        pods: 40
      - name: x1
        reserved: 4
        workload: train
        cpu: 8
        memory: 64Gi
        pods: 20
    splits:
      - {workload: train, cpu: "48", memory: 384Gi, pods: 150}
      - {workload: infer, cpu: "16", memory: 128Gi, pods: 50}
workloads:
  - kind: train
    service-account: trainer
    priority: batch
    share: 2
  - kind: infer
    service-account: server
fleet:
  - gpu: H100-80GB-SXM
    gpus: 8
    cells:
      - {name: c1, weight: 1}
  - gpu: ACME-X1-96GB
    gpus: 4
    cells:
      - {name: c1, gpus: 4}
registries:
  - registry.acme.internal/research
  - localhost:5000
models:
  - name: llama-70b
    version: "2026-10-01"
    prefix: s3://acme-models/models/x/llama-70b/2026-10-01/
    keys:
      - keys/x/release.pub.pem
shared-bases:
  - shared/llama-70b/2026-10-01/
"#;

const BASE_CELL: &str = r#"# A cell that uses every field.
name: c1
cloud:
  provider: aws
  region: us-east-1
kubernetes: "1.33"
driver: "570"
dns:
  namespace: kube-system
  selector: k8s-app=kube-dns
gpu-operator:
  namespace: gpu-operator
storage:
  buckets: [fleet-c1-models]
  aws: {account: "123456789012", identity: pod-identity, cluster: eks-c1}
oversubscribe: 1.5
orgs:
  - {name: acme, weight: 2}
priorities:
  - name: batch
    value: 1000
    preempt: false
    description: Training and batch jobs
pools:
  - name: train
    gpu: H100-80GB-SXM
    nodes: {count: 4, gpus-per-node: 8}
    sharing: exclusive
    nvlink-domain: {gpus: 8}
    topology:
      levels:
        - {label: example.com/rack, nodes: 2}
    labels:
      pool: train
      example.com/owner: platform
    taints:
      - {key: dedicated, value: train, effect: NoSchedule}
      - {key: example.com/gpu, effect: NoExecute}
    price: {per-gpu-hour: 2.1}
  - name: infer
    gpu: H100-80GB-SXM
    nodes: {count: 2, gpus-per-node: 8}
    sharing: mig
    taints:
      - {key: tenantc.io/pool, value: infer, effect: NoSchedule}
    mig-layouts:
      - name: small
        profiles: {1g.10gb: 7}
  - name: shared
    gpu: L4
    nodes: {count: 2, gpus-per-node: 1}
    sharing: time-slice
    replicas: 4
    taints:
      - {key: tenantc.io/pool, value: shared, effect: NoSchedule}
  - name: x1
    gpu: ACME-X1-96GB
    nodes: {count: 1, gpus-per-node: 4}
    sharing: exclusive
gpu-models:
  - name: ACME-X1-96GB
    product: ACME X1 96GB
    pci-ids: ["0x1A2B10DE"]
    sharing: [exclusive, mig]
    mig:
      compute-slices: 4
      memory-slices: 4
      placement-units: 4
      profiles:
        - {name: 1g.24gb, id: 14, compute: 1, memory: 1, max: 4, size: 1, starts: [0, 1, 2, 3]}
        - {name: 4g.96gb, compute: 4, memory: 4, max: 1, size: 4, starts: [0]}
"#;

/// Parses a YAML text of the tests with the compiler's parser.
fn yaml_json(text: &str) -> Json {
    let (document, diagnostics) = tenantc::parse::yaml::parse(FileId(0), text);
    assert!(diagnostics.is_empty(), "{:?}", codes(&diagnostics));
    let root = document.root.unwrap_or_else(|| panic!("no root"));
    yaml_to_json(&root.node, "#").unwrap_or_else(|error| panic!("{error}"))
}

fn base(kind: Kind) -> Json {
    yaml_json(match kind {
        Kind::Tenant => BASE_TENANT,
        Kind::Cell => BASE_CELL,
    })
}

/// One change to a base declaration.
enum Change {
    /// Sets the value at a JSON pointer, creating the last key.
    Set(&'static str, Json),
    /// Removes the value at a JSON pointer.
    Remove(&'static str),
    /// Several changes at once, for values that must agree (a ceiling and its splits).
    All(Vec<Change>),
}

impl Change {
    fn label(&self, kind: Kind) -> String {
        match self {
            Change::Set(pointer, value) => format!("{kind:?} {pointer} = {value}"),
            Change::Remove(pointer) => format!("{kind:?} without {pointer}"),
            Change::All(changes) => changes
                .iter()
                .map(|change| change.label(kind))
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

fn apply(mut instance: Json, change: &Change) -> Json {
    let pointer = match change {
        Change::Set(pointer, _) | Change::Remove(pointer) => *pointer,
        Change::All(changes) => {
            return changes.iter().fold(instance, apply);
        }
    };
    let (parent, last) = pointer
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("{pointer}"));
    let last = last.replace("~1", "/").replace("~0", "~");
    let target = instance
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{pointer}: no such parent in the base"));
    match (target, change) {
        (Json::Object(object), Change::Set(_, value)) => {
            object.insert(last, value.clone());
        }
        (Json::Object(object), Change::Remove(_)) => {
            assert!(
                object.remove(&last).is_some(),
                "{pointer}: nothing to remove"
            );
        }
        (Json::Array(items), Change::Set(_, value)) => {
            let idx: usize = last.parse().unwrap_or_else(|_| panic!("{pointer}"));
            items[idx] = value.clone();
        }
        (Json::Array(items), Change::Remove(_)) => {
            let idx: usize = last.parse().unwrap_or_else(|_| panic!("{pointer}"));
            items.remove(idx);
        }
        _ => panic!("{pointer}: parent is a scalar"),
    }
    instance
}

/// Compiles the base cell and tenant with `changed` in place of one of them; returns the
/// sorted, distinct diagnostic codes.
fn compile_with(kind: Kind, changed: &Json) -> Vec<String> {
    let text_of = |value: &Json| serde_json::to_string_pretty(value).unwrap_or_default();
    let (tenant, cell) = match kind {
        Kind::Tenant => (text_of(changed), BASE_CELL.to_string()),
        Kind::Cell => (BASE_TENANT.to_string(), text_of(changed)),
    };
    let mut inputs = vec![
        InputFile {
            path: "tenants/x.yaml".into(),
            contents: tenant.into_bytes(),
        },
        InputFile {
            path: "cells/c1.yaml".into(),
            contents: cell.into_bytes(),
        },
    ];
    // Lock the model where the (possibly changed) tenant declares it, so only the change is judged.
    let tenant_json = match kind {
        Kind::Tenant => changed.clone(),
        Kind::Cell => base(Kind::Tenant),
    };
    let prefix = tenant_json
        .pointer("/models/0/prefix")
        .and_then(Json::as_str)
        .unwrap_or("s3://acme-models/llama-70b/2026-10-01/");
    inputs.extend(base_signing_material(prefix));
    let compilation = compile(&inputs);
    let codes: BTreeSet<String> = compilation
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    codes.into_iter().collect()
}

/// The key, signature and lock that verify the base tenant's model: the signing fixture's
/// key and bundle, locked for `llama-70b 2026-10-01` at `prefix`.
fn base_signing_material(prefix: &str) -> Vec<InputFile> {
    use tenantc::weights::{digest, lock, sig};
    let fixtures = support::repo().join("tests/fixtures/signing/model-signing");
    let read = |name: &str| fs::read(fixtures.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bundle = read("model.sig.json");
    let statement = sig::read_statement(&read("statement.json")).unwrap_or_else(|e| panic!("{e}"));
    let sha256 = |bytes: &[u8]| {
        use sha2::Digest as _;
        digest::hex(&sha2::Sha256::digest(bytes))
    };
    let entry = lock::LockedModel {
        name: "llama-70b".into(),
        version: "2026-10-01".into(),
        prefix: prefix.into(),
        digest: format!("sha256:{}", digest::hex(&statement.root)),
        hashing: lock::Hashing::files_sha256(),
        files: lock::locked_files(&statement.files),
        signature: lock::LockedSignature {
            format: "model-signing".into(),
            path: "weights/x/llama-70b.sig.json".into(),
            sha256: sha256(&bundle),
        },
    };
    let lock_file = lock::write(&lock::LockFile {
        version: lock::LOCK_VERSION,
        models: vec![entry],
    });
    vec![
        InputFile {
            path: "keys/x/release.pub.pem".into(),
            contents: read("signing-key.pub.pem"),
        },
        InputFile {
            path: "weights/x.lock".into(),
            contents: lock_file,
        },
        InputFile {
            path: "weights/x/llama-70b.sig.json".into(),
            contents: bundle,
        },
    ]
}

/// Checks that the change is rejected by the schema and that the compiler reports every code
/// in `expected`. The base compiles without any diagnostic, so these come from the change; the
/// compiler may add follow-on findings (such as an unknown reference to a dropped item).
fn check_rejected(kind: Kind, change: &Change, expected: &[&str]) -> Result<(), String> {
    let changed = apply(base(kind), change);
    let errors = schema_errors(&validator(kind), &changed);
    let label = change.label(kind);
    if errors.is_empty() {
        return Err(format!("{label}: the schema accepts it"));
    }
    let found = compile_with(kind, &changed);
    if !expected.iter().all(|code| found.iter().any(|f| f == code)) {
        return Err(format!(
            "{label}: compiler reports {found:?}, expected {expected:?}"
        ));
    }
    Ok(())
}

/// Runs every case and reports every mismatch.
fn assert_all_rejected(kind: Kind, cases: &[(Change, &[&str])]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(change, expected)| check_rejected(kind, change, expected).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_base_declarations_of_the_negative_checks_are_accepted_by_schema_and_compiler() {
    for kind in [Kind::Tenant, Kind::Cell] {
        let instance = base(kind);
        assert_eq!(
            schema_errors(&validator(kind), &instance),
            Vec::<String>::new(),
            "{kind:?}"
        );
        assert_eq!(
            compile_with(kind, &instance),
            Vec::<String>::new(),
            "{kind:?}"
        );
    }
}

#[test]
fn a_yaml_tenant_with_an_unknown_field_is_rejected_by_schema_and_compiler() {
    assert_all_rejected(
        Kind::Tenant,
        &[(Change::Set("/owner", json!("acme")), &["field-unknown"])],
    );
    assert_all_rejected(
        Kind::Tenant,
        &[(
            Change::Set("/quotas/0/pools/0/limit", json!(4)),
            &["field-unknown"],
        )],
    );
}

#[test]
fn a_yaml_tenant_without_a_required_field_is_rejected_by_schema_and_compiler() {
    assert_all_rejected(
        Kind::Tenant,
        &[(Change::Remove("/trust"), &["field-missing"])],
    );
    assert_all_rejected(
        Kind::Tenant,
        &[(Change::Remove("/quotas/0/pods"), &["field-missing"])],
    );
}

#[test]
fn a_yaml_tenant_with_a_wrong_enum_value_is_rejected_by_schema_and_compiler() {
    assert_all_rejected(
        Kind::Tenant,
        &[(Change::Set("/trust", json!("medium")), &["value-unknown"])],
    );
    assert_all_rejected(
        Kind::Tenant,
        &[(
            Change::Set("/workloads/0/kind", json!("serve")),
            &["value-unknown"],
        )],
    );
}

#[test]
fn invalid_tenant_values_are_rejected_by_schema_and_compiler() {
    let cases: &[(Change, &[&str])] = &[
        (Change::Set("/name", json!("X")), &["name-invalid"]),
        (Change::Set("/org", json!("acme_corp")), &["name-invalid"]),
        (Change::Set("/team", json!("-research")), &["name-invalid"]),
        (Change::Set("/groups", json!({})), &["field-missing"]),
        (
            Change::Set("/chargeback", json!({"labels": {"cost center": "x"}})),
            &["chargeback-label-invalid"],
        ),
        (
            Change::Set("/chargeback", json!({"labels": {"cost": "ml 4711"}})),
            &["chargeback-label-invalid"],
        ),
        (
            Change::Set("/chargeback", json!({"labels": {"cost": ""}})),
            &["chargeback-label-invalid"],
        ),
        (
            Change::Set("/chargeback", json!({"labels": {"cost": 4711}})),
            &["type-mismatch"],
        ),
        (
            Change::Set(
                "/chargeback",
                json!({"labels": {format!("acme.io/{}", "c".repeat(57)): "x"}}),
            ),
            &["chargeback-label-invalid"],
        ),
        (
            Change::Set("/chargeback", json!({"label": {"cost": "x"}})),
            &["field-unknown"],
        ),
        (
            Change::Set("/groups/admin", json!("  ")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/groups/admin", json!("a\tb")),
            &["name-invalid"],
        ),
        (
            Change::Set("/groups/admin", json!(" admins")),
            &["name-invalid"],
        ),
        (
            Change::Set("/groups/admin", json!("admins ")),
            &["name-invalid"],
        ),
        (
            Change::Set("/groups/admin", json!("a\u{2028}b")),
            &["string-character-forbidden"],
        ),
        (
            Change::Set("/groups/admin", json!("g".repeat(257))),
            &["name-invalid"],
        ),
        (
            Change::Set("/groups/admin", json!(null)),
            &["type-mismatch"],
        ),
        (
            Change::Set("/container-defaults/cpu", json!(0.5)),
            &["type-mismatch"],
        ),
        (
            Change::Set("/container-defaults/cpu", json!(-1)),
            &["quantity-invalid"],
        ),
        (
            Change::Set("/container-defaults/memory", json!("2GB")),
            &["quantity-invalid"],
        ),
        (
            Change::Set("/container-defaults/memory", json!("1e31")),
            &["quantity-invalid"],
        ),
        (Change::Set("/quotas", json!({})), &["type-mismatch"]),
        (
            Change::Set("/quotas/0/pools/0/workload", json!("serve")),
            &["value-unknown"],
        ),
        (
            Change::Set("/quotas/0/pools/0/reserved", json!("8")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/workloads", json!([])),
            &["field-missing", "workload-unknown"],
        ),
        (
            Change::Set("/workloads/0/service-account", json!("Trainer")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("https://r.example")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("r.example/a:1.0")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("r.example/a@sha256:00")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("registry")),
            &["name-invalid"],
        ),
        // A comma would split the admission params' list: another tenant's registry smuggled in.
        (
            Change::Set(
                "/registries/0",
                json!("registry.initech.example/notebooks,registry.acme.internal"),
            ),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("r.example/a;b")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("r.example/a:b/c")),
            &["name-invalid"],
        ),
        (
            Change::Set("/registries/0", json!("r.example/a/")),
            &["name-invalid"],
        ),
        (
            Change::Set("/models/0/prefix", json!("s3://acme-models/llama")),
            &["name-invalid"],
        ),
        (
            Change::Set("/models/0/prefix", json!("https://acme/llama/")),
            &["name-invalid"],
        ),
        (
            Change::Set("/models/0/version", json!(1.0)),
            &["type-mismatch"],
        ),
        (
            Change::Set("/quotas/0/pools/0/within", json!("Example.com/rack")),
            &["name-invalid"],
        ),
        (
            Change::Set("/quotas/0/pools/0/gang", json!("16")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/quotas/0/splits/0/workload", json!("serve")),
            &["value-unknown"],
        ),
        (
            Change::Remove("/quotas/0/splits/0/pods"),
            &["field-missing"],
        ),
        (
            Change::Set("/quotas/0/splits", json!({})),
            &["type-mismatch"],
        ),
        (Change::Remove("/fleet/0/cells"), &["field-missing"]),
        (Change::Set("/fleet/0/cells", json!([])), &["field-missing"]),
        (
            Change::Set("/fleet/0/cells/0", json!({"name": "c1"})),
            &["field-missing"],
        ),
        (
            Change::Set(
                "/fleet/0/cells/0",
                json!({"name": "c1", "gpus": 8, "weight": 1}),
            ),
            &["fleet-reservation-mismatch"],
        ),
        (Change::Remove("/fleet/1/gpu"), &["field-missing"]),
        (
            Change::Set("/workloads/0/share", json!(1.5)),
            &["type-mismatch"],
        ),
    ];
    assert_all_rejected(Kind::Tenant, cases);
}

#[test]
fn invalid_cell_values_are_rejected_by_schema_and_compiler() {
    let cases: &[(Change, &[&str])] = &[
        (
            Change::Set("/region", json!("us-east-1")),
            &["field-unknown"],
        ),
        (Change::Remove("/cloud/region"), &["field-missing"]),
        (
            Change::Set("/allow-groups", json!(["system:authenticated "])),
            &["name-invalid"],
        ),
        (
            Change::Set("/allow-groups", json!("system:authenticated")),
            &["type-mismatch"],
        ),
        (Change::Set("/pools/0/price", json!({})), &["field-missing"]),
        (
            Change::Set("/pools/0/owner", json!("Acme")),
            &["name-invalid"],
        ),
        (
            Change::Set("/pools/0/owner", json!(["acme"])),
            &["type-mismatch"],
        ),
        (
            Change::Set("/pools/0/labels/nvidia.com~1mig.config", json!("mine")),
            &["name-invalid"],
        ),
        (
            Change::Set("/priorities/0/description", json!("")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/cloud/provider", json!("ibm")),
            &["value-unknown"],
        ),
        (Change::Set("/kubernetes", json!(1.33)), &["type-mismatch"]),
        (
            Change::Set("/kubernetes", json!("1.29")),
            &["kubernetes-too-old-for-admission-policies"],
        ),
        (
            Change::Set("/kubernetes", json!("1.37")),
            &["kubernetes-version-unsupported"],
        ),
        (
            Change::Set("/scheduler", json!("slurm")),
            &["value-unknown"],
        ),
        (
            Change::Set("/admission", json!("istio")),
            &["value-unknown"],
        ),
        (
            // The base cell runs Kubernetes before 1.34 and has a time-sliced pool.
            Change::Set("/devices", json!("dra")),
            &["dra-sharing-unsupported", "kubernetes-too-old-for-dra"],
        ),
        (
            Change::All(vec![
                Change::Set("/kubernetes", json!("1.29")),
                Change::Set("/admission", json!("vap")),
            ]),
            &["kubernetes-too-old-for-admission-policies"],
        ),
        (
            Change::Set("/kubernetes", json!("2.33")),
            &["kubernetes-version-unsupported"],
        ),
        (
            Change::Set("/kubernetes", json!("1.33.2")),
            &["type-mismatch"],
        ),
        (Change::Set("/driver", json!(399)), &["number-out-of-range"]),
        (Change::Set("/driver", json!(true)), &["type-mismatch"]),
        (Change::Set("/driver", json!("399")), &["value-unknown"]),
        (Change::Set("/driver", json!("570.86")), &["value-unknown"]),
        (
            Change::Set("/dns/namespace", json!("Kube-System")),
            &["name-invalid"],
        ),
        (
            Change::Set("/dns/selector", json!("k8s-app")),
            &["name-invalid"],
        ),
        (
            Change::Set("/dns/selector", json!("k8s-app=kube dns")),
            &["name-invalid"],
        ),
        (Change::Set("/gpu-operator", json!({})), &["field-missing"]),
        (
            Change::Set("/gpu-operator/namespace", json!("GPU")),
            &["name-invalid"],
        ),
        (
            Change::Set("/priorities/0/name", json!("system-batch")),
            &["priority-name-reserved"],
        ),
        (
            Change::Set("/priorities/0/name", json!("Batch")),
            &["name-invalid"],
        ),
        (
            Change::Set("/priorities/0/preempt", json!("no")),
            &["type-mismatch"],
        ),
        (Change::Remove("/pools/0/sharing"), &["field-missing"]),
        (
            Change::Set("/pools/0/sharing", json!("shared")),
            &["value-unknown"],
        ),
        (
            Change::Set("/pools/0/name", json!("h100_train")),
            &["name-invalid"],
        ),
        (Change::Set("/pools/0/nodes", json!(4)), &["type-mismatch"]),
        (
            Change::Remove("/pools/0/nodes/gpus-per-node"),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/0/labels/pool", json!("a b")),
            &["name-invalid"],
        ),
        (
            Change::Set("/pools/0/labels/pool", json!(1)),
            &["type-mismatch"],
        ),
        (
            Change::Set("/pools/0/labels/-pool", json!("x")),
            &["name-invalid"],
        ),
        (
            Change::Set("/pools/0/labels/Example.com~1owner", json!("x")),
            &["name-invalid"],
        ),
        (
            Change::Set("/pools/0/taints/0/effect", json!("NoRun")),
            &["value-unknown"],
        ),
        (
            Change::Set("/pools/0/taints/0/value", json!(true)),
            &["type-mismatch"],
        ),
        (
            Change::Remove("/pools/0/taints/0/effect"),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/0/price/per-gpu-hour", json!("2.10")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/pools/1/mig-layouts/0/profiles", json!({})),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/1/mig-layouts/0/name", json!("Small")),
            &["name-invalid"],
        ),
        (Change::Remove("/gpu-models/0/pci-ids"), &["field-missing"]),
        (
            Change::Set("/gpu-models/0/pci-ids", json!([])),
            &["field-missing"],
        ),
        (
            Change::Set("/gpu-models/0/pci-ids/0", json!("0x1a2b10de")),
            &["gpu-model-invalid"],
        ),
        (
            Change::Set("/gpu-models/0/pci-ids", json!("0x1A2B10DE")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/gpu-models/0/sharing", json!([])),
            &["field-missing"],
        ),
        (
            Change::Set("/gpu-models/0/sharing/1", json!("migs")),
            &["value-unknown"],
        ),
        (
            Change::Set("/gpu-models/0/mig/profiles", json!([])),
            &["field-missing"],
        ),
        (
            Change::Set("/gpu-models/0/mig/profiles/1/name", json!("4g")),
            &["gpu-model-invalid"],
        ),
        (
            Change::Set("/gpu-models/0/mig/profiles/1/name", json!("4g.96gb+")),
            &["gpu-model-invalid"],
        ),
        (
            Change::Set("/gpu-models/0/mig/profiles/1/starts", json!([])),
            &["field-missing"],
        ),
        (
            Change::Remove("/gpu-models/0/mig/profiles/1/size"),
            &["field-missing"],
        ),
        (
            Change::Set("/oversubscribe", json!("1.5")),
            &["type-mismatch"],
        ),
        (
            Change::Set("/orgs/0/name", json!("Acme")),
            &["name-invalid"],
        ),
        (Change::Set("/orgs", json!({"acme": 2})), &["type-mismatch"]),
        (
            Change::Set("/pools/0/topology/levels", json!([])),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/0/topology", json!({})),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/0/topology/levels/0/label", json!("rack!")),
            &["name-invalid"],
        ),
        (
            Change::Remove("/pools/0/topology/levels/0/nodes"),
            &["field-missing"],
        ),
        (
            Change::Set("/pools/0/topology/depth", json!(2)),
            &["field-unknown"],
        ),
        (
            Change::Set("/allow", json!([{"code": "mig-table-inferred"}])),
            &["allow-invalid"],
        ),
        (
            Change::Set(
                "/pools/0/allow",
                json!([{"code": "mig-table-inferred", "reason": " "}]),
            ),
            &["allow-invalid"],
        ),
        (
            Change::Set(
                "/pools/0/allow",
                json!([{"code": "mig-table-inferred", "reason": "r", "until": "2027"}]),
            ),
            &["allow-invalid"],
        ),
    ];
    assert_all_rejected(Kind::Cell, cases);
}

/// Every integer (and number) range of the reader: `(kind, pointer, min, max)`.
const RANGES: &[(Kind, &str, f64, f64)] = &[
    (Kind::Tenant, "/quotas/0/pods", 0.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/pools/0/reserved", 0.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/pools/0/burst", 0.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/pools/0/lend", 0.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/pools/0/gang", 1.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/pools/0/pods", 0.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/weight", 1.0, 1_000_000.0),
    (Kind::Tenant, "/quotas/0/splits/0/pods", 0.0, 1_000_000.0),
    (Kind::Tenant, "/workloads/0/share", 1.0, 1_000.0),
    (Kind::Tenant, "/fleet/0/gpus", 1.0, 1_000_000.0),
    (Kind::Tenant, "/fleet/0/cells/0/weight", 1.0, 1_000_000.0),
    (Kind::Tenant, "/fleet/1/cells/0/gpus", 0.0, 1_000_000.0),
    (Kind::Cell, "/oversubscribe", 1.0, 100.0),
    (Kind::Cell, "/orgs/0/weight", 1.0, 1_000_000.0),
    (
        Kind::Cell,
        "/pools/0/topology/levels/0/nodes",
        1.0,
        100_000.0,
    ),
    (Kind::Cell, "/pools/0/nodes/count", 1.0, 100_000.0),
    (Kind::Cell, "/pools/0/nodes/gpus-per-node", 1.0, 16.0),
    (Kind::Cell, "/pools/0/nvlink-domain/gpus", 1.0, 1024.0),
    (Kind::Cell, "/pools/0/price/per-gpu-hour", 0.0, 10_000.0),
    (Kind::Cell, "/pools/2/replicas", 2.0, 64.0),
    (Kind::Cell, "/pools/1/mig-layouts/0/nodes", 1.0, 100_000.0),
    (
        Kind::Cell,
        "/pools/1/mig-layouts/0/profiles/1g.10gb",
        1.0,
        16.0,
    ),
    (
        Kind::Cell,
        "/priorities/0/value",
        -2_147_483_648.0,
        1_000_000_000.0,
    ),
    (Kind::Cell, "/gpu-models/0/mig/compute-slices", 1.0, 16.0),
    (Kind::Cell, "/gpu-models/0/mig/memory-slices", 1.0, 16.0),
    (Kind::Cell, "/gpu-models/0/mig/placement-units", 1.0, 32.0),
    (Kind::Cell, "/gpu-models/0/mig/profiles/0/id", 0.0, 255.0),
    (
        Kind::Cell,
        "/gpu-models/0/mig/profiles/0/compute",
        1.0,
        16.0,
    ),
    (Kind::Cell, "/gpu-models/0/mig/profiles/0/memory", 1.0, 16.0),
    (Kind::Cell, "/gpu-models/0/mig/profiles/0/max", 1.0, 16.0),
    (Kind::Cell, "/gpu-models/0/mig/profiles/0/size", 1.0, 32.0),
    (
        Kind::Cell,
        "/gpu-models/0/mig/profiles/0/starts/0",
        0.0,
        31.0,
    ),
];

#[test]
fn numeric_ranges_have_the_same_bounds_in_schema_and_compiler() {
    for &(kind, pointer, min, max) in RANGES {
        let is_number = pointer.ends_with("per-gpu-hour") || pointer.ends_with("oversubscribe");
        let step = if is_number { 0.5 } else { 1.0 };
        let as_json = |value: f64| {
            if is_number {
                json!(value)
            } else {
                json!(value as i64)
            }
        };
        for (value, accepted) in [
            (min, true),
            (max, true),
            (min - step, false),
            (max + step, false),
        ] {
            let changed = apply(base(kind), &Change::Set(pointer, as_json(value)));
            let schema_ok = schema_errors(&validator(kind), &changed).is_empty();
            let compiler_ok = !compile_with(kind, &changed)
                .iter()
                .any(|code| code == "number-out-of-range");
            assert_eq!(schema_ok, accepted, "{kind:?} {pointer} = {value}: schema");
            assert_eq!(
                compiler_ok, accepted,
                "{kind:?} {pointer} = {value}: compiler"
            );
        }
    }
}

#[test]
fn unusual_but_valid_values_are_accepted_by_schema_and_compiler() {
    let long_label = "a".repeat(63);
    let long_prefix = format!(
        "{}.{}.{}.{}",
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(63),
        "e".repeat(61)
    );
    let cases: Vec<(Kind, Change)> = vec![
        (
            Kind::Tenant,
            Change::Set(
                "/chargeback",
                json!({"labels": {format!("acme.io/{}", "c".repeat(55)): "ml.4711_a-B"}}),
            ),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/cpu", json!("+.5")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/cpu", json!("5.")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/cpu", json!("1E-3")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/cpu", json!("2e+1")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/cpu", json!(0)),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/memory", json!("1.5Gi")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/memory", json!("1e18")),
        ),
        (
            Kind::Tenant,
            Change::Set("/container-defaults/memory", json!(268_435_456)),
        ),
        (Kind::Tenant, Change::Set("/container-defaults", json!({}))),
        (
            Kind::Tenant,
            Change::Set("/groups", json!({"viewer": "Ops Team (EU)"})),
        ),
        (
            Kind::Tenant,
            Change::Set("/groups", json!({"viewer": "g".repeat(256)})),
        ),
        (
            Kind::Cell,
            Change::Set("/allow-groups", json!(["system:authenticated", "*"])),
        ),
        (Kind::Tenant, Change::Set("/org", json!(long_label.clone()))),
        (
            Kind::Tenant,
            Change::All(vec![
                Change::Set("/quotas/0/pods", json!(0)),
                Change::Set("/quotas/0/splits/0/pods", json!(0)),
                Change::Set("/quotas/0/splits/1/pods", json!(0)),
                Change::Set("/quotas/0/pools/0/pods", json!(0)),
                Change::Set("/quotas/0/pools/1/pods", json!(0)),
                Change::Set("/quotas/0/pools/2/pods", json!(0)),
            ]),
        ),
        (Kind::Tenant, Change::Remove("/quotas/0/splits")),
        (
            Kind::Tenant,
            Change::All(vec![
                Change::Set("/quotas/0/pools/0/within", json!("kubernetes.io/hostname")),
                Change::Set("/quotas/0/pools/0/gang", json!(8)),
            ]),
        ),
        (
            Kind::Tenant,
            Change::Set("/fleet/0/cells/0", json!({"name": "c1", "gpus": 8})),
        ),
        (Kind::Cell, Change::Set("/oversubscribe", json!(2))),
        (
            Kind::Cell,
            Change::Set("/orgs", json!([{"name": "globex"}])),
        ),
        (
            Kind::Cell,
            Change::Set(
                "/pools/0/topology/levels",
                json!([
                    {"label": "example.com/rack", "nodes": 2},
                    {"label": "kubernetes.io/hostname", "nodes": 1},
                ]),
            ),
        ),
        (
            Kind::Tenant,
            Change::Set("/workloads/0/service-account", json!("a.b-c.d")),
        ),
        (
            Kind::Tenant,
            Change::Set("/registries/0", json!("localhost")),
        ),
        (
            Kind::Tenant,
            Change::Set("/registries/0", json!("localhost:5000/team/app")),
        ),
        (
            Kind::Tenant,
            Change::Set("/registries/0", json!("r.example:5000")),
        ),
        (
            Kind::Tenant,
            Change::Set("/registries/0", json!("r.example:5000/team_a/x-y.z")),
        ),
        (
            Kind::Tenant,
            Change::Set("/models/0/prefix", json!("gs://bucket/models/x/")),
        ),
        (
            Kind::Tenant,
            Change::Set("/models/0/prefix", json!("az://container/models/x/a b/")),
        ),
        (Kind::Tenant, Change::Set("/registries", json!([]))),
        (Kind::Tenant, Change::Remove("/models")),
        (Kind::Cell, Change::Set("/kubernetes", json!("v1.30"))),
        (Kind::Cell, Change::Set("/kubernetes", json!("1.36"))),
        (
            Kind::Cell,
            Change::All(vec![
                Change::Set("/scheduler", json!("kueue")),
                Change::Set("/admission", json!("vap")),
                Change::Set("/devices", json!("device-plugin")),
            ]),
        ),
        (Kind::Cell, Change::Set("/driver", json!("9999"))),
        (
            Kind::Cell,
            // A cloud tenantc emits no storage IAM for, so without `storage`.
            Change::All(vec![
                Change::Set("/cloud/provider", json!("on-prem")),
                Change::Remove("/storage"),
            ]),
        ),
        (Kind::Cell, Change::Set("/dns", json!({}))),
        (
            Kind::Cell,
            Change::Set("/dns/selector", json!("app.kubernetes.io/name=coredns")),
        ),
        (Kind::Cell, Change::Set("/dns/selector", json!("k8s-app="))),
        (
            Kind::Cell,
            Change::Set("/dns/selector", json!("K8s_App.x=Kube.DNS_1")),
        ),
        (
            Kind::Cell,
            Change::Set("/pools/2/name", json!(long_label.clone())),
        ),
        (Kind::Cell, Change::Set("/pools/0/labels", json!({}))),
        (Kind::Cell, Change::Set("/pools/0/labels/empty", json!(""))),
        (
            Kind::Cell,
            Change::Set(
                "/pools/0/labels",
                json!({format!("{long_prefix}/{long_label}"): long_label.clone()}),
            ),
        ),
        (
            Kind::Cell,
            Change::Set("/pools/0/taints/0/key", json!("a_b.c-d")),
        ),
        (
            Kind::Cell,
            Change::Set("/pools/0/price/per-gpu-hour", json!(0.0001)),
        ),
        (
            Kind::Cell,
            Change::Set("/pools/0/price/per-gpu-hour", json!(3)),
        ),
        (
            Kind::Cell,
            Change::Set(
                "/priorities",
                json!([
                    {"name": "batch", "value": 1000},
                    {"name": "batch.low-1", "value": -2_147_483_648_i64},
                    {"name": "system", "value": 1_000_000_000, "preempt": true},
                ]),
            ),
        ),
        (Kind::Cell, Change::Remove("/gpu-operator")),
        (
            Kind::Cell,
            Change::Set("/gpu-models/0/mig/profiles/0/name", json!("1c.1g.24gb")),
        ),
        (
            Kind::Cell,
            Change::Set("/gpu-models/0/mig/profiles/0/name", json!("1g.24gb+me")),
        ),
        (
            Kind::Cell,
            Change::Set(
                "/gpu-models/0/mig/profiles/0/name",
                json!("1g.24gb-me,gfx.2"),
            ),
        ),
        (
            Kind::Cell,
            Change::Set("/gpu-models/0/pci-ids", json!(["0x1A2B10DE", "0xFFFF10DE"])),
        ),
        (Kind::Cell, Change::Remove("/gpu-models/0/product")),
    ];
    let mut failures = Vec::new();
    for (kind, change) in &cases {
        let changed = apply(base(kind.to_owned()), change);
        let label = change.label(*kind);
        let errors = schema_errors(&validator(*kind), &changed);
        if !errors.is_empty() {
            failures.push(format!("{label}: schema rejects it: {errors:?}"));
        }
        let found = compile_with(*kind, &changed);
        if !found.is_empty() {
            failures.push(format!("{label}: compiler reports {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The JSON envelope of the CLI (issue 10 item 6, docs/json.md).

#[test]
fn every_json_output_of_the_cli_has_the_documented_envelope() {
    let schema: Json = serde_json::from_str(
        &fs::read_to_string(support::repo().join("schema/output.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let allow = scratch.path().join("allow");
    copy_dir(
        &support::repo().join("tests/cli/allow-and-deny/root"),
        &allow,
    );
    let what_if = scratch.path().join("what-if");
    copy_dir(
        &support::repo().join("tests/cli/what-if-fixture/root"),
        &what_if,
    );
    let broken = scratch.path().join("broken");
    copy_dir(
        &support::case_root(
            &support::repo().join("tests/cases/err/117-issue-10-allow-without-reason"),
            "input",
        ),
        &broken,
    );
    let runs: &[(&Path, &[&str], &str)] = &[
        (&allow, &["check", "--format", "json"], "check"),
        (&allow, &["build", "--format", "json"], "build"),
        (&allow, &["check", "--format", "json"], "check"),
        (&broken, &["check", "--format", "json"], "check"),
        (
            &allow,
            &["check", "--format", "json", "--deny", "nope"],
            "fatal",
        ),
        (
            &allow,
            &["check", "--format", "json", "--root", "nowhere"],
            "fatal",
        ),
        (&allow, &["describe", "t", "--format", "json"], "describe"),
        (&broken, &["describe", "t", "--format", "json"], "describe"),
        (&allow, &["describe", "nobody", "--format", "json"], "fatal"),
        (&allow, &["explain", "--format", "json"], "explain"),
        (
            &allow,
            &["explain", "allow-unused", "--format", "json"],
            "explain",
        ),
        (
            &allow,
            &["explain", "allow-unsed", "--format", "json"],
            "fatal",
        ),
        (&allow, &["catalog", "--format", "json"], "catalog"),
        (&allow, &["catalog", "H100", "--format", "json"], "catalog"),
        (&allow, &["catalog", "Z100", "--format", "json"], "fatal"),
        (
            &what_if,
            &["what-if", "--drain", "north/train@rack", "--format", "json"],
            "what-if",
        ),
        (
            &what_if,
            &["what-if", "--lose-cell", "north", "--format", "json"],
            "what-if",
        ),
        (
            &what_if,
            &["what-if", "--lose-cell", "nort", "--format", "json"],
            "fatal",
        ),
        (
            &broken,
            &["what-if", "--lose-cell", "north", "--format", "json"],
            "what-if",
        ),
    ];
    for (dir, args, kind) in runs {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_tenantc"))
            .args(*args)
            .current_dir(dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let document: Json = serde_json::from_str(&stdout)
            .unwrap_or_else(|error| panic!("{args:?}: not one JSON document: {error}\n{stdout}"));
        let errors = schema_errors(&validator, &document);
        assert!(errors.is_empty(), "{args:?}: {errors:#?}");
        assert_eq!(document["kind"], *kind, "{args:?}");
    }
    // The check can fail: the diagnostics document of the library, without the envelope, and
    // a report that lost a field are refused.
    let compilation = tenantc::compile(&[]);
    let bare: Json = serde_json::from_str(&tenantc::diag::render::json(
        &compilation.diagnostics,
        &compilation.sources,
    ))
    .unwrap();
    assert!(!schema_errors(&validator, &bare).is_empty());
    let mut enveloped: Json = serde_json::from_str(&tenantc::diag::render::json_report(
        "check",
        &compilation.diagnostics,
        &compilation.suppressed,
        &compilation.sources,
        &[],
    ))
    .unwrap();
    assert!(schema_errors(&validator, &enveloped).is_empty());
    enveloped.as_object_mut().unwrap().remove("suppressed");
    assert!(!schema_errors(&validator, &enveloped).is_empty());
    // A what-if document that lost the verdict a pipeline gates on, or whose tenant row lost a
    // figure, is refused too.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(["what-if", "--lose-cell", "north", "--format", "json"])
        .current_dir(&what_if)
        .output()
        .unwrap();
    let answer: Json = serde_json::from_slice(&output.stdout).unwrap();
    assert!(schema_errors(&validator, &answer).is_empty());
    let mut without_verdict = answer.clone();
    without_verdict.as_object_mut().unwrap().remove("backed");
    assert!(!schema_errors(&validator, &without_verdict).is_empty());
    let mut without_figure = answer;
    without_figure["tenants"][0]["reservations"][0]
        .as_object_mut()
        .unwrap()
        .remove("unbacked");
    assert!(!schema_errors(&validator, &without_figure).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Enums from the hardware catalog (issue 10 item 5).

/// The values a schema enum must list, from the built-in catalog: `(kind, $defs name, values)`.
fn catalog_enums() -> Vec<(Kind, &'static str, Vec<String>)> {
    let catalog = tenantc::catalog::Catalog::builtin();
    let keys: Vec<String> = catalog.sku_keys().map(str::to_string).collect();
    let profiles: BTreeSet<String> = catalog
        .tables()
        .flat_map(|table| table.profiles.iter().map(|profile| profile.name.clone()))
        .collect();
    let sharing: Vec<String> = tenantc::catalog::SharingMode::ALL
        .iter()
        .map(|mode| mode.as_str().to_string())
        .collect();
    vec![
        (Kind::Cell, "catalogGpuModel", keys),
        (
            Kind::Tenant,
            "catalogMigProfile",
            profiles.into_iter().collect(),
        ),
        (Kind::Cell, "sharing", sharing),
    ]
}

#[test]
fn schema_enums_list_every_gpu_model_profile_and_sharing_mode_of_the_catalog() {
    let mut stale = Vec::new();
    for (kind, name, expected) in catalog_enums() {
        let schema = read_schema(kind);
        let actual: Vec<String> = schema["$defs"][name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{kind:?} schema has no $defs/{name}/enum"))
            .iter()
            .map(|value| value.as_str().unwrap().to_string())
            .collect();
        if actual == expected {
            continue;
        }
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            // The enum is one line after the definition's name; only that line is rewritten, so
            // the hand-written rest of the file keeps its layout.
            let path = kind.schema_path();
            let text = fs::read_to_string(&path).unwrap();
            let start = text.find(&format!("\n    \"{name}\": {{\n")).unwrap();
            let line_start = start + text[start..].find("\"enum\": [").unwrap();
            let line_end = if text[line_start..].starts_with("\"enum\": []") {
                line_start + "\"enum\": []".len()
            } else {
                line_start + text[line_start..].find(']').unwrap() + 1
            };
            let line = format!("\"enum\": {}", serde_json::to_string(&expected).unwrap())
                .replace("\",\"", "\", \"");
            fs::write(
                &path,
                format!("{}{line}{}", &text[..line_start], &text[line_end..]),
            )
            .unwrap();
            continue;
        }
        let missing: Vec<&String> = expected.iter().filter(|v| !actual.contains(v)).collect();
        let extra: Vec<&String> = actual.iter().filter(|v| !expected.contains(v)).collect();
        stale.push(format!(
            "{kind:?} $defs/{name}: missing {missing:?}, not in the catalog {extra:?}"
        ));
    }
    assert!(
        stale.is_empty(),
        "schema enums differ from the catalog (UPDATE_SCHEMA=1 cargo test --test schema rewrites them):\n{}",
        stale.join("\n")
    );
}
