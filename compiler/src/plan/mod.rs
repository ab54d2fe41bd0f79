//! Resolve: the validated fleet to a plan, the resolved model every later stage reads.
//!
//! Consumes: a [`Fleet`] that validated without errors, the models the weights stage verified,
//! its sources and the catalog.
//! Produces: a [`Plan`]: per cell, each pool's offers, node labels, taints, flavor and topology,
//! the priority ladder, the cohort tree, what its NetworkPolicies are made from (`network.rs`)
//! and its GPU Operator configs and capacity figures (`gpu.rs`); per tenant and cell, its
//! namespaces with their ResourceQuota parts, its ClusterQueue entitlements per flavor and
//! resource, the pools it can reach and why, its effective capacity, its host access and its
//! verified weights; plus the diagnostics of the checks that need this resolved view
//! (`pinning.rs`: no tenant can reach a pool its trust class or org forbids).
//!
//! Invariants:
//! - Pure and deterministic: cells, pools, tenants and resources are in sorted order. Cells are
//!   resolved in parallel on the current rayon pool (a cell's plan reads the fleet, never another
//!   cell's plan) and joined in the fleet's cell order, so the plan and its findings are the same
//!   on any number of threads.
//! - Built once: every field is computed before its struct is made, and nothing fills in or
//!   changes a plan after [`resolve`] returns it.
//! - Every hardware fact is computed here once (`hardware::offers`, `hardware::resolve`,
//!   `catalog::placement`), and `lower` maps the plan to objects without recomputing any (it
//!   takes only the plan); `tenantc describe` and the reports read the plan.
//! - A tenant's plan in a cell depends only on the tenant and the cell, except the fields named
//!   `cell_*` or held by [`CellPlan`] (the cohort quota and the reports), which sum up tenants.

pub mod admission;
mod capacity;
pub mod chargeback;
pub mod dra;
#[cfg(test)]
mod dra_props;
pub mod gpu;
pub mod host;
pub mod metering;
pub mod network;
mod pinning;
pub mod runtime;
pub mod serving;
pub mod showback;
pub mod storage;
pub mod volcano;
#[cfg(test)]
mod volcano_props;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::catalog::Catalog;
use crate::diag::Diagnostic;
use crate::facts::defaults;
use crate::hardware::{self, GPU_RESOURCE, Offer};
use crate::model::{Cell, Fleet, Scheduler, Sharing, Tenant, Trust, WorkloadKind};
use crate::source::SourceMap;
use crate::weights::VerifiedModel;

pub use capacity::{Effective, Term};
pub use network::NetworkPlan;

/// The Kueue ResourceFlavor of a tenant's cpu, memory and pods ceiling, which matches every node.
pub const CEILING_FLAVOR: &str = "tenant-ceiling";
/// The root cohort of a cell.
pub const ROOT_COHORT: &str = "root";
/// The LocalQueue in every tenant namespace: Kueue uses a queue named `default` for jobs that
/// name none.
pub const LOCAL_QUEUE: &str = "default";
/// Priority classes every cluster has, denied to tenant namespaces like any undeclared class.
pub const SYSTEM_PRIORITIES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

/// The whole resolved fleet.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Cells, sorted by name.
    pub cells: Vec<CellPlan>,
}

/// One cell, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct CellPlan {
    /// The cell name.
    pub name: String,
    /// The declaring file, relative.
    pub source: String,
    /// Kubernetes minor version `(1, NN)`.
    pub kubernetes: (u32, u32),
    /// The scheduler, admission engine and device mode the cell is lowered to, defaults applied
    /// (`facts::backends`).
    pub backends: crate::facts::backends::Backends,
    /// Pools in declaration order.
    pub pools: Vec<PoolPlan>,
    /// Priority classes, sorted by name.
    pub priorities: Vec<PriorityPlan>,
    /// Org cohorts, sorted by org.
    pub orgs: Vec<OrgPlan>,
    /// Every GPU resource a pool of the cell offers, plus `nvidia.com/gpu`, sorted.
    pub gpu_resources: Vec<String>,
    /// Per pool flavor and resource, what no tenant reserved: the root cohort's nominal quota,
    /// which every tenant with that flavor may borrow.
    pub unreserved: BTreeMap<String, BTreeMap<String, i64>>,
    /// The ratio by which reserved plus burst may exceed a pool's capacity.
    pub oversubscribe: f64,
    /// Who may change the objects tenantc manages in the cell (`lower/guard.rs`).
    pub gitops: GitOpsPlan,
    /// Tenants with a quota in the cell, sorted by name.
    pub tenants: Vec<TenantPlan>,
    /// What its NetworkPolicies are made from (`network.rs`).
    pub network: NetworkPlan,
    /// Runtime classes, sorted by name (`runtime.rs`).
    #[serde(skip)]
    pub runtime_classes: Vec<runtime::RuntimeClassPlan>,
    /// Label keys no tenant pod may carry, declared by the cell (`forbidden-label-keys`).
    #[serde(skip)]
    pub forbidden_label_keys: Vec<String>,
    /// Its object storage and workload identity (`storage.rs`), when declared; not part of
    /// `describe`.
    #[serde(skip)]
    pub storage: Option<storage::StoragePlan>,
    /// The GPU Operator's configs and the capacity report's figures (`gpu.rs`); not part of
    /// `describe`.
    #[serde(skip)]
    pub gpu: gpu::GpuPlan,
    /// What each pool costs a month and what each tenant committed to (`showback.rs`); not
    /// part of `describe`.
    #[serde(skip)]
    pub showback: showback::ShowbackPlan,
    /// What the cell's chargeback recording rules multiply by, and where they go
    /// (`chargeback.rs`); `None` when the cell declares no `metering`. Not part of `describe`.
    #[serde(skip)]
    pub chargeback: Option<chargeback::ChargebackPlan>,
    /// The cell's serving gateway and shared models (`serving.rs`), if it declares them.
    pub serving: Option<serving::ServingPlan>,
    /// Where the cell's scheduler is Volcano, one parent Queue per org (`volcano.rs`), in the
    /// order of [`CellPlan::orgs`]; empty in a Kueue cell.
    pub volcano_orgs: Vec<volcano::VolcanoOrgPlan>,
    /// Where the cell's devices are DRA, its DeviceClasses and Kueue's mapping of them
    /// (`dra.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dra: Option<dra::DraPlan>,
}

/// The identities the guard on managed objects lets through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitOpsPlan {
    /// The GitOps controller's user name.
    pub user: String,
    /// The break-glass group.
    pub break_glass: String,
    /// Where the rendered tree lives and which controller syncs it, when the cell declares a
    /// controller (`lower/gitops.rs`); not part of `describe`.
    #[serde(skip)]
    pub sync: Option<SyncPlan>,
}

/// How the cell's controller finds and syncs its folders of the rendered tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPlan {
    /// The controller.
    pub controller: crate::model::GitOpsController,
    /// The controller's namespace, where its objects are emitted.
    pub namespace: String,
    /// The folder of `out/` inside the repository, without a trailing `/`.
    pub path: String,
    /// Argo CD: the repository URL.
    pub repo: String,
    /// Argo CD: the revision to sync.
    pub revision: String,
    /// Argo CD: the API server URL, or the registered cluster name.
    pub destination: Destination,
    /// Argo CD: the AppProject.
    pub project: String,
    /// Flux: the GitRepository's name (in the controller's namespace).
    pub source: String,
}

/// Where Argo CD applies a cell's Applications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// The API server URL.
    Server(String),
    /// The cluster name as registered in Argo CD.
    Name(String),
}

/// A reviewed exception to the `restricted` Pod Security level, as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionPlan {
    /// The exception's name.
    pub name: String,
    /// The capabilities it lets containers add, in declaration order.
    pub capabilities: Vec<String>,
    /// Why the workload needs them.
    pub reason: String,
    /// Who approved it.
    pub approved_by: String,
}

/// A pool, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct PoolPlan {
    /// The pool name.
    pub name: String,
    /// The GPU model key.
    pub gpu: String,
    /// Sharing mode, as declared.
    pub sharing: Sharing,
    /// Nodes.
    pub nodes: i64,
    /// GPUs per node.
    pub gpus_per_node: i64,
    /// GPUs per NVLink domain, where declared.
    pub nvlink_domain: Option<i64>,
    /// What the pool offers the scheduler.
    pub offers: Vec<OfferPlan>,
    /// The Kueue ResourceFlavor name.
    pub flavor: String,
    /// The labels every node of the pool carries, sorted by key: the flavor's `nodeLabels`.
    pub node_labels: BTreeMap<String, String>,
    /// The pool's node taints.
    pub taints: Vec<TaintPlan>,
    /// The Kueue Topology of the pool, where it declares one.
    pub topology: Option<TopologyPlan>,
    /// The org whose tenants reserve in this shared (time-sliced or MPS) pool.
    pub shared_org: Option<String>,
    /// The one tenant the platform reserves the pool for (`owner`), where the cell names one.
    pub owner: Option<String>,
}

impl PoolPlan {
    /// Every resource a pod could be scheduled with on the pool's nodes: what it offers, and
    /// whole GPUs (`nvidia.com/gpu`) on any pool that is not `exclusive`, because a node whose
    /// MIG config failed or whose device-plugin config label is missing advertises its GPUs
    /// whole.
    pub fn reachable_resources(&self) -> Vec<&str> {
        let mut resources: Vec<&str> = self
            .offers
            .iter()
            .map(|offer| offer.resource.as_str())
            .collect();
        if self.sharing != Sharing::Exclusive && !resources.contains(&GPU_RESOURCE) {
            resources.push(GPU_RESOURCE);
        }
        resources
    }

    /// The repelling taint of this pool that no toleration from `flavor_pools` (the pools whose
    /// flavors a tenant's ClusterQueue lists) tolerates, if any: pods of that tenant can never
    /// land here.
    pub fn untolerated_taint<'a>(&'a self, flavor_pools: &[&PoolPlan]) -> Option<&'a TaintPlan> {
        self.taints
            .iter()
            .filter(|taint| taint.repels())
            .find(|taint| {
                !flavor_pools.iter().any(|pool| {
                    pool.taints
                        .iter()
                        .any(|other| taint.tolerated_by_toleration_of(other))
                })
            })
    }
}

/// A resource a pool offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OfferPlan {
    /// The MIG profile, for `mig` pools.
    pub profile: Option<String>,
    /// The extended resource name.
    pub resource: String,
    /// Devices of it in the pool.
    pub capacity: i64,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaintPlan {
    /// Key.
    pub key: String,
    /// Value.
    pub value: Option<String>,
    /// Effect.
    pub effect: String,
}

impl TaintPlan {
    /// Whether the taint keeps pods without a toleration off the node.
    pub fn repels(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }

    /// Whether the toleration Kueue injects for `other` (the pool flavor's toleration of its own
    /// taint: `Equal` with a value, `Exists` without) also tolerates this taint.
    pub fn tolerated_by_toleration_of(&self, other: &TaintPlan) -> bool {
        self.key == other.key
            && self.effect == other.effect
            && (other.value.is_none() || other.value == self.value)
    }

    /// `key=value:Effect`, as kubectl prints it.
    pub fn display(&self) -> String {
        match &self.value {
            Some(value) => format!("{}={}:{}", self.key, value, self.effect),
            None => format!("{}:{}", self.key, self.effect),
        }
    }
}

/// A Kueue Topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopologyPlan {
    /// The Topology name.
    pub name: String,
    /// Its levels, coarse to fine, `kubernetes.io/hostname` last.
    pub levels: Vec<TopologyLevelPlan>,
}

/// A level of a Kueue Topology: the node label whose values name its domains, and the nodes
/// one domain holds (1 for `kubernetes.io/hostname`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopologyLevelPlan {
    /// The node label.
    pub label: String,
    /// Nodes per domain.
    pub nodes: i64,
}

/// A priority class of a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityPlan {
    /// Name (also the WorkloadPriorityClass name).
    pub name: String,
    /// Value.
    pub value: i64,
    /// Whether pods of this class may preempt lower ones.
    pub preempt: bool,
    /// Description.
    pub description: Option<String>,
}

/// An org cohort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrgPlan {
    /// The org.
    pub org: String,
    /// The Cohort name.
    pub cohort: String,
    /// Fair-sharing weight, where declared.
    pub weight: Option<i64>,
    /// Its tenants in the cell, sorted.
    pub tenants: Vec<String>,
}

/// A tenant in one cell, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct TenantPlan {
    /// Tenant name.
    pub name: String,
    /// The declaring file, relative.
    pub source: String,
    /// Org.
    pub org: String,
    /// Team.
    pub team: String,
    /// Trust class.
    pub trust: Trust,
    /// Identity groups per role (`admin`, `member`, `viewer`).
    pub groups: BTreeMap<crate::model::TenantRole, String>,
    /// Container default requests `(cpu, memory)`.
    pub container_defaults: (String, String),
    /// One namespace per workload, sorted by workload kind.
    pub namespaces: Vec<NamespacePlan>,
    /// The ClusterQueue: the tenant's entitlements per pool flavor, which a Volcano cell's
    /// queue sums up per resource.
    pub queue: QueuePlan,
    /// Where the cell's scheduler is Volcano, the tenant's Volcano Queue (`volcano.rs`), made
    /// from [`TenantPlan::queue`]; `None` in a Kueue cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volcano: Option<volcano::VolcanoQueuePlan>,
    /// The chargeback labels of its Namespaces, ClusterQueue and LocalQueues (`metering.rs`);
    /// not part of `describe`.
    #[serde(skip)]
    pub chargeback: BTreeMap<String, String>,
    /// Every pool of the cell, with whether the tenant can reach it and why.
    pub reach: Vec<Reach>,
    /// Effective capacity per reserved pool resource.
    pub capacity: Vec<Effective>,
    /// The tenant's fleet reservations, with this cell's part.
    pub fleet: Vec<FleetShare>,
    /// Whether its pods may use RDMA devices and its Pod Security exceptions in the cell
    /// (`host.rs`; never the host's network, PID or IPC namespaces): only when it is `hard` and
    /// every pool it reaches is its alone, which depends on the cell's other tenants.
    pub cell_host_access: host::HostAccessPlan,
    /// The image registries (with path prefix) its pods may pull from.
    #[serde(skip)]
    pub registries: Vec<String>,
    /// Read-only shared-base object prefixes (`shared/…/`), each with the buckets of the cell
    /// it is granted on (`facts::storage::granted_buckets`); not part of `describe`.
    #[serde(skip)]
    pub shared_bases: Vec<SharedBasePlan>,
    /// The tenant's model weights, each verified against its lock entry and signature (what the
    /// weights stage verified, an input of resolve; a model that failed is never here), sorted by
    /// name and version.
    pub weights: Vec<VerifiedModel>,
    /// Its limits on the cell's shared models (`serving.rs`), sorted by model.
    pub serving: Vec<serving::TenantServing>,
}

/// A shared base a tenant reads in a cell, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedBasePlan {
    /// The object key prefix, `shared/…/`.
    pub prefix: String,
    /// The buckets of the cell's storage it is granted on, in declaration order: a subset of
    /// `StoragePlan::buckets`, empty in a cell without storage.
    pub buckets: Vec<String>,
}

impl SharedBasePlan {
    /// Whether the base is granted on `bucket`.
    pub fn on(&self, bucket: &str) -> bool {
        self.buckets.iter().any(|granted| granted == bucket)
    }
}

/// One fleet reservation of a tenant as one cell sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetShare {
    /// The GPU model.
    pub gpu: String,
    /// Whole GPUs across the fleet.
    pub total: i64,
    /// The cells of the reservation, with their parts, in declaration order.
    pub parts: Vec<(String, i64)>,
    /// This cell's part.
    pub part: i64,
    /// Whole GPUs of the model the tenant reserves in this cell (validation proved it equals
    /// the part).
    pub reserved: i64,
}

/// One tenant namespace.
#[derive(Debug, Clone, Serialize)]
pub struct NamespacePlan {
    /// The workload kind.
    pub workload: WorkloadKind,
    /// The namespace name.
    pub name: String,
    /// The workload's ServiceAccount.
    pub service_account: String,
    /// The priority class its pods may use.
    pub priority: Option<String>,
    /// Priority classes of the cell, and the system ones, that its pods may not use; the
    /// `tenant-priorities` quota denies every class but its own, also classes created later.
    pub denied_priorities: Vec<String>,
    /// Its part of the tenant's cpu ceiling.
    pub cpu: String,
    /// Its part of the tenant's memory ceiling.
    pub memory: String,
    /// Its part of the tenant's pods ceiling.
    pub pods: i64,
    /// Devices per GPU resource it may request (reserved plus burst of its reservations), every
    /// GPU resource of the cell listed.
    pub gpu: BTreeMap<String, i64>,
    /// Its other ResourceQuota keys and values: storage and Service ceilings (its part of the
    /// tenant's, 0 where undeclared) and 0 for every DRA device class (`network.rs`).
    pub other_quota: BTreeMap<String, String>,
    /// In a DRA cell, the devices the namespace may claim of each DeviceClass of the cell
    /// (`dra.rs`), 0 where the tenant reserves none; empty otherwise.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub dra_devices: BTreeMap<String, i64>,
    /// Reviewed exceptions to `restricted`, in declaration order (validation proved the tenant
    /// `hard` with an exclusive reservation for the workload); empty in a cell where the tenant
    /// has no host access (`host.rs`), where they are withheld with a warning.
    pub exceptions: Vec<ExceptionPlan>,
}

impl NamespacePlan {
    /// Every capability its exceptions grant, sorted and without repeats.
    pub fn excepted_capabilities(&self) -> Vec<String> {
        let capabilities: BTreeSet<&String> = self
            .exceptions
            .iter()
            .flat_map(|exception| &exception.capabilities)
            .collect();
        capabilities.into_iter().cloned().collect()
    }

    /// The Pod Security level its `enforce` label names: `restricted`, or for an excepted
    /// namespace the lowest level that admits what the exceptions grant (`lower/guard.rs`
    /// re-enforces every other `restricted` rule).
    pub fn enforce_level(&self) -> crate::facts::pod_security::PodSecurityLevel {
        crate::facts::pod_security::enforce_level(&self.excepted_capabilities())
    }
}

/// A tenant's ClusterQueue in a cell.
#[derive(Debug, Clone, Serialize)]
pub struct QueuePlan {
    /// The ClusterQueue name.
    pub name: String,
    /// The org cohort it belongs to.
    pub cohort: String,
    /// Fair-sharing weight, where declared.
    pub weight: Option<i64>,
    /// The tenant's cpu ceiling in the cell.
    pub cpu: String,
    /// The tenant's memory ceiling in the cell.
    pub memory: String,
    /// The tenant's pods ceiling in the cell.
    pub pods: i64,
    /// The GPU resources its flavors cover: every GPU resource of the cell, sorted.
    pub gpu_resources: Vec<String>,
    /// Per pool the tenant reserves in: the flavor and the entitlement per covered resource.
    pub flavors: Vec<FlavorQuota>,
    /// Whether a workload may preempt lower-priority workloads of the same queue.
    pub preempt_within: bool,
    /// Where the ClusterQueue counts cpu, memory and pods per pool flavor (a topology pool, or
    /// declared pool parts): what of the ceilings stays on the ceiling flavor for pods without
    /// GPUs. `None` when the whole ceiling sits on the ceiling flavor.
    pub ceiling_rest: Option<CeilingQuota>,
}

/// The cpu, memory and pods quotas of one flavor of a ClusterQueue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CeilingQuota {
    /// CPU requests.
    pub cpu: String,
    /// Memory requests.
    pub memory: String,
    /// Pods.
    pub pods: i64,
}

/// A tenant's entitlement on one flavor.
#[derive(Debug, Clone, Serialize)]
pub struct FlavorQuota {
    /// The pool.
    pub pool: String,
    /// The ResourceFlavor.
    pub flavor: String,
    /// Per covered resource, in the order of [`QueuePlan::gpu_resources`].
    pub resources: Vec<Entitlement>,
    /// The pool's part of the tenant's cpu, memory and pods ceilings, where the ClusterQueue
    /// counts them per pool flavor (see [`QueuePlan::ceiling_rest`]).
    pub ceiling: Option<CeilingQuota>,
}

/// Nominal, borrowing and lending of one resource on one flavor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entitlement {
    /// The resource.
    pub resource: String,
    /// Kueue nominal quota: the sum of `reserved`.
    pub nominal: i64,
    /// Kueue borrowing limit: the sum of `burst`.
    pub borrowing: i64,
    /// Kueue lending limit: the sum of each reservation's `lend` (all of `reserved` where none
    /// is declared), when any reservation of the resource declares one.
    pub lending: Option<i64>,
}

/// Whether a tenant reaches a pool, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reach {
    /// The pool.
    pub pool: String,
    /// Whether its pods can be admitted there.
    pub reachable: bool,
    /// Why, in words.
    pub why: String,
}

/// Resolves the fleet, with the models the weights stage verified (by tenant), into the plan;
/// returns it with the findings of the checks that need it. Every field of the plan is computed
/// here, once: nothing later fills in or changes a part of it.
pub fn resolve(
    fleet: &Fleet,
    verified: &BTreeMap<String, Vec<VerifiedModel>>,
    sources: &SourceMap,
    base_catalog: &Catalog,
) -> (Plan, Vec<Diagnostic>) {
    use rayon::prelude::*;
    let planned: Vec<(CellPlan, Vec<Diagnostic>)> = fleet
        .cells
        .par_iter()
        .filter_map(|cell| {
            // A version that could not be read left the cell incomplete, which is an error, and
            // resolve runs only on a fleet without errors: such a cell is never planned.
            let kubernetes = cell.kubernetes.as_ref().map(|version| version.value)?;
            let catalog = hardware::cell_catalog(cell, base_catalog);
            Some(cell_plan(
                cell,
                kubernetes,
                fleet,
                verified,
                sources,
                catalog.as_ref(),
            ))
        })
        .collect();
    let mut diagnostics = Vec::new();
    let mut cells = Vec::new();
    for (plan, findings) in planned {
        diagnostics.extend(findings);
        cells.push(plan);
    }
    cells.sort_by(|left, right| left.name.cmp(&right.name));
    (Plan { cells }, diagnostics)
}

/// The ResourceFlavor name of a pool.
pub fn flavor_name(pool: &str) -> String {
    format!("pool-{pool}")
}

/// The Cohort name of an org.
pub fn org_cohort(org: &str) -> String {
    format!("org-{org}")
}

/// One cell, resolved, with the findings of the checks that need its plan: pinning, host access
/// and runtime classes, in that order.
fn cell_plan(
    cell: &Cell,
    kubernetes: (u32, u32),
    fleet: &Fleet,
    verified: &BTreeMap<String, Vec<VerifiedModel>>,
    sources: &SourceMap,
    catalog: &Catalog,
) -> (CellPlan, Vec<Diagnostic>) {
    let mut node_labels = crate::facts::gpu::flavor_node_labels(cell, catalog);
    // A tenant whose trust class could not be read is incomplete, an error: it is never
    // planned, as resolve runs only on a fleet without errors.
    let tenants_here: Vec<(&Tenant, &crate::model::Quota)> = fleet
        .tenants
        .iter()
        .filter(|tenant| tenant.trust.is_some())
        .filter_map(|tenant| Some((tenant, tenant.quota_in(&cell.name.value)?)))
        .collect();
    let mut pools = Vec::new();
    for pool in &cell.pools {
        let shared_org = if pool.sharing.value.is_shared() {
            tenants_here
                .iter()
                .find(|(_, quota)| {
                    quota
                        .pools
                        .iter()
                        .any(|reservation| reservation.pool.value == pool.name.value)
                })
                .map(|(tenant, _)| tenant.org.value.clone())
        } else {
            None
        };
        pools.push(PoolPlan {
            name: pool.name.value.clone(),
            gpu: pool.gpu.value.clone(),
            sharing: pool.sharing.value,
            nodes: pool.nodes.value,
            gpus_per_node: pool.gpus_per_node.value,
            nvlink_domain: pool.nvlink_domain.as_ref().map(|domain| domain.value),
            offers: hardware::offers(pool, catalog)
                .into_iter()
                .map(
                    |Offer {
                         profile,
                         resource,
                         capacity,
                     }| OfferPlan {
                        profile,
                        resource,
                        capacity,
                    },
                )
                .collect(),
            flavor: flavor_name(&pool.name.value),
            // The labels every node group of the pool carries.
            node_labels: node_labels.remove(&pool.name.value).unwrap_or_default(),
            taints: pool
                .taints
                .iter()
                .map(|taint| TaintPlan {
                    key: taint.key.value.clone(),
                    value: taint.value.as_ref().map(|value| value.value.clone()),
                    effect: taint.effect.value.clone(),
                })
                .collect(),
            topology: pool.topology.as_ref().map(|_| TopologyPlan {
                name: flavor_name(&pool.name.value),
                levels: crate::facts::topology::topology_levels(pool)
                    .into_iter()
                    .map(|level| TopologyLevelPlan {
                        label: level.label,
                        nodes: level.nodes,
                    })
                    .collect(),
            }),
            shared_org,
            owner: pool.owner.as_ref().map(|owner| owner.value.clone()),
        });
    }
    let dra_plan = dra::dra_plan(cell, &pools, catalog);
    let mut gpu_resources: BTreeSet<String> = BTreeSet::from([GPU_RESOURCE.to_string()]);
    for pool in &pools {
        gpu_resources.extend(pool.offers.iter().map(|offer| offer.resource.clone()));
    }
    let gpu_resources: Vec<String> = gpu_resources.into_iter().collect();

    let mut priorities: Vec<PriorityPlan> = cell
        .priorities
        .iter()
        .map(|priority| PriorityPlan {
            name: priority.name.value.clone(),
            value: priority.value.value,
            preempt: priority
                .preempt
                .as_ref()
                .is_none_or(|preempt| preempt.value),
            description: priority.description.as_ref().map(|d| d.value.clone()),
        })
        .collect();
    priorities.sort_by(|left, right| left.name.cmp(&right.name));

    let mut orgs: BTreeMap<String, OrgPlan> = BTreeMap::new();
    for (tenant, _) in &tenants_here {
        let org = &tenant.org.value;
        orgs.entry(org.clone())
            .or_insert_with(|| OrgPlan {
                org: org.clone(),
                cohort: org_cohort(org),
                weight: cell
                    .orgs
                    .iter()
                    .find(|decl| &decl.name.value == org)
                    .and_then(|decl| decl.weight.as_ref().map(|weight| weight.value)),
                tenants: Vec::new(),
            })
            .tenants
            .push(tenant.name.value.clone());
    }

    // Each tenant's namespaces and ClusterQueue first, in name order; host access and effective
    // capacity depend on the other tenants' queues, so they are decided once all are known.
    let mut ordered: Vec<(&Tenant, Trust, &crate::model::Quota)> = tenants_here
        .iter()
        .filter_map(|(tenant, quota)| Some((*tenant, tenant.trust.as_ref()?.value, *quota)))
        .collect();
    ordered.sort_by(|left, right| left.0.name.value.cmp(&right.0.name.value));
    let parts: Vec<TenantParts> = ordered
        .iter()
        .map(|(tenant, trust, quota)| {
            tenant_parts(
                tenant,
                *trust,
                quota,
                cell,
                &pools,
                &gpu_resources,
                &priorities,
                catalog,
                dra_plan.as_ref(),
            )
        })
        .collect();
    let seats: Vec<host::Seat> = parts
        .iter()
        .map(|part| host::Seat {
            name: &part.tenant.name.value,
            trust: part.trust,
            flavors: &part.queue.flavors,
            namespaces: &part.namespaces,
        })
        .collect();
    let (host_access, host_findings) =
        host::decide(cell, &cell.name.value, fleet, sources, &pools, &seats);
    let capacity = capacity::effective(&pools, &seats, cell, fleet);
    let (runtime_classes, runtime_findings) = runtime::resolve(cell, &pools);
    let serving_plan = serving::serving_plan(cell);
    let tenants: Vec<TenantPlan> = parts
        .into_iter()
        .zip(host_access)
        .zip(capacity)
        .map(|((part, access), capacity)| {
            let weights = verified
                .get(&part.tenant.name.value)
                .cloned()
                .unwrap_or_default();
            let mut plan = tenant_plan(
                fleet, cell, &pools, sources, part, access, capacity, weights,
            );
            plan.serving = serving::tenant_serving(serving_plan.as_ref(), &plan.name);
            plan
        })
        .collect();

    let mut unreserved: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for pool in &pools {
        let per_resource = unreserved.entry(pool.flavor.clone()).or_default();
        for offer in &pool.offers {
            let reserved: i64 = tenants
                .iter()
                .flat_map(|tenant| &tenant.queue.flavors)
                .filter(|flavor| flavor.flavor == pool.flavor)
                .flat_map(|flavor| &flavor.resources)
                .filter(|entitlement| entitlement.resource == offer.resource)
                .map(|entitlement| entitlement.nominal)
                .sum();
            per_resource.insert(
                offer.resource.clone(),
                offer.capacity.saturating_sub(reserved).max(0),
            );
        }
    }

    let gpu_plan = gpu::gpu_plan(
        cell,
        &tenants_here
            .iter()
            .map(|(tenant, _)| *tenant)
            .collect::<Vec<_>>(),
        catalog,
    );
    let cost = showback::showback(
        cell,
        &pools,
        &tenants,
        &unreserved,
        &gpu_plan.capacity.stranded,
        catalog,
    );
    let metering =
        chargeback::chargeback(cell, &pools, &cost, &gpu_plan.capacity.stranded, catalog);
    let orgs: Vec<OrgPlan> = orgs.into_values().collect();
    let volcano_queues: Vec<&volcano::VolcanoQueuePlan> = tenants
        .iter()
        .filter_map(|tenant| tenant.volcano.as_ref())
        .collect();
    let volcano_orgs = match crate::facts::backends::backends(cell).scheduler {
        Scheduler::Kueue => Vec::new(),
        Scheduler::Volcano => volcano::org_queues(&orgs, &volcano_queues, &gpu_resources),
    };
    let plan = CellPlan {
        name: cell.name.value.clone(),
        source: sources.path(cell.file).to_string(),
        kubernetes,
        backends: crate::facts::backends::backends(cell),
        pools,
        priorities,
        orgs,
        gpu_resources,
        unreserved,
        oversubscribe: cell.oversubscribe.as_ref().map_or(1.0, |ratio| ratio.value),
        gitops: gitops_plan(cell),
        tenants,
        network: network::network(cell),
        runtime_classes,
        forbidden_label_keys: cell
            .forbidden_label_keys
            .iter()
            .map(|key| key.value.clone())
            .collect(),
        storage: storage::storage_plan(cell),
        gpu: gpu_plan,
        showback: cost,
        chargeback: metering,
        serving: serving_plan,
        volcano_orgs,
        dra: dra_plan,
    };
    let mut diagnostics = pinning::check(cell, fleet, &plan, catalog);
    diagnostics.extend(host_findings);
    diagnostics.extend(runtime_findings);
    (plan, diagnostics)
}

/// The cell's GitOps identities and sync settings, with the documented defaults for what it
/// leaves out.
fn gitops_plan(cell: &Cell) -> GitOpsPlan {
    use crate::model::GitOpsController;
    let declared = cell.gitops.as_ref();
    let text = |field: fn(&crate::model::GitOps) -> &Option<crate::model::Spanned<String>>,
                default: &str| {
        declared
            .and_then(|gitops| field(gitops).as_ref())
            .map_or_else(|| default.to_string(), |text| text.value.clone())
    };
    let controller = declared
        .and_then(|gitops| gitops.controller.as_ref())
        .map(|controller| controller.value);
    let namespace = text(
        |gitops| &gitops.namespace,
        match controller {
            Some(GitOpsController::Flux) => defaults::FLUX_NAMESPACE,
            Some(GitOpsController::ArgoCd) | None => defaults::ARGOCD_NAMESPACE,
        },
    );
    let default_user = match controller {
        Some(GitOpsController::ArgoCd) | None => {
            format!("system:serviceaccount:{namespace}:argocd-application-controller")
        }
        Some(GitOpsController::Flux) => {
            format!("system:serviceaccount:{namespace}:kustomize-controller")
        }
    };
    let sync = controller.map(|controller| SyncPlan {
        controller,
        namespace: namespace.clone(),
        path: text(|gitops| &gitops.path, "out"),
        repo: text(|gitops| &gitops.repo, ""),
        revision: text(|gitops| &gitops.revision, "HEAD"),
        destination: match declared.and_then(|gitops| gitops.cluster.as_ref()) {
            Some(cluster) => Destination::Name(cluster.value.clone()),
            None => Destination::Server(text(
                |gitops| &gitops.destination,
                "https://kubernetes.default.svc",
            )),
        },
        project: text(|gitops| &gitops.project, "default"),
        source: text(|gitops| &gitops.source, "flux-system"),
    });
    GitOpsPlan {
        user: text(|gitops| &gitops.user, &default_user),
        break_glass: text(|gitops| &gitops.break_glass, defaults::BREAK_GLASS),
        sync,
    }
}

/// What a tenant's plan in a cell is made of before the cell-wide decisions (host access,
/// effective capacity) that read every tenant's ClusterQueue.
struct TenantParts<'a> {
    tenant: &'a Tenant,
    trust: Trust,
    quota: &'a crate::model::Quota,
    /// Its namespaces, each with the exceptions its workload declares.
    namespaces: Vec<NamespacePlan>,
    queue: QueuePlan,
}

/// A tenant's namespaces and ClusterQueue in a cell.
#[allow(clippy::too_many_arguments)]
fn tenant_parts<'a>(
    tenant: &'a Tenant,
    trust: Trust,
    quota: &'a crate::model::Quota,
    cell: &Cell,
    pools: &[PoolPlan],
    gpu_resources: &[String],
    priorities: &[PriorityPlan],
    catalog: &Catalog,
    dra_plan: Option<&dra::DraPlan>,
) -> TenantParts<'a> {
    let mut workloads: Vec<&crate::model::Workload> = tenant.workloads.iter().collect();
    workloads.sort_by_key(|workload| workload.kind.value);
    workloads.dedup_by_key(|workload| workload.kind.value);
    // Validation proved that explicit splits name every workload and add up.
    let parts = crate::facts::split::split_ceilings(quota, &tenant.workloads);
    let other_quotas =
        network::other_quota(quota, &tenant.workloads, &network::dra_device_classes(cell));
    let mut namespaces = Vec::new();
    for ((workload, part), other_quota) in workloads.iter().zip(parts).zip(other_quotas) {
        let (cpu, memory, pods) = (part.cpu, part.memory, part.pods);
        let name = crate::facts::naming::namespace_name(&tenant.name.value, workload.kind.value);
        let mut gpu: BTreeMap<String, i64> = gpu_resources
            .iter()
            .map(|resource| (resource.clone(), 0))
            .collect();
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
            let entry = gpu.entry(offer.resource).or_insert(0);
            *entry = entry.saturating_add(amount);
        }
        let priority = workload.priority.as_ref().map(|p| p.value.clone());
        let mut denied: Vec<String> = priorities
            .iter()
            .map(|class| class.name.clone())
            .filter(|name| Some(name) != priority.as_ref())
            .chain(SYSTEM_PRIORITIES.iter().map(|name| name.to_string()))
            .collect();
        denied.sort();
        namespaces.push(NamespacePlan {
            workload: workload.kind.value,
            name,
            service_account: workload.service_account.value.clone(),
            priority,
            denied_priorities: denied,
            cpu: cpu.to_string(),
            memory: memory.to_string(),
            pods,
            gpu,
            exceptions: workload
                .exceptions
                .iter()
                .map(|exception| ExceptionPlan {
                    name: exception.name.value.clone(),
                    capabilities: exception
                        .capabilities
                        .iter()
                        .map(|capability| capability.value.clone())
                        .collect(),
                    reason: exception.reason.value.clone(),
                    approved_by: exception.approved_by.value.clone(),
                })
                .collect(),
            other_quota,
            dra_devices: dra_plan
                .map(|plan| dra::namespace_devices(plan, cell, quota, workload.kind.value, catalog))
                .unwrap_or_default(),
        });
    }

    let pool_ceilings = crate::facts::split::pool_ceilings(quota, cell);
    // Entitlements per pool flavor and resource.
    let mut per_pool: BTreeMap<&str, BTreeMap<String, Sums>> = BTreeMap::new();
    for reservation in &quota.pools {
        let Some((pool, offer)) = hardware::resolve(cell, reservation, catalog) else {
            continue;
        };
        let entry = per_pool
            .entry(pool.name.value.as_str())
            .or_default()
            .entry(offer.resource)
            .or_insert((0, 0, 0, false));
        entry.0 = entry.0.saturating_add(reservation.reserved.value);
        entry.1 = entry
            .1
            .saturating_add(reservation.burst.as_ref().map_or(0, |burst| burst.value));
        // A reservation without `lend` lends all of it; the limit is set when any declares one.
        entry.2 = entry.2.saturating_add(
            reservation
                .lend
                .as_ref()
                .map_or(reservation.reserved.value, |lend| lend.value),
        );
        entry.3 |= reservation.lend.is_some();
    }
    let flavors: Vec<FlavorQuota> = pools
        .iter()
        .filter_map(|pool| {
            let reserved = per_pool.get(pool.name.as_str())?;
            Some(FlavorQuota {
                pool: pool.name.clone(),
                flavor: pool.flavor.clone(),
                resources: gpu_resources
                    .iter()
                    .map(|resource| {
                        let (nominal, borrowing, lending, limited) =
                            reserved.get(resource).copied().unwrap_or((0, 0, 0, false));
                        let lending = limited.then_some(lending);
                        Entitlement {
                            resource: resource.clone(),
                            nominal,
                            borrowing,
                            lending,
                        }
                    })
                    .collect(),
                ceiling: pool_ceilings.as_ref().and_then(|parts| {
                    parts
                        .iter()
                        .find(|part| part.pool == pool.name)
                        .map(|part| CeilingQuota {
                            cpu: part.cpu.to_string(),
                            memory: part.memory.to_string(),
                            pods: part.pods,
                        })
                }),
            })
        })
        .collect();
    // What the pool parts leave of the ceilings stays on the ceiling flavor; a fleet that
    // passed validation has parts that fit, so the rest is never negative.
    let ceiling_rest = pool_ceilings.as_ref().map(|parts| {
        let cpu: i128 = parts.iter().map(|part| part.cpu.milli()).sum();
        let memory: i128 = parts.iter().map(|part| part.memory.milli()).sum();
        let pods: i64 = parts
            .iter()
            .map(|part| part.pods)
            .fold(0, i64::saturating_add);
        let rest = |ceiling: &crate::quantity::Quantity, used: i128| {
            crate::quantity::Quantity::from_milli((ceiling.milli() - used).max(0), ceiling.format())
                .map_or_else(|| "0".to_string(), |q| q.to_string())
        };
        CeilingQuota {
            cpu: rest(&quota.cpu.value, cpu),
            memory: rest(&quota.memory.value, memory),
            pods: quota.pods.value.saturating_sub(pods).max(0),
        }
    });

    // Preemption inside the queue only when the tenant runs workloads at several priorities
    // and a higher one may preempt.
    let used: Vec<&PriorityPlan> = priorities
        .iter()
        .filter(|class| {
            namespaces
                .iter()
                .any(|namespace| namespace.priority.as_deref() == Some(class.name.as_str()))
        })
        .collect();
    let lowest = used.iter().map(|class| class.value).min();
    let preempt_within = used
        .iter()
        .any(|class| class.preempt && Some(class.value) > lowest);

    TenantParts {
        tenant,
        trust,
        quota,
        namespaces,
        queue: QueuePlan {
            name: tenant.name.value.clone(),
            cohort: org_cohort(&tenant.org.value),
            weight: quota.weight.as_ref().map(|weight| weight.value),
            cpu: quota.cpu.value.to_string(),
            memory: quota.memory.value.to_string(),
            pods: quota.pods.value,
            gpu_resources: gpu_resources.to_vec(),
            flavors,
            preempt_within,
            ceiling_rest,
        },
    }
}

/// A tenant's plan in a cell, from its parts and the cell-wide decisions: its host access (a
/// namespace keeps its exceptions only where it is granted), its effective capacity and its
/// verified weights.
#[allow(clippy::too_many_arguments)]
fn tenant_plan(
    fleet: &Fleet,
    cell: &Cell,
    pools: &[PoolPlan],
    sources: &SourceMap,
    parts: TenantParts,
    cell_host_access: host::HostAccessPlan,
    capacity: Vec<Effective>,
    weights: Vec<VerifiedModel>,
) -> TenantPlan {
    let TenantParts {
        tenant,
        trust,
        quota,
        namespaces,
        queue,
    } = parts;
    let namespaces: Vec<NamespacePlan> = if cell_host_access.granted {
        namespaces
    } else {
        namespaces
            .into_iter()
            .map(|namespace| NamespacePlan {
                exceptions: Vec::new(),
                ..namespace
            })
            .collect()
    };
    let scheduler = crate::facts::backends::backends(cell).scheduler;
    let volcano = match scheduler {
        Scheduler::Kueue => None,
        Scheduler::Volcano => Some(volcano::tenant_queue(&tenant.name.value, &queue)),
    };
    let reach = pools
        .iter()
        .map(|pool| {
            reach(
                tenant,
                pool,
                pools,
                &queue.flavors,
                &namespaces,
                volcano.as_ref(),
            )
        })
        .collect();

    let groups = tenant
        .groups
        .declared()
        .map(|(role, group)| (role, group.value.clone()))
        .collect();
    let defaults = &tenant.container_defaults;
    let chargeback = metering::chargeback_labels(
        &metering::ChargedAs {
            tenant: &tenant.name.value,
            org: &tenant.org.value,
            cell: &cell.name.value,
            // The queue the tenant's pods are scheduled through: its Volcano Queue, or its
            // ClusterQueue.
            queue: volcano.as_ref().map_or(&queue.name, |queue| &queue.name),
        },
        &tenant.chargeback,
        &queue.flavors,
        pools,
    );
    TenantPlan {
        name: tenant.name.value.clone(),
        source: sources.path(tenant.file).to_string(),
        org: tenant.org.value.clone(),
        team: tenant.team.value.clone(),
        trust,
        groups,
        container_defaults: (
            defaults.cpu.as_ref().map_or_else(
                || defaults::CONTAINER_CPU.to_string(),
                |cpu| cpu.value.to_string(),
            ),
            defaults.memory.as_ref().map_or_else(
                || defaults::CONTAINER_MEMORY.to_string(),
                |memory| memory.value.to_string(),
            ),
        ),
        namespaces,
        queue,
        volcano,
        chargeback,
        reach,
        capacity,
        fleet: fleet_shares(tenant, quota, cell),
        cell_host_access,
        registries: tenant
            .registries
            .iter()
            .map(|registry| registry.value.clone())
            .collect(),
        shared_bases: tenant
            .shared_bases
            .iter()
            .map(|base| SharedBasePlan {
                prefix: base.value.clone(),
                buckets: crate::facts::storage::granted_buckets(
                    fleet,
                    cell,
                    &tenant.name.value,
                    &base.value,
                )
                .into_iter()
                .map(str::to_string)
                .collect(),
            })
            .collect(),
        weights,
        serving: Vec::new(),
    }
}

/// The tenant's fleet reservations that name this cell.
fn fleet_shares(tenant: &Tenant, quota: &crate::model::Quota, cell: &Cell) -> Vec<FleetShare> {
    tenant
        .fleet
        .iter()
        .filter_map(|reservation| {
            let parts = crate::facts::split::fleet_cell_parts(reservation).ok()?;
            let parts: Vec<(String, i64)> = reservation
                .cells
                .iter()
                .map(|share| share.cell.value.clone())
                .zip(parts)
                .collect();
            let part = parts
                .iter()
                .find(|(name, _)| name == &cell.name.value)
                .map(|(_, part)| *part)?;
            Some(FleetShare {
                gpu: reservation.gpu.value.clone(),
                total: reservation.gpus.value,
                parts,
                part,
                reserved: crate::facts::split::reserved_gpus_of_model(
                    quota,
                    cell,
                    &reservation.gpu.value,
                ),
            })
        })
        .collect()
}

/// Reserved, burst, lendable (each reservation's `lend`, or all of it without one) and whether
/// any reservation of one pool resource declares `lend`.
type Sums = (i64, i64, i64, bool);

/// Whether the tenant's trust class or org forbids the pool, and why.
pub(crate) fn forbidden(tenant: &Tenant, pool: &PoolPlan) -> Option<String> {
    let sharing = pool.sharing;
    // Fails closed: a tenant without a trust class (never planned) reaches no pool.
    let Some(trust) = tenant.trust.as_ref().map(|trust| trust.value) else {
        return Some("its trust class could not be read".to_string());
    };
    let by_trust = match trust {
        Trust::Hard => sharing != Sharing::Exclusive,
        Trust::Mig => sharing.is_shared(),
        Trust::Soft => false,
    };
    if by_trust {
        return Some(format!(
            "trust `{}` forbids `{}` pools",
            trust.as_str(),
            pool.sharing
        ));
    }
    match &pool.shared_org {
        Some(org) if org != &tenant.org.value => Some(format!(
            "the pool time-slices or MPS-shares its GPUs for org `{org}`"
        )),
        _ => None,
    }
}

/// Whether a tenant reaches a pool, and why, in the words of its cell's scheduler: a Kueue
/// flavor pins pods to its pool, a Volcano cell pins them by the pools' taints, which the floor
/// lets a tenant's pods tolerate only for its own pools.
fn reach(
    tenant: &Tenant,
    pool: &PoolPlan,
    pools: &[PoolPlan],
    flavors: &[FlavorQuota],
    namespaces: &[NamespacePlan],
    volcano: Option<&volcano::VolcanoQueuePlan>,
) -> Reach {
    if let (Some(flavor), Some(queue)) = (
        flavors.iter().find(|flavor| flavor.pool == pool.name),
        volcano,
    ) {
        let reserved: Vec<String> = flavor
            .resources
            .iter()
            .filter(|entitlement| entitlement.nominal > 0 || entitlement.borrowing > 0)
            .map(|entitlement| {
                format!(
                    "{} {} + {} burst",
                    entitlement.resource, entitlement.nominal, entitlement.borrowing
                )
            })
            .collect();
        return Reach {
            pool: pool.name.clone(),
            reachable: true,
            why: format!(
                "reserved in its Volcano queue `{}`, whose pods may tolerate the pool's taints: {}",
                queue.name,
                reserved.join(", ")
            ),
        };
    }
    if let Some(flavor) = flavors.iter().find(|flavor| flavor.pool == pool.name) {
        let reserved: Vec<String> = flavor
            .resources
            .iter()
            .filter(|entitlement| entitlement.nominal > 0 || entitlement.borrowing > 0)
            .map(|entitlement| {
                format!(
                    "{} {} + {} burst",
                    entitlement.resource, entitlement.nominal, entitlement.borrowing
                )
            })
            .collect();
        return Reach {
            pool: pool.name.clone(),
            reachable: true,
            why: format!(
                "flavor `{}` in its ClusterQueue: {}",
                flavor.flavor,
                reserved.join(", ")
            ),
        };
    }
    let quota_zero = pool.reachable_resources().into_iter().all(|resource| {
        namespaces
            .iter()
            .all(|namespace| namespace.gpu.get(resource).copied().unwrap_or(0) == 0)
    });
    let flavor_pools: Vec<&PoolPlan> = pools
        .iter()
        .filter(|candidate| flavors.iter().any(|flavor| flavor.pool == candidate.name))
        .collect();
    let blocked_by = match (quota_zero, pool.untolerated_taint(&flavor_pools), volcano) {
        (true, _, _) => "its quota holds none of the resources its nodes can advertise".to_string(),
        (false, Some(taint), None) => format!(
            "the pool is tainted `{}` and no flavor of the tenant tolerates it",
            taint.display()
        ),
        (false, Some(taint), Some(_)) => format!(
            "the pool is tainted `{}` and the floor lets the tenant's pods tolerate only its own pools' taints",
            taint.display()
        ),
        (false, None, None) => {
            "no flavor in its ClusterQueue (pods that bypass Kueue could land here)".to_string()
        }
        (false, None, Some(queue)) => format!(
            "no reservation in its Volcano queue `{}` (its pods could land here; `plan/pinning.rs` refuses a cell where they could use a resource the queue holds)",
            queue.name
        ),
    };
    let why = match forbidden(tenant, pool) {
        Some(reason) => format!("{reason}; {blocked_by}"),
        None => format!("not reserved; {blocked_by}"),
    };
    Reach {
        pool: pool.name.clone(),
        reachable: false,
        why,
    }
}
