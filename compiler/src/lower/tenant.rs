//! The core objects of one tenant in one cell.
//!
//! Consumes: a tenant's plan in a cell. Produces: per workload namespace a Namespace, a
//! ServiceAccount that mounts no API token, RoleBindings of the tenant's groups to the tenant
//! roles of `rbac.rs` (each named after its role), Pod Security labels (`restricted`, or for a
//! reviewed exception a relaxed `enforce` with the granted capabilities in an annotation that
//! `guard.rs`'s policy reads), the ResourceQuota holding the
//! namespace's part of the tenant's ceiling and its GPU reservations, the ResourceQuota that
//! denies every priority class but the namespace's own (declared or not), and a LimitRange; each with its
//! file path inside the tenant folder. A ServiceAccount carries the annotation of its storage
//! identity when the cell's identity kind uses one (`iam.rs`).
//!
//! Invariants:
//! - Tenant groups are bound only to the ClusterRoles of `rbac.rs`, never to the built-in
//!   `admin`, `edit` or `view`, which aggregate whatever anyone labels for them.
//! - The ResourceQuota lists every GPU and MIG resource the cell offers as `requests.<name>`,
//!   zero where the tenant reserved nothing (deny by default), plus `requests.cpu`,
//!   `requests.memory` and `pods`; over the tenant's namespaces these add up to its ceiling.
//!   It also lists `requests.ephemeral-storage`, `requests.storage`, `persistentvolumeclaims`,
//!   `services.loadbalancers` and `services.nodeports` (0 unless the tenant declares them) and,
//!   on Kubernetes 1.34 and later, `<class>.deviceclass.resource.k8s.io/devices: 0` for the
//!   cell's DRA GPU device classes. In a cell with `devices "dra"` the GPU and MIG resources
//!   are listed at 0 and each DeviceClass of `dra.rs` at the namespace's devices of it.
//! - The LimitRange sets Container defaults for cpu and memory only, never for an extended
//!   resource (a default there would inject GPU requests into every container), and never for
//!   ephemeral-storage (a default request would put ephemeral-storage into every Kueue workload,
//!   which a ClusterQueue that does not cover it never admits, and make a 0 quota refuse every
//!   pod).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    LimitRange, LimitRangeItem, LimitRangeSpec, Namespace, ResourceQuota, ResourceQuotaSpec,
    ScopeSelector, ScopedResourceSelectorRequirement, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{body, guard, kube_version};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::facts::pod_security::PodSecurityLevel;
use crate::kube::labels::{
    CELL_LABEL, MANAGED_BY, NAMESPACE_NAME_LABEL, ORG_LABEL, TEAM_LABEL, TENANT_LABEL, TRUST_LABEL,
    WORKLOAD_LABEL,
};
use crate::plan::{CellPlan, NamespacePlan, TenantPlan};

/// The ResourceQuota of a namespace's share of the tenant ceiling and GPU reservations.
pub const QUOTA_NAME: &str = "tenant-quota";
/// The ResourceQuota that denies the priority classes a namespace is not entitled to.
pub const PRIORITY_QUOTA_NAME: &str = "tenant-priorities";

/// Every core object of the tenant in the cell, as `(path in the tenant folder, object)`.
pub(super) fn objects(
    tenant: &TenantPlan,
    cell: &CellPlan,
) -> Result<Vec<(String, Body)>, InternalError> {
    let mut objects = Vec::new();
    let labels = tenant_labels(tenant);
    for namespace in &tenant.namespaces {
        let kind = namespace.workload.as_str();
        let meta = |name: &str| ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.name.clone()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        };
        objects.push((
            format!("{kind}/namespace.yaml"),
            body(&namespace_object(tenant, namespace, cell))?,
        ));
        objects.push((
            format!("{kind}/serviceaccount-{}.yaml", namespace.service_account),
            body(&ServiceAccount {
                metadata: ObjectMeta {
                    // The cloud identity of the workload's storage IAM (`iam.rs`), when the
                    // cell's identity kind names it on the ServiceAccount.
                    annotations: cell
                        .storage
                        .as_ref()
                        .and_then(|storage| {
                            crate::plan::storage::service_account_annotation(
                                storage,
                                &cell.name,
                                &tenant.name,
                                kind,
                            )
                        })
                        .map(|annotation| BTreeMap::from([annotation])),
                    ..meta(&namespace.service_account)
                },
                // No API token in every pod by default; the account holds no role anyway.
                automount_service_account_token: Some(false),
                ..ServiceAccount::default()
            })?,
        ));
        for (role, group) in &tenant.groups {
            let cluster_role = crate::facts::rbac::cluster_role_of(*role);
            // Named after the role: `roleRef` cannot change in place, so binding another role
            // is always a new object (the old one is pruned), never an update the API server
            // refuses.
            objects.push((
                format!("{kind}/rolebinding-{role}.yaml"),
                body(&RoleBinding {
                    metadata: meta(cluster_role),
                    role_ref: RoleRef {
                        api_group: "rbac.authorization.k8s.io".to_string(),
                        kind: "ClusterRole".to_string(),
                        name: cluster_role.to_string(),
                    },
                    subjects: Some(vec![Subject {
                        api_group: Some("rbac.authorization.k8s.io".to_string()),
                        kind: "Group".to_string(),
                        name: group.clone(),
                        namespace: None,
                    }]),
                })?,
            ));
        }
        objects.push((
            format!("{kind}/resourcequota.yaml"),
            body(&ResourceQuota {
                metadata: meta(QUOTA_NAME),
                spec: Some(ResourceQuotaSpec {
                    hard: Some(quota_hard(namespace, cell)),
                    ..ResourceQuotaSpec::default()
                }),
                ..ResourceQuota::default()
            })?,
        ));
        objects.push((
            format!("{kind}/resourcequota-priorities.yaml"),
            body(&ResourceQuota {
                metadata: meta(PRIORITY_QUOTA_NAME),
                spec: Some(ResourceQuotaSpec {
                    hard: Some(BTreeMap::from([(
                        "pods".to_string(),
                        Quantity("0".to_string()),
                    )])),
                    scope_selector: Some(ScopeSelector {
                        match_expressions: Some(priority_scope(namespace)),
                    }),
                    ..ResourceQuotaSpec::default()
                }),
                ..ResourceQuota::default()
            })?,
        ));
        let (cpu, memory) = &tenant.container_defaults;
        objects.push((
            format!("{kind}/limitrange.yaml"),
            body(&LimitRange {
                metadata: meta("container-defaults"),
                spec: Some(LimitRangeSpec {
                    // Requests only: a default memory *limit* would also be given to containers
                    // that request more memory without a limit, and the API server rejects a
                    // limit below the request.
                    limits: vec![LimitRangeItem {
                        type_: "Container".to_string(),
                        default_request: Some(BTreeMap::from([
                            ("cpu".to_string(), Quantity(cpu.clone())),
                            ("memory".to_string(), Quantity(memory.clone())),
                        ])),
                        ..LimitRangeItem::default()
                    }],
                }),
            })?,
        ));
    }
    Ok(objects)
}

/// The pods `tenant-priorities` counts (and, with `pods: 0`, denies): every pod with a priority
/// class other than the namespace's own. `Exists` and `NotIn` are ANDed, so a class created after
/// the build is denied too, and a pod without a class is not counted.
fn priority_scope(namespace: &NamespacePlan) -> Vec<ScopedResourceSelectorRequirement> {
    let mut scope = vec![ScopedResourceSelectorRequirement {
        operator: "Exists".to_string(),
        scope_name: "PriorityClass".to_string(),
        values: None,
    }];
    if let Some(own) = &namespace.priority {
        scope.push(ScopedResourceSelectorRequirement {
            operator: "NotIn".to_string(),
            scope_name: "PriorityClass".to_string(),
            values: Some(vec![own.clone()]),
        });
    }
    scope
}

/// The labels every object of the tenant carries.
pub(super) fn tenant_labels(tenant: &TenantPlan) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (ORG_LABEL.to_string(), tenant.org.clone()),
        (TENANT_LABEL.to_string(), tenant.name.clone()),
    ])
}

fn quota_hard(namespace: &NamespacePlan, cell: &CellPlan) -> BTreeMap<String, Quantity> {
    // In a DRA cell the devices are counted by class (`dra.rs`), and the device plugin's
    // resources stay listed at 0, so a device plugin left running on a node hands out nothing.
    let dra = match cell.backends.devices {
        crate::model::DeviceMode::DevicePlugin => false,
        crate::model::DeviceMode::Dra => true,
    };
    let mut hard = BTreeMap::from([
        ("requests.cpu".to_string(), Quantity(namespace.cpu.clone())),
        (
            "requests.memory".to_string(),
            Quantity(namespace.memory.clone()),
        ),
        ("pods".to_string(), Quantity(namespace.pods.to_string())),
    ]);
    for (resource, count) in &namespace.gpu {
        let count = if dra { 0 } else { *count };
        hard.insert(format!("requests.{resource}"), Quantity(count.to_string()));
    }
    for (key, value) in &namespace.other_quota {
        hard.insert(key.clone(), Quantity(value.clone()));
    }
    for (class, count) in &namespace.dra_devices {
        hard.insert(
            crate::plan::network::dra_quota_key(class),
            Quantity(count.to_string()),
        );
    }
    hard
}

fn namespace_object(tenant: &TenantPlan, namespace: &NamespacePlan, cell: &CellPlan) -> Namespace {
    let mut labels = tenant_labels(tenant);
    labels.extend(tenant.chargeback.clone());
    let version = kube_version(cell);
    labels.extend([
        (NAMESPACE_NAME_LABEL.to_string(), namespace.name.clone()),
        (TEAM_LABEL.to_string(), tenant.team.clone()),
        (TRUST_LABEL.to_string(), tenant.trust.to_string()),
        (CELL_LABEL.to_string(), cell.name.clone()),
        (WORKLOAD_LABEL.to_string(), namespace.workload.to_string()),
    ]);
    // `audit` and `warn` stay `restricted` everywhere, so an excepted pod is still reported.
    // An exception relaxes `enforce` to the lowest level that admits what it grants (no level
    // admits `restricted` plus a capability); `guard.rs`'s policy re-enforces every other
    // `restricted` rule in that namespace, reading the granted capabilities from the annotation.
    for (mode, level) in [
        ("enforce", namespace.enforce_level()),
        ("audit", PodSecurityLevel::Restricted),
        ("warn", PodSecurityLevel::Restricted),
    ] {
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            level.as_str().to_string(),
        );
        labels.insert(
            format!("pod-security.kubernetes.io/{mode}-version"),
            version.clone(),
        );
    }
    let capabilities = namespace.excepted_capabilities();
    let mut annotations: BTreeMap<String, String> = BTreeMap::new();
    // In a Volcano cell, Volcano's PodGroup webhook gives a PodGroup that names no queue the
    // queue of its namespace's annotation, so such a PodGroup lands in the tenant's own queue
    // rather than Volcano's `default` (the floor refuses any other).
    if let Some(queue) = &tenant.volcano {
        annotations.insert(
            crate::kube::volcano::QUEUE_ANNOTATION.to_string(),
            queue.name.clone(),
        );
    }
    if !capabilities.is_empty() {
        let reviewed: Vec<String> = namespace
            .exceptions
            .iter()
            .map(|exception| {
                format!(
                    "{} ({}), approved by {}: {}",
                    exception.name,
                    exception.capabilities.join(", "),
                    exception.approved_by,
                    exception.reason
                )
            })
            .collect();
        annotations.extend([
            (guard::capabilities_annotation(), capabilities.join(",")),
            (guard::exceptions_annotation(), reviewed.join("\n")),
        ]);
    }
    let annotations = (!annotations.is_empty()).then_some(annotations);
    Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.name.clone()),
            labels: Some(labels),
            annotations,
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use std::collections::BTreeMap;

    use crate::validate::test_support::compile_files;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="r"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "train" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; }
}
"#;

    const TENANT: &str = r#"tenant "t1" {
    org "o"
    team "a"
    trust "soft"
    groups admin="t1-admins" member="t1-members" viewer="t1-viewers"
    quota cell="c1" cpu="8" memory="32Gi" pods=20 {
        pool "train" reserved=2 workload="train"
    }
    workload "train" service-account="trainer" priority="batch"
    workload "infer" service-account="server"
}
"#;

    fn tree() -> BTreeMap<String, String> {
        let compilation = compile_files(&[("cells/c1.kdl", CELL), ("tenants/t1.kdl", TENANT)]);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        compilation
            .output
            .unwrap()
            .into_iter()
            .map(|(path, bytes)| (path, String::from_utf8(bytes).unwrap()))
            .collect()
    }

    #[test]
    fn tenant_groups_are_bound_to_the_tenantc_roles_never_to_the_built_ins() {
        let tree = tree();
        let mut bindings = 0;
        for (path, text) in tree
            .iter()
            .filter(|(path, _)| path.contains("/rolebinding-"))
        {
            let kind = path
                .rsplit_once("/rolebinding-")
                .and_then(|(_, file)| file.strip_suffix(".yaml"))
                .unwrap();
            // The canonical writer quotes names with a colon.
            let role = format!("\"tenantc:tenant-{kind}\"");
            // The binding is named after its role: `roleRef` cannot change in place, so a new
            // role is always a new object.
            assert!(
                text.contains(&format!("  name: {role}\n  namespace: ")),
                "{path}:\n{text}"
            );
            assert!(
                text.contains(&format!("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\n")),
                "{path}:\n{text}"
            );
            // The role it names is emitted in the cell, without aggregation.
            let role_file = format!("c1/cluster/clusterrole-tenant-{kind}.yaml");
            let role_text = tree
                .get(&role_file)
                .unwrap_or_else(|| panic!("no {role_file}"));
            assert!(role_text.contains(&format!("  name: {role}\n")));
            assert!(!role_text.contains("aggregationRule") && !role_text.contains("aggregate-to"));
            assert!(
                tree["c1/cluster/kustomization.yaml"]
                    .contains(&format!("- clusterrole-tenant-{kind}.yaml\n"))
            );
            bindings += 1;
        }
        // Three groups in each of two namespaces.
        assert_eq!(bindings, 6);
    }

    #[test]
    fn an_exception_relaxes_only_enforce_of_its_namespace_and_never_changes_cluster() {
        let plain = tree();
        let excepted_tenant = TENANT.replace("trust \"soft\"", "trust \"hard\"").replace(
            "workload \"train\" service-account=\"trainer\" priority=\"batch\"",
            "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"RDMA\" approved-by=\"security\"\n    }",
        );
        // The platform reserves the pool for `t1`, with a taint of its own; host access needs
        // an owned pool.
        let owned_cell = CELL.replace(
            "sharing \"exclusive\"; }",
            "sharing \"exclusive\"; taint \"tenantc.io/pool\" \"t1\" effect=\"NoSchedule\"; owner \"t1\"; }",
        );
        assert_ne!(owned_cell, CELL);
        let compilation = compile_files(&[
            ("cells/c1.kdl", &owned_cell),
            ("tenants/t1.kdl", &excepted_tenant),
        ]);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        let excepted: BTreeMap<String, String> = compilation
            .output
            .unwrap()
            .into_iter()
            .map(|(path, bytes)| (path, String::from_utf8(bytes).unwrap()))
            .collect();
        let train = &excepted["c1/tenants/t1/train/namespace.yaml"];
        assert!(
            train.contains("    pod-security.kubernetes.io/enforce: privileged\n"),
            "{train}"
        );
        assert!(
            train.contains("    pod-security.kubernetes.io/audit: restricted\n"),
            "{train}"
        );
        assert!(
            train.contains("    pod-security.kubernetes.io/warn: restricted\n"),
            "{train}"
        );
        assert!(
            train.contains("    tenant.platform/pod-security-capabilities: IPC_LOCK\n"),
            "{train}"
        );
        // The other namespace of the tenant stays `restricted` and carries no grant.
        let infer = &excepted["c1/tenants/t1/infer/namespace.yaml"];
        assert!(
            infer.contains("    pod-security.kubernetes.io/enforce: restricted\n"),
            "{infer}"
        );
        assert!(!infer.contains("pod-security-capabilities"), "{infer}");
        assert!(!plain["c1/tenants/t1/train/namespace.yaml"].contains("pod-security-capabilities"));
        // The policies in `cluster/` do not depend on the tenants.
        let cluster = |tree: &BTreeMap<String, String>| -> Vec<(String, String)> {
            tree.iter()
                .filter(|(path, _)| path.starts_with("c1/cluster/"))
                .map(|(path, text)| (path.clone(), text.clone()))
                .collect()
        };
        assert_eq!(cluster(&plain), cluster(&excepted));
        assert_eq!(
            cluster(&plain)
                .iter()
                .filter(|(path, _)| path.contains("validatingadmissionpolicy"))
                .count(),
            // The guard, the adoption guard and the exception policy with their bindings, and
            // the tenant floor (whose bindings live in the tenant folders).
            7
        );
    }

    #[test]
    fn tenant_service_accounts_mount_no_token() {
        let tree = tree();
        let accounts: Vec<&String> = tree
            .iter()
            .filter(|(path, _)| path.contains("/serviceaccount-"))
            .map(|(_, text)| text)
            .collect();
        assert_eq!(accounts.len(), 2);
        for text in accounts {
            assert!(
                text.contains("\nautomountServiceAccountToken: false\n"),
                "{text}"
            );
        }
    }
}
