//! The objects of one tenant in one cell.
//!
//! Consumes: a tenant, its quota in the cell, and the cell. Produces: per workload kind a
//! Namespace, a ServiceAccount, RoleBindings for the tenant's groups, one ResourceQuota and one
//! LimitRange, each with its file path inside the tenant folder.
//!
//! Invariants:
//! - The ResourceQuota lists every GPU and MIG resource the cell offers as `requests.<name>`,
//!   zero where the tenant reserved nothing (deny by default), plus `requests.cpu`,
//!   `requests.memory` and `pods`.
//! - The LimitRange sets Container defaults for cpu and memory only, never for an extended
//!   resource (a default there would inject GPU requests into every container).

use std::collections::BTreeMap;

use super::{LABEL_PREFIX, MANAGED_BY, kube_version, metadata};
use crate::catalog::Catalog;
use crate::emit::yaml::Yaml;
use crate::hardware::{self, GPU_RESOURCE};
use crate::model::{Cell, Quota, Tenant, Workload};
use crate::quantity::Quantity;

/// The default CPU request for containers that set none.
pub const DEFAULT_CPU: &str = "100m";
/// The default memory request for containers that set none.
pub const DEFAULT_MEMORY: &str = "256Mi";

/// Every object of the tenant in the cell, as `(path in the tenant folder, object)`.
pub(super) fn objects(
    tenant: &Tenant,
    quota: &Quota,
    cell: &Cell,
    catalog: &Catalog,
) -> Vec<(String, Yaml)> {
    let mut workloads: Vec<&Workload> = tenant.workloads.iter().collect();
    workloads.sort_by_key(|workload| workload.kind.value);
    let mut objects = Vec::new();
    for workload in workloads {
        let kind = workload.kind.value.as_str();
        // The one naming rule that `validate::namespaces` checks for collisions.
        let namespace =
            crate::validate::namespaces::namespace_name(&tenant.name.value, workload.kind.value);
        let labels = tenant_labels(tenant);
        objects.push((
            format!("{kind}/namespace.yaml"),
            namespace_object(tenant, workload, cell, &namespace),
        ));
        objects.push((
            format!(
                "{kind}/serviceaccount-{}.yaml",
                workload.service_account.value
            ),
            Yaml::map([
                ("apiVersion", Yaml::str("v1")),
                ("kind", Yaml::str("ServiceAccount")),
                (
                    "metadata",
                    metadata(&workload.service_account.value, Some(&namespace), &labels),
                ),
            ]),
        ));
        let groups = [
            ("admin", "admin", &tenant.groups.admin),
            ("member", "edit", &tenant.groups.member),
            ("viewer", "view", &tenant.groups.viewer),
        ];
        for (role, cluster_role, group) in groups {
            let Some(group) = group else { continue };
            objects.push((
                format!("{kind}/rolebinding-{role}.yaml"),
                role_binding(
                    &format!("tenant-{role}"),
                    &namespace,
                    cluster_role,
                    &group.value,
                    &labels,
                ),
            ));
        }
        objects.push((
            format!("{kind}/resourcequota.yaml"),
            resource_quota(quota, cell, workload, &namespace, &labels, catalog),
        ));
        objects.push((
            format!("{kind}/limitrange.yaml"),
            limit_range(tenant, &namespace, &labels),
        ));
    }
    objects
}

fn tenant_labels(tenant: &Tenant) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (format!("{LABEL_PREFIX}/org"), tenant.org.value.clone()),
        (format!("{LABEL_PREFIX}/tenant"), tenant.name.value.clone()),
    ])
}

fn namespace_object(tenant: &Tenant, workload: &Workload, cell: &Cell, namespace: &str) -> Yaml {
    let mut labels = tenant_labels(tenant);
    let version = kube_version(cell);
    let extra = [
        (
            "kubernetes.io/metadata.name".to_string(),
            namespace.to_string(),
        ),
        (format!("{LABEL_PREFIX}/team"), tenant.team.value.clone()),
        (
            format!("{LABEL_PREFIX}/trust"),
            tenant.trust.value.as_str().to_string(),
        ),
        (format!("{LABEL_PREFIX}/cell"), cell.name.value.clone()),
        (
            format!("{LABEL_PREFIX}/workload"),
            workload.kind.value.as_str().to_string(),
        ),
    ];
    labels.extend(extra);
    for mode in ["enforce", "audit", "warn"] {
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            "restricted".to_string(),
        );
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}-version"),
            version.clone(),
        );
    }
    Yaml::map([
        ("apiVersion", Yaml::str("v1")),
        ("kind", Yaml::str("Namespace")),
        ("metadata", metadata(namespace, None, &labels)),
    ])
}

fn role_binding(
    name: &str,
    namespace: &str,
    cluster_role: &str,
    group: &str,
    labels: &BTreeMap<String, String>,
) -> Yaml {
    Yaml::map([
        ("apiVersion", Yaml::str("rbac.authorization.k8s.io/v1")),
        ("kind", Yaml::str("RoleBinding")),
        ("metadata", metadata(name, Some(namespace), labels)),
        (
            "roleRef",
            Yaml::map([
                ("apiGroup", Yaml::str("rbac.authorization.k8s.io")),
                ("kind", Yaml::str("ClusterRole")),
                ("name", Yaml::str(cluster_role)),
            ]),
        ),
        (
            "subjects",
            Yaml::Seq(vec![Yaml::map([
                ("apiGroup", Yaml::str("rbac.authorization.k8s.io")),
                ("kind", Yaml::str("Group")),
                ("name", Yaml::str(group)),
            ])]),
        ),
    ])
}

/// Devices per resource that this workload's namespace may request in the cell.
pub(crate) fn gpu_ceilings(
    quota: &Quota,
    cell: &Cell,
    workload: &Workload,
    catalog: &Catalog,
) -> BTreeMap<String, i64> {
    // Whole GPUs are always listed: a MIG-capable node whose MIG config is missing or failed
    // advertises whole `nvidia.com/gpu`, which must stay denied unless reserved.
    let mut ceilings: BTreeMap<String, i64> = BTreeMap::from([(GPU_RESOURCE.to_string(), 0)]);
    ceilings.extend(
        cell.pools
            .iter()
            .flat_map(|pool| hardware::offers(pool, catalog))
            .map(|offer| (offer.resource, 0)),
    );
    for reservation in &quota.pools {
        if reservation
            .workload
            .as_ref()
            .is_some_and(|only| only.value != workload.kind.value)
        {
            continue;
        }
        let Some((_, offer)) = hardware::resolve(cell, reservation, catalog) else {
            continue;
        };
        let amount = reservation
            .reserved
            .value
            .saturating_add(reservation.burst.as_ref().map_or(0, |burst| burst.value));
        let entry = ceilings.entry(offer.resource).or_insert(0);
        *entry = entry.saturating_add(amount);
    }
    ceilings
}

fn resource_quota(
    quota: &Quota,
    cell: &Cell,
    workload: &Workload,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    catalog: &Catalog,
) -> Yaml {
    let mut hard: BTreeMap<String, String> = BTreeMap::new();
    hard.insert("requests.cpu".into(), quota.cpu.value.to_string());
    hard.insert("requests.memory".into(), quota.memory.value.to_string());
    hard.insert(
        "pods".into(),
        Quantity::from_int(quota.pods.value).to_string(),
    );
    for (resource, count) in gpu_ceilings(quota, cell, workload, catalog) {
        hard.insert(
            format!("requests.{resource}"),
            Quantity::from_int(count).to_string(),
        );
    }
    Yaml::map([
        ("apiVersion", Yaml::str("v1")),
        ("kind", Yaml::str("ResourceQuota")),
        (
            "metadata",
            metadata("tenant-quota", Some(namespace), labels),
        ),
        (
            "spec",
            Yaml::map([(
                "hard",
                Yaml::string_map(hard.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            )]),
        ),
    ])
}

fn limit_range(tenant: &Tenant, namespace: &str, labels: &BTreeMap<String, String>) -> Yaml {
    let defaults = &tenant.container_defaults;
    let cpu = defaults
        .cpu
        .as_ref()
        .map_or_else(|| DEFAULT_CPU.to_string(), |cpu| cpu.value.to_string());
    let memory = defaults.memory.as_ref().map_or_else(
        || DEFAULT_MEMORY.to_string(),
        |memory| memory.value.to_string(),
    );
    Yaml::map([
        ("apiVersion", Yaml::str("v1")),
        ("kind", Yaml::str("LimitRange")),
        (
            "metadata",
            metadata("container-defaults", Some(namespace), labels),
        ),
        (
            "spec",
            Yaml::map([(
                "limits",
                // Requests only: a default memory *limit* would also be given to containers that
                // request more memory without a limit, and the API server rejects a limit below
                // the request.
                Yaml::Seq(vec![Yaml::map([
                    ("type", Yaml::str("Container")),
                    (
                        "defaultRequest",
                        Yaml::map([("cpu", Yaml::str(cpu)), ("memory", Yaml::str(memory))]),
                    ),
                ])]),
            )]),
        ),
    ])
}
