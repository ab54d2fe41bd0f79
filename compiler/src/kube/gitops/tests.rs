//! Tests of the Argo CD and Flux structs: every field against the vendored CRD schemas.
//!
//! Consumes: the CRDs in `schema/crds/argocd/` and `schema/crds/flux/` (compiled in with
//! `include_str!`).
//! Produces: nothing; assertions only.
//!
//! Invariant: the maximal instances below are written as full struct literals (no
//! `..Default::default()`), so a field added to a struct does not compile until it is set here
//! and thereby checked against the CRD.

use serde_json::Value;

use super::*;
use crate::kube::crd_schema;

const APPLICATION_CRD: &str = include_str!("../../../../schema/crds/argocd/application-crd.yaml");
const APPLICATION_SET_CRD: &str =
    include_str!("../../../../schema/crds/argocd/applicationset-crd.yaml");
const KUSTOMIZATION_CRD: &str =
    include_str!("../../../../schema/crds/flux/kustomize.toolkit.fluxcd.io_kustomizations.yaml");

fn schema(crd_text: &str, version: &str) -> Value {
    let crd = crd_schema::load(crd_text).unwrap();
    let served = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == version)
        .unwrap();
    assert_eq!(served["served"], true, "{version} is not served");
    assert_eq!(served["storage"], true, "{version} is not stored");
    crd_schema::version_schema(&crd, version).unwrap().clone()
}

fn fits(crd_text: &str, version: &str, object: &impl Serialize) {
    let value = serde_json::to_value(object).unwrap();
    let found = crd_schema::violations(&schema(crd_text, version), &value);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

fn element(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn maximal_application_set() -> ApplicationSet {
    ApplicationSet::new(
        "tenantc-us-east-1a",
        "argocd",
        ApplicationSetSpec {
            go_template: true,
            go_template_options: strings(&["missingkey=error"]),
            generators: vec![Generator {
                list: ListGenerator {
                    elements: vec![
                        element(&[
                            ("name", "c-cluster"),
                            ("path", "out/c/cluster"),
                            ("step", "1"),
                        ]),
                        element(&[
                            ("name", "c-tenant-a"),
                            ("path", "out/c/tenants/a"),
                            ("step", "3"),
                        ]),
                    ],
                },
            }],
            template: ApplicationTemplate {
                metadata: TemplateMeta {
                    name: Some("{{.name}}".to_string()),
                    labels: Some(element(&[("tenantc.io/sync-step", "{{.step}}")])),
                },
                spec: ApplicationSpec {
                    source: ApplicationSource {
                        repo_url: "https://git.example.com/platform/fleet.git".to_string(),
                        path: Some("{{.path}}".to_string()),
                        target_revision: "main".to_string(),
                    },
                    destination: ApplicationDestination {
                        server: Some("https://kubernetes.default.svc".to_string()),
                        name: Some("in-cluster".to_string()),
                    },
                    project: "default".to_string(),
                    sync_policy: SyncPolicy {
                        automated: AutomatedSync {
                            prune: true,
                            self_heal: true,
                        },
                        sync_options: strings(&["ServerSideApply=true", "CreateNamespace=false"]),
                    },
                },
            },
            strategy: Strategy {
                type_: StrategyType::RollingSync,
                rolling_sync: RollingSync {
                    steps: vec![RollingSyncStep {
                        match_expressions: vec![MatchExpression {
                            key: "tenantc.io/sync-step".to_string(),
                            operator: "In".to_string(),
                            values: strings(&["1"]),
                        }],
                    }],
                },
            },
        },
    )
}

fn maximal_kustomization() -> Kustomization {
    Kustomization::new(
        "us-east-1a-tenant-acme",
        "flux-system",
        KustomizationSpec {
            depends_on: vec![DependencyReference {
                name: "us-east-1a-cluster".to_string(),
            }],
            interval: "10m".to_string(),
            path: "./out/us-east-1a/tenants/acme".to_string(),
            prune: true,
            source_ref: SourceReference {
                kind: SourceKind::GitRepository,
                name: "flux-system".to_string(),
            },
        },
    )
}

#[test]
fn every_field_of_a_maximal_instance_exists_in_the_crd_schema() {
    let set = maximal_application_set();
    fits(APPLICATION_SET_CRD, "v1alpha1", &set);
    let applications = set.applications();
    assert_eq!(applications.len(), 2);
    for application in &applications {
        fits(APPLICATION_CRD, "v1alpha1", application);
    }
    fits(KUSTOMIZATION_CRD, "v1", &maximal_kustomization());
}

#[test]
fn the_checker_fails_a_kustomization_with_a_field_the_crd_lacks() {
    let mut value = serde_json::to_value(maximal_kustomization()).unwrap();
    let spec = value["spec"].as_object_mut().unwrap();
    let prune = spec.remove("prune").unwrap();
    spec.insert("purne".to_string(), prune);
    let found = crd_schema::violations(&schema(KUSTOMIZATION_CRD, "v1"), &value);
    assert!(
        found
            .iter()
            .any(|line| line.contains("`purne` is not in the schema")),
        "{found:?}"
    );
    assert!(found.iter().any(|line| line.contains("prune")), "{found:?}");
}

#[test]
fn generated_applications_fill_every_template_key() {
    let applications = maximal_application_set().applications();
    let names: Vec<_> = applications
        .iter()
        .map(|application| application.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["c-cluster", "c-tenant-a"]);
    let text = serde_json::to_string(&applications).unwrap();
    assert!(!text.contains("{{"), "{text}");
    assert!(text.contains("\"path\":\"out/c/tenants/a\""), "{text}");
    assert!(text.contains("\"tenantc.io/sync-step\":\"3\""), "{text}");
    assert_eq!(
        applications[0].metadata.namespace.as_deref(),
        Some("argocd")
    );
}

#[test]
fn source_kinds_are_exactly_the_crds() {
    let schema = schema(KUSTOMIZATION_CRD, "v1");
    let node = crd_schema::schema_at(&schema, &["spec", "sourceRef", "kind"]).unwrap();
    let listed: Vec<&str> = node["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value.as_str().unwrap())
        .collect();
    let ours: Vec<String> = SourceKind::ALL
        .iter()
        .map(|kind| {
            serde_json::to_value(kind)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(listed, ours);
}
