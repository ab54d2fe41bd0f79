//! Argo CD and Flux objects (`argoproj.io/v1alpha1`, `kustomize.toolkit.fluxcd.io/v1`), typed,
//! for the subset tenantc emits, and the annotations that mark objects for replacement.
//!
//! Consumes: the values `lower/gitops.rs` decides on (repository, paths, destinations, sync
//! steps, dependencies).
//! Produces: [`ApplicationSet`] (with a list generator and a RollingSync strategy),
//! [`Application`] (what Argo CD generates from it, see [`ApplicationSet::applications`]) and
//! Flux [`Kustomization`] values that serialize through serde to the objects the controllers
//! expect.
//!
//! Version: the structs follow the CRDs vendored in `schema/crds/argocd/` (Argo CD v3.5.7) and
//! `schema/crds/flux/` (kustomize-controller v1.9.6); fields are in the order of the Go types.
//! Re-checking against a newer release: copy its CRDs over the vendored ones (the commands are
//! in `schema/crds/README.md`) and run `cargo test --locked --lib kube`.
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructors; every field exists in
//! the vendored CRD schema, and every enum has exactly the CRD's values where the CRD lists them
//! (both tested); the list generator's template names only keys every element has, and
//! [`ApplicationSet::applications`] expands it exactly as Argo CD's Go templates would for
//! these plain `{{.key}}` references.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

#[cfg(test)]
mod tests;

/// The API version of Argo CD's Application and ApplicationSet.
pub const ARGOCD_API_VERSION: &str = "argoproj.io/v1alpha1";
/// The API version of Flux's Kustomization.
pub const FLUX_API_VERSION: &str = "kustomize.toolkit.fluxcd.io/v1";

/// Argo CD's per-object sync options annotation.
pub const ARGOCD_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
/// The Argo CD sync options of an object whose immutable fields may change: `kubectl replace
/// --force`, which deletes and recreates it (a plain `Replace=true` is a PUT, which the API
/// server refuses on an immutable field just as it refuses a patch).
pub const ARGOCD_REPLACE: &str = "Force=true,Replace=true";
/// Flux's per-object annotation that recreates an object whose immutable fields changed.
pub const FLUX_FORCE: &str = "kustomize.toolkit.fluxcd.io/force";
/// The value of [`FLUX_FORCE`] that turns it on.
pub const FLUX_FORCE_ENABLED: &str = "enabled";

/// An Argo CD ApplicationSet.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSet {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace (Argo CD's) and labels.
    pub metadata: ObjectMeta,
    /// The generator, template and strategy.
    pub spec: ApplicationSetSpec,
}

impl ApplicationSet {
    /// An ApplicationSet with the given name in `namespace`.
    pub fn new(name: &str, namespace: &str, spec: ApplicationSetSpec) -> Self {
        Self {
            api_version: ARGOCD_API_VERSION,
            kind: "ApplicationSet",
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            spec,
        }
    }

    /// The Applications Argo CD generates: one per list element, with every `{{.key}}` of the
    /// template's strings replaced by the element's value.
    pub fn applications(&self) -> Vec<Application> {
        let mut applications = Vec::new();
        for generator in &self.spec.generators {
            for element in &generator.list.elements {
                let fill = |text: &str| {
                    element.iter().fold(text.to_string(), |text, (key, value)| {
                        text.replace(&format!("{{{{.{key}}}}}"), value)
                    })
                };
                let template = &self.spec.template;
                let labels = template.metadata.labels.as_ref().map(|labels| {
                    labels
                        .iter()
                        .map(|(key, value)| (key.clone(), fill(value)))
                        .collect::<BTreeMap<String, String>>()
                });
                let mut spec = template.spec.clone();
                spec.source.path = spec.source.path.as_deref().map(fill);
                applications.push(Application {
                    api_version: ARGOCD_API_VERSION,
                    kind: "Application",
                    metadata: ObjectMeta {
                        name: template.metadata.name.as_deref().map(fill),
                        namespace: self.metadata.namespace.clone(),
                        labels,
                        ..ObjectMeta::default()
                    },
                    spec,
                });
            }
        }
        applications
    }
}

/// The spec of an [`ApplicationSet`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetSpec {
    /// Go templates (`{{.key}}`) rather than the older fasttemplate syntax.
    pub go_template: bool,
    /// Options of the Go templates; `missingkey=error` fails on a key an element lacks.
    pub go_template_options: Vec<String>,
    /// The generators (one list generator).
    pub generators: Vec<Generator>,
    /// The template of every generated Application.
    pub template: ApplicationTemplate,
    /// The order in which generated Applications are synced.
    pub strategy: Strategy,
}

/// A generator of an [`ApplicationSet`]: an explicit list, which is deterministic and shows
/// every generated Application in review.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Generator {
    /// The list generator.
    pub list: ListGenerator,
}

/// The list generator: one Application per element.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ListGenerator {
    /// The elements, each a map of template keys to values.
    pub elements: Vec<BTreeMap<String, String>>,
}

/// The template of the generated Applications.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ApplicationTemplate {
    /// Name (templated) and labels (templated values).
    pub metadata: TemplateMeta,
    /// The Application spec.
    pub spec: ApplicationSpec,
}

/// The metadata of an [`ApplicationTemplate`].
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TemplateMeta {
    /// The name of each Application.
    pub name: Option<String>,
    /// Labels of each Application; the RollingSync steps select on them.
    pub labels: Option<BTreeMap<String, String>>,
}

/// How an ApplicationSet rolls out changes to its Applications.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    /// The strategy type.
    #[serde(rename = "type")]
    pub type_: StrategyType,
    /// The steps of a RollingSync.
    pub rolling_sync: RollingSync,
}

/// The strategy types of an ApplicationSet (the CRD does not list them as an enum).
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyType {
    /// Sync Applications in steps, each after the previous one is healthy.
    RollingSync,
}

/// The steps of a RollingSync.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RollingSync {
    /// The steps, in order.
    pub steps: Vec<RollingSyncStep>,
}

/// One step: the Applications whose labels match.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RollingSyncStep {
    /// Label requirements.
    pub match_expressions: Vec<MatchExpression>,
}

/// A label requirement of a RollingSync step.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MatchExpression {
    /// The label key.
    pub key: String,
    /// The operator (`In`).
    pub operator: String,
    /// The values.
    pub values: Vec<String>,
}

/// An Argo CD Application.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace (Argo CD's) and labels.
    pub metadata: ObjectMeta,
    /// What to sync where.
    pub spec: ApplicationSpec,
}

/// The spec of an [`Application`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The folder to sync.
    pub source: ApplicationSource,
    /// The cluster to sync it to.
    pub destination: ApplicationDestination,
    /// The AppProject.
    pub project: String,
    /// Automation and sync options.
    pub sync_policy: SyncPolicy,
}

/// A Git folder of an [`Application`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSource {
    /// The repository URL.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// The folder inside the repository.
    pub path: Option<String>,
    /// The branch, tag or commit.
    pub target_revision: String,
}

/// The cluster of an [`Application`]: a server URL or a registered name.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ApplicationDestination {
    /// The API server URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The cluster name registered in Argo CD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// How an [`Application`] syncs.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SyncPolicy {
    /// Automatic sync.
    pub automated: AutomatedSync,
    /// Sync options such as `ServerSideApply=true`.
    pub sync_options: Vec<String>,
}

/// Automatic sync settings.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AutomatedSync {
    /// Delete objects that disappeared from Git.
    pub prune: bool,
    /// Revert changes made in the cluster.
    pub self_heal: bool,
}

/// A Flux Kustomization: one folder of the repository, applied server-side.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Kustomization {
    api_version: &'static str,
    kind: &'static str,
    /// Name, namespace (Flux's) and labels.
    pub metadata: ObjectMeta,
    /// What to apply from where, after what.
    pub spec: KustomizationSpec,
}

impl Kustomization {
    /// A Kustomization with the given name in `namespace`.
    pub fn new(name: &str, namespace: &str, spec: KustomizationSpec) -> Self {
        Self {
            api_version: FLUX_API_VERSION,
            kind: "Kustomization",
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            spec,
        }
    }
}

/// The spec of a [`Kustomization`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpec {
    /// Kustomizations that must be ready before this one is applied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<DependencyReference>,
    /// How often it is reconciled (a Go duration).
    pub interval: String,
    /// The folder inside the source.
    pub path: String,
    /// Delete objects that disappeared from the folder.
    pub prune: bool,
    /// The source that holds the folder.
    pub source_ref: SourceReference,
}

/// A Kustomization this one waits for.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DependencyReference {
    /// Its name (same namespace).
    pub name: String,
}

/// The source of a [`Kustomization`].
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SourceReference {
    /// The kind of source.
    pub kind: SourceKind,
    /// Its name.
    pub name: String,
}

/// The source kinds the Kustomization CRD accepts.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// An OCI artifact.
    #[serde(rename = "OCIRepository")]
    OciRepository,
    /// A Git repository (what tenantc's declarations name).
    GitRepository,
    /// An object-storage bucket.
    Bucket,
    /// An artifact produced by another controller.
    ExternalArtifact,
}

impl SourceKind {
    /// Every value, in the order the CRD lists them.
    pub const ALL: [Self; 4] = [
        Self::OciRepository,
        Self::GitRepository,
        Self::Bucket,
        Self::ExternalArtifact,
    ];
}
