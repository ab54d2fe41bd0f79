//! What the tenant admission floor's params hold for one tenant in a cell: the values the
//! policy of `lower/admission.rs` reads as `params.data.*`.
//!
//! Consumes: a cell's plan and one tenant's plan in it. Produces: [`AdmissionParams`], one field
//! per [`ParamKey`], and [`params`], its data as the tenant's params ConfigMap holds it, which
//! `lower` writes and `review` shows, so the reviewer view names exactly the values the API
//! server judges by.
//!
//! Invariants: every list is one comma-separated string (a ConfigMap value is a string), sorted
//! and without repeats, except the group names, which a newline separates; a tenant's params
//! depend only on that tenant, its cell and its host access; every key is written under the
//! name [`ParamKey::as_str`] gives, the one the policy reads.

use std::collections::BTreeMap;

// Label keys that no tenant pod or workload may carry: the one list, which the check of a
// tenant's declared chargeback labels reads too; a cell adds its own (`forbidden-label-keys`).
use crate::facts::labels::FORBIDDEN_LABEL_KEYS;
use crate::model::WorkloadKind;

use super::{CellPlan, NamespacePlan, PoolPlan, TaintPlan, TenantPlan};

/// The LocalQueues of every tenant namespace (`lower/kueue.rs` emits [`super::LOCAL_QUEUE`]).
pub const QUEUES: &[&str] = &["default"];

/// The longest termination grace period a tenant pod may ask for, in seconds: long enough to
/// write a checkpoint, short enough that preemption by Kueue takes effect.
pub const MAX_GRACE_PERIOD_SECONDS: u32 = 600;

/// A key of a tenant's admission params: the one table of names that the params ConfigMap is
/// written under ([`AdmissionParams::data`]) and that the policy's CEL reads as
/// `params.data.<key>` (a test of `lower/admission.rs` holds the policy to it both ways).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ParamKey {
    /// `cell`.
    Cell,
    /// `claimNamespaces`.
    ClaimNamespaces,
    /// `countedResources`.
    CountedResources,
    /// `deviceClasses`.
    DeviceClasses,
    /// `forbiddenLabelKeys`.
    ForbiddenLabelKeys,
    /// `forbiddenTaints`.
    ForbiddenTaints,
    /// `gpuModels`.
    GpuModels,
    /// `gpuRuntimeClasses`.
    GpuRuntimeClasses,
    /// `groups`.
    Groups,
    /// `hostAccess`.
    HostAccess,
    /// `hostPools`.
    HostPools,
    /// `inferenceNamespaces`.
    InferenceNamespaces,
    /// `maxGracePeriodSeconds`.
    MaxGracePeriodSeconds,
    /// `namespaces`.
    Namespaces,
    /// `poolTaints`.
    PoolTaints,
    /// `priorities`.
    Priorities,
    /// `queues`.
    Queues,
    /// `registries`.
    Registries,
    /// `runtimeClassRequired`.
    RuntimeClassRequired,
    /// `runtimeClasses`.
    RuntimeClasses,
    /// `tenant`.
    Tenant,
    /// `trainingServiceAccounts`.
    TrainingServiceAccounts,
    /// `weightDigests`.
    WeightDigests,
}

impl ParamKey {
    /// Every key.
    pub const ALL: [ParamKey; 23] = [
        ParamKey::Cell,
        ParamKey::ClaimNamespaces,
        ParamKey::CountedResources,
        ParamKey::DeviceClasses,
        ParamKey::ForbiddenLabelKeys,
        ParamKey::ForbiddenTaints,
        ParamKey::GpuModels,
        ParamKey::GpuRuntimeClasses,
        ParamKey::Groups,
        ParamKey::HostAccess,
        ParamKey::HostPools,
        ParamKey::InferenceNamespaces,
        ParamKey::MaxGracePeriodSeconds,
        ParamKey::Namespaces,
        ParamKey::PoolTaints,
        ParamKey::Priorities,
        ParamKey::Queues,
        ParamKey::Registries,
        ParamKey::RuntimeClassRequired,
        ParamKey::RuntimeClasses,
        ParamKey::Tenant,
        ParamKey::TrainingServiceAccounts,
        ParamKey::WeightDigests,
    ];

    /// The key's name in the ConfigMap's `data`, as the CEL reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKey::Cell => "cell",
            ParamKey::ClaimNamespaces => "claimNamespaces",
            ParamKey::CountedResources => "countedResources",
            ParamKey::DeviceClasses => "deviceClasses",
            ParamKey::ForbiddenLabelKeys => "forbiddenLabelKeys",
            ParamKey::ForbiddenTaints => "forbiddenTaints",
            ParamKey::GpuModels => "gpuModels",
            ParamKey::GpuRuntimeClasses => "gpuRuntimeClasses",
            ParamKey::Groups => "groups",
            ParamKey::HostAccess => "hostAccess",
            ParamKey::HostPools => "hostPools",
            ParamKey::InferenceNamespaces => "inferenceNamespaces",
            ParamKey::MaxGracePeriodSeconds => "maxGracePeriodSeconds",
            ParamKey::Namespaces => "namespaces",
            ParamKey::PoolTaints => "poolTaints",
            ParamKey::Priorities => "priorities",
            ParamKey::Queues => "queues",
            ParamKey::Registries => "registries",
            ParamKey::RuntimeClassRequired => "runtimeClassRequired",
            ParamKey::RuntimeClasses => "runtimeClasses",
            ParamKey::Tenant => "tenant",
            ParamKey::TrainingServiceAccounts => "trainingServiceAccounts",
            ParamKey::WeightDigests => "weightDigests",
        }
    }

    /// The key a name in `params.data.<name>` names, if any.
    pub fn parse(name: &str) -> Option<ParamKey> {
        ParamKey::ALL.into_iter().find(|key| key.as_str() == name)
    }
}

/// The params of one tenant in a cell, one field per [`ParamKey`], each already in the form the
/// policy reads (a comma-separated list, a newline-separated list, `true`/`false` or a name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionParams {
    /// Written under `cell`.
    pub cell: String,
    /// Written under `claimNamespaces`.
    pub claim_namespaces: String,
    /// Written under `countedResources`.
    pub counted_resources: String,
    /// Written under `deviceClasses`.
    pub device_classes: String,
    /// Written under `forbiddenLabelKeys`.
    pub forbidden_label_keys: String,
    /// Written under `forbiddenTaints`.
    pub forbidden_taints: String,
    /// Written under `gpuModels`.
    pub gpu_models: String,
    /// Written under `gpuRuntimeClasses`.
    pub gpu_runtime_classes: String,
    /// Written under `groups`.
    pub groups: String,
    /// Written under `hostAccess`.
    pub host_access: String,
    /// Written under `hostPools`.
    pub host_pools: String,
    /// Written under `inferenceNamespaces`.
    pub inference_namespaces: String,
    /// Written under `maxGracePeriodSeconds`.
    pub max_grace_period_seconds: String,
    /// Written under `namespaces`.
    pub namespaces: String,
    /// Written under `poolTaints`.
    pub pool_taints: String,
    /// Written under `priorities`.
    pub priorities: String,
    /// Written under `queues`.
    pub queues: String,
    /// Written under `registries`.
    pub registries: String,
    /// Written under `runtimeClassRequired`.
    pub runtime_class_required: String,
    /// Written under `runtimeClasses`.
    pub runtime_classes: String,
    /// Written under `tenant`.
    pub tenant: String,
    /// Written under `trainingServiceAccounts`.
    pub training_service_accounts: String,
    /// Written under `weightDigests`.
    pub weight_digests: String,
}

impl AdmissionParams {
    /// The value written under `key`.
    pub fn value(&self, key: ParamKey) -> &str {
        match key {
            ParamKey::Cell => &self.cell,
            ParamKey::ClaimNamespaces => &self.claim_namespaces,
            ParamKey::CountedResources => &self.counted_resources,
            ParamKey::DeviceClasses => &self.device_classes,
            ParamKey::ForbiddenLabelKeys => &self.forbidden_label_keys,
            ParamKey::ForbiddenTaints => &self.forbidden_taints,
            ParamKey::GpuModels => &self.gpu_models,
            ParamKey::GpuRuntimeClasses => &self.gpu_runtime_classes,
            ParamKey::Groups => &self.groups,
            ParamKey::HostAccess => &self.host_access,
            ParamKey::HostPools => &self.host_pools,
            ParamKey::InferenceNamespaces => &self.inference_namespaces,
            ParamKey::MaxGracePeriodSeconds => &self.max_grace_period_seconds,
            ParamKey::Namespaces => &self.namespaces,
            ParamKey::PoolTaints => &self.pool_taints,
            ParamKey::Priorities => &self.priorities,
            ParamKey::Queues => &self.queues,
            ParamKey::Registries => &self.registries,
            ParamKey::RuntimeClassRequired => &self.runtime_class_required,
            ParamKey::RuntimeClasses => &self.runtime_classes,
            ParamKey::Tenant => &self.tenant,
            ParamKey::TrainingServiceAccounts => &self.training_service_accounts,
            ParamKey::WeightDigests => &self.weight_digests,
        }
    }

    /// The ConfigMap data: every key of [`ParamKey::ALL`] with its value.
    pub fn data(&self) -> BTreeMap<String, String> {
        ParamKey::ALL
            .into_iter()
            .map(|key| (key.as_str().to_string(), self.value(key).to_string()))
            .collect()
    }
}

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
    admission_params(tenant, cell).data()
}

/// The params of one tenant in a cell.
pub fn admission_params(tenant: &TenantPlan, cell: &CellPlan) -> AdmissionParams {
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
    AdmissionParams {
        cell: cell.name.clone(),
        claim_namespaces: join(claim_namespaces),
        counted_resources: join(counted_resources(tenant)),
        device_classes: join(device_classes(tenant)),
        forbidden_label_keys: join(forbidden_labels),
        forbidden_taints: join(forbidden_taints(tenant, cell)),
        gpu_models: join(gpu_models),
        // Every runtime class tenantc emits hands GPUs to containers, so a pod that names one
        // must request a GPU.
        gpu_runtime_classes: join(gpu_runtime_classes),
        // Group names may hold commas (LDAP distinguished names), never a control character
        // (`string-character-forbidden`), so a newline separates them.
        groups: groups.join("\n"),
        host_access: host_access.to_string(),
        host_pools: join(host_pools),
        inference_namespaces: join(inference.iter().map(|ns| ns.name.clone()).collect()),
        max_grace_period_seconds: MAX_GRACE_PERIOD_SECONDS.to_string(),
        namespaces: join(namespaces),
        pool_taints: join(pool_taints(cell)),
        priorities: join(priorities),
        // The queues its pods may name: its LocalQueues, or in a Volcano cell its Volcano Queue.
        queues: match &tenant.volcano {
            Some(queue) => queue.name.clone(),
            None => join(QUEUES.iter().map(|q| (*q).to_string()).collect()),
        },
        registries: join(registries),
        runtime_class_required: (!cell.runtime_classes.is_empty()).to_string(),
        runtime_classes: join(runtime_classes),
        tenant: tenant.name.clone(),
        training_service_accounts: join(training_accounts),
        // The digests the weights stage verified against the tenant's own signers; a tenant
        // without verified weights gets an empty list, so every pod that loads weights is
        // denied.
        weight_digests: join(weight_digests(tenant)),
    }
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

/// The DRA device classes each namespace of the tenant may name in its ResourceClaims and
/// ResourceClaimTemplates, as `namespace=class`: those it may claim devices of (a count above
/// 0 in its quota), sorted; none outside a DRA cell.
fn device_classes(tenant: &TenantPlan) -> Vec<String> {
    let mut pairs: Vec<String> = tenant
        .namespaces
        .iter()
        .flat_map(|namespace| {
            namespace
                .dra_devices
                .iter()
                .filter(|(_, count)| **count > 0)
                .map(|(class, _)| format!("{}={class}", namespace.name))
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
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
