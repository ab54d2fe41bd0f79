//! What a Volcano cell's queues are made from: the declarations that Volcano v1.10.0 cannot hold
//! as tenantc planned them ([docs/volcano.md](../../docs/volcano.md)).
//!
//! Consumes: the fleet and the hardware catalog. Produces, for cells with `scheduler "volcano"`
//! only:
//! - `scheduler-feature-unsupported` for a pool `topology`, a reservation's `within` and the
//!   cell's `metering`: Volcano v1.10.0 has no topology-aware scheduling, and tenantc's
//!   chargeback rules read Kueue's metrics;
//! - `volcano-resource-in-several-pools` for a tenant that reserves one resource in two pools: a
//!   Volcano queue counts a resource once across pools, so neither pool's part would hold;
//! - `volcano-guarantee-on-shared-resource` for a reservation that keeps devices from lending
//!   (`lend` below `reserved`) of a resource another pool also offers: Volcano's guarantee counts a
//!   resource across pools, not on the pool the tenant reserved in.
//!
//! Invariant: with these three and the reachability proof of `plan/pinning.rs`, a tenant's Volcano
//! queue admits on each pool exactly what its Kueue ClusterQueue would, so the plan's effective
//! capacity is the same whatever the scheduler (the property test of `plan/volcano_props.rs`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::facts::backends::backends;
use crate::hardware;
use crate::model::{Cell, Fleet, Scheduler};

/// Every finding about the fleet's Volcano cells.
pub(super) fn check(fleet: &Fleet, catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        match backends(cell).scheduler {
            Scheduler::Kueue => continue,
            Scheduler::Volcano => {}
        }
        unsupported(cell, fleet, diagnostics);
        let cell_catalog: Cow<'_, Catalog> = hardware::cell_catalog(cell, catalog);
        split_and_guarantees(cell, fleet, &cell_catalog, diagnostics);
    }
}

/// What Volcano cannot hold at all.
fn unsupported(cell: &Cell, fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    let help_topology = "remove the pool's `topology` and the reservations' `within` in a Volcano cell, or declare `scheduler \"kueue\"`, whose topology-aware scheduling keeps a gang within a level";
    for pool in &cell.pools {
        if let Some(topology) = &pool.topology {
            diagnostics.push(
                Diagnostic::error(
                    Code::SchedulerFeatureUnsupported,
                    topology.span,
                    format!(
                        "pool `{}` of Volcano cell `{}` declares a topology",
                        pool.name.value, cell.name.value
                    ),
                )
                .with_label("Volcano v1.10.0 has no topology-aware scheduling: nothing would keep a gang within a level")
                .with_help(help_topology),
            );
        }
    }
    for tenant in &fleet.tenants {
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        for reservation in &quota.pools {
            if let Some(within) = &reservation.within {
                diagnostics.push(
                    Diagnostic::error(
                        Code::SchedulerFeatureUnsupported,
                        within.span,
                        format!(
                            "tenant `{}` keeps its gangs within `{}` in Volcano cell `{}`",
                            tenant.name.value, within.value, cell.name.value
                        ),
                    )
                    .with_label("Volcano v1.10.0 has no topology-aware scheduling: nothing would keep the gang within the level")
                    .with_secondary(
                        cell.scheduler
                            .as_ref()
                            .map_or(cell.name.span, |scheduler| scheduler.span),
                        "the cell's scheduler",
                    )
                    .with_help(help_topology),
                );
            }
        }
    }
    if let Some(metering) = &cell.metering {
        diagnostics.push(
            Diagnostic::error(
                Code::SchedulerFeatureUnsupported,
                metering.span,
                format!("Volcano cell `{}` declares `metering`", cell.name.value),
            )
            .with_label("tenantc's chargeback recording rules read Kueue's metrics, which a Volcano cell does not export")
            .with_help("remove `metering` from the Volcano cell, or declare `scheduler \"kueue\"`"),
        );
    }
}

/// One resource in two pools of a tenant, and guarantees on a resource two pools offer.
fn split_and_guarantees(
    cell: &Cell,
    fleet: &Fleet,
    cell_catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // The pools that offer each resource, in declaration order.
    let mut offered_by: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for pool in &cell.pools {
        for offer in hardware::offers(pool, cell_catalog) {
            offered_by
                .entry(offer.resource)
                .or_default()
                .push(pool.name.value.as_str());
        }
    }
    for tenant in &fleet.tenants {
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        // The first reservation of each resource, to point back at.
        let mut first: BTreeMap<String, &crate::model::PoolQuota> = BTreeMap::new();
        for reservation in &quota.pools {
            let Some((pool, offer)) = hardware::resolve(cell, reservation, cell_catalog) else {
                continue;
            };
            match first.get(&offer.resource) {
                Some(earlier) if earlier.pool.value != pool.name.value => {
                    diagnostics.push(
                        Diagnostic::error(
                            Code::VolcanoResourceInSeveralPools,
                            reservation.pool.span,
                            format!(
                                "tenant `{}` reserves `{}` in pools `{}` and `{}` of Volcano cell `{}`",
                                tenant.name.value,
                                offer.resource,
                                earlier.pool.value,
                                pool.name.value,
                                cell.name.value
                            ),
                        )
                        .with_label(format!(
                            "a Volcano queue counts `{}` once across pools, so this pool's part would not hold",
                            offer.resource
                        ))
                        .with_secondary(earlier.pool.span, "the same resource reserved here")
                        .with_help(format!(
                            "reserve `{}` in one pool of the cell, or declare `scheduler \"kueue\"`, whose flavors keep a part per pool",
                            offer.resource
                        )),
                    );
                }
                Some(_) => {}
                None => {
                    first.insert(offer.resource.clone(), reservation);
                }
            }
            let kept = reservation.lend.as_ref().map_or(0, |lend| {
                reservation.reserved.value.saturating_sub(lend.value).max(0)
            });
            let others: Vec<&str> = offered_by
                .get(&offer.resource)
                .map(|pools| {
                    pools
                        .iter()
                        .copied()
                        .filter(|other| *other != pool.name.value)
                        .collect()
                })
                .unwrap_or_default();
            if let (true, Some(lend)) = (kept > 0 && !others.is_empty(), &reservation.lend) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::VolcanoGuaranteeOnSharedResource,
                        lend.span,
                        format!(
                            "tenant `{}` keeps {kept} `{}` from lending in pool `{}` of Volcano cell `{}`, which pool `{}` also offers",
                            tenant.name.value,
                            offer.resource,
                            pool.name.value,
                            cell.name.value,
                            others.join("`, `")
                        ),
                    )
                    .with_label("a Volcano guarantee counts a resource across pools, so it would not keep this pool's devices for the tenant")
                    .with_help(format!(
                        "lend all of the reservation (remove `lend`) in a Volcano cell where another pool offers `{}`, or declare `scheduler \"kueue\"`, whose lending limit is per flavor",
                        offer.resource
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::validate::test_support::compile_files;

    /// A Volcano cell with two exclusive pools of whole GPUs and a MIG pool, each tainted.
    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    scheduler "volcano"
    priority "batch" value=1000
    pool "train" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; nvlink-domain gpus=8; taint "p" "train" effect="NoSchedule"; }
    pool "spare" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; nvlink-domain gpus=8; taint "p" "spare" effect="NoSchedule"; }
    pool "infer" {
        gpu "H100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "mig"
        taint "p" "infer" effect="NoSchedule"
        mig-layout "small" { profile "1g.10gb" 7; }
    }
}
"#;

    fn tenant(trust: &str, pools: &str) -> String {
        format!(
            r#"tenant "t1" {{
    org "o"
    team "t"
    trust "{trust}"
    groups admin="t1-admins" member="t1"
    quota cell="c1" cpu="8" memory="64Gi" pods=10 {{
{pools}
    }}
    workload "train" service-account="trainer" priority="batch"
    registry "registry.example.com/t1"
}}
"#
        )
    }

    fn codes(cell: &str, pools: &str) -> Vec<&'static str> {
        codes_of(cell, "hard", pools)
    }

    fn codes_of(cell: &str, trust: &str, pools: &str) -> Vec<&'static str> {
        let tenant = tenant(trust, pools);
        let compilation = compile_files(&[("cells/c1.kdl", cell), ("tenants/t1.kdl", &tenant)]);
        compilation
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code.as_str())
            .collect()
    }

    #[test]
    fn accepts_one_pool_per_resource_and_a_guarantee_no_other_pool_offers() {
        // The MIG slices are offered by one pool only, so their guarantee holds.
        assert_eq!(
            codes_of(
                CELL,
                "mig",
                "        pool \"train\" reserved=8 burst=8\n        pool \"infer\" profile=\"1g.10gb\" reserved=4 lend=1"
            ),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn refuses_one_resource_in_two_pools() {
        assert_eq!(
            codes(
                CELL,
                "        pool \"train\" reserved=8\n        pool \"spare\" reserved=8"
            ),
            ["volcano-resource-in-several-pools"]
        );
    }

    #[test]
    fn refuses_a_guarantee_on_a_resource_two_pools_offer() {
        assert_eq!(
            codes(CELL, "        pool \"train\" reserved=8 lend=4"),
            ["volcano-guarantee-on-shared-resource"]
        );
        // Lending all of it keeps nothing, which every pool can hold.
        assert_eq!(
            codes(CELL, "        pool \"train\" reserved=8 lend=8"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn refuses_topology_within_and_metering_in_a_volcano_cell_only() {
        let cell = CELL
            .replace(
                "pool \"train\" { gpu \"H100-80GB-SXM\"; nodes 2 gpus-per-node=8; sharing \"exclusive\"; nvlink-domain gpus=8;",
                "pool \"train\" { gpu \"H100-80GB-SXM\"; nodes 2 gpus-per-node=8; sharing \"exclusive\"; nvlink-domain gpus=8; topology { level \"rack\" nodes=2; };",
            )
            .replace(
                "    priority \"batch\"",
                "    metrics namespace=\"monitoring\"\n    metering rule-label=\"release=prom\"\n    priority \"batch\"",
            );
        let pools = "        pool \"train\" reserved=16 gang=16 within=\"rack\" cpu=\"4\" memory=\"32Gi\" pods=5";
        assert_eq!(
            codes(&cell, pools),
            [
                "scheduler-feature-unsupported",
                "scheduler-feature-unsupported",
                "scheduler-feature-unsupported"
            ]
        );
        let kueue = cell.replace("    scheduler \"volcano\"\n", "");
        assert_eq!(codes(&kueue, pools), Vec::<&str>::new());
    }
}
