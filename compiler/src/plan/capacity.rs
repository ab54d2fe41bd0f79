//! Effective capacity: what a tenant can really get of each resource it reserves in a cell.
//!
//! Consumes: a cell's pools and every tenant's resolved ClusterQueue flavors, the cell and the
//! fleet (for the declared gangs). Produces: per tenant, per reserved pool resource, the three terms and their
//! minimum: `effective = min(quota, cell_admit, topology_fit)`.
//!
//! - `quota`: nominal plus borrowing limit, what the ClusterQueue admits at most.
//! - `cell_admit`: the pool's capacity minus what the other tenants keep for themselves
//!   (their nominal quota above their lending limit; all of it can be lent when they declare
//!   no limit), what the cell could admit for this tenant while the others are idle.
//! - `topology_fit`: for a reservation with a `gang`, the devices usable by whole gangs, each
//!   inside one domain (the `within` level's nodes, else the NVLink domain, else one node);
//!   the capacity otherwise.
//!
//! Invariant: the binding term is the first of quota, cell, topology that equals the minimum.

use std::collections::BTreeMap;

use serde::Serialize;

use super::PoolPlan;
use super::host::Seat;
use crate::model::{Cell, Fleet};

/// The term of the minimum that binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    /// Nominal quota plus borrowing limit.
    Quota,
    /// What the cell can admit while other tenants keep what they may not lend.
    CellAdmit,
    /// What whole gangs can use, domain by domain.
    TopologyFit,
}

impl Term {
    /// The name shown in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Term::Quota => "quota",
            Term::CellAdmit => "cell",
            Term::TopologyFit => "topology",
        }
    }
}

/// A tenant's effective capacity of one resource on one pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effective {
    /// The pool.
    pub pool: String,
    /// The resource.
    pub resource: String,
    /// Nominal quota (reserved).
    pub nominal: i64,
    /// Borrowing limit (burst).
    pub borrowing: i64,
    /// `nominal + borrowing`.
    pub quota: i64,
    /// The pool's capacity minus what the other tenants keep.
    pub cell_admit: i64,
    /// What whole gangs can use.
    pub topology_fit: i64,
    /// The largest declared gang, if any.
    pub gang: Option<i64>,
    /// The devices one gang domain holds, if a gang is declared.
    pub domain: Option<i64>,
    /// The topology level (node label) the gang must fit in, if it names one (`within`); a
    /// gang without one fits an NVLink domain.
    pub within: Option<String>,
    /// The minimum of the three terms.
    pub effective: i64,
    /// Which term binds.
    pub binding: Term,
}

/// What a tenant keeps of an entitlement for itself: its nominal quota above its lending limit
/// (nothing when it may lend all of it).
fn keeps(entitlement: &super::Entitlement) -> i64 {
    entitlement.lending.map_or(0, |lending| {
        entitlement.nominal.saturating_sub(lending).max(0)
    })
}

/// Every tenant's effective capacity in the cell (`tenants`, in the order given), from the
/// cell's pools and every tenant's ClusterQueue flavors.
pub(super) fn effective(
    pools: &[PoolPlan],
    tenants: &[Seat],
    cell: &Cell,
    fleet: &Fleet,
) -> Vec<Vec<Effective>> {
    // What each tenant keeps of each (flavor, resource): nominal above the lending limit.
    // What all tenants keep of each (pool, resource), summed once; a tenant's own part is
    // subtracted below, so each row costs a lookup, not a scan of every tenant.
    let mut kept: BTreeMap<(String, String), i64> = BTreeMap::new();
    for tenant in tenants {
        for flavor in tenant.flavors {
            for entitlement in &flavor.resources {
                let total = kept
                    .entry((flavor.pool.clone(), entitlement.resource.clone()))
                    .or_insert(0);
                *total = total.saturating_add(keeps(entitlement));
            }
        }
    }
    let mut capacities = Vec::new();
    for tenant in tenants {
        let declaration = fleet
            .tenants
            .iter()
            .find(|declared| declared.name.value == tenant.name)
            .and_then(|declared| declared.quota_in(&cell.name.value));
        let mut rows = Vec::new();
        for flavor in tenant.flavors {
            let Some(pool) = pools.iter().find(|pool| pool.name == flavor.pool) else {
                continue;
            };
            let pool_decl = cell.pools.iter().find(|decl| decl.name.value == pool.name);
            for entitlement in &flavor.resources {
                if entitlement.nominal == 0 && entitlement.borrowing == 0 {
                    continue;
                }
                let capacity = pool
                    .offers
                    .iter()
                    .find(|offer| offer.resource == entitlement.resource)
                    .map_or(0, |offer| offer.capacity);
                let others_keep = kept
                    .get(&(pool.name.clone(), entitlement.resource.clone()))
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(keeps(entitlement));
                let quota = entitlement.nominal.saturating_add(entitlement.borrowing);
                let cell_admit = capacity.saturating_sub(others_keep).max(0);
                // The largest gang declared on this pool's reservations, with its domain.
                let gang = declaration.and_then(|quota| {
                    quota
                        .pools
                        .iter()
                        .filter(|reservation| reservation.pool.value == pool.name)
                        .filter_map(|reservation| {
                            let gang = reservation.gang.as_ref()?.value;
                            let domain = match &reservation.within {
                                Some(level) => pool_decl
                                    .map(crate::facts::topology::topology_levels)
                                    .unwrap_or_default()
                                    .into_iter()
                                    .find(|candidate| candidate.label == level.value)
                                    .map(|level| level.nodes.saturating_mul(pool.gpus_per_node)),
                                None => pool_decl.map(crate::facts::topology::nvlink_domain_gpus),
                            }?;
                            let within =
                                reservation.within.as_ref().map(|level| level.value.clone());
                            Some((gang, domain, within))
                        })
                        .max()
                });
                let topology_fit = match gang {
                    Some((gang, domain, _)) if gang > 0 && domain > 0 => {
                        (capacity / domain).saturating_mul(domain / gang * gang)
                    }
                    _ => capacity,
                };
                let effective = quota.min(cell_admit).min(topology_fit);
                let binding = if quota == effective {
                    super::Term::Quota
                } else if cell_admit == effective {
                    super::Term::CellAdmit
                } else {
                    super::Term::TopologyFit
                };
                rows.push(Effective {
                    pool: pool.name.clone(),
                    resource: entitlement.resource.clone(),
                    nominal: entitlement.nominal,
                    borrowing: entitlement.borrowing,
                    quota,
                    cell_admit,
                    topology_fit,
                    gang: gang.as_ref().map(|(gang, _, _)| *gang),
                    domain: gang.as_ref().map(|(_, domain, _)| *domain),
                    within: gang.and_then(|(_, _, within)| within),
                    effective,
                    binding,
                });
            }
        }
        capacities.push(rows);
    }
    capacities
}
