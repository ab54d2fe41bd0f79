//! Kueue checks: the declarations behind each cell's Kueue objects hold on the hardware.
//!
//! Consumes: the [`Fleet`] and the hardware catalog. Produces: diagnostics for lending above
//! the reservation (`lend-above-reserved`), bursts beyond the cell's oversubscription ratio
//! (`burst-oversubscribed`), pool topologies that are not a strict tree (`topology-not-tree`),
//! gangs that fit no domain or no quota (`gang-exceeds-domain`, `gang-exceeds-quota`),
//! reservations that split an NVLink domain (`reservation-splits-nvlink-domain`), ceiling
//! splits that do not add up (`ceiling-split-mismatch`), fleet reservations that do not match
//! the cells (`fleet-reservation-mismatch`) and Kueue's own limits (`kueue-limit-exceeded`).
//! The arithmetic these checks share with the plan lives in `facts/`: the exact splits
//! (`facts/split.rs`), a pool's topology levels and NVLink domain (`facts/topology.rs`) and the
//! node labels of each pool's ResourceFlavor (`facts/gpu.rs`).
//!
//! Invariants: pure; a reservation is counted against exactly the pool resource
//! [`hardware::resolve`] maps it to, as `validate::tenants` and `plan` count it; every split
//! is checked with the function `plan` resolves it with, so a fleet that passes these checks
//! lowers to namespace quotas that add up to its ceilings.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Catalog;
use crate::diag::Diagnostic;
use crate::facts::split::counted_reservations;
use crate::hardware;
use crate::model::{Cell, Fleet, PoolQuota, Tenant};
use crate::source::Span;

use super::duplicates;

mod burst;
mod cell;
mod fleet;
#[cfg(test)]
mod limit_props;
mod reservations;
mod splits;
#[cfg(test)]
mod tests;

use burst::check_burst;
use cell::check_cell;
use fleet::check_fleet;
use reservations::{
    check_gang_quota, check_lend, check_pool_ceilings, check_pool_count, check_reservation,
};
use splits::{check_empty_shares, check_splits};

/// The node labels of a Kueue ResourceFlavor: the pool's own plus those tenantc adds (see
/// [`crate::facts::gpu::flavor_node_labels`]).
pub const MAX_FLAVOR_LABELS: usize = crate::kube::kueue::MAX_FLAVOR_NODE_ITEMS;
/// The taints a pool may declare: a ResourceFlavor holds at most 8 `nodeTaints`.
pub const MAX_POOL_TAINTS: usize = crate::kube::kueue::MAX_FLAVOR_NODE_ITEMS;
/// The distinct GPU resources of a cell, `nvidia.com/gpu` included: every ClusterQueue's GPU
/// resource group and the root Cohort's cover them all, and a group covers at most 64.
pub const MAX_CELL_GPU_RESOURCES: usize = crate::kube::kueue::MAX_RESOURCES_PER_GROUP;
/// The pools of one cell: the root Cohort lists each pool's flavor in one resource group, which
/// holds at most 64 flavors.
pub const MAX_CELL_POOLS: usize = crate::kube::kueue::MAX_FLAVORS_PER_GROUP;
/// The pools of one cell a tenant may reserve in: a resource group holds at most 64 flavors.
pub const MAX_TENANT_POOLS: usize = crate::kube::kueue::MAX_FLAVORS_PER_GROUP;
/// The (flavor, resource) pairs of one resource group: pools times the cell's GPU resources.
pub const MAX_GROUP_PAIRS: usize = crate::kube::kueue::MAX_PAIRS_PER_GROUP;
/// The levels of a Kueue Topology, `kubernetes.io/hostname` included.
pub const MAX_TOPOLOGY_LEVELS: usize = 16;
/// The longest priority name: it becomes a WorkloadPriorityClass, named in a label value.
pub const MAX_PRIORITY_NAME: usize = 63;

/// The reservations that draw on one pool resource.
type Reservations<'a> = Vec<(&'a Tenant, &'a PoolQuota)>;

/// Runs every Kueue check.
pub(super) fn check(fleet: &Fleet, catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    let cells: BTreeMap<&str, &Cell> = fleet
        .cells
        .iter()
        .map(|cell| (cell.name.value.as_str(), cell))
        .collect();
    // Built once per cell: a cell that declares GPU models gets a catalog of its own.
    let catalogs: BTreeMap<&str, Cow<'_, Catalog>> = fleet
        .cells
        .iter()
        .map(|cell| {
            (
                cell.name.value.as_str(),
                hardware::cell_catalog(cell, catalog),
            )
        })
        .collect();
    for cell in &fleet.cells {
        let cell_catalog = catalogs
            .get(cell.name.value.as_str())
            .map_or(catalog, |c| c);
        check_cell(cell, cell_catalog, diagnostics);
    }
    // (cell, pool, resource) -> reservations, for the burst check.
    let mut drawn: BTreeMap<(&str, &str, String), Reservations<'_>> = BTreeMap::new();
    for tenant in &fleet.tenants {
        let mut seen_cells = BTreeSet::new();
        for quota in &tenant.quotas {
            for reservation in &quota.pools {
                check_lend(tenant, reservation, diagnostics);
            }
            // A repeated quota is reported as a duplicate; only the first is checked further.
            if !seen_cells.insert(quota.cell.value.as_str()) {
                continue;
            }
            check_splits(tenant, quota, diagnostics);
            check_empty_shares(tenant, quota, diagnostics);
            let Some(cell) = cells.get(quota.cell.value.as_str()).filter(|c| c.complete) else {
                // Unknown cells are reported by `validate::tenants`; an incomplete cell may be
                // missing the pool a reservation names.
                for reservation in &quota.pools {
                    check_gang_quota(tenant, reservation, diagnostics);
                }
                continue;
            };
            let cell_catalog = catalogs
                .get(cell.name.value.as_str())
                .map_or(catalog, |c| c);
            for reservation in &quota.pools {
                check_reservation(tenant, cell, reservation, diagnostics);
            }
            check_pool_count(tenant, cell, quota, diagnostics);
            check_pool_ceilings(tenant, cell, quota, cell_catalog, diagnostics);
            for reservation in counted_reservations(quota) {
                if let Some((pool, offer)) = hardware::resolve(cell, reservation, cell_catalog) {
                    drawn
                        .entry((
                            cell.name.value.as_str(),
                            pool.name.value.as_str(),
                            offer.resource,
                        ))
                        .or_default()
                        .push((tenant, reservation));
                }
            }
        }
        check_fleet(tenant, &cells, diagnostics);
    }
    for ((cell_name, pool_name, resource), reservations) in &drawn {
        let cell_catalog = catalogs.get(cell_name).map_or(catalog, |c| c);
        check_burst(
            &cells,
            (cell_name, pool_name, resource),
            reservations,
            cell_catalog,
            diagnostics,
        );
    }
}

/// One ceiling as [`check_empty_shares`] reads it: its field, span and text, each namespace's
/// part in units, the unit in thousandths, and a printer of thousandths.
type ShareField<'a> = (
    &'static str,
    Span,
    String,
    Vec<i128>,
    i128,
    &'a dyn Fn(i128) -> String,
);
