//! The Kueue objects of a cell and of each tenant in it.
//!
//! Consumes: the cell plan and a tenant's plan. Produces: per cell, a ResourceFlavor per pool
//! plus the ceiling flavor, the Cohort tree (a root that
//! holds what no tenant reserved, and one cohort per org) and a WorkloadPriorityClass per
//! priority; per tenant, its ClusterQueue and one LocalQueue named `default` in each of its
//! namespaces.
//!
//! Invariants:
//! - Every object is a `kube::kueue` struct, and every name and number comes from the plan.
//! - A ClusterQueue has at most two resource groups: the tenant's cpu, memory and pods ceiling
//!   on the ceiling flavor (nominal = ceiling, nothing borrowed or lent, so the ceiling holds
//!   once across the tenant's namespaces), and every GPU resource of the cell on the flavors of
//!   the pools the tenant reserves in (nominal = reserved, borrowing limit = burst, lending limit
//!   = lend); every flavor lists the covered resources in the same order.
//! - The namespace selector lists exactly the tenant's namespaces in the cell.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::tenant::tenant_labels;
use super::{managed_labels, to_yaml};
use crate::emit::InternalError;
use crate::emit::yaml::Yaml;
use crate::kube::kueue::{
    ClusterQueue, ClusterQueuePreemption, ClusterQueueSpec, Cohort, CohortSpec, FairSharing,
    FlavorQuotas, LocalQueue, LocalQueueSpec, ReclaimWithinCohortPolicy, ResourceFlavor,
    ResourceFlavorSpec, ResourceGroup, ResourceQuota, WithinClusterQueuePolicy,
    WorkloadPriorityClass,
};
use crate::kube::kueue::{KueueObject, webhook_violations};
use crate::plan::{CEILING_FLAVOR, CellPlan, LOCAL_QUEUE, ROOT_COHORT, TenantPlan};

/// The resources of the tenant ceiling, in the order the ClusterQueue covers them.
const CEILING_RESOURCES: [&str; 3] = ["cpu", "memory", "pods"];

/// The cell-wide Kueue objects as `(file, object, declaration files of tenants that decide it)`.
pub(super) fn cell_objects(
    cell: &CellPlan,
) -> Result<Vec<(String, Yaml, BTreeSet<String>)>, InternalError> {
    let mut objects = Vec::new();
    let none = BTreeSet::new;
    let mut ceiling = ResourceFlavor::new(CEILING_FLAVOR, ResourceFlavorSpec::default());
    ceiling.metadata.labels = Some(managed_labels());
    objects.push((
        format!("resourceflavor-{CEILING_FLAVOR}.yaml"),
        checked(&ceiling)?,
        none(),
    ));
    for pool in &cell.pools {
        let mut flavor = ResourceFlavor::new(
            pool.flavor.clone(),
            ResourceFlavorSpec {
                node_labels: pool.node_labels.clone(),
                node_taints: pool
                    .taints
                    .iter()
                    .map(|taint| Taint {
                        key: taint.key.clone(),
                        value: taint.value.clone(),
                        effect: taint.effect.clone(),
                        time_added: None,
                    })
                    .collect(),
                // Kueue injects these into every pod it admits on the flavor: only tenants whose
                // ClusterQueue lists the flavor ever get them.
                tolerations: pool
                    .taints
                    .iter()
                    .map(|taint| Toleration {
                        key: Some(taint.key.clone()),
                        operator: Some(
                            if taint.value.is_some() {
                                "Equal"
                            } else {
                                "Exists"
                            }
                            .to_string(),
                        ),
                        value: taint.value.clone(),
                        effect: Some(taint.effect.clone()),
                        toleration_seconds: None,
                    })
                    .collect(),
                // Not set yet: Kueue's topology-aware scheduling needs every resource of a pod
                // set on the one topology flavor, but the tenant ceiling (cpu, memory, pods)
                // sits on the ceiling flavor so that it holds once across flavors; a flavor
                // with `topologyName` would make every GPU job of the pool unadmittable.
                topology_name: None,
            },
        );
        flavor.metadata.labels = Some(managed_labels());
        objects.push((
            format!("resourceflavor-{}.yaml", pool.flavor),
            checked(&flavor)?,
            none(),
        ));
    }

    // The root cohort holds what no tenant reserved, so every tenant with the flavor can
    // borrow it; it sums up every tenant of the cell.
    let flavors: Vec<FlavorQuotas> = cell
        .pools
        .iter()
        .map(|pool| FlavorQuotas {
            name: pool.flavor.clone(),
            resources: cell
                .gpu_resources
                .iter()
                .map(|resource| ResourceQuota {
                    name: resource.clone(),
                    nominal_quota: count(
                        cell.unreserved
                            .get(&pool.flavor)
                            .and_then(|per_resource| per_resource.get(resource))
                            .copied()
                            .unwrap_or(0),
                    ),
                    borrowing_limit: None,
                    lending_limit: None,
                })
                .collect(),
        })
        .collect();
    let mut root = Cohort::new(
        ROOT_COHORT,
        CohortSpec {
            parent_name: None,
            resource_groups: if flavors.is_empty() {
                Vec::new()
            } else {
                vec![ResourceGroup {
                    covered_resources: cell.gpu_resources.clone(),
                    flavors,
                }]
            },
            fair_sharing: None,
        },
    );
    root.metadata.labels = Some(managed_labels());
    objects.push((
        format!("cohort-{ROOT_COHORT}.yaml"),
        checked(&root)?,
        // It sums up every tenant of the cell; the header names the folder, not each file, so
        // adding a tenant without reservations does not rewrite it.
        BTreeSet::from(["tenants/".to_string()]),
    ));
    for org in &cell.orgs {
        let mut cohort = Cohort::new(
            org.cohort.clone(),
            CohortSpec {
                parent_name: Some(ROOT_COHORT.to_string()),
                resource_groups: Vec::new(),
                fair_sharing: org.weight.map(|weight| FairSharing {
                    weight: count(weight),
                }),
            },
        );
        cohort.metadata.labels = Some(managed_labels());
        let sources = BTreeSet::from(["tenants/".to_string()]);
        objects.push((
            format!("cohort-{}.yaml", org.cohort),
            checked(&cohort)?,
            sources,
        ));
    }
    for priority in &cell.priorities {
        let mut class = WorkloadPriorityClass::new(
            priority.name.clone(),
            i32::try_from(priority.value).unwrap_or(i32::MAX),
            priority.description.clone(),
        );
        class.metadata.labels = Some(managed_labels());
        objects.push((
            format!("workloadpriorityclass-{}.yaml", priority.name),
            checked(&class)?,
            none(),
        ));
    }
    Ok(objects)
}

/// A tenant's Kueue objects as `(path in the tenant folder, object)`.
pub(super) fn tenant_objects(
    tenant: &TenantPlan,
    _cell: &CellPlan,
) -> Result<Vec<(String, Yaml)>, InternalError> {
    let labels = tenant_labels(tenant);
    let queue = &tenant.queue;
    let zero = || Some(count(0));
    let ceiling_values = [
        Quantity(queue.cpu.clone()),
        Quantity(queue.memory.clone()),
        count(queue.pods),
    ];
    let mut resource_groups = vec![ResourceGroup {
        covered_resources: CEILING_RESOURCES.iter().map(|r| r.to_string()).collect(),
        flavors: vec![FlavorQuotas {
            name: CEILING_FLAVOR.to_string(),
            resources: CEILING_RESOURCES
                .iter()
                .zip(ceiling_values)
                .map(|(resource, nominal)| ResourceQuota {
                    name: resource.to_string(),
                    nominal_quota: nominal,
                    // The ceiling is the tenant's own: nothing borrowed, nothing lent.
                    borrowing_limit: zero(),
                    lending_limit: zero(),
                })
                .collect(),
        }],
    }];
    if !queue.flavors.is_empty() {
        resource_groups.push(ResourceGroup {
            covered_resources: queue.gpu_resources.clone(),
            flavors: queue
                .flavors
                .iter()
                .map(|flavor| FlavorQuotas {
                    name: flavor.flavor.clone(),
                    resources: flavor
                        .resources
                        .iter()
                        .map(|entitlement| ResourceQuota {
                            name: entitlement.resource.clone(),
                            nominal_quota: count(entitlement.nominal),
                            borrowing_limit: Some(count(entitlement.borrowing)),
                            lending_limit: entitlement.lending.map(count),
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    let namespaces: Vec<String> = tenant
        .namespaces
        .iter()
        .map(|namespace| namespace.name.clone())
        .collect();
    let mut cluster_queue = ClusterQueue::new(
        queue.name.clone(),
        ClusterQueueSpec {
            resource_groups,
            cohort_name: Some(queue.cohort.clone()),
            queueing_strategy: None,
            namespace_selector: LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "kubernetes.io/metadata.name".to_string(),
                    operator: "In".to_string(),
                    values: Some(namespaces),
                }]),
                match_labels: None,
            },
            flavor_fungibility: None,
            preemption: Some(ClusterQueuePreemption {
                // Reserved means guaranteed: a pending workload takes back what others borrowed
                // of this queue's nominal quota.
                reclaim_within_cohort: Some(ReclaimWithinCohortPolicy::Any),
                borrow_within_cohort: None,
                within_cluster_queue: queue
                    .preempt_within
                    .then_some(WithinClusterQueuePolicy::LowerPriority),
            }),
            stop_policy: None,
            fair_sharing: queue.weight.map(|weight| FairSharing {
                weight: count(weight),
            }),
        },
    );
    cluster_queue.metadata.labels = Some(labels.clone());
    let mut objects = vec![("clusterqueue.yaml".to_string(), checked(&cluster_queue)?)];
    for namespace in &tenant.namespaces {
        let mut local = LocalQueue::new(
            namespace.name.clone(),
            LOCAL_QUEUE,
            LocalQueueSpec {
                cluster_queue: queue.name.clone(),
            },
        );
        local.metadata.labels = Some(labels.clone());
        objects.push((
            format!("{}/localqueue-{LOCAL_QUEUE}.yaml", namespace.workload),
            checked(&local)?,
        ));
    }
    Ok(objects)
}

/// The object as YAML, after Kueue's webhook rules (which the API server cannot check without
/// Kueue running) found nothing wrong with it; a violation is a bug in tenantc.
fn checked<T: KueueObject + serde::Serialize>(object: &T) -> Result<Yaml, InternalError> {
    let violations = webhook_violations(object);
    if !violations.is_empty() {
        return Err(InternalError(format!(
            "a Kueue object breaks Kueue's own rules: {}",
            violations.join("; ")
        )));
    }
    to_yaml(object)
}

/// A device or object count as a quantity.
fn count(value: i64) -> Quantity {
    Quantity(value.to_string())
}
