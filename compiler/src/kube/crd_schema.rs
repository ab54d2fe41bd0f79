//! A checker of JSON values against the OpenAPI v3 schema of a vendored CRD, or against the
//! definitions of a vendored Kubernetes OpenAPI document; the tests' judge of emitted objects,
//! never called by the pipeline.
//!
//! Consumes: a CRD file from `schema/crds/` (YAML, read with the crate's own parser; [`load`],
//! in the unit tests only) or its schema as JSON, or the `definitions` of a file under
//! `schema/k8s/` (`core-v<minor>.json`, the definitions the built-in kinds tenantc emits reach),
//! and a JSON value, usually a typed object serialized with `serde_json::to_value` or an emitted
//! YAML document read back.
//! Produces: the CRD as JSON, the `openAPIV3Schema` of one served version, the definition of a
//! built-in kind ([`kind_definition`]), and every place where the value is not allowed by that
//! schema: keys the schema does not have, values of the wrong type, enum values it does not list,
//! required properties left out, sizes out of bounds, values that fit no branch (or several
//! branches) of a `oneOf`, and duplicate entries of `map` and `set` lists.
//!
//! Invariants: the walker never accepts by default; a schema keyword it does not know (`not`,
//! anything a newer controller-gen adds) is itself reported, and so is a `$ref` to a definition
//! it was not given, so a newer CRD or OpenAPI document cannot pass unchecked.
//! The root `metadata` of a CRD kind is an ObjectMeta, which the API server checks itself; only
//! its type is checked here. A built-in kind's `metadata` refers to the ObjectMeta definition, and
//! is walked against it.
//! Siblings of a `$ref` are ignored, as OpenAPI v2 and JSON Schema drafts before 2019-09 say.
//! Patterns (`pattern`) and CEL rules (`x-kubernetes-validations`) are not evaluated: the webhook
//! rules in `kueue.rs` check what tenantc relies on, and the conformance tests against a real API
//! server judge the rest.

#[cfg(test)]
use serde_json::Number;
use serde_json::{Map, Value};

#[cfg(test)]
use crate::parse::{self, Format, Node};
#[cfg(test)]
use crate::source::FileId;

/// Schema keywords the walker understands (or knows it may ignore, such as `description`).
const KNOWN_KEYWORDS: [&str; 27] = [
    "$ref",
    "additionalProperties",
    "allOf",
    "anyOf",
    "default",
    "description",
    "enum",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "nullable",
    "oneOf",
    "pattern",
    "properties",
    "required",
    "type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

/// Keywords known and deliberately not evaluated here (see the module doc): CEL rules, and in
/// the Kubernetes OpenAPI definitions the kind a definition is (read by [`kind_definition`]),
/// strategic-merge-patch hints and discriminated unions.
const IGNORED_KEYWORDS: [&str; 6] = [
    "x-kubernetes-validations",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
];

/// Reads a CRD file into JSON with the crate's own YAML parser.
#[cfg(test)]
pub fn load(crd_yaml: &str) -> Result<Value, String> {
    let (document, diagnostics) = parse::parse(FileId(0), crd_yaml, Format::Yaml);
    if let Some(first) = diagnostics.first() {
        return Err(format!("the CRD does not parse: {}", first.message));
    }
    let root = document.root.ok_or("the CRD is empty")?;
    to_json(&root.node)
}

/// The `openAPIV3Schema` of the named version of a CRD read by [`load`].
pub fn version_schema<'a>(crd: &'a Value, version: &str) -> Result<&'a Value, String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .ok_or("the CRD has no spec.versions")?
        .iter()
        .find(|entry| entry.get("name").and_then(Value::as_str) == Some(version))
        .ok_or(format!("the CRD does not serve version {version}"))?
        .pointer("/schema/openAPIV3Schema")
        .ok_or(format!("version {version} has no openAPIV3Schema"))
}

/// The schema node at a property path (`["spec", "resourceGroups", "flavors"]`), stepping
/// through `items` of lists on the way.
pub fn schema_at<'a>(schema: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut node = schema;
    for key in path {
        while let Some(items) = node.get("items") {
            node = items;
        }
        node = node.get("properties")?.get(*key)?;
    }
    Some(node)
}

/// Every place where `instance` is not allowed by `schema` (the `openAPIV3Schema` of a kind).
pub fn violations(schema: &Value, instance: &Value) -> Vec<String> {
    violations_with(schema, &Map::new(), instance)
}

/// Every place where `instance` is not allowed by `schema`, whose `$ref`s (`#/definitions/<name>`
/// or `#/$defs/<name>`) name entries of `definitions`: the `definitions` of a file under
/// `schema/k8s/`, with `schema` one of them ([`kind_definition`]).
pub fn violations_with(
    schema: &Value,
    definitions: &Map<String, Value>,
    instance: &Value,
) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, definitions, instance, "", &mut found);
    found
}

/// The definition among `definitions` whose `x-kubernetes-group-version-kind` is the kind of an
/// object with this `apiVersion` (`v1`, `rbac.authorization.k8s.io/v1`) and `kind`, if any.
pub fn kind_definition<'a>(
    definitions: &'a Map<String, Value>,
    api_version: &str,
    kind: &str,
) -> Option<&'a Value> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    definitions.values().find(|definition| {
        definition
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|gvk| {
                gvk.get("group").and_then(Value::as_str) == Some(group)
                    && gvk.get("version").and_then(Value::as_str) == Some(version)
                    && gvk.get("kind").and_then(Value::as_str) == Some(kind)
            })
    })
}

#[cfg(test)]
fn to_json(node: &Node) -> Result<Value, String> {
    Ok(match &node.value {
        parse::Value::Null => Value::Null,
        parse::Value::Bool(value) => Value::Bool(*value),
        parse::Value::Int(value) => {
            if let Ok(small) = i64::try_from(*value) {
                Value::from(small)
            } else {
                Value::from(
                    u64::try_from(*value).map_err(|_| format!("integer {value} overflows"))?,
                )
            }
        }
        parse::Value::Float(value) => {
            Value::Number(Number::from_f64(*value).ok_or(format!("number {value} is not finite"))?)
        }
        parse::Value::Str(text) => Value::String(text.clone()),
        parse::Value::Seq(items) => {
            Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?)
        }
        parse::Value::Map(map) => {
            let mut object = Map::new();
            for entry in &map.entries {
                object.insert(entry.key.clone(), to_json(&entry.value)?);
            }
            Value::Object(object)
        }
    })
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn shown(path: &str) -> &str {
    if path.is_empty() { "the object" } else { path }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn bound(schema: &Value, keyword: &str) -> Option<usize> {
    schema
        .get(keyword)
        .and_then(Value::as_u64)
        .and_then(|value| usize::try_from(value).ok())
}

fn check_size(schema: &Value, size: usize, what: &str, path: &str, found: &mut Vec<String>) {
    let (min, max) = match what {
        "items" => ("minItems", "maxItems"),
        "keys" => ("minProperties", "maxProperties"),
        _ => ("minLength", "maxLength"),
    };
    if let Some(limit) = bound(schema, min).filter(|limit| size < *limit) {
        found.push(format!(
            "{}: {size} {what}, the schema needs at least {limit}",
            shown(path)
        ));
    }
    if let Some(limit) = bound(schema, max).filter(|limit| size > *limit) {
        found.push(format!(
            "{}: {size} {what}, the schema allows at most {limit}",
            shown(path)
        ));
    }
}

fn walk(
    schema: &Value,
    definitions: &Map<String, Value>,
    value: &Value,
    path: &str,
    found: &mut Vec<String>,
) {
    let Some(keywords) = schema.as_object() else {
        found.push(format!("{}: the schema node is not an object", shown(path)));
        return;
    };
    for keyword in keywords.keys() {
        if !KNOWN_KEYWORDS.contains(&keyword.as_str())
            && !IGNORED_KEYWORDS.contains(&keyword.as_str())
        {
            found.push(format!(
                "{}: schema keyword `{keyword}` is not understood by this checker",
                shown(path)
            ));
        }
    }
    if let Some(reference) = schema.get("$ref") {
        let target = reference
            .as_str()
            .and_then(|reference| reference.rsplit_once('/'))
            .and_then(|(_, name)| definitions.get(name));
        match target {
            Some(target) => walk(target, definitions, value, path, found),
            None => found.push(format!(
                "{}: the schema refers to {reference}, which is not among the definitions",
                shown(path)
            )),
        }
        return;
    }
    // `type` is a name, or a list of names (`["string", "null"]`) of which `null` allows null.
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(name) => name.as_str().into_iter().collect(),
        None => Vec::new(),
    };
    let nullable = types.contains(&"null") || schema.get("nullable") == Some(&Value::Bool(true));
    let types: Vec<&str> = types.into_iter().filter(|name| *name != "null").collect();
    if value.is_null() {
        if !nullable {
            found.push(format!("{}: null is not allowed", shown(path)));
        }
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        found.push(format!(
            "{}: {value} is not one of the schema's values {}",
            shown(path),
            Value::Array(allowed.clone())
        ));
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        // The `anyOf: [integer, string]` beside it says the same thing.
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            found.push(format!(
                "{}: {} where the schema wants an integer or a string",
                shown(path),
                type_name(value)
            ));
        }
        return;
    }
    // Every branch of an `allOf` must hold (Envoy Gateway's CRDs repeat an enum in two).
    if let Some(branches) = schema.get("allOf").and_then(Value::as_array) {
        for branch in branches {
            walk(branch, definitions, value, path, found);
        }
    }
    let fitting = |branches: &Vec<Value>| {
        branches
            .iter()
            .filter(|branch| {
                let mut branch_found = Vec::new();
                walk(branch, definitions, value, path, &mut branch_found);
                branch_found.is_empty()
            })
            .count()
    };
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array)
        && fitting(branches) == 0
    {
        found.push(format!(
            "{}: fits none of the schema's `anyOf` branches",
            shown(path)
        ));
    }
    // The Kubernetes definitions type an int-or-string and a quantity as a `oneOf`.
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        match fitting(branches) {
            1 => {}
            0 => found.push(format!(
                "{}: fits none of the schema's `oneOf` branches",
                shown(path)
            )),
            several => found.push(format!(
                "{}: fits {several} of the schema's `oneOf` branches, where one must",
                shown(path)
            )),
        }
    }
    // A definition with properties and no type is an object.
    let wanted = match types.as_slice() {
        [] if schema.get("properties").is_some() => Some("object"),
        [] => None,
        [one] => Some(*one),
        several => {
            found.push(format!(
                "{}: schema type list {several:?} is not understood",
                shown(path)
            ));
            return;
        }
    };
    match wanted {
        Some("object") => walk_object(schema, definitions, value, path, found),
        Some("array") => walk_array(schema, definitions, value, path, found),
        Some("string") => match value.as_str() {
            Some(text) => check_size(schema, text.chars().count(), "characters", path, found),
            None => found.push(format!(
                "{}: {} where the schema wants a string",
                shown(path),
                type_name(value)
            )),
        },
        Some("integer") => {
            let fits = match schema.get("format").and_then(Value::as_str) {
                Some("int32") => value.as_i64().is_some_and(|int| i32::try_from(int).is_ok()),
                _ => value.is_i64() || value.is_u64(),
            };
            if !fits {
                found.push(format!(
                    "{}: {value} is not an integer of the schema's format",
                    shown(path)
                ));
            }
        }
        Some(wanted @ ("number" | "boolean")) => {
            let fits = if wanted == "number" {
                value.is_number()
            } else {
                value.is_boolean()
            };
            if !fits {
                found.push(format!(
                    "{}: {} where the schema wants a {wanted}",
                    shown(path),
                    type_name(value)
                ));
            }
        }
        Some(other) => found.push(format!(
            "{}: schema type `{other}` is not understood",
            shown(path)
        )),
        None => {}
    }
}

fn walk_object(
    schema: &Value,
    definitions: &Map<String, Value>,
    value: &Value,
    path: &str,
    found: &mut Vec<String>,
) {
    let Some(object) = value.as_object() else {
        found.push(format!(
            "{}: {} where the schema wants an object",
            shown(path),
            type_name(value)
        ));
        return;
    };
    check_size(schema, object.len(), "keys", path, found);
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserves_unknown =
        schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    for (key, child) in object {
        let child_at = child_path(path, key);
        let property = properties.and_then(|properties| properties.get(key));
        let refers = property.is_some_and(|property| property.get("$ref").is_some());
        if path.is_empty() && key == "metadata" && !refers {
            // ObjectMeta: the API server validates it itself, whatever the CRD says.
            if !child.is_object() {
                found.push(format!(
                    "metadata: {} where an object is needed",
                    type_name(child)
                ));
            }
            continue;
        }
        if let Some(property) = property {
            walk(property, definitions, child, &child_at, found);
        } else if let Some(additional @ Value::Object(_)) = additional {
            walk(additional, definitions, child, &child_at, found);
        } else if additional == Some(&Value::Bool(true)) || preserves_unknown {
            // Any key is kept as it is.
        } else {
            let known: Vec<&str> = properties
                .map(|properties| properties.keys().map(String::as_str).collect())
                .unwrap_or_default();
            found.push(format!(
                "{}: key `{key}` is not in the schema (it has {})",
                shown(path),
                if known.is_empty() {
                    "no keys".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = required.as_str()
            && !object.contains_key(name)
        {
            found.push(format!("{}: required key `{name}` is missing", shown(path)));
        }
    }
}

fn walk_array(
    schema: &Value,
    definitions: &Map<String, Value>,
    value: &Value,
    path: &str,
    found: &mut Vec<String>,
) {
    let Some(items) = value.as_array() else {
        found.push(format!(
            "{}: {} where the schema wants a list",
            shown(path),
            type_name(value)
        ));
        return;
    };
    check_size(schema, items.len(), "items", path, found);
    if let Some(item_schema) = schema.get("items") {
        for (idx, item) in items.iter().enumerate() {
            walk(
                item_schema,
                definitions,
                item,
                &format!("{path}[{idx}]"),
                found,
            );
        }
    } else {
        found.push(format!(
            "{}: the schema of a list has no `items`",
            shown(path)
        ));
    }
    let identity = |item: &Value| -> Value {
        match schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            Some(keys) => Value::Array(
                keys.iter()
                    .map(|key| {
                        key.as_str()
                            .and_then(|key| item.get(key))
                            .cloned()
                            .unwrap_or(Value::Null)
                    })
                    .collect(),
            ),
            None => item.clone(),
        }
    };
    if matches!(
        schema.get("x-kubernetes-list-type").and_then(Value::as_str),
        Some("map" | "set")
    ) {
        for (idx, item) in items.iter().enumerate() {
            let key = identity(item);
            if items
                .iter()
                .take(idx)
                .any(|earlier| identity(earlier) == key)
            {
                found.push(format!(
                    "{path}[{idx}]: duplicate entry {key} of a `map` or `set` list"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOPOLOGIES: &str =
        include_str!("../../../schema/crds/kueue/kueue.x-k8s.io_topologies.yaml");
    const CLUSTER_QUEUES: &str =
        include_str!("../../../schema/crds/kueue/kueue.x-k8s.io_clusterqueues.yaml");

    fn schema_of(crd_yaml: &str) -> Value {
        let crd = load(crd_yaml).unwrap();
        version_schema(&crd, "v1beta2").unwrap().clone()
    }

    fn topology(levels: Value) -> Value {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "t"},
            "spec": {"levels": levels},
        })
    }

    #[test]
    fn accepts_a_value_the_schema_allows() {
        let schema = schema_of(TOPOLOGIES);
        let value = topology(json!([{"nodeLabel": "kubernetes.io/hostname"}]));
        assert_eq!(violations(&schema, &value), Vec::<String>::new());
    }

    #[test]
    fn reports_a_misspelt_key_with_its_path() {
        let schema = schema_of(TOPOLOGIES);
        let value = topology(json!([{"nodeLable": "kubernetes.io/hostname"}]));
        assert_eq!(
            violations(&schema, &value),
            [
                "spec.levels[0]: key `nodeLable` is not in the schema (it has nodeLabel)",
                "spec.levels[0]: required key `nodeLabel` is missing",
            ]
        );
    }

    #[test]
    fn reports_a_misspelt_key_at_the_top_and_in_spec() {
        let schema = schema_of(TOPOLOGIES);
        let mut value = topology(json!([{"nodeLabel": "kubernetes.io/hostname"}]));
        value["spec"]["level"] = json!([]);
        value["specs"] = json!({});
        let found = violations(&schema, &value);
        assert_eq!(found.len(), 2, "{found:?}");
        // Keys are walked in the order of `serde_json::Map`, which is sorted.
        assert!(
            found[0].starts_with("spec: key `level` is not in the schema"),
            "{found:?}"
        );
        assert!(
            found[1].starts_with("the object: key `specs` is not in the schema"),
            "{found:?}"
        );
    }

    #[test]
    fn reports_a_value_outside_the_enum() {
        let schema = schema_of(CLUSTER_QUEUES);
        let value = json!({"spec": {"queueingStrategy": "StrictFifo"}});
        assert_eq!(
            violations(&schema, &value),
            [
                "spec.queueingStrategy: \"StrictFifo\" is not one of the schema's values [\"StrictFIFO\",\"BestEffortFIFO\"]"
            ]
        );
    }

    #[test]
    fn reports_wrong_types_and_sizes() {
        let schema = schema_of(CLUSTER_QUEUES);
        let value = json!({"spec": {
            "cohortName": 3,
            "resourceGroups": [{
                "coveredResources": [],
                "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": [1]}]}],
            }],
            "preemption": {"borrowWithinCohort": {"maxPriorityThreshold": 3_000_000_000_u64}},
        }});
        assert_eq!(
            violations(&schema, &value),
            [
                "spec.cohortName: an integer where the schema wants a string",
                "spec.preemption.borrowWithinCohort.maxPriorityThreshold: 3000000000 is not an integer of the schema's format",
                "spec.resourceGroups[0].coveredResources: 0 items, the schema needs at least 1",
                "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: a list where the schema wants an integer or a string",
            ]
        );
    }

    #[test]
    fn reports_duplicate_keys_of_a_map_list() {
        let schema = schema_of(CLUSTER_QUEUES);
        let flavor = json!({"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]});
        let value = json!({"spec": {"resourceGroups": [{
            "coveredResources": ["cpu"],
            "flavors": [flavor.clone(), flavor],
        }]}});
        assert_eq!(
            violations(&schema, &value),
            ["spec.resourceGroups[0].flavors[1]: duplicate entry [\"a\"] of a `map` or `set` list"]
        );
    }

    #[test]
    fn reports_schema_keywords_it_does_not_understand() {
        let schema = json!({"type": "object", "not": {"required": ["a"]}});
        assert_eq!(
            violations(&schema, &json!({})),
            ["the object: schema keyword `not` is not understood by this checker"]
        );
    }

    fn core_definitions() -> Map<String, Value> {
        let text = include_str!("../../../schema/k8s/core-v1.34.json");
        let document: Value = serde_json::from_str(text).unwrap();
        document["definitions"].as_object().unwrap().clone()
    }

    #[test]
    fn walks_a_built_in_kind_through_its_references_and_its_metadata() {
        let definitions = core_definitions();
        let schema = kind_definition(&definitions, "networking.k8s.io/v1", "NetworkPolicy")
            .unwrap()
            .clone();
        let mut policy = json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "dns", "namespace": "t", "labels": {"a": "b"}},
            "spec": {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": "dns"}]}],
            },
        });
        assert_eq!(
            violations_with(&schema, &definitions, &policy),
            Vec::<String>::new()
        );
        policy["metadata"]["labelz"] = json!({});
        policy["spec"]["egress"][0]["ports"][0]["port"] = json!([53]);
        policy["spec"]["egress"][0]["ports"][1]["protocl"] = json!("TCP");
        policy["apiVersion"] = json!("networking.k8s.io/v1beta1");
        assert_eq!(
            violations_with(&schema, &definitions, &policy),
            [
                "apiVersion: \"networking.k8s.io/v1beta1\" is not one of the schema's values [\"networking.k8s.io/v1\"]",
                "metadata: key `labelz` is not in the schema (it has annotations, creationTimestamp, deletionGracePeriodSeconds, deletionTimestamp, finalizers, generateName, generation, labels, managedFields, name, namespace, ownerReferences, resourceVersion, selfLink, uid)",
                "spec.egress[0].ports[0].port: fits none of the schema's `oneOf` branches",
                "spec.egress[0].ports[1]: key `protocl` is not in the schema (it has endPort, port, protocol)",
            ]
        );
    }

    #[test]
    fn reports_a_reference_it_was_not_given_and_finds_kinds_by_group_and_version() {
        let definitions = core_definitions();
        let schema = json!({"$ref": "#/definitions/io.k8s.Missing"});
        assert_eq!(
            violations_with(&schema, &definitions, &json!({})),
            [
                "the object: the schema refers to \"#/definitions/io.k8s.Missing\", which is not among the definitions"
            ]
        );
        assert!(kind_definition(&definitions, "v1", "Namespace").is_some());
        assert!(kind_definition(&definitions, "resource.k8s.io/v1", "DeviceClass").is_some());
        assert!(kind_definition(&definitions, "v1", "DeviceClass").is_none());
        let older: Value =
            serde_json::from_str(include_str!("../../../schema/k8s/core-v1.33.json")).unwrap();
        let older = older["definitions"].as_object().unwrap();
        assert!(kind_definition(older, "resource.k8s.io/v1", "DeviceClass").is_none());
    }

    #[test]
    fn finds_the_schema_node_of_a_property_path() {
        let schema = schema_of(CLUSTER_QUEUES);
        let node = schema_at(&schema, &["spec", "resourceGroups", "flavors", "name"]).unwrap();
        assert_eq!(node["maxLength"], json!(253));
        assert!(schema_at(&schema, &["spec", "resourceGroup"]).is_none());
    }
}
