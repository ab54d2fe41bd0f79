//! Lowering: the validated fleet to Kubernetes objects.
//!
//! Consumes: a [`Fleet`] that validated without errors. Produces: a [`Manifest`] of objects,
//! each placed in its kustomization folder: `<cell>/cluster/` for cluster-scoped objects of the
//! cell, `<cell>/tenants/<tenant>/` for everything of one tenant (its namespaces included, so a
//! tenant folder applies on its own).
//!
//! Invariants:
//! - Pure and deterministic: cells, tenants, workloads and map keys are iterated in sorted order.
//! - A tenant's objects depend only on that tenant's declaration and its cells, so editing one
//!   tenant changes only files under that tenant's folders.
//! - Quota keys are built only as `requests.<resource>` from the resources a cell's pools offer.

pub mod gpu;
mod tenant;

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Catalog;
use crate::emit::yaml::Yaml;
use crate::emit::{Extra, Manifest, Object};
use crate::hardware;
use crate::model::{Cell, Fleet, Priority};
use crate::source::SourceMap;

/// Label on every emitted object.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "tenantc");
/// Label prefix of tenant metadata.
pub const LABEL_PREFIX: &str = "tenant.platform";

/// Lowers the whole fleet.
pub fn lower(fleet: &Fleet, sources: &SourceMap, base_catalog: &Catalog) -> Manifest {
    let mut manifest = Manifest::default();
    for cell in &fleet.cells {
        let catalog = hardware::cell_catalog(cell, base_catalog);
        let catalog = catalog.as_ref();
        let cell_source = sources.path(cell.file).to_string();
        let mut children = BTreeSet::new();
        let mut child_sources = BTreeSet::from([cell_source.clone()]);
        for priority in &cell.priorities {
            manifest.objects.push(Object {
                folder: format!("{}/cluster", cell.name.value),
                file: format!("priorityclass-{}.yaml", priority.name.value),
                sources: BTreeSet::from([cell_source.clone()]),
                body: priority_class(priority),
            });
        }
        if !cell.priorities.is_empty() {
            children.insert("cluster".to_string());
        }
        let operator_objects = gpu::operator_objects(cell, catalog);
        if !operator_objects.is_empty() {
            children.insert("gpu-operator".to_string());
        }
        for (file, body) in operator_objects {
            manifest.objects.push(Object {
                folder: format!("{}/gpu-operator", cell.name.value),
                file,
                sources: BTreeSet::from([cell_source.clone()]),
                body,
            });
        }
        let tenants_here: Vec<&crate::model::Tenant> = fleet
            .tenants
            .iter()
            .filter(|t| t.quota_in(&cell.name.value).is_some())
            .collect();
        let mut report_sources = BTreeSet::from([cell_source.clone()]);
        report_sources.extend(
            tenants_here
                .iter()
                .map(|t| sources.path(t.file).to_string()),
        );
        let (json_report, markdown) = gpu::capacity_report(cell, &tenants_here, catalog);
        let header = crate::emit::header(&report_sources);
        let mut json_text = serde_json::to_string_pretty(&serde_json::json!({
            "$comment": header.trim_start_matches("# ").trim_end(),
            "capacity": json_report,
        }))
        .unwrap_or_default();
        json_text.push('\n');
        manifest.extras.push(Extra {
            path: format!("{}/reports/capacity.json", cell.name.value),
            contents: json_text.into_bytes(),
        });
        manifest.extras.push(Extra {
            path: format!("{}/reports/capacity.md", cell.name.value),
            contents: format!(
                "<!-- {} -->\n{markdown}",
                header.trim_start_matches("# ").trim_end()
            )
            .into_bytes(),
        });
        for tenant in &fleet.tenants {
            let Some(quota) = tenant.quota_in(&cell.name.value) else {
                continue;
            };
            let tenant_source = sources.path(tenant.file).to_string();
            let folder = format!("{}/tenants/{}", cell.name.value, tenant.name.value);
            let object_sources = BTreeSet::from([cell_source.clone(), tenant_source]);
            for (file, body) in tenant::objects(tenant, quota, cell, catalog) {
                manifest.objects.push(Object {
                    folder: folder.clone(),
                    file,
                    sources: object_sources.clone(),
                    body,
                });
            }
            children.insert(format!("tenants/{}", tenant.name.value));
        }
        // The cell folder lists its tenants; the header names the folder, not each file, so
        // that editing a tenant never rewrites the cell's kustomization.
        child_sources.insert("tenants/".to_string());
        manifest
            .folders
            .insert(cell.name.value.clone(), (children, child_sources));
    }
    manifest
}

/// Standard metadata: name, optional namespace, sorted labels.
pub(crate) fn metadata(
    name: &str,
    namespace: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Yaml {
    let mut pairs = vec![("name".to_string(), Yaml::str(name))];
    if let Some(namespace) = namespace {
        pairs.push(("namespace".to_string(), Yaml::str(namespace)));
    }
    pairs.push((
        "labels".to_string(),
        Yaml::string_map(labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    ));
    Yaml::Map(pairs)
}

fn priority_class(priority: &Priority) -> Yaml {
    let labels = BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())]);
    let mut pairs = vec![
        ("apiVersion".to_string(), Yaml::str("scheduling.k8s.io/v1")),
        ("kind".to_string(), Yaml::str("PriorityClass")),
        (
            "metadata".to_string(),
            metadata(&priority.name.value, None, &labels),
        ),
        ("value".to_string(), Yaml::Int(priority.value.value)),
        (
            "preemptionPolicy".to_string(),
            Yaml::str(match priority.preempt.as_ref().map(|p| p.value) {
                Some(false) => "Never",
                _ => "PreemptLowerPriority",
            }),
        ),
        ("globalDefault".to_string(), Yaml::Bool(false)),
    ];
    if let Some(description) = &priority.description {
        pairs.push((
            "description".to_string(),
            Yaml::str(description.value.clone()),
        ));
    }
    Yaml::Map(pairs)
}

/// The cell's Kubernetes minor version as `v1.NN`, for Pod Security version pins.
pub(crate) fn kube_version(cell: &Cell) -> String {
    let (major, minor) = cell.kubernetes.value;
    format!("v{major}.{minor}")
}
