//! The variables a template sees: a documented, stable subset of the plan.
//!
//! Consumes: a [`CellPlan`] and, for tenant templates, one of its [`TenantPlan`]s.
//! Produces: serde structs that minijinja reads as `cell` and `tenant`.
//!
//! Invariants: every field here is listed in `docs/templates.md`, and a test checks that the
//! page names each one; fields are only added, never renamed, so platform templates keep
//! rendering; a cell template sees only its cell, never the tenants in it, so editing a tenant
//! never changes a cell template's output.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{CellPlan, TenantPlan};

/// The variables of a tenant template: `tenant` and `cell`.
#[derive(Debug, Clone, Serialize)]
pub struct TenantContext {
    /// The tenant, in this cell.
    pub tenant: TenantView,
    /// The cell the tenant runs in.
    pub cell: CellView,
}

/// The variables of a cell template: `cell` only.
#[derive(Debug, Clone, Serialize)]
pub struct CellContext {
    /// The cell.
    pub cell: CellView,
}

/// A tenant as templates see it.
#[derive(Debug, Clone, Serialize)]
pub struct TenantView {
    /// The tenant's name.
    pub name: String,
    /// Its org.
    pub org: String,
    /// Its team.
    pub team: String,
    /// Its trust class: `soft`, `mig` or `hard`.
    pub trust: String,
    /// Its namespaces in this cell, one per workload, in the plan's order.
    pub namespaces: Vec<NamespaceView>,
    /// Its cpu, memory and pods ceiling in this cell, across its namespaces.
    pub ceiling: Ceiling,
    /// Its GPU reservations in this cell, per pool and resource.
    pub reservations: Vec<ReservationView>,
    /// The chargeback labels its pods must carry, without the GPU model label.
    pub labels: BTreeMap<String, String>,
}

/// One tenant namespace.
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceView {
    /// The namespace's name.
    pub name: String,
    /// The workload kind it holds: `train` or `infer`.
    pub workload: String,
    /// The ServiceAccount tenantc creates in it.
    pub service_account: String,
    /// The priority class its pods run at, if declared.
    pub priority: Option<String>,
    /// Its part of the tenant's ceiling.
    pub ceiling: Ceiling,
    /// Its GPU quota per resource (`nvidia.com/gpu` and MIG resources), zero where none.
    pub gpu: BTreeMap<String, i64>,
}

/// A cpu, memory and pods ceiling, quantities as the API server prints them.
#[derive(Debug, Clone, Serialize)]
pub struct Ceiling {
    /// CPU, such as `512`.
    pub cpu: String,
    /// Memory, such as `4Ti`.
    pub memory: String,
    /// Pods.
    pub pods: i64,
}

/// One reservation of a resource in a pool.
#[derive(Debug, Clone, Serialize)]
pub struct ReservationView {
    /// The pool.
    pub pool: String,
    /// The resource, such as `nvidia.com/gpu`.
    pub resource: String,
    /// Devices reserved.
    pub reserved: i64,
    /// Devices it may borrow above the reservation.
    pub burst: i64,
    /// Devices it may lend, if limited.
    pub lend: Option<i64>,
}

/// A cell as templates see it.
#[derive(Debug, Clone, Serialize)]
pub struct CellView {
    /// The cell's name.
    pub name: String,
    /// Its Kubernetes version, such as `1.33`.
    pub kubernetes: String,
    /// Its GPU node pools.
    pub pools: Vec<PoolView>,
}

/// A GPU node pool.
#[derive(Debug, Clone, Serialize)]
pub struct PoolView {
    /// The pool's name.
    pub name: String,
    /// Its GPU model key, such as `H100-80GB-SXM`.
    pub gpu: String,
    /// How its GPUs are shared: `exclusive`, `mig`, `mig-single`, `time-slice` or `mps`.
    pub sharing: String,
    /// Its nodes.
    pub nodes: i64,
    /// GPUs per node.
    pub gpus_per_node: i64,
}

/// The `cell` variable.
pub fn cell_view(cell: &CellPlan) -> CellView {
    let (major, minor) = cell.kubernetes;
    CellView {
        name: cell.name.clone(),
        kubernetes: format!("{major}.{minor}"),
        pools: cell
            .pools
            .iter()
            .map(|pool| PoolView {
                name: pool.name.clone(),
                gpu: pool.gpu.clone(),
                sharing: pool.sharing.to_string(),
                nodes: pool.nodes,
                gpus_per_node: pool.gpus_per_node,
            })
            .collect(),
    }
}

/// The `tenant` variable for `tenant` in `cell`.
pub fn tenant_view(tenant: &TenantPlan, cell: &CellPlan) -> TenantView {
    let queue = &tenant.queue;
    TenantView {
        name: tenant.name.clone(),
        org: tenant.org.clone(),
        team: tenant.team.clone(),
        trust: tenant.trust.to_string(),
        namespaces: tenant
            .namespaces
            .iter()
            .map(|namespace| NamespaceView {
                name: namespace.name.clone(),
                workload: namespace.workload.to_string(),
                service_account: namespace.service_account.clone(),
                priority: namespace.priority.clone(),
                ceiling: Ceiling {
                    cpu: namespace.cpu.clone(),
                    memory: namespace.memory.clone(),
                    pods: namespace.pods,
                },
                gpu: namespace.gpu.clone(),
            })
            .collect(),
        ceiling: Ceiling {
            cpu: queue.cpu.clone(),
            memory: queue.memory.clone(),
            pods: queue.pods,
        },
        reservations: queue
            .flavors
            .iter()
            .flat_map(|flavor| {
                flavor
                    .resources
                    .iter()
                    .filter(|entitlement| queue.gpu_resources.contains(&entitlement.resource))
                    .map(|entitlement| ReservationView {
                        pool: flavor.pool.clone(),
                        resource: entitlement.resource.clone(),
                        reserved: entitlement.nominal,
                        burst: entitlement.borrowing,
                        lend: entitlement.lending,
                    })
            })
            .collect(),
        labels: BTreeMap::from([
            (
                format!("{}/tenant", crate::kube::labels::LABEL_PREFIX),
                tenant.name.clone(),
            ),
            (
                format!("{}/cell", crate::kube::labels::LABEL_PREFIX),
                cell.name.clone(),
            ),
        ]),
    }
}
