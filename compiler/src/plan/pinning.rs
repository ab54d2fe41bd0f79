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

use super::{CellPlan, forbidden};
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::hardware;
use crate::model::{Cell, Fleet};

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
    diagnostics
}
