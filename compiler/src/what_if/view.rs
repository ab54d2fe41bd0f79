//! The one place `what-if` reads the compiled fleet: the plan (with the nodes one domain of each
//! topology level holds), and for the one fact the plan does not carry (the nodes of each MIG
//! layout with what one of them offers) the validated pool the plan was resolved from, through
//! `hardware::node_offers`, the function whose sums are the plan's offers.
//!
//! Consumes: a [`Plan`], the validated [`Fleet`] it was resolved from and the built-in catalog.
//! Produces: a [`FleetView`], everything the query computes with, as plain numbers.
//!
//! Invariants:
//! - Every figure of a reservation (reserved, burst, what the cell admits, what whole gangs use,
//!   the effective capacity) is the plan's own (`TenantPlan::capacity`), never recomputed.
//! - Each group's nodes times what one of its nodes offers, summed over the groups, is the
//!   plan's offer of the pool (`hardware::offers` is that sum); a pool whose groups do not add
//!   up is left out of the view, so the query never works on figures the build would not emit.
//! - When the plan carries the node groups itself, only this file changes.

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::hardware;
use crate::model::{Fleet, Pool};
use crate::plan::{CellPlan, Plan, PoolPlan, TenantPlan};

/// The fleet as the query sees it: cells sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetView {
    /// Cells, sorted by name.
    pub cells: Vec<CellView>,
}

/// One cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellView {
    /// The cell name.
    pub name: String,
    /// Pools in declaration order.
    pub pools: Vec<PoolView>,
    /// Tenants with a quota in the cell, sorted by name.
    pub tenants: Vec<TenantView>,
}

/// One pool: its nodes by group and its topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolView {
    /// The pool name.
    pub name: String,
    /// The GPU model key.
    pub gpu: String,
    /// Whether the pool gives whole GPUs (`exclusive`), the only pools fleet contracts and
    /// gangs count.
    pub exclusive: bool,
    /// The tenant the pool is reserved for, where the cell names one.
    pub owner: Option<String>,
    /// GPUs per node.
    pub gpus_per_node: i64,
    /// Node groups: one per MIG layout of a MIG pool, else one for the whole pool.
    pub groups: Vec<GroupView>,
    /// Topology levels coarse to fine with the nodes one domain holds, `kubernetes.io/hostname`
    /// last; empty when the pool declares no topology.
    pub levels: Vec<LevelView>,
}

impl PoolView {
    /// Nodes across the groups.
    pub fn nodes(&self) -> i64 {
        self.groups
            .iter()
            .map(|group| group.nodes)
            .fold(0, i64::saturating_add)
    }
}

/// A group of a pool's nodes with one GPU configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    /// The MIG layout, for a MIG pool.
    pub layout: Option<String>,
    /// Nodes in the group.
    pub nodes: i64,
    /// What one node offers: `(resource, MIG profile, devices)`, sorted by resource.
    pub per_node: Vec<(String, Option<String>, i64)>,
}

/// A topology level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelView {
    /// The node label.
    pub label: String,
    /// Nodes per domain.
    pub nodes: i64,
}

/// One tenant in one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantView {
    /// The tenant.
    pub name: String,
    /// Per reserved pool resource, the plan's figures.
    pub rows: Vec<RowView>,
    /// Its fleet contracts that name this cell.
    pub fleet: Vec<ContractView>,
}

/// The plan's figures of one reserved pool resource (`plan::Effective`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowView {
    /// The pool.
    pub pool: String,
    /// The resource.
    pub resource: String,
    /// Its MIG profile, for a MIG pool.
    pub profile: Option<String>,
    /// Reserved: the Kueue nominal quota.
    pub nominal: i64,
    /// Burst: the Kueue borrowing limit.
    pub borrowing: i64,
    /// What the cell admits for the tenant while the others keep only what they may not lend.
    pub cell_admit: i64,
    /// What whole gangs can use.
    pub topology_fit: i64,
    /// `min(quota, cell_admit, topology_fit)`.
    pub effective: i64,
    /// The largest gang on the pool and the GPUs of the domain it must fit, where declared.
    pub gang: Option<(i64, i64)>,
}

/// A fleet contract of a tenant, as the plan records it in each of its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractView {
    /// The GPU model.
    pub gpu: String,
    /// Whole GPUs across the fleet.
    pub total: i64,
    /// Its cells with their parts, in declaration order.
    pub parts: Vec<(String, i64)>,
}

/// The view of a compiled fleet. Cells or pools the validated fleet does not hold (never the
/// case for a plan `compile` returns) are left out.
pub fn view(plan: &Plan, fleet: &Fleet, base: &Catalog) -> FleetView {
    FleetView {
        cells: plan
            .cells
            .iter()
            .filter_map(|cell| cell_view(cell, fleet, base))
            .collect(),
    }
}

fn cell_view(plan: &CellPlan, fleet: &Fleet, base: &Catalog) -> Option<CellView> {
    let declared = fleet.cell(&plan.name)?;
    let catalog = hardware::cell_catalog(declared, base);
    let pools = plan
        .pools
        .iter()
        .filter_map(|pool| {
            let decl = declared
                .pools
                .iter()
                .find(|decl| decl.name.value == pool.name)?;
            pool_view(pool, decl, &catalog)
        })
        .collect();
    Some(CellView {
        name: plan.name.clone(),
        pools,
        tenants: plan
            .tenants
            .iter()
            .map(|tenant| tenant_view(plan, tenant))
            .collect(),
    })
}

fn pool_view(plan: &PoolPlan, decl: &Pool, catalog: &Catalog) -> Option<PoolView> {
    let groups: Vec<GroupView> = hardware::node_offers(decl, catalog)
        .into_iter()
        .map(|group| GroupView {
            layout: group.layout,
            nodes: group.nodes,
            per_node: group
                .per_node
                .into_iter()
                .map(|offer| (offer.resource, offer.profile, offer.capacity))
                .collect(),
        })
        .collect();
    // The groups must add up to the plan's offers, or the view would answer for other hardware.
    let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
    for group in &groups {
        for (resource, _, devices) in &group.per_node {
            let sum = sums.entry(resource.as_str()).or_insert(0);
            *sum = sum.saturating_add(group.nodes.saturating_mul(*devices));
        }
    }
    let planned: BTreeMap<&str, i64> = plan
        .offers
        .iter()
        .map(|offer| (offer.resource.as_str(), offer.capacity))
        .collect();
    if sums != planned {
        return None;
    }
    let levels: Vec<LevelView> = plan
        .topology
        .iter()
        .flat_map(|topology| &topology.levels)
        .map(|level| LevelView {
            label: level.label.clone(),
            nodes: level.nodes,
        })
        .collect();
    Some(PoolView {
        name: plan.name.clone(),
        gpu: plan.gpu.clone(),
        exclusive: plan.sharing == crate::model::Sharing::Exclusive,
        owner: plan.owner.clone(),
        gpus_per_node: plan.gpus_per_node,
        groups,
        levels,
    })
}

fn tenant_view(cell: &CellPlan, tenant: &TenantPlan) -> TenantView {
    TenantView {
        name: tenant.name.clone(),
        rows: tenant
            .capacity
            .iter()
            .map(|row| RowView {
                pool: row.pool.clone(),
                resource: row.resource.clone(),
                profile: cell
                    .pools
                    .iter()
                    .find(|pool| pool.name == row.pool)
                    .and_then(|pool| {
                        pool.offers
                            .iter()
                            .find(|offer| offer.resource == row.resource)
                    })
                    .and_then(|offer| offer.profile.clone()),
                nominal: row.nominal,
                borrowing: row.borrowing,
                cell_admit: row.cell_admit,
                topology_fit: row.topology_fit,
                effective: row.effective,
                gang: row.gang.zip(row.domain),
            })
            .collect(),
        fleet: tenant
            .fleet
            .iter()
            .map(|share| ContractView {
                gpu: share.gpu.clone(),
                total: share.total,
                parts: share.parts.clone(),
            })
            .collect(),
    }
}
