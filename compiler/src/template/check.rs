//! The audit of rendered template objects, and their placement in the manifest.
//!
//! Consumes: the text of one rendering with its output spans, the rendering's target (template,
//! cell, tenant), and the keys of every object already in the manifest.
//! Produces: each document as a typed core object, written through the canonical YAML writer
//! into the tenant's or the cell's `templates/` folder, or a located finding.
//!
//! The rules ([`docs/templates.md`](../../docs/templates.md#what-a-template-may-create)):
//! - a document is a mapping with `apiVersion: v1` and a kind of [`TemplateKind`], namespaced
//!   core kinds that cannot undo the tenant floor (no RBAC, no NetworkPolicy, ResourceQuota or
//!   LimitRange, no Pod or workload that would skip Kueue, nothing cluster-scoped);
//! - `metadata` holds only `name`, `namespace`, `labels` and `annotations`, with a valid name and
//!   a namespace always written out;
//! - a tenant template writes only into its tenant's namespaces in the cell, a cell template
//!   never into any tenant's namespace;
//! - no object has the kind, namespace and name of one tenantc emits or another template wrote;
//! - a PersistentVolumeClaim sets no `volumeName`, `selector`, empty `storageClassName` or cross-namespace
//!   `dataSourceRef`, which could bind a volume or data that is not the tenant's;
//! - every field is a field of the kind (read into `k8s-openapi`'s struct and compared back).
//!
//! Invariants: an object reaches the manifest only through its typed struct, labelled
//! `app.kubernetes.io/managed-by: tenantc` (so the managed-object guard protects it); every
//! finding is located in the template that wrote the offending text.

use std::collections::BTreeSet;
use std::ops::Range;

use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Target;
use super::spans::SpanMap;
use crate::diag::{Code, Diagnostic};
use crate::emit::{Body, Manifest, Object};
use crate::layout::{TEMPLATES, TemplateScope};
use crate::parse::{Map, Node, Value};
use crate::source::{SourceMap, Span};

/// A kind a template may create (all `apiVersion: v1`, all namespaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TemplateKind {
    /// `ConfigMap`.
    ConfigMap,
    /// `PersistentVolumeClaim`.
    PersistentVolumeClaim,
    /// `ServiceAccount`.
    ServiceAccount,
}

impl TemplateKind {
    /// Every kind a template may create, sorted by name.
    pub const ALL: [TemplateKind; 3] = [
        TemplateKind::ConfigMap,
        TemplateKind::PersistentVolumeClaim,
        TemplateKind::ServiceAccount,
    ];

    /// The `kind` of its objects.
    pub fn as_str(self) -> &'static str {
        match self {
            TemplateKind::ConfigMap => "ConfigMap",
            TemplateKind::PersistentVolumeClaim => "PersistentVolumeClaim",
            TemplateKind::ServiceAccount => "ServiceAccount",
        }
    }

    /// The allowed kind a rendered `kind` names, if it names one (rendered text is an open set).
    pub fn parse(kind: &str) -> Option<TemplateKind> {
        TemplateKind::ALL
            .into_iter()
            .find(|allowed| allowed.as_str() == kind)
    }
}

/// Kinds that exist only at cluster scope, named as such when a template writes one.
const CLUSTER_SCOPED: [&str; 22] = [
    "APIService",
    "ClusterCohort",
    "ClusterQueue",
    "ClusterRole",
    "ClusterRoleBinding",
    "Cohort",
    "CustomResourceDefinition",
    "DeviceClass",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PriorityClass",
    "ResourceFlavor",
    "RuntimeClass",
    "StorageClass",
    "Topology",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
];

/// The metadata fields a template may set.
const METADATA_FIELDS: [&str; 4] = ["annotations", "labels", "name", "namespace"];

/// An object's identity in a cell: cell, kind, namespace (empty for cluster scope) and name.
pub type ObjectKey = (String, String, String, String);

/// The keys of the objects in the manifest that a template object could collide with: a
/// template object is of a [`TemplateKind`] (`check` refuses any other kind before it compares
/// keys), so only objects of those kinds are kept.
pub fn emitted_keys(manifest: &Manifest) -> BTreeSet<ObjectKey> {
    manifest
        .objects
        .iter()
        .filter_map(|object| {
            let (kind, namespace, name) = object.body.identity();
            TemplateKind::ALL
                .iter()
                .any(|template_kind| template_kind.as_str() == kind)
                .then(|| {
                    (
                        object.folder.split('/').next().unwrap_or("").to_string(),
                        kind,
                        namespace,
                        name,
                    )
                })
        })
        .collect()
}

/// Where findings about one rendering are located.
struct Locator<'a> {
    spans: &'a SpanMap,
    target: &'a Target<'a>,
    sources: &'a SourceMap,
}

impl Locator<'_> {
    /// The template span that wrote the rendered range `range`.
    fn span(&self, range: Range<usize>) -> Span {
        let fallback = Span::new(self.target.template.file, 0..0);
        let Some((name, source_range)) = self.spans.locate_range(range) else {
            return fallback;
        };
        let Some((file, source)) = self.sources.iter().find(|(_, file)| file.path == name) else {
            return fallback;
        };
        let fits = source_range.start <= source_range.end
            && source_range.end <= source.text.len()
            && source.text.is_char_boundary(source_range.start)
            && source.text.is_char_boundary(source_range.end);
        if fits {
            Span::new(file, source_range)
        } else {
            Span::new(file, 0..0)
        }
    }

    fn node(&self, node: &Node) -> Span {
        self.span(node.span.range())
    }

    fn error(
        &self,
        code: Code,
        span: Span,
        message: String,
        label: &str,
        help: &str,
    ) -> Diagnostic {
        Diagnostic::error(code, span, message)
            .with_label(label)
            .with_note(self.target.note())
            .with_help(help)
    }

    fn invalid(&self, span: Span, message: String, label: &str, help: &str) -> Diagnostic {
        self.error(Code::TemplateOutputInvalid, span, message, label, help)
    }

    fn forbidden(&self, span: Span, message: String, label: &str, help: &str) -> Diagnostic {
        self.error(Code::TemplateObjectForbidden, span, message, label, help)
    }
}

fn entry<'a>(map: &'a Map, key: &str) -> Option<&'a crate::parse::Entry> {
    map.entries.iter().find(|entry| entry.key == key)
}

fn string(node: &Node) -> Option<&str> {
    match &node.value {
        Value::Str(text) => Some(text),
        _ => None,
    }
}

/// A parsed node as JSON; a duplicate key or an integer JSON cannot hold is an error at the node.
fn to_json(node: &Node) -> Result<serde_json::Value, (Span, String)> {
    Ok(match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(value) => serde_json::Value::Bool(*value),
        Value::Int(value) => match i64::try_from(*value) {
            Ok(value) => serde_json::Value::from(value),
            Err(_) => return Err((node.span, format!("integer {value} is out of range"))),
        },
        Value::Float(value) => serde_json::Number::from_f64(*value)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Str(text) => serde_json::Value::String(text.clone()),
        Value::Seq(items) => {
            serde_json::Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Value::Map(map) => {
            let mut object = serde_json::Map::new();
            for entry in &map.entries {
                if object
                    .insert(entry.key.clone(), to_json(&entry.value)?)
                    .is_some()
                {
                    return Err((entry.key_span, format!("key `{}` appears twice", entry.key)));
                }
            }
            serde_json::Value::Object(object)
        }
    })
}

/// The first key of `input` (a path of keys and indices) that did not survive the round trip
/// through the typed struct: a field the kind does not have.
fn unknown_field(
    input: &serde_json::Value,
    output: &serde_json::Value,
    path: &mut Vec<Result<String, usize>>,
) -> bool {
    match (input, output) {
        (serde_json::Value::Object(input), serde_json::Value::Object(output)) => {
            for (key, value) in input {
                if value.is_null() {
                    continue;
                }
                path.push(Ok(key.clone()));
                match output.get(key) {
                    None => return true,
                    Some(out) => {
                        if unknown_field(value, out, path) {
                            return true;
                        }
                    }
                }
                path.pop();
            }
            false
        }
        (serde_json::Value::Array(input), serde_json::Value::Array(output)) => {
            for (idx, (value, out)) in input.iter().zip(output).enumerate() {
                path.push(Err(idx));
                if unknown_field(value, out, path) {
                    return true;
                }
                path.pop();
            }
            false
        }
        _ => false,
    }
}

/// The rendered span of the key at `path` in `node`.
fn key_span(node: &Node, path: &[Result<String, usize>]) -> Span {
    let mut current = node;
    let mut span = node.span;
    for segment in path {
        match (segment, &current.value) {
            (Ok(key), Value::Map(map)) => match entry(map, key) {
                Some(found) => {
                    span = found.key_span;
                    current = &found.value;
                }
                None => break,
            },
            (Err(idx), Value::Seq(items)) => match items.get(*idx) {
                Some(item) => {
                    span = item.span;
                    current = item;
                }
                None => break,
            },
            _ => break,
        }
    }
    span
}

/// Reads `json` into `T` and back: the object as the canonical tree, or the dotted path of a
/// field `T` does not have, or the reason it does not read.
fn typed<T>(json: &serde_json::Value) -> Result<Result<Body, Vec<Result<String, usize>>>, String>
where
    T: DeserializeOwned + Serialize + Metadata<Ty = ObjectMeta> + 'static,
{
    let mut object: T = serde_json::from_value(json.clone()).map_err(|error| error.to_string())?;
    let back = serde_json::to_value(&object).map_err(|error| error.to_string())?;
    let mut path = Vec::new();
    if unknown_field(json, &back, &mut path) {
        return Ok(Err(path));
    }
    label_managed(object.metadata_mut());
    Body::of(&object).map(Ok).map_err(|error| error.to_string())
}

fn dotted(path: &[Result<String, usize>]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Ok(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Err(idx) => text.push_str(&format!("[{idx}]")),
        }
    }
    text
}

/// Sets `app.kubernetes.io/managed-by: tenantc` in the object's labels.
fn label_managed(metadata: &mut ObjectMeta) {
    let (key, value) = crate::kube::labels::MANAGED_BY;
    metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), value.to_string());
}

/// Checks every document of one rendering and adds the objects that pass to `objects`.
pub(crate) fn place(
    objects: &mut Vec<Object>,
    rendered: &(String, SpanMap),
    target: &Target<'_>,
    sources: &SourceMap,
    emitted: &mut BTreeSet<ObjectKey>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let (text, spans) = rendered;
    let locate = Locator {
        spans,
        target,
        sources,
    };
    let (documents, syntax) = crate::parse::yaml::parse_stream(target.template.file, text);
    for finding in syntax {
        let range = finding.primary_span().map_or(0..0, |span| span.range());
        diagnostics.push(locate.invalid(
            locate.span(range),
            format!("rendered text is not YAML: {}", finding.message),
            "writes this",
            "the rendered text must be YAML: check indentation and quote values with `| tojson`",
        ));
    }
    for document in &documents {
        if let Some(object) = check(document, &locate, emitted, diagnostics) {
            objects.push(object);
        }
    }
}

/// Checks one document; the object to emit, or `None` with the findings pushed.
fn check(
    document: &Node,
    locate: &Locator<'_>,
    emitted: &mut BTreeSet<ObjectKey>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Object> {
    let target = locate.target;
    let Value::Map(map) = &document.value else {
        diagnostics.push(locate.invalid(
            locate.node(document),
            format!(
                "a rendered document is {}, not an object",
                document.value.type_name()
            ),
            "writes this",
            "render each object as a YAML mapping with `apiVersion`, `kind` and `metadata`",
        ));
        return None;
    };
    let kind_entry = entry(map, "kind");
    let kind = kind_entry.and_then(|entry| string(&entry.value));
    let api_version = entry(map, "apiVersion").and_then(|entry| string(&entry.value));
    let (Some(kind), Some(api_version)) = (kind, api_version) else {
        diagnostics.push(locate.invalid(
            locate.node(document),
            "a rendered object has no `apiVersion` or `kind`".to_string(),
            "object starts here",
            "give every object `apiVersion: v1` and its `kind`",
        ));
        return None;
    };
    let kind_span = kind_entry.map_or(locate.node(document), |entry| locate.node(&entry.value));
    let allowed = TemplateKind::ALL.map(TemplateKind::as_str).join("`, `");
    if CLUSTER_SCOPED.contains(&kind) {
        diagnostics.push(locate.forbidden(
            kind_span,
            format!("a template cannot create the cluster-scoped kind `{kind}`"),
            "cluster-scoped",
            &format!(
                "templates create namespaced objects only, of the kinds `{allowed}`; cluster-scoped objects come from tenantc's own stages"
            ),
        ));
        return None;
    }
    let allowed_kind = TemplateKind::parse(kind).filter(|_| api_version == "v1");
    let Some(template_kind) = allowed_kind else {
        diagnostics.push(locate.forbidden(
            kind_span,
            format!("a template cannot create `{api_version}` `{kind}` objects"),
            "not an allowed kind",
            &format!(
                "templates create `v1` objects of the kinds `{allowed}` only, which cannot undo the tenant floor"
            ),
        ));
        return None;
    };
    let metadata = entry(map, "metadata").map(|entry| &entry.value);
    let Some(Node {
        value: Value::Map(metadata),
        ..
    }) = metadata
    else {
        diagnostics.push(locate.invalid(
            kind_span,
            format!("the rendered `{kind}` has no `metadata` mapping"),
            "object without metadata",
            "give the object `metadata` with its `name` and `namespace`",
        ));
        return None;
    };
    if let Some(extra) = metadata
        .entries
        .iter()
        .find(|entry| !METADATA_FIELDS.contains(&entry.key.as_str()))
    {
        diagnostics.push(locate.invalid(
            locate.span(extra.key_span.range()),
            format!("a template sets `metadata.{}`", extra.key),
            "not settable",
            "templates set only `name`, `namespace`, `labels` and `annotations` in `metadata`",
        ));
        return None;
    }
    let name_node = entry(metadata, "name").map(|entry| &entry.value);
    let name = name_node.and_then(string).unwrap_or("");
    if let Err(reason) = crate::names::dns_subdomain(name) {
        let span = name_node.map_or(kind_span, |node| locate.node(node));
        diagnostics.push(locate.invalid(
            span,
            format!("the rendered `{kind}` has no valid `metadata.name`: {reason}"),
            "invalid name",
            "name the object with lowercase letters, digits, `-` and `.`",
        ));
        return None;
    }
    let namespace_entry = entry(metadata, "namespace");
    let Some(namespace) = namespace_entry.and_then(|entry| string(&entry.value)) else {
        diagnostics.push(locate.forbidden(
            kind_span,
            format!("the rendered `{kind}` `{name}` has no `metadata.namespace`"),
            "no namespace",
            "write the namespace out, such as `{{ tenant.namespaces[0].name }}`; a template object is never placed by default",
        ));
        return None;
    };
    let namespace_span = namespace_entry.map_or(kind_span, |entry| locate.node(&entry.value));
    let owner = target.cell.tenants.iter().find(|tenant| {
        tenant
            .namespaces
            .iter()
            .any(|owned| owned.name == namespace)
    });
    match (target.template.scope, target.tenant) {
        (TemplateScope::Tenant, Some(tenant)) => {
            if owner.is_none_or(|owner| owner.name != tenant.name) {
                let whose = match owner {
                    Some(other) => format!("belongs to tenant `{}`", other.name),
                    None => format!("is not a namespace of tenant `{}`", tenant.name),
                };
                let own: Vec<&str> = tenant
                    .namespaces
                    .iter()
                    .map(|ns| ns.name.as_str())
                    .collect();
                diagnostics.push(locate.forbidden(
                    namespace_span,
                    format!(
                        "a tenant template places `{kind}` `{name}` in namespace `{namespace}`, which {whose}"
                    ),
                    "outside the tenant's namespaces",
                    &format!(
                        "a tenant template writes only into its tenant's namespaces, here `{}`",
                        own.join("`, `")
                    ),
                ));
                return None;
            }
        }
        _ => {
            if let Some(owner) = owner {
                diagnostics.push(locate.forbidden(
                    namespace_span,
                    format!(
                        "a cell template places `{kind}` `{name}` in namespace `{namespace}` of tenant `{}`",
                        owner.name
                    ),
                    "a tenant's namespace",
                    "objects in a tenant's namespaces come from tenant templates, which the tenant audit checks; move it to templates/tenant/",
                ));
                return None;
            }
        }
    }
    let json = match to_json(document) {
        Ok(json) => json,
        Err((span, reason)) => {
            diagnostics.push(locate.invalid(
                locate.span(span.range()),
                format!("the rendered `{kind}` `{name}` cannot be read: {reason}"),
                "here",
                "write each key once and numbers that fit 64 bits",
            ));
            return None;
        }
    };
    // A claim that names a volume, selects volumes by label or copies from another namespace
    // could bind a pre-provisioned volume, or read data, that is not the tenant's.
    let binds = [
        &["spec", "volumeName"][..],
        &["spec", "selector"][..],
        &["spec", "dataSourceRef", "namespace"][..],
    ]
    .into_iter()
    .find(|path| {
        path.iter()
            .try_fold(&json, |value, key| value.get(*key))
            .is_some_and(|value| !value.is_null())
    })
    // An empty storage class binds any available volume that has no class.
    .or_else(|| {
        (json.pointer("/spec/storageClassName") == Some(&serde_json::Value::from("")))
            .then_some(&["spec", "storageClassName"][..])
    });
    if template_kind == TemplateKind::PersistentVolumeClaim
        && let Some(path) = binds
    {
        let path: Vec<Result<String, usize>> =
            path.iter().map(|key| Ok((*key).to_string())).collect();
        diagnostics.push(locate.forbidden(
            locate.span(key_span(document, &path).range()),
            format!(
                "the rendered `PersistentVolumeClaim` `{name}` sets `{}`",
                dotted(&path)
            ),
            "binds a volume that is not the tenant's own",
            "claim a new volume by storage class and size only; `volumeName`, `selector`, an empty `storageClassName` and a cross-namespace `dataSourceRef` could bind another tenant's volume or data",
        ));
        return None;
    }
    let result = match template_kind {
        TemplateKind::ConfigMap => typed::<ConfigMap>(&json),
        TemplateKind::PersistentVolumeClaim => typed::<PersistentVolumeClaim>(&json),
        TemplateKind::ServiceAccount => typed::<ServiceAccount>(&json),
    };
    let body = match result {
        Ok(Ok(body)) => body,
        Ok(Err(path)) => {
            diagnostics.push(locate.invalid(
                locate.span(key_span(document, &path).range()),
                format!("`{}` is not a field of `{kind}`", dotted(&path)),
                "unknown field",
                &format!("check the spelling against the Kubernetes API reference for `{kind}`"),
            ));
            return None;
        }
        Err(reason) => {
            diagnostics.push(locate.invalid(
                kind_span,
                format!("the rendered `{kind}` `{name}` is not a valid `{kind}`: {reason}"),
                "in this object",
                &format!("check the field types against the Kubernetes API reference for `{kind}`"),
            ));
            return None;
        }
    };
    for (key, value, is_label) in [("labels", true), ("annotations", false)]
        .iter()
        .filter_map(|(part, is_label)| entry(metadata, part).map(|entry| (entry, *is_label)))
        .flat_map(|(entry, is_label)| match &entry.value.value {
            Value::Map(pairs) => pairs
                .entries
                .iter()
                .map(|pair| (pair, &pair.value, is_label))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
    {
        let problem = crate::names::qualified_name(&key.key).err().or_else(|| {
            is_label
                .then(|| string(value).and_then(|text| crate::names::label_value(text).err()))
                .flatten()
        });
        if let Some(reason) = problem {
            diagnostics.push(locate.invalid(
                locate.span(key.key_span.range()),
                format!("the rendered `{kind}` `{name}` has an invalid label or annotation `{}`: {reason}", key.key),
                "invalid",
                "label and annotation keys are `prefix/name` with a DNS prefix; label values are at most 63 characters of letters, digits, `-`, `_` and `.`",
            ));
            return None;
        }
    }
    let key = (
        target.cell.name.clone(),
        kind.to_string(),
        namespace.to_string(),
        name.to_string(),
    );
    if !emitted.insert(key) {
        diagnostics.push(locate.forbidden(
            locate.span(name_node.map_or(document.span, |node| node.span).range()),
            format!(
                "`{kind}` `{name}` in namespace `{namespace}` is already emitted by tenantc or another template"
            ),
            "same kind, namespace and name",
            "give the object a name of its own; tenantc's objects cannot be replaced by a template",
        ));
        return None;
    }
    let mut sources = BTreeSet::from([target.cell.source.clone(), target.template.path.clone()]);
    let file = format!("{namespace}/{}-{name}.yaml", kind.to_lowercase());
    let (folder, file) = match target.tenant {
        Some(tenant) => {
            sources.insert(tenant.source.clone());
            (
                format!("{}/tenants/{}", target.cell.name, tenant.name),
                format!("{}/{file}", TEMPLATES),
            )
        }
        None => (format!("{}/{}", target.cell.name, TEMPLATES), file),
    };
    Some(Object {
        folder,
        file,
        sources,
        body,
    })
}
