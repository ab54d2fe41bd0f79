//! Emit: the lowered objects to an in-memory output tree, and that tree to disk.
//!
//! Consumes: a [`Manifest`] from `lower`, whose objects are [`Body`] texts made from typed
//! objects. Produces: an [`OutputTree`] (relative path to bytes),
//! with a `kustomization.yaml` in every cell folder, cluster folder and tenant folder. The `fs`
//! submodule writes the tree incrementally and crash-safely and compares it with an existing `out/`.
//!
//! Invariants:
//! - [`render`] is pure: same manifest, same bytes; paths are sorted and relative.
//! - Every file starts with the generated-code header naming its inputs, and has no timestamp,
//!   version or absolute path in it.
//! - No ResourceQuota key that the API server accepts without enforcing (`limits.` on an
//!   extended resource, or a bare extended-resource name other than a DRA device count
//!   `<class>.deviceclass.resource.k8s.io/devices`) and no GPU key in a Container
//!   LimitRange can leave this stage: [`Body::of`], the only way to make an object's text,
//!   refuses such an object as an internal error.

pub mod diff;
pub mod fs;
pub mod ser;
pub mod stream;
pub mod yaml;

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use serde::Serialize;
use yaml::Yaml;

/// Relative path (with `/`) to file contents.
pub type OutputTree = BTreeMap<String, Vec<u8>>;

// The marker is part of the folder layout (`layout.rs`); `fs.rs` names it here.
pub use crate::layout::MARKER;

/// Where a streaming compilation hands each finished part of the output tree (the files of one
/// cell), from any thread and in any order, so the whole tree is never held at once
/// ([`crate::compile_streaming`]); [`fs::Staging`] writes parts, [`fs::Comparing`] compares them.
pub trait PartSink: Sync {
    /// Takes one part: files whose paths no other part, and not the rest of the tree, holds.
    fn take(&self, part: OutputTree);
}

/// One Kubernetes object and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The kustomization folder it belongs to, such as `us-east-1a/tenants/acme-research`.
    pub folder: String,
    /// Path inside the folder, such as `train/namespace.yaml`.
    pub file: String,
    /// Declaration files it was generated from, as relative paths.
    pub sources: BTreeSet<String>,
    /// The object.
    pub body: Body,
}

/// One object written as canonical YAML (one document, without header).
///
/// It is made only by [`Body::of`] from a typed object, which streams the object into text
/// (`stream.rs`) and first applies the guard on quota keys and LimitRange defaults described in
/// the module invariants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body(String);

impl Body {
    /// Writes a typed object, or refuses one that breaks an output invariant.
    pub fn of<T: Serialize + Any>(object: &T) -> Result<Body, InternalError> {
        let any: &dyn Any = object;
        if let Some(quota) = any.downcast_ref::<ResourceQuota>() {
            check_quota(quota)?;
        }
        if let Some(limits) = any.downcast_ref::<LimitRange>() {
            check_limit_range(limits)?;
        }
        stream::to_text(object)
            .map(Body)
            .map_err(|error| InternalError(format!("an object cannot be written: {error}")))
    }

    /// The YAML text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object's kind, namespace and name (empty when absent), read back from the text.
    ///
    /// The canonical writer puts top-level keys at the start of a line and the keys of
    /// `metadata` two spaces in, and writes a value either plain or as a JSON string literal, so
    /// reading these three needs no YAML parser.
    pub fn identity(&self) -> (String, String, String) {
        let value = |text: &str| -> String {
            if text.starts_with('"') {
                serde_json::from_str(text).unwrap_or_default()
            } else {
                text.to_string()
            }
        };
        let (mut kind, mut namespace, mut name) = (String::new(), String::new(), String::new());
        let mut in_metadata = false;
        for line in self.0.lines() {
            if !line.starts_with(' ') {
                in_metadata = line == "metadata:";
                if let Some(text) = line.strip_prefix("kind: ") {
                    kind = value(text);
                }
            } else if in_metadata && let Some(entry) = line.strip_prefix("  ") {
                if let Some(text) = entry.strip_prefix("name: ") {
                    name = value(text);
                } else if let Some(text) = entry.strip_prefix("namespace: ") {
                    namespace = value(text);
                }
            }
        }
        (kind, namespace, name)
    }
}

/// A file that is not a Kubernetes object (a report), placed as is.
#[derive(Debug, Clone, PartialEq)]
pub struct Extra {
    /// Relative path.
    pub path: String,
    /// Contents.
    pub contents: Vec<u8>,
}

/// Everything one build emits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// Kubernetes objects.
    pub objects: Vec<Object>,
    /// Child kustomization folders a folder lists, with the declaration files that decide the
    /// list (for the header), such as a cell folder listing its tenants.
    pub folders: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
    /// Non-object files.
    pub extras: Vec<Extra>,
}

/// An invariant of the output was broken: a bug in tenantc, not in the declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalError(pub String);

impl std::fmt::Display for InternalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "internal error: {}", self.0)
    }
}

impl std::error::Error for InternalError {}

/// The generated-code header line for a file made from `sources`.
///
/// The line is one YAML comment whatever the paths hold: every character outside printable
/// ASCII (line breaks of any YAML version, control and format characters) is escaped, so a
/// path can never end the comment and start a YAML key. `load` already refuses such names;
/// this is the second line of defence.
pub fn header(sources: &BTreeSet<String>) -> String {
    let mut line = String::new();
    write_header(&mut line, sources);
    line
}

/// Appends [`header`]'s line to `out`, so a caller can reuse one buffer for every file.
fn write_header(out: &mut String, sources: &BTreeSet<String>) {
    out.push_str("# Code generated by tenantc from ");
    for (idx, source) in sources.iter().enumerate() {
        if idx > 0 {
            out.push_str(", ");
        }
        out.push_str(&crate::escape::escape_str(source));
    }
    out.push_str(". DO NOT EDIT.\n");
}

/// Renders the manifest into files, adding one kustomization per folder.
///
/// It takes the manifest by value and drops each object's text once it is in its file, so the
/// output is held once, not twice.
pub fn render(manifest: Manifest) -> Result<OutputTree, InternalError> {
    let Manifest {
        objects,
        folders: listed,
        extras,
    } = manifest;
    let mut rendered = Rendered::default();
    rendered.add_objects(objects)?;
    rendered.finish(&listed, extras)
}

/// Objects rendered into their files so far, with the files and declaration sources of each
/// kustomization folder: a tree built in parts (the driver renders each cell's objects as soon
/// as the cell is lowered, so the lowered objects of the whole fleet are never held at once),
/// then finished by [`Rendered::finish`] into the same bytes as [`render`].
#[derive(Debug, Default)]
pub struct Rendered {
    tree: OutputTree,
    folder_files: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
}

impl Rendered {
    /// Renders `objects` into their files (header and body), dropping each object's text once it
    /// is in its file.
    pub fn add_objects(&mut self, objects: Vec<Object>) -> Result<(), InternalError> {
        // One header buffer for every object, and each object's text becomes its file in place:
        // the header is moved in front of it within the text's own buffer, which the streaming
        // writer allocated with room to spare, so no file is allocated and copied again.
        let mut head = String::new();
        for object in objects {
            let Object {
                folder,
                file,
                sources,
                body,
            } = object;
            let path = format!("{folder}/{file}");
            head.clear();
            write_header(&mut head, &sources);
            let mut text = body.0;
            text.insert_str(0, &head);
            let text = text.into_bytes();
            if self.tree.insert(path.clone(), text).is_some() {
                return Err(InternalError(format!("two objects are written to {path}")));
            }
            let entry = self.folder_files.entry(folder).or_default();
            entry.0.insert(file);
            entry.1.extend(sources);
        }
        Ok(())
    }

    /// Adds files that are not objects (a cell's reports and IAM documents), outside every
    /// kustomization; a path already taken is an error, as in [`Rendered::finish`].
    pub fn add_extras(&mut self, extras: Vec<Extra>) -> Result<(), InternalError> {
        for extra in extras {
            if self.tree.contains_key(&extra.path) {
                return Err(InternalError(format!(
                    "two files are written to {}",
                    extra.path
                )));
            }
            self.tree.insert(extra.path, extra.contents);
        }
        Ok(())
    }

    /// The files rendered so far.
    pub fn files(&self) -> &OutputTree {
        &self.tree
    }

    /// Hands over the files rendered so far, each path checked as [`Rendered::finish`] checks
    /// them, keeping what the kustomizations need (each folder's file names and sources).
    pub fn take_files(&mut self) -> Result<OutputTree, InternalError> {
        for path in self.tree.keys() {
            check_path(path)?;
        }
        Ok(std::mem::take(&mut self.tree))
    }

    /// Adds what another part rendered; a path both hold is an error, as in [`render`].
    pub fn merge(&mut self, other: Rendered) -> Result<(), InternalError> {
        let Rendered {
            mut tree,
            folder_files,
        } = other;
        if let Some(path) = tree.keys().find(|path| self.tree.contains_key(*path)) {
            return Err(InternalError(format!("two objects are written to {path}")));
        }
        self.tree.append(&mut tree);
        for (folder, (files, sources)) in folder_files {
            let entry = self.folder_files.entry(folder).or_default();
            entry.0.extend(files);
            entry.1.extend(sources);
        }
        Ok(())
    }

    /// Adds one kustomization per folder (its files and the child folders `listed` names) and
    /// the non-object files, and returns the whole tree.
    pub fn finish(
        self,
        listed: &BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
        extras: Vec<Extra>,
    ) -> Result<OutputTree, InternalError> {
        let Rendered {
            mut tree,
            mut folder_files,
        } = self;
        let mut folders: BTreeSet<String> = folder_files.keys().cloned().collect();
        folders.extend(listed.keys().cloned());
        for folder in folders {
            let (files, mut sources) = folder_files.remove(&folder).unwrap_or_default();
            let mut resources: Vec<String> = files.into_iter().collect();
            if let Some((children, child_sources)) = listed.get(&folder) {
                resources.extend(children.iter().cloned());
                sources.extend(child_sources.iter().cloned());
            }
            resources.sort();
            let body = Yaml::map([
                ("apiVersion", Yaml::str("kustomize.config.k8s.io/v1beta1")),
                ("kind", Yaml::str("Kustomization")),
                (
                    "resources",
                    Yaml::Seq(resources.into_iter().map(Yaml::Str).collect()),
                ),
            ]);
            let mut text = header(&sources);
            text.push_str(&yaml::to_string(&body));
            let path = format!("{folder}/kustomization.yaml");
            if tree.contains_key(&path) {
                return Err(InternalError(format!("two files are written to {path}")));
            }
            tree.insert(path, text.into_bytes());
        }
        for extra in extras {
            if tree.contains_key(&extra.path) {
                return Err(InternalError(format!(
                    "two files are written to {}",
                    extra.path
                )));
            }
            tree.insert(extra.path, extra.contents);
        }
        tree.insert(
            MARKER.to_string(),
            b"This folder is generated by tenantc and replaced as a whole on every build.\n"
                .to_vec(),
        );
        for path in tree.keys() {
            check_path(path)?;
        }
        Ok(tree)
    }
}

/// Paths stay relative, inside the output folder, and made of safe characters only.
fn check_path(path: &str) -> Result<(), InternalError> {
    let safe = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-' | '/');
    let bad = path.is_empty()
        || path.starts_with('/')
        || !path.chars().all(safe)
        || path
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(InternalError(format!(
            "output path `{path}` is not a plain relative path"
        )));
    }
    Ok(())
}

fn is_extended_resource(name: &str) -> bool {
    // Standard resources have no domain; `kubernetes.io/` names are reserved for the system.
    name.contains('/') && !name.starts_with("kubernetes.io/")
}

/// Refuses a ResourceQuota key that the API server accepts but never enforces.
fn check_quota(quota: &ResourceQuota) -> Result<(), InternalError> {
    let hard = quota.spec.as_ref().and_then(|spec| spec.hard.as_ref());
    for key in hard.into_iter().flat_map(BTreeMap::keys) {
        // DRA device counts (`<class>.deviceclass.resource.k8s.io/devices`) are the one
        // enforced key with a domain and no `requests.` prefix.
        let dra_devices = key.ends_with(".deviceclass.resource.k8s.io/devices");
        let not_enforced = key.starts_with("limits.") && is_extended_resource(key)
            || !key.starts_with("requests.") && is_extended_resource(key) && !dra_devices;
        if not_enforced {
            return Err(InternalError(format!(
                "ResourceQuota key `{key}` would be accepted but never enforced"
            )));
        }
    }
    Ok(())
}

/// Refuses a Container LimitRange that would inject an extended resource into every container.
fn check_limit_range(limits: &LimitRange) -> Result<(), InternalError> {
    let items = limits.spec.as_ref().map(|spec| spec.limits.as_slice());
    for limit in items.unwrap_or_default() {
        if limit.type_ != "Container" {
            continue;
        }
        for (part, resources) in [
            ("default", &limit.default),
            ("defaultRequest", &limit.default_request),
            ("min", &limit.min),
            ("max", &limit.max),
            ("maxLimitRequestRatio", &limit.max_limit_request_ratio),
        ] {
            if let Some(key) = resources
                .iter()
                .flat_map(BTreeMap::keys)
                .find(|key| is_extended_resource(key))
            {
                return Err(InternalError(format!(
                    "Container LimitRange `{part}` on `{key}` would inject it into every container"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(keys: &[&str]) -> ResourceQuota {
        use k8s_openapi::api::core::v1::ResourceQuotaSpec;
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        ResourceQuota {
            spec: Some(ResourceQuotaSpec {
                hard: Some(
                    keys.iter()
                        .map(|key| (key.to_string(), Quantity("1".to_string())))
                        .collect(),
                ),
                ..ResourceQuotaSpec::default()
            }),
            ..ResourceQuota::default()
        }
    }

    #[test]
    fn refuses_quota_keys_that_are_not_enforced() {
        for key in [
            "limits.nvidia.com/gpu",
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/gpu",
        ] {
            assert!(Body::of(&quota(&[key])).is_err(), "{key} must be refused");
        }
        assert!(
            Body::of(&quota(&[
                "requests.nvidia.com/gpu",
                "requests.cpu",
                "limits.memory",
                "pods",
                "gpu.nvidia.com.deviceclass.resource.k8s.io/devices",
            ]))
            .is_ok()
        );
    }

    #[test]
    fn an_object_is_identified_from_its_text() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let config_map = |namespace: Option<&str>| ConfigMap {
            metadata: ObjectMeta {
                // A name the writer quotes, and labels whose keys look like metadata keys.
                name: Some("0-params".to_string()),
                namespace: namespace.map(str::to_string),
                labels: Some(BTreeMap::from([
                    ("name".to_string(), "other".to_string()),
                    ("namespace".to_string(), "other".to_string()),
                ])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("kind".to_string(), "Secret".to_string())])),
            ..ConfigMap::default()
        };
        assert_eq!(
            Body::of(&config_map(Some("team-a"))).unwrap().identity(),
            ("ConfigMap".into(), "team-a".into(), "0-params".into())
        );
        assert_eq!(
            Body::of(&config_map(None)).unwrap().identity(),
            ("ConfigMap".into(), String::new(), "0-params".into())
        );
    }

    #[test]
    fn refuses_gpu_resources_in_container_limit_ranges() {
        use k8s_openapi::api::core::v1::{LimitRangeItem, LimitRangeSpec};
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let limit_range = |type_: &str, key: &str| LimitRange {
            spec: Some(LimitRangeSpec {
                limits: vec![LimitRangeItem {
                    type_: type_.to_string(),
                    max: Some(BTreeMap::from([(
                        key.to_string(),
                        Quantity("1".to_string()),
                    )])),
                    ..LimitRangeItem::default()
                }],
            }),
            ..LimitRange::default()
        };
        assert!(Body::of(&limit_range("Container", "nvidia.com/mig-1g.10gb")).is_err());
        assert!(Body::of(&limit_range("Container", "cpu")).is_ok());
        assert!(Body::of(&limit_range("Pod", "nvidia.com/gpu")).is_ok());
    }

    #[test]
    fn a_header_stays_one_comment_line_whatever_the_source_paths_hold() {
        let hostile = [
            "tenants/x\nnamespace: kube-system\n#/a.kdl",
            "tenants/cr\rreturn.kdl",
            "tenants/nel\u{85}line.kdl",
            "tenants/ls\u{2028}ps\u{2029}.kdl",
            "tenants/nul\0bell\u{7}esc\u{1b}[31m.kdl",
            "tenants/bidi\u{202e}lrm\u{200e}bom\u{feff}.kdl",
            "tenants/back\\slash\tand tab.kdl",
            "tenants/ok.kdl",
        ];
        for path in hostile {
            let line = header(&BTreeSet::from([
                path.to_string(),
                "cells/c.kdl".to_string(),
            ]));
            let (body, end) = line.split_at(line.len() - 1);
            assert_eq!(end, "\n", "{line:?}");
            assert!(
                body.starts_with("# Code generated by tenantc from "),
                "{line:?}"
            );
            assert!(
                body.chars().all(|ch| (' '..='~').contains(&ch)),
                "a header holds printable ASCII only: {line:?}"
            );
        }
        let mut manifest = Manifest::default();
        manifest.extras.push(Extra {
            path: "cell/x\nnamespace: kube-system".into(),
            contents: Vec::new(),
        });
        assert!(
            render(manifest).is_err(),
            "an unsafe output path is refused"
        );
        let line = header(&BTreeSet::from(["tenants/x\n#.kdl".to_string()]));
        assert_eq!(
            line,
            "# Code generated by tenantc from tenants/x\\n#.kdl. DO NOT EDIT.\n"
        );
    }

    #[test]
    fn every_folder_gets_a_kustomization_and_every_file_a_header() {
        let mut manifest = Manifest {
            objects: vec![Object {
                folder: "cell/tenants/t".into(),
                file: "x.yaml".into(),
                sources: BTreeSet::from(["tenants/t.kdl".to_string()]),
                body: Body::of(&quota(&["pods"])).unwrap(),
            }],
            ..Manifest::default()
        };
        manifest.folders.insert(
            "cell".into(),
            (
                BTreeSet::from(["tenants/t".to_string()]),
                BTreeSet::from(["cells/cell.kdl".to_string()]),
            ),
        );
        let tree = render(manifest).unwrap();
        let paths: Vec<&str> = tree.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                ".tenantc",
                "cell/kustomization.yaml",
                "cell/tenants/t/kustomization.yaml",
                "cell/tenants/t/x.yaml"
            ]
        );
        let cell = String::from_utf8(tree["cell/kustomization.yaml"].clone()).unwrap();
        assert!(
            cell.starts_with("# Code generated by tenantc from cells/cell.kdl. DO NOT EDIT.\n")
        );
        assert!(cell.ends_with("resources:\n- tenants/t\n"));
    }
}
