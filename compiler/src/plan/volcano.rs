//! The Volcano queues of a cell whose scheduler is Volcano ([docs/volcano.md](../../docs/volcano.md)):
//! per tenant a Queue made from the same entitlements as its Kueue ClusterQueue, per org a parent
//! Queue that sums its tenants'.
//!
//! Consumes: a tenant's resolved [`QueuePlan`] (its entitlements per pool and resource, its
//! ceilings and weight), the cell's org cohorts. Produces: [`VolcanoQueuePlan`] per tenant and
//! [`VolcanoOrgPlan`] per org, which `lower/volcano.rs` writes and `describe` shows; and
//! [`guarantee_overflow`], the check that the guarantees of a cell fit its capacity.
//!
//! The mapping, resource by resource (every GPU resource of the cell, 0 where the tenant
//! reserves none, so a queue never takes a MIG slice or a whole GPU it holds no quota for):
//! `deserved` = reserved, `capability` = reserved + burst, `guarantee` = reserved − lend (what the
//! tenant keeps for itself, Kueue's nominal quota above its lending limit); cpu and memory are
//! the tenant's ceilings in the cell, deserved and capability alike, never guaranteed.
//!
//! Invariants: nothing here recomputes an entitlement (the numbers are sums of the plan's
//! [`Entitlement`]s); per resource `guarantee <= deserved <= capability`, which
//! `kube::volcano::queue_violations` holds every emitted Queue to; a tenant's queue depends only
//! on the tenant and its cell, an org's on its tenants.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Entitlement, OfferPlan, OrgPlan, PoolPlan, QueuePlan};

/// The Volcano Queue of a tenant: `tenant-<tenant>`, so that no tenant's queue is Volcano's own
/// `default` or one of the org queues `org-<org>`.
pub fn queue_name(tenant: &str) -> String {
    format!("tenant-{tenant}")
}

/// A tenant's Volcano Queue in a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VolcanoQueuePlan {
    /// The Queue name ([`queue_name`]).
    pub name: String,
    /// The org's parent Queue (the Kueue cohort's name, `org-<org>`).
    pub parent: String,
    /// The queue's weight: the quota's `weight`, 1 where it declares none.
    pub weight: i64,
    /// The tenant's cpu ceiling in the cell: deserved and capability.
    pub cpu: String,
    /// The tenant's memory ceiling in the cell: deserved and capability.
    pub memory: String,
    /// Per GPU resource of the cell, sorted.
    pub resources: Vec<VolcanoResource>,
}

/// What a queue holds of one GPU resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VolcanoResource {
    /// The resource.
    pub resource: String,
    /// `deserved`: what the tenant reserved.
    pub deserved: i64,
    /// `capability`: reserved plus burst.
    pub capability: i64,
    /// `guarantee`: what it keeps from lending (reserved minus `lend`); 0 where it lends all.
    pub guarantee: i64,
}

/// An org's parent Queue in a cell: what its tenants' queues add up to, never a guarantee of its
/// own (Volcano v1.10.0's capacity plugin sums the guarantees of every queue, so the org's would
/// count its tenants' twice).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VolcanoOrgPlan {
    /// The Queue name, the org's cohort name `org-<org>`.
    pub name: String,
    /// The org.
    pub org: String,
    /// The org's weight in the cell, 1 where it declares none.
    pub weight: i64,
    /// Its tenants' queues, sorted.
    pub tenants: Vec<String>,
    /// The sum of its tenants' cpu ceilings.
    pub cpu: String,
    /// The sum of its tenants' memory ceilings.
    pub memory: String,
    /// Per GPU resource of the cell, the sums of its tenants' deserved and capability (the
    /// guarantee is always 0).
    pub resources: Vec<VolcanoResource>,
}

/// A tenant's Volcano Queue, from its resolved ClusterQueue: the same entitlements, summed per
/// resource over the pools (Volcano has no flavors).
pub(super) fn tenant_queue(tenant: &str, queue: &QueuePlan) -> VolcanoQueuePlan {
    let mut sums: BTreeMap<&str, VolcanoResource> = queue
        .gpu_resources
        .iter()
        .map(|resource| {
            (
                resource.as_str(),
                VolcanoResource {
                    resource: resource.clone(),
                    deserved: 0,
                    capability: 0,
                    guarantee: 0,
                },
            )
        })
        .collect();
    for flavor in &queue.flavors {
        for entitlement in &flavor.resources {
            if let Some(sum) = sums.get_mut(entitlement.resource.as_str()) {
                add(sum, entitlement);
            }
        }
    }
    VolcanoQueuePlan {
        name: queue_name(tenant),
        parent: queue.cohort.clone(),
        weight: queue.weight.unwrap_or(1),
        cpu: queue.cpu.clone(),
        memory: queue.memory.clone(),
        resources: sums.into_values().collect(),
    }
}

/// Adds one flavor's entitlement to a resource's sums.
fn add(sum: &mut VolcanoResource, entitlement: &Entitlement) {
    sum.deserved = sum.deserved.saturating_add(entitlement.nominal);
    sum.capability = sum
        .capability
        .saturating_add(entitlement.nominal.saturating_add(entitlement.borrowing));
    // What the tenant keeps: all of it may be lent when no reservation declares `lend`.
    let kept = entitlement.lending.map_or(0, |lending| {
        entitlement.nominal.saturating_sub(lending).max(0)
    });
    sum.guarantee = sum.guarantee.saturating_add(kept);
}

/// The org queues of a cell, in the order of its org cohorts, from its tenants' queues.
pub(super) fn org_queues(
    orgs: &[OrgPlan],
    queues: &[&VolcanoQueuePlan],
    gpu_resources: &[String],
) -> Vec<VolcanoOrgPlan> {
    orgs.iter()
        .map(|org| {
            let members: Vec<&&VolcanoQueuePlan> = queues
                .iter()
                .filter(|queue| queue.parent == org.cohort)
                .collect();
            let resources = gpu_resources
                .iter()
                .map(|resource| {
                    let of = |queue: &&&VolcanoQueuePlan| {
                        queue
                            .resources
                            .iter()
                            .find(|held| &held.resource == resource)
                            .map_or((0, 0), |held| (held.deserved, held.capability))
                    };
                    let (deserved, capability) = members
                        .iter()
                        .map(of)
                        .fold((0i64, 0i64), |(d, c), (md, mc)| {
                            (d.saturating_add(md), c.saturating_add(mc))
                        });
                    VolcanoResource {
                        resource: resource.clone(),
                        deserved,
                        capability,
                        guarantee: 0,
                    }
                })
                .collect();
            let mut tenants: Vec<String> = members.iter().map(|queue| queue.name.clone()).collect();
            tenants.sort();
            VolcanoOrgPlan {
                name: org.cohort.clone(),
                org: org.org.clone(),
                weight: org.weight.unwrap_or(1),
                tenants,
                cpu: sum_quantities(members.iter().map(|queue| queue.cpu.as_str())),
                memory: sum_quantities(members.iter().map(|queue| queue.memory.as_str())),
                resources,
            }
        })
        .collect()
}

/// The sum of quantities in the canonical form of the first, `0` for none (a validated plan has
/// only quantities, so none is skipped).
fn sum_quantities<'a>(quantities: impl Iterator<Item = &'a str>) -> String {
    let parsed: Vec<crate::quantity::Quantity> = quantities
        .filter_map(|text| crate::quantity::Quantity::parse(text).ok())
        .collect();
    let Some(first) = parsed.first() else {
        return "0".to_string();
    };
    let total: i128 = parsed.iter().map(crate::quantity::Quantity::milli).sum();
    crate::quantity::Quantity::from_milli(total, first.format())
        .map_or_else(|| "0".to_string(), |sum| sum.to_string())
}

/// Every GPU resource whose guarantees over the cell's queues exceed what the cell's pools offer
/// of it, as `(resource, guaranteed, capacity)`: Volcano keeps each queue's guarantee out of every
/// other queue's reach, so guarantees beyond the hardware would leave some queue less than it
/// deserves. Empty for a plan whose reservations passed the capacity checks.
pub fn guarantee_overflow(
    pools: &[PoolPlan],
    queues: &[&VolcanoQueuePlan],
) -> Vec<(String, i64, i64)> {
    let mut capacity: BTreeMap<&str, i64> = BTreeMap::new();
    for OfferPlan {
        resource,
        capacity: devices,
        ..
    } in pools.iter().flat_map(|pool| &pool.offers)
    {
        let entry = capacity.entry(resource.as_str()).or_insert(0);
        *entry = entry.saturating_add(*devices);
    }
    let mut guaranteed: BTreeMap<&str, i64> = BTreeMap::new();
    for held in queues.iter().flat_map(|queue| &queue.resources) {
        let entry = guaranteed.entry(held.resource.as_str()).or_insert(0);
        *entry = entry.saturating_add(held.guarantee);
    }
    guaranteed
        .into_iter()
        .filter_map(|(resource, total)| {
            let offered = capacity.get(resource).copied().unwrap_or(0);
            (total > offered).then(|| (resource.to_string(), total, offered))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::plan::FlavorQuota;

    fn entitlement(
        resource: &str,
        nominal: i64,
        borrowing: i64,
        lending: Option<i64>,
    ) -> Entitlement {
        Entitlement {
            resource: resource.to_string(),
            nominal,
            borrowing,
            lending,
        }
    }

    fn queue(flavors: Vec<FlavorQuota>) -> QueuePlan {
        QueuePlan {
            name: "acme".to_string(),
            cohort: "org-acme".to_string(),
            weight: None,
            cpu: "64".to_string(),
            memory: "512Gi".to_string(),
            pods: 100,
            gpu_resources: vec![
                "nvidia.com/gpu".to_string(),
                "nvidia.com/mig-1g.10gb".to_string(),
            ],
            flavors,
            preempt_within: false,
            ceiling_rest: None,
        }
    }

    fn flavor(pool: &str, resources: Vec<Entitlement>) -> FlavorQuota {
        FlavorQuota {
            pool: pool.to_string(),
            flavor: format!("pool-{pool}"),
            resources,
            ceiling: None,
        }
    }

    #[test]
    fn deserved_is_reserved_capability_adds_burst_and_guarantee_is_what_is_not_lent() {
        let plan = tenant_queue(
            "acme",
            &queue(vec![flavor(
                "train",
                vec![
                    entitlement("nvidia.com/gpu", 16, 8, Some(4)),
                    entitlement("nvidia.com/mig-1g.10gb", 0, 0, None),
                ],
            )]),
        );
        assert_eq!(plan.name, "tenant-acme");
        assert_eq!(plan.parent, "org-acme");
        assert_eq!(plan.weight, 1);
        assert_eq!(
            plan.resources,
            [
                VolcanoResource {
                    resource: "nvidia.com/gpu".to_string(),
                    deserved: 16,
                    capability: 24,
                    guarantee: 12,
                },
                // A MIG resource it reserves nothing of is still listed, at 0.
                VolcanoResource {
                    resource: "nvidia.com/mig-1g.10gb".to_string(),
                    deserved: 0,
                    capability: 0,
                    guarantee: 0,
                },
            ]
        );
    }

    #[test]
    fn a_reservation_that_lends_all_guarantees_nothing() {
        let plan = tenant_queue(
            "acme",
            &queue(vec![flavor(
                "train",
                vec![entitlement("nvidia.com/gpu", 16, 0, None)],
            )]),
        );
        assert_eq!(plan.resources[0].guarantee, 0);
        assert_eq!(plan.resources[0].deserved, 16);
    }

    #[test]
    fn an_org_queue_sums_its_tenants_and_guarantees_nothing() {
        let first = tenant_queue(
            "a",
            &queue(vec![flavor(
                "train",
                vec![entitlement("nvidia.com/gpu", 8, 8, Some(0))],
            )]),
        );
        let mut second = tenant_queue(
            "b",
            &queue(vec![flavor(
                "train",
                vec![entitlement("nvidia.com/gpu", 4, 0, None)],
            )]),
        );
        second.memory = "1Ti".to_string();
        let orgs = [OrgPlan {
            org: "acme".to_string(),
            cohort: "org-acme".to_string(),
            weight: Some(2),
            tenants: vec!["a".to_string(), "b".to_string()],
        }];
        let resources = ["nvidia.com/gpu".to_string()];
        let org = &org_queues(&orgs, &[&first, &second], &resources)[0];
        assert_eq!(org.name, "org-acme");
        assert_eq!(org.weight, 2);
        assert_eq!(org.tenants, ["tenant-a", "tenant-b"]);
        assert_eq!(org.cpu, "128");
        assert_eq!(org.memory, "1536Gi");
        assert_eq!(
            org.resources,
            [VolcanoResource {
                resource: "nvidia.com/gpu".to_string(),
                deserved: 12,
                capability: 20,
                guarantee: 0,
            }]
        );
    }

    #[test]
    fn guarantees_beyond_the_pools_are_found() {
        let plan = tenant_queue(
            "acme",
            &queue(vec![flavor(
                "train",
                vec![entitlement("nvidia.com/gpu", 16, 0, Some(0))],
            )]),
        );
        let pool = |capacity| PoolPlan {
            name: "train".to_string(),
            gpu: "H100-80GB-SXM".to_string(),
            sharing: crate::model::Sharing::Exclusive,
            nodes: 1,
            gpus_per_node: 8,
            nvlink_domain: None,
            offers: vec![OfferPlan {
                profile: None,
                resource: "nvidia.com/gpu".to_string(),
                capacity,
            }],
            flavor: "pool-train".to_string(),
            node_labels: BTreeMap::new(),
            taints: Vec::new(),
            topology: None,
            shared_org: None,
            owner: None,
        };
        assert_eq!(
            guarantee_overflow(&[pool(8)], &[&plan]),
            [("nvidia.com/gpu".to_string(), 16, 8)]
        );
        assert_eq!(guarantee_overflow(&[pool(16)], &[&plan]), Vec::new());
    }
}
