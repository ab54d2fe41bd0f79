//! Pool pinning: no tenant reaches a pool its trust class or org forbids.
//!
//! Consumes: a cell, the fleet and the cell's plan. Produces: a `pool-reachable-by-forbidden-tenant`
//! error for every (tenant, pool) pair that trust or org forbids and that nothing blocks.
//!
//! Invariant: a forbidden pair is blocked only when one of these holds, each enforced by the API
//! server or the scheduler without any tenant's cooperation:
//! - no namespace of the tenant has quota for any resource the pool offers (ResourceQuota denies
//!   the pod), or
//! - the pool carries a `NoSchedule` or `NoExecute` taint that no toleration of the tenant's
//!   flavors tolerates (Kueue injects only those; the admission floor denies pods that bring
//!   their own).
//!
//! A pool's resources include whole GPUs (`nvidia.com/gpu`) on every pool that is not
//! `exclusive`: a node whose MIG config failed, or that lacks its device-plugin config label,
//! advertises its GPUs whole.
//!
//! In a Volcano cell nothing else pins a pod to its pool: Volcano has no flavors, so a tenant's
//! pods land on any node whose taints they tolerate, and the floor lets them tolerate only the
//! taints of the pools the tenant reserves in. Its queue counts a resource once across pools, so
//! [`volcano_reach`] also requires, for every pool the tenant's pods can reach, that the tenant
//! reserves there each resource of the pool its queue holds (`pool-reachable-without-reservation`):
//! otherwise its pods could take devices other tenants reserved there, and its queue, within what
//! it deserves, would never give them back.

use super::{CellPlan, forbidden};
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::hardware;
use crate::model::{Cell, Fleet, Scheduler};

/// The pinning findings of one cell.
pub(super) fn check(
    cell: &Cell,
    fleet: &Fleet,
    plan: &CellPlan,
    catalog: &Catalog,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for tenant_plan in &plan.tenants {
        let Some(tenant) = fleet
            .tenants
            .iter()
            .find(|tenant| tenant.name.value == tenant_plan.name)
        else {
            continue;
        };
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        for (pool, pool_decl) in plan.pools.iter().zip(&cell.pools) {
            let Some(reason) = forbidden(tenant, pool) else {
                continue;
            };
            let flavor_pools: Vec<&super::PoolPlan> = plan
                .pools
                .iter()
                .filter(|candidate| {
                    tenant_plan
                        .queue
                        .flavors
                        .iter()
                        .any(|flavor| flavor.pool == candidate.name)
                })
                .collect();
            if pool.untolerated_taint(&flavor_pools).is_some() {
                continue;
            }
            let open: Vec<&str> = pool
                .reachable_resources()
                .into_iter()
                .filter(|resource| {
                    tenant_plan
                        .namespaces
                        .iter()
                        .any(|namespace| namespace.gpu.get(*resource).copied().unwrap_or(0) > 0)
                })
                .collect();
            if open.is_empty() {
                continue;
            }
            let mut diagnostic = Diagnostic::error(
                Code::PoolReachableByForbiddenTenant,
                pool_decl.name.span,
                format!(
                    "tenant `{}` can reach pool `{}` of cell `{}`, which it may not use",
                    tenant.name.value, pool.name, cell.name.value
                ),
            )
            .with_label(match pool.taints.iter().find(|taint| taint.repels()) {
                Some(taint) => format!(
                    "{reason}, but its taint `{}` is tolerated by the toleration of the tenant's flavor of pool `{}`, and its nodes can advertise `{}`",
                    taint.display(),
                    flavor_pools
                        .iter()
                        .find(|other| other.taints.iter().any(|t| taint.tolerated_by_toleration_of(t)))
                        .map_or("?", |other| other.name.as_str()),
                    open.join("`, `")
                ),
                None => format!(
                    "{reason}, but the pool is untainted and its nodes can advertise `{}`",
                    open.join("`, `")
                ),
            });
            // Point at the reservations that give the tenant quota for those resources.
            for reservation in &quota.pools {
                let Some((_, offer)) = hardware::resolve(cell, reservation, catalog) else {
                    continue;
                };
                if open.contains(&offer.resource.as_str()) {
                    diagnostic = diagnostic.with_secondary(
                        reservation.pool.span,
                        format!(
                            "gives `{}` quota for `{}` in pool `{}`",
                            tenant.name.value, offer.resource, reservation.pool.value
                        ),
                    );
                }
            }
            diagnostics.push(diagnostic.with_help(format!(
                "give the pool a taint of its own, so only tenants with its Kueue flavor tolerate it, for example `taint \"tenantc.io/pool\" \"{}\" effect=\"NoSchedule\"` in pool `{}`",
                pool.name, pool.name
            )));
        }
    }
    match plan.backends.scheduler {
        Scheduler::Kueue => {}
        Scheduler::Volcano => diagnostics.extend(volcano_reach(cell, fleet, plan, catalog)),
    }
    diagnostics
}

/// In a Volcano cell, every pool a tenant's pods can reach (no repelling taint they may not
/// tolerate) that offers a resource the tenant's queue holds, where the tenant reserves none of
/// it; pools its trust class or org forbids are [`check`]'s to report.
fn volcano_reach(
    cell: &Cell,
    fleet: &Fleet,
    plan: &CellPlan,
    catalog: &Catalog,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for tenant_plan in &plan.tenants {
        let Some(queue) = &tenant_plan.volcano else {
            continue;
        };
        let Some(tenant) = fleet
            .tenants
            .iter()
            .find(|tenant| tenant.name.value == tenant_plan.name)
        else {
            continue;
        };
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        let own: Vec<&super::PoolPlan> = plan
            .pools
            .iter()
            .filter(|pool| {
                tenant_plan
                    .queue
                    .flavors
                    .iter()
                    .any(|flavor| flavor.pool == pool.name)
            })
            .collect();
        for (pool, pool_decl) in plan.pools.iter().zip(&cell.pools) {
            if forbidden(tenant, pool).is_some() || pool.untolerated_taint(&own).is_some() {
                continue;
            }
            let reserved_here = |resource: &str| {
                tenant_plan
                    .queue
                    .flavors
                    .iter()
                    .filter(|flavor| flavor.pool == pool.name)
                    .flat_map(|flavor| &flavor.resources)
                    .any(|entitlement| {
                        entitlement.resource == resource
                            && (entitlement.nominal > 0 || entitlement.borrowing > 0)
                    })
            };
            let open: Vec<&str> = pool
                .offers
                .iter()
                .map(|offer| offer.resource.as_str())
                .filter(|resource| {
                    queue
                        .resources
                        .iter()
                        .any(|held| held.resource == *resource && held.capability > 0)
                        && !reserved_here(resource)
                })
                .collect();
            if open.is_empty() {
                continue;
            }
            let mut diagnostic = Diagnostic::error(
                Code::PoolReachableWithoutReservation,
                pool_decl.name.span,
                format!(
                    "tenant `{}` can place pods on pool `{}` of Volcano cell `{}`, where it reserves none of `{}`",
                    tenant.name.value,
                    pool.name,
                    cell.name.value,
                    open.join("`, `")
                ),
            )
            .with_label(match pool.taints.iter().find(|taint| taint.repels()) {
                Some(taint) => format!(
                    "its taint `{}` is one the tenant's own pools carry, so the floor lets its pods tolerate it; its queue `{}` holds `{}`, and within what it deserves it would keep devices other tenants reserved here",
                    taint.display(),
                    queue.name,
                    open.join("`, `")
                ),
                None => format!(
                    "the pool is untainted; the tenant's queue `{}` holds `{}`, and within what it deserves it would keep devices other tenants reserved here",
                    queue.name,
                    open.join("`, `")
                ),
            });
            for reservation in &quota.pools {
                let Some((_, offer)) = hardware::resolve(cell, reservation, catalog) else {
                    continue;
                };
                if open.contains(&offer.resource.as_str()) {
                    diagnostic = diagnostic.with_secondary(
                        reservation.pool.span,
                        format!(
                            "gives `{}`'s queue `{}` in pool `{}`",
                            tenant.name.value, offer.resource, reservation.pool.value
                        ),
                    );
                }
            }
            diagnostics.push(diagnostic.with_help(format!(
                "give pool `{}` a taint of its own, which the tenant's pools do not carry, for example `taint \"tenantc.io/pool\" \"{}\" effect=\"NoSchedule\"`, or reserve what the tenant runs there in the pool",
                pool.name, pool.name
            )));
        }
    }
    diagnostics
}
