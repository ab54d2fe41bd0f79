//! Lowering: the plan to Kubernetes objects.
//!
//! Consumes: a [`Plan`], and nothing else. Produces: a [`Manifest`] of typed objects serialized into the canonical
//! YAML tree, each placed in its kustomization folder: `<cell>/cluster/` (PriorityClasses, the
//! tenant ClusterRoles, the admission policies of `guard.rs`, the RuntimeClasses, and the tenant
//! admission policy and its params namespace),
//! `<cell>/kueue/` (ResourceFlavors, Topologies, Cohorts, WorkloadPriorityClasses) or, in a
//! cell whose scheduler is Volcano, `<cell>/volcano/` (the org Queues of `volcano.rs`),
//! `<cell>/gpu-operator/`, `<cell>/metering/` (the chargeback PrometheusRule of `metering.rs`),
//! `<cell>/serving/` (the per-tenant routes and gateway policies of the cell's shared models,
//! `serving.rs`), `<cell>/tenants/<tenant>/` for everything of one tenant (its
//! namespaces, ClusterQueue or Volcano Queue and NetworkPolicies included, so a tenant folder
//! applies on its own), and
//! `<cell>/reports/` (capacity, quota and showback), the fleet's `reports/` (showback over every
//! cell and its page, `index.html`), and, outside every kustomization, `<cell>/iam/<tenant>/` for the storage IAM
//! documents of `iam.rs`.
//!
//! Invariants:
//! - A plain mapping: every number and name comes from the plan; nothing here recomputes
//!   hardware offers or quotas.
//! - Every object is a typed struct (`k8s-openapi` for core kinds, `kube::kueue` for Kueue,
//!   `kube::volcano` for Volcano), so a misspelt field cannot compile.
//! - Pure and deterministic: the plan is sorted, and so is every map here.
//! - A tenant's objects depend only on that tenant's declaration and its cells, so editing one
//!   tenant changes only files under that tenant's folders, the root cohort (which holds the
//!   capacity no tenant reserved) and the reports.

pub mod admission;
pub mod cel;
pub mod dra;
pub mod engines;
pub mod gitops;
pub mod gpu;
pub mod guard;
pub mod iam;
mod kueue;
pub mod metering;
pub mod network;
pub mod rbac;
mod runtime;
pub mod serving;
mod tenant;
mod volcano;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::emit::Body;
use crate::emit::{Extra, InternalError, Manifest, Object};
use crate::kube::labels::{MANAGED_BY, NAMESPACE_NAME_LABEL};
use crate::layout::CellFolder;
use crate::model::Scheduler;
use crate::plan::{CellPlan, Plan, PriorityPlan};

/// Lowers the whole plan: the only input is the plan, so nothing here can read a declaration or
/// recompute what resolve decided.
///
/// Cells are lowered on their own, in parallel on the current rayon pool, and joined in the
/// plan's cell order, so the manifest is the same on any number of threads; what a cell's
/// lowering adds (a new folder, a new kind) stays inside [`lower_cell`].
pub fn lower(plan: &Plan) -> Result<Manifest, InternalError> {
    let cells = lower_each(plan, Ok)?;
    let mut manifest = Manifest::default();
    for cell in cells {
        manifest.objects.extend(cell.objects);
        manifest.extras.extend(cell.extras);
        manifest.folders.extend(cell.folders);
    }
    fleet_reports(&mut manifest, plan);
    Ok(manifest)
}

/// Lowers each cell on the current rayon pool and hands its manifest to `each` on the thread
/// that lowered it, as soon as it is lowered, so a caller that turns it into something smaller
/// (the driver renders it into files) never holds the lowered objects of the whole fleet.
/// Returns what `each` returned, in the plan's cell order; the error of the first failing cell
/// in that order, whichever thread finished first. [`lower`] is this, joined, with
/// [`fleet_manifest`] after the cells.
pub fn lower_each<T: Send>(
    plan: &Plan,
    each: impl Fn(Manifest) -> Result<T, InternalError> + Sync,
) -> Result<Vec<T>, InternalError> {
    use rayon::prelude::*;
    plan.cells
        .par_iter()
        .map(|cell| lower_cell(cell).and_then(&each))
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

/// The files that depend on every cell: the fleet's `reports/` (showback over every cell and its
/// page), which [`lower`] adds after the cells.
pub fn fleet_manifest(plan: &Plan) -> Manifest {
    let mut manifest = Manifest::default();
    fleet_reports(&mut manifest, plan);
    manifest
}

/// Every file of one cell: its folders, its tenants' folders, its GitOps objects and its
/// reports, from the cell's plan alone.
fn lower_cell(cell_plan: &CellPlan) -> Result<Manifest, InternalError> {
    let mut manifest = Manifest::default();
    {
        let cell_name = &cell_plan.name;
        let cell_source = cell_plan.source.clone();
        let cell_only = BTreeSet::from([cell_source.clone()]);
        let mut iam_files = Vec::new();
        let mut children: BTreeSet<CellFolder> = BTreeSet::new();
        let mut push =
            |folder: &CellFolder, file: String, sources: BTreeSet<String>, body: Body| {
                manifest.objects.push(Object {
                    folder: format!("{cell_name}/{}", folder.path()),
                    file,
                    sources,
                    body,
                });
            };
        for priority in &cell_plan.priorities {
            push(
                &CellFolder::Cluster,
                format!("priorityclass-{}.yaml", priority.name),
                cell_only.clone(),
                body(&priority_class(priority))?,
            );
        }
        for (file, body) in
            rbac::cluster_roles(cell_plan.backends.scheduler, cell_plan.backends.devices)?
        {
            push(&CellFolder::Cluster, file, cell_only.clone(), body);
        }
        for (file, body) in guard::cell_objects(cell_plan)? {
            push(&CellFolder::Cluster, file, cell_only.clone(), body);
        }
        for (file, body) in runtime::objects(cell_plan)? {
            push(&CellFolder::Cluster, file, cell_only.clone(), body);
        }
        for (file, body) in admission::cell_objects(cell_plan)? {
            push(&CellFolder::Cluster, file, cell_only.clone(), body);
        }
        for (file, body) in dra::cell_objects(cell_plan)? {
            push(&CellFolder::Cluster, file, cell_only.clone(), body);
        }
        children.insert(CellFolder::Cluster);
        // The scheduler's cell-wide objects, in its own folder.
        let (scheduler_folder, scheduler_objects) = match cell_plan.backends.scheduler {
            Scheduler::Kueue => (CellFolder::Kueue, kueue::cell_objects(cell_plan)?),
            Scheduler::Volcano => (CellFolder::Volcano, volcano::cell_objects(cell_plan)?),
        };
        for (file, body, tenants) in scheduler_objects {
            let mut sources = cell_only.clone();
            sources.extend(tenants);
            push(&scheduler_folder, file, sources, body);
            children.insert(scheduler_folder.clone());
        }
        for (file, object) in gpu::operator_objects(&cell_plan.gpu) {
            push(
                &CellFolder::GpuOperator,
                file,
                cell_only.clone(),
                body(&object)?,
            );
            children.insert(CellFolder::GpuOperator);
        }
        for (file, body) in metering::cell_objects(cell_plan)? {
            push(&CellFolder::Metering, file, cell_only.clone(), body);
            children.insert(CellFolder::Metering);
        }
        if let Some(serving_plan) = &cell_plan.serving {
            let objects = serving::objects(serving_plan)?;
            if !objects.is_empty() {
                children.insert(CellFolder::Serving);
            }
            for (file, body) in objects {
                push(&CellFolder::Serving, file, cell_only.clone(), body);
            }
        }
        for tenant in &cell_plan.tenants {
            let sources = BTreeSet::from([cell_source.clone(), tenant.source.clone()]);
            let folder = CellFolder::Tenant(tenant.name.clone());
            for (file, body) in tenant::objects(tenant, cell_plan)? {
                push(&folder, file, sources.clone(), body);
            }
            let queues = match cell_plan.backends.scheduler {
                Scheduler::Kueue => kueue::tenant_objects(tenant, cell_plan)?,
                Scheduler::Volcano => volcano::tenant_objects(tenant)?,
            };
            for (file, body) in queues {
                push(&folder, file, sources.clone(), body);
            }
            for (file, body) in network::objects(tenant, cell_plan)? {
                push(&folder, file, sources.clone(), body);
            }
            for (file, body) in dra::tenant_objects(tenant, cell_plan)? {
                push(&folder, file, sources.clone(), body);
            }
            for (file, body) in admission::tenant_objects(tenant, cell_plan)? {
                push(&folder, file, sources.clone(), body);
            }
            for (file, body) in guard::tenant_objects(tenant, cell_plan)? {
                push(&folder, file, sources.clone(), body);
            }
            children.insert(folder);
            if let Some(storage) = &cell_plan.storage {
                let header = crate::emit::header(&sources);
                iam_files.extend(iam::files(cell_name, storage, tenant, &header)?);
            }
        }
        for (folder, file, body, tenant) in gitops::cell_objects(cell_plan, &children)? {
            let mut sources = cell_only.clone();
            match tenant.and_then(|name| cell_plan.tenants.iter().find(|t| t.name == name)) {
                Some(tenant) => {
                    sources.insert(tenant.source.clone());
                }
                // The list of tenant folders: named by the folder, as in the cell's
                // kustomization, so editing a tenant never rewrites it.
                None if folder == gitops::ARGOCD_FOLDER => {
                    sources.insert("tenants/".to_string());
                }
                None => {}
            }
            manifest.objects.push(Object {
                folder: folder.to_string(),
                file,
                sources,
                body,
            });
        }
        manifest.extras.extend(iam_files);
        reports(&mut manifest, cell_plan);
        // The cell folder lists its tenants; the header names the folder, not each file, so
        // that editing a tenant never rewrites the cell's kustomization.
        let child_sources = BTreeSet::from([cell_source, "tenants/".to_string()]);
        let child_paths = children.iter().map(CellFolder::path).collect();
        manifest
            .folders
            .insert(cell_name.clone(), (child_paths, child_sources));
    }
    Ok(manifest)
}

/// The folder of `out/` with the fleet-wide reports, which no cell may be named.
pub const FLEET_REPORTS_FOLDER: &str = "reports";

/// A report's JSON body under its name, with the generated-file comment, as text.
fn json_report(comment: &str, name: &str, body: serde_json::Value) -> Vec<u8> {
    // The body is moved in, not serialized into a copy as `json!` would.
    let report: serde_json::Map<String, serde_json::Value> = [
        ("$comment".to_string(), serde_json::Value::from(comment)),
        (name.to_string(), body),
    ]
    .into_iter()
    .collect();
    let mut json_text = serde_json::to_string_pretty(&report).unwrap_or_default();
    json_text.push('\n');
    json_text.into_bytes()
}

/// The showback report in its three forms, under `folder`.
fn showback_files(
    manifest: &mut Manifest,
    folder: &str,
    comment: &str,
    (json, markdown, csv): (serde_json::Value, String, String),
) {
    manifest.extras.push(Extra {
        path: format!("{folder}/showback.json"),
        contents: json_report(comment, "showback", json),
    });
    manifest.extras.push(Extra {
        path: format!("{folder}/showback.md"),
        contents: format!("<!-- {comment} -->\n{markdown}").into_bytes(),
    });
    manifest.extras.push(Extra {
        path: format!("{folder}/showback.csv"),
        contents: format!("# {comment}\n{csv}").into_bytes(),
    });
}

/// The fleet-wide reports: showback over every cell, and the showback page, made in parallel on
/// the current rayon pool and added in that order.
fn fleet_reports(manifest: &mut Manifest, plan: &Plan) {
    if plan.cells.is_empty() {
        return;
    }
    // Every cell and tenant adds to them: the header names the folders, not each file.
    let sources = BTreeSet::from(["cells/".to_string(), "tenants/".to_string()]);
    let header = crate::emit::header(&sources);
    let comment = header.trim_start_matches("# ").trim_end().to_string();
    let (showback, index) = rayon::join(
        || {
            let mut showback = Manifest::default();
            showback_files(
                &mut showback,
                FLEET_REPORTS_FOLDER,
                &comment,
                crate::report::showback::fleet_report(plan),
            );
            showback.extras
        },
        || crate::report::html::index(plan, &comment),
    );
    manifest.extras.extend(showback);
    manifest.extras.push(Extra {
        path: format!("{FLEET_REPORTS_FOLDER}/index.html"),
        contents: index.into_bytes(),
    });
}

/// The cell's reports: capacity, quota and showback.
fn reports(manifest: &mut Manifest, cell_plan: &CellPlan) {
    let mut report_sources = BTreeSet::from([cell_plan.source.clone()]);
    report_sources.extend(cell_plan.tenants.iter().map(|t| t.source.clone()));
    let header = crate::emit::header(&report_sources);
    let comment = header.trim_start_matches("# ").trim_end().to_string();
    let (json_report, markdown) = crate::report::capacity(cell_plan);
    let (quota_json, quota_markdown) = crate::report::quota(cell_plan);
    for (name, json, markdown) in [
        ("capacity", json_report, markdown),
        ("quota", quota_json, quota_markdown),
    ] {
        manifest.extras.push(Extra {
            path: format!("{}/reports/{name}.json", cell_plan.name),
            contents: self::json_report(&comment, name, json),
        });
        manifest.extras.push(Extra {
            path: format!("{}/reports/{name}.md", cell_plan.name),
            contents: format!("<!-- {comment} -->\n{markdown}").into_bytes(),
        });
    }
    // Kueue's DRA configuration is the platform's to merge into the Configuration its Kueue
    // runs with; it is written beside the reports, outside every kustomization.
    if let Some(configuration) = cell_plan.dra.as_ref().and_then(dra::kueue_configuration)
        && let Ok(text) = Body::of(&configuration)
    {
        manifest.extras.push(Extra {
            path: format!(
                "{}/reports/{}",
                cell_plan.name,
                dra::KUEUE_CONFIGURATION_FILE
            ),
            contents: format!("{header}{}", text.as_str()).into_bytes(),
        });
    }
    showback_files(
        manifest,
        &format!("{}/reports", cell_plan.name),
        &comment,
        crate::report::showback::cell_report(cell_plan),
    );
}

/// The namespace selector of a tenant's admission bindings: its namespaces by exact name, so a
/// tenant whose name prefixes another's (`acme`, `acme-research`) never selects the other's.
pub(crate) fn tenant_namespaces(
    tenant: &crate::plan::TenantPlan,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_string(),
            operator: "In".to_string(),
            values: Some(
                tenant
                    .namespaces
                    .iter()
                    .map(|namespace| namespace.name.clone())
                    .collect(),
            ),
        }]),
        match_labels: None,
    }
}

/// Writes a typed object as its canonical YAML text ([`Body::of`]).
pub(crate) fn body<T: Serialize + std::any::Any>(object: &T) -> Result<Body, InternalError> {
    Body::of(object)
}

/// `app.kubernetes.io/managed-by: tenantc`.
pub(crate) fn managed_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())])
}

/// Metadata of a cluster-scoped object managed by tenantc.
pub(crate) fn cluster_meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(managed_labels()),
        ..ObjectMeta::default()
    }
}

fn priority_class(priority: &PriorityPlan) -> PriorityClass {
    PriorityClass {
        // Its value and preemption policy are immutable.
        metadata: ObjectMeta {
            annotations: Some(gitops::replace_annotations()),
            ..cluster_meta(&priority.name)
        },
        value: i32::try_from(priority.value).unwrap_or(i32::MAX),
        // Never, whatever the cell declares: kube-scheduler would otherwise preempt other
        // tenants' pods on shared nodes. Preemption follows the Kueue settings only (the
        // cell's `preempt` decides `withinClusterQueue` of each tenant's ClusterQueue).
        preemption_policy: Some("Never".to_string()),
        global_default: Some(false),
        description: priority.description.clone(),
    }
}

/// The cell's Kubernetes minor version as `v1.NN`, for Pod Security version pins.
pub(crate) fn kube_version(cell: &CellPlan) -> String {
    let (major, minor) = cell.kubernetes;
    format!("v{major}.{minor}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::validate::test_support::{compile_files, example_files};

    #[test]
    fn lowering_reads_the_plan_alone() {
        // The signature is the contract: a plan in, a manifest out, nothing else to read.
        let lower_plan: fn(&Plan) -> Result<Manifest, InternalError> = lower;
        let files = example_files();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let compilation = compile_files(&borrowed);
        let output = compilation.output.expect("the example fleet builds");
        let plan = compilation.plan.expect("a plan");
        // The declarations are gone; the plan still lowers to the same bytes.
        drop(compilation.fleet);
        let tree = crate::emit::render(lower_plan(&plan).unwrap()).unwrap();
        assert!(tree.len() > 100, "{} files", tree.len());
        for (path, bytes) in &tree {
            assert_eq!(output.get(path), Some(bytes), "{path}");
        }
        // Only the platform templates' objects (and their folders' kustomizations) come on top.
        let extra: Vec<&String> = output
            .keys()
            .filter(|path| !tree.contains_key(*path))
            .filter(|path| !path.contains("/templates/") && !path.ends_with("kustomization.yaml"))
            .collect();
        assert!(extra.is_empty(), "{extra:?}");
    }
}
