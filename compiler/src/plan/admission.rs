//! What the tenant admission floor's params hold for one tenant in a cell: the values the
//! policy of `lower/admission.rs` reads as `params.data.*`.
//!
//! Consumes: a cell's plan and one tenant's plan in it. Produces: [`params`], the data of the
//! tenant's params ConfigMap, which `lower` writes and `review` shows, so the reviewer view
//! names exactly the values the API server judges by.
//!
//! Invariants: every list is one comma-separated string (a ConfigMap value is a string), sorted
//! and without repeats, except the group names, which a newline separates; a tenant's params
//! depend only on that tenant, its cell and its host access.

use std::collections::BTreeMap;

use crate::model::WorkloadKind;

use super::{CellPlan, NamespacePlan, PoolPlan, TaintPlan, TenantPlan};

/// Label keys that no tenant pod or workload may carry, because they would copy user data into
/// every monitoring and billing system that reads labels; a cell adds its own with
/// `forbidden-label-keys`. Keys are compared in lower case without `-`, `_` and `.`, and a key
/// without a prefix also forbids it under any `prefix/`.
pub const FORBIDDEN_LABEL_KEYS: &[&str] =
    &["email", "prompt", "session-id", "user-email", "user-id"];
/// The LocalQueues of every tenant namespace (`lower/kueue.rs` emits [`super::LOCAL_QUEUE`]).
pub const QUEUES: &[&str] = &["default"];

/// The longest termination grace period a tenant pod may ask for, in seconds: long enough to
/// write a checkpoint, short enough that preemption by Kueue takes effect.
pub const MAX_GRACE_PERIOD_SECONDS: u32 = 600;

/// The pools of the cell the tenant has a Kueue flavor for.
fn own_pools<'a>(tenant: &TenantPlan, cell: &'a CellPlan) -> Vec<&'a PoolPlan> {
    cell.pools
        .iter()
        .filter(|pool| {
            tenant
                .queue
                .flavors
                .iter()
                .any(|flavor| flavor.pool == pool.name)
        })
        .collect()
}

/// The `key=value:effect` of every repelling pool taint of the cell that the tenant may not
/// tolerate: taints of pools outside its Kueue flavors that no pool of its flavors also carries.
fn forbidden_taints(tenant: &TenantPlan, cell: &CellPlan) -> Vec<String> {
    let own = own_pools(tenant, cell);
    taint_params(
        cell.pools
            .iter()
            .filter(|pool| !own.iter().any(|mine| mine.name == pool.name))
            .flat_map(|pool| pool.taints.iter())
            .filter(|taint| {
                !own.iter().any(|mine| {
                    mine.taints
                        .iter()
                        .any(|other| taint.tolerated_by_toleration_of(other))
                })
            }),
    )
}

/// The `key=value:effect` of every repelling pool taint of the cell.
fn pool_taints(cell: &CellPlan) -> Vec<String> {
    taint_params(cell.pools.iter().flat_map(|pool| pool.taints.iter()))
}

/// The repelling taints among `taints` as `key=value:effect` (the value empty where the taint
/// has none), sorted and without repeats: the form the policy's taint variables parse.
fn taint_params<'a>(taints: impl Iterator<Item = &'a TaintPlan>) -> Vec<String> {
    let mut params: Vec<String> = taints
        .filter(|taint| taint.repels())
        .map(|taint| {
            format!(
                "{}={}:{}",
                taint.key,
                taint.value.as_deref().unwrap_or(""),
                taint.effect
            )
        })
        .collect();
    params.sort();
    params.dedup();
    params
}

/// The params of one tenant in a cell, as ConfigMap data.
pub fn params(tenant: &TenantPlan, cell: &CellPlan) -> BTreeMap<String, String> {
    let join = |items: Vec<String>| items.join(",");
    let own_pools = own_pools(tenant, cell);
    // The plan's one decision: hard, and every pool the tenant reaches is its alone.
    let host_access = tenant.cell_host_access.granted;
    let mut gpu_models: Vec<String> = own_pools.iter().map(|pool| pool.gpu.clone()).collect();
    gpu_models.sort();
    gpu_models.dedup();
    let runtime_classes = cell
        .runtime_classes
        .iter()
        .filter(|class| class.trust.contains(&tenant.trust))
        .map(|class| class.name.clone())
        .collect();
    let inference: Vec<&NamespacePlan> = tenant
        .namespaces
        .iter()
        .filter(|namespace| namespace.workload == WorkloadKind::Infer)
        .collect();
    let mut training_accounts: Vec<String> = tenant
        .namespaces
        .iter()
        .filter(|namespace| namespace.workload == WorkloadKind::Train)
        .map(|namespace| namespace.service_account.clone())
        .filter(|account| !inference.iter().any(|ns| &ns.service_account == account))
        .collect();
    training_accounts.sort();
    let priorities = tenant
        .namespaces
        .iter()
        .filter_map(|namespace| {
            Some(format!(
                "{}={}",
                namespace.name,
                namespace.priority.as_ref()?
            ))
        })
        .collect();
    let mut forbidden_labels: Vec<String> = FORBIDDEN_LABEL_KEYS
        .iter()
        .map(|key| (*key).to_string())
        .chain(
            cell.forbidden_label_keys
                .iter()
                .map(|key| key.to_ascii_lowercase()),
        )
        .collect();
    forbidden_labels.sort();
    forbidden_labels.dedup();
    let mut gpu_runtime_classes: Vec<String> = cell
        .runtime_classes
        .iter()
        .map(|class| class.name.clone())
        .collect();
    gpu_runtime_classes.sort();
    let mut registries = tenant.registries.clone();
    registries.sort();
    let mut groups: Vec<String> = tenant.groups.values().cloned().collect();
    groups.sort();
    groups.dedup();
    let mut namespaces: Vec<String> = tenant
        .namespaces
        .iter()
        .map(|namespace| namespace.name.clone())
        .collect();
    namespaces.sort();
    // A pool whose nodes carry no label cannot be selected, so it grants no host use.
    let mut host_pools: Vec<String> = if host_access {
        own_pools
            .iter()
            .filter(|pool| !pool.node_labels.is_empty())
            .map(|pool| {
                pool.node_labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<String>>()
                    .join("&")
            })
            .collect()
    } else {
        Vec::new()
    };
    host_pools.sort();
    // The namespaces whose quota holds claims at all: a claim template elsewhere gives a
    // StatefulSet or a pod whose claims quota admission refuses later, so it never runs.
    let mut claim_namespaces: Vec<String> = tenant
        .namespaces
        .iter()
        .filter(|namespace| {
            ["persistentvolumeclaims", "requests.storage"]
                .iter()
                .all(|key| {
                    namespace.other_quota.get(*key).is_some_and(|value| {
                        crate::quantity::Quantity::parse(value).is_ok_and(|q| q.milli() > 0)
                    })
                })
        })
        .map(|namespace| namespace.name.clone())
        .collect();
    claim_namespaces.sort();
    BTreeMap::from([
        ("cell".to_string(), cell.name.clone()),
        ("claimNamespaces".to_string(), join(claim_namespaces)),
        ("forbiddenLabelKeys".to_string(), join(forbidden_labels)),
        (
            "forbiddenTaints".to_string(),
            join(forbidden_taints(tenant, cell)),
        ),
        ("gpuModels".to_string(), join(gpu_models)),
        // Every runtime class tenantc emits hands GPUs to containers, so a pod that names one
        // must request a GPU.
        ("gpuRuntimeClasses".to_string(), join(gpu_runtime_classes)),
        // Group names may hold commas (LDAP distinguished names), never a control character
        // (`string-character-forbidden`), so a newline separates them.
        ("groups".to_string(), groups.join("\n")),
        ("hostAccess".to_string(), host_access.to_string()),
        ("hostPools".to_string(), join(host_pools)),
        (
            "maxGracePeriodSeconds".to_string(),
            MAX_GRACE_PERIOD_SECONDS.to_string(),
        ),
        (
            "countedResources".to_string(),
            join(counted_resources(tenant)),
        ),
        (
            "inferenceNamespaces".to_string(),
            join(inference.iter().map(|ns| ns.name.clone()).collect()),
        ),
        ("namespaces".to_string(), join(namespaces)),
        ("poolTaints".to_string(), join(pool_taints(cell))),
        ("priorities".to_string(), join(priorities)),
        (
            "queues".to_string(),
            join(QUEUES.iter().map(|q| (*q).to_string()).collect()),
        ),
        ("registries".to_string(), join(registries)),
        (
            "runtimeClassRequired".to_string(),
            (!cell.runtime_classes.is_empty()).to_string(),
        ),
        ("runtimeClasses".to_string(), join(runtime_classes)),
        ("tenant".to_string(), tenant.name.clone()),
        (
            "trainingServiceAccounts".to_string(),
            join(training_accounts),
        ),
        // The digests the weights stage verified against the tenant's own signers; a tenant
        // without verified weights gets an empty list, so every pod that loads weights is
        // denied.
        ("weightDigests".to_string(), join(weight_digests(tenant))),
    ])
}

/// The extended resources the tenant's ResourceQuotas in the cell count (every GPU and MIG
/// resource of the cell, zero where it reserved nothing), sorted.
fn counted_resources(tenant: &TenantPlan) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = tenant
        .namespaces
        .iter()
        .flat_map(|namespace| namespace.gpu.keys().cloned())
        .collect();
    names.into_iter().collect()
}

/// The tenant's verified weight digests (`sha256:<root>`), sorted and without repeats.
fn weight_digests(tenant: &TenantPlan) -> Vec<String> {
    let digests: std::collections::BTreeSet<String> = tenant
        .weights
        .iter()
        .map(|model| model.digest.clone())
        .collect();
    digests.into_iter().collect()
}
