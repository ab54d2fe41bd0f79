//! The Kueue objects of a cell and of each tenant in it.
//!
//! Consumes: the cell plan and a tenant's plan. Produces: per cell, a ResourceFlavor per pool
//! plus the ceiling flavor, a Topology per pool with a topology, the Cohort tree (a root that
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
//!   Where the plan counts the ceilings per pool (a topology pool, whose pod sets Kueue admits
//!   on one flavor for all their resources), the two become one group: the ceiling flavor with
//!   what the pool parts leave, then each pool flavor with its part and its GPUs; cpu, memory
//!   and pods are never borrowed or lent, so the parts still hold the ceiling once.
//! - A pool with a topology gets a Topology of its levels (hostname last) and its flavor names
//!   it in `topologyName`.
//! - The namespace selector lists exactly the tenant's namespaces in the cell.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::tenant::tenant_labels;
use super::{body, managed_labels};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::facts::split::CeilingResource;
use crate::kube::kueue::{
    ClusterQueue, ClusterQueuePreemption, ClusterQueueSpec, Cohort, CohortSpec, FairSharing,
    FlavorQuotas, LocalQueue, LocalQueueSpec, ReclaimWithinCohortPolicy, ResourceFlavor,
    ResourceFlavorSpec, ResourceGroup, ResourceQuota, Topology, TopologyLevel, TopologySpec,
    WithinClusterQueuePolicy, WorkloadPriorityClass,
};
use crate::kube::kueue::{KueueObject, webhook_violations};
use crate::plan::{
    CEILING_FLAVOR, CeilingQuota, CellPlan, Entitlement, FlavorQuota, LOCAL_QUEUE, QueuePlan,
    ROOT_COHORT, TenantPlan,
};

/// The cell-wide Kueue objects as `(file, object, declaration files of tenants that decide it)`.
pub(super) fn cell_objects(
    cell: &CellPlan,
) -> Result<Vec<(String, Body, BTreeSet<String>)>, InternalError> {
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
                // A topology flavor admits only pod sets that ask for topology-aware
                // scheduling, each with every resource on this one flavor: the ClusterQueues
                // that list it hold cpu, memory and pods on it too (`tenant_objects`).
                topology_name: pool.topology.as_ref().map(|topology| topology.name.clone()),
            },
        );
        flavor.metadata.labels = Some(managed_labels());
        if flavor.spec.topology_name.is_some() {
            // Its node labels, tolerations and topology name are immutable (the CRD's rules).
            flavor.metadata.annotations = Some(super::gitops::replace_annotations());
        }
        objects.push((
            format!("resourceflavor-{}.yaml", pool.flavor),
            checked(&flavor)?,
            none(),
        ));
        if let Some(topology) = &pool.topology {
            let mut object = Topology::new(
                topology.name.clone(),
                TopologySpec {
                    levels: topology
                        .levels
                        .iter()
                        .map(|level| TopologyLevel {
                            node_label: level.label.clone(),
                        })
                        .collect(),
                },
            );
            object.metadata.labels = Some(managed_labels());
            // Its levels are immutable (the CRD's rules).
            object.metadata.annotations = Some(super::gitops::replace_annotations());
            objects.push((
                format!("topology-{}.yaml", topology.name),
                checked(&object)?,
                none(),
            ));
        }
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
) -> Result<Vec<(String, Body)>, InternalError> {
    let mut labels = tenant_labels(tenant);
    labels.extend(tenant.chargeback.clone());
    let queue = &tenant.queue;
    let resource_groups = match &queue.ceiling_rest {
        None => split_groups(queue),
        Some(rest) => one_group(queue, rest),
    };
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
                    key: crate::kube::labels::NAMESPACE_NAME_LABEL.to_string(),
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

/// The resource groups of a queue whose ceiling sits on the ceiling flavor alone: cpu, memory
/// and pods on it (nominal = ceiling, nothing borrowed or lent, so the ceiling holds once
/// across the tenant's namespaces), and every GPU resource on the pool flavors.
fn split_groups(queue: &QueuePlan) -> Vec<ResourceGroup> {
    let ceiling = CeilingQuota {
        cpu: queue.cpu.clone(),
        memory: queue.memory.clone(),
        pods: queue.pods,
    };
    let mut groups = vec![ResourceGroup {
        covered_resources: CeilingResource::ALL
            .iter()
            .map(|r| r.as_str().to_string())
            .collect(),
        flavors: vec![FlavorQuotas {
            name: CEILING_FLAVOR.to_string(),
            resources: ceiling_quotas(&ceiling),
        }],
    }];
    if !queue.flavors.is_empty() {
        groups.push(ResourceGroup {
            covered_resources: queue.gpu_resources.clone(),
            flavors: queue
                .flavors
                .iter()
                .map(|flavor| FlavorQuotas {
                    name: flavor.flavor.clone(),
                    resources: gpu_quotas(flavor),
                })
                .collect(),
        });
    }
    groups
}

/// The one resource group of a queue that counts cpu, memory and pods per pool flavor (Kueue
/// gives a topology-aware pod set one flavor for all its resources, and a resource may sit in
/// only one group): the ceiling flavor first, with what the pool parts leave of the ceilings
/// and no GPUs, so pods without GPUs land there and GPU pods move on; then each pool flavor
/// with its part of the ceilings and its GPU entitlements. No flavor borrows or lends cpu,
/// memory or pods, so the parts add up to the ceilings across flavors and namespaces.
fn one_group(queue: &QueuePlan, rest: &CeilingQuota) -> Vec<ResourceGroup> {
    let none = Entitlement {
        resource: String::new(),
        nominal: 0,
        borrowing: 0,
        lending: None,
    };
    let mut covered: Vec<String> = CeilingResource::ALL
        .iter()
        .map(|r| r.as_str().to_string())
        .collect();
    covered.extend(queue.gpu_resources.iter().cloned());
    let mut ceiling = ceiling_quotas(rest);
    ceiling.extend(queue.gpu_resources.iter().map(|resource| {
        gpu_quota(&Entitlement {
            resource: resource.clone(),
            ..none.clone()
        })
    }));
    let mut flavors = vec![FlavorQuotas {
        name: CEILING_FLAVOR.to_string(),
        resources: ceiling,
    }];
    for flavor in &queue.flavors {
        // Validation requires every pool's part here; an absent one admits nothing.
        let part = flavor.ceiling.clone().unwrap_or(CeilingQuota {
            cpu: "0".to_string(),
            memory: "0".to_string(),
            pods: 0,
        });
        let mut resources = ceiling_quotas(&part);
        resources.extend(gpu_quotas(flavor));
        flavors.push(FlavorQuotas {
            name: flavor.flavor.clone(),
            resources,
        });
    }
    vec![ResourceGroup {
        covered_resources: covered,
        flavors,
    }]
}

/// cpu, memory and pods quotas that are the tenant's own: nothing borrowed, nothing lent.
fn ceiling_quotas(ceiling: &CeilingQuota) -> Vec<ResourceQuota> {
    CeilingResource::ALL
        .iter()
        .map(|resource| {
            (
                resource,
                match resource {
                    CeilingResource::Cpu => Quantity(ceiling.cpu.clone()),
                    CeilingResource::Memory => Quantity(ceiling.memory.clone()),
                    CeilingResource::Pods => count(ceiling.pods),
                },
            )
        })
        .map(|(resource, nominal)| ResourceQuota {
            name: resource.as_str().to_string(),
            nominal_quota: nominal,
            borrowing_limit: Some(count(0)),
            lending_limit: Some(count(0)),
        })
        .collect()
}

/// A pool flavor's GPU quotas, in the order of the queue's GPU resources.
fn gpu_quotas(flavor: &FlavorQuota) -> Vec<ResourceQuota> {
    flavor.resources.iter().map(gpu_quota).collect()
}

/// Nominal = reserved, borrowing limit = burst, lending limit = lend.
fn gpu_quota(entitlement: &Entitlement) -> ResourceQuota {
    ResourceQuota {
        name: entitlement.resource.clone(),
        nominal_quota: count(entitlement.nominal),
        borrowing_limit: Some(count(entitlement.borrowing)),
        lending_limit: entitlement.lending.map(count),
    }
}

/// The object as YAML, after Kueue's webhook rules (which the API server cannot check without
/// Kueue running) found nothing wrong with it; a violation is a bug in tenantc.
fn checked<T: KueueObject + serde::Serialize + 'static>(object: &T) -> Result<Body, InternalError> {
    let violations = webhook_violations(object);
    if !violations.is_empty() {
        return Err(InternalError(format!(
            "a Kueue object breaks Kueue's own rules: {}",
            violations.join("; ")
        )));
    }
    body(object)
}

/// A device or object count as a quantity.
fn count(value: i64) -> Quantity {
    Quantity(value.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::validate::test_support::compile_files;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="r"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "train" {
        gpu "H100-80GB-SXM"
        nodes 8 gpus-per-node=8
        sharing "exclusive"
        topology { level "example.com/rack" nodes=4; }
    }
    pool "plain" { gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; }
}
"#;

    fn tenant(name: &str, body: &str) -> String {
        format!(
            r#"tenant "{name}" {{
    org "o"
    team "a"
    trust "hard"
    groups admin="{name}-admins"
    quota cell="c1" cpu="100" memory="1000Gi" pods=100 {{
        {body}
    }}
    workload "train" service-account="trainer" priority="batch"
}}
"#
        )
    }

    fn plan(body: &str) -> (crate::plan::CellPlan, String) {
        let text = tenant("t1", body);
        let compilation = compile_files(&[("cells/c1.kdl", CELL), ("tenants/t1.kdl", &text)]);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        let cell = compilation.plan.unwrap().cells.remove(0);
        let yaml = compilation
            .output
            .unwrap()
            .into_iter()
            .find(|(path, _)| path == "c1/tenants/t1/clusterqueue.yaml")
            .map(|(_, bytes)| String::from_utf8(bytes).unwrap())
            .unwrap();
        (cell, yaml)
    }

    fn groups(cell: &crate::plan::CellPlan) -> Vec<ResourceGroup> {
        let queue = &cell.tenants[0].queue;
        match &queue.ceiling_rest {
            None => split_groups(queue),
            Some(rest) => one_group(queue, rest),
        }
    }

    /// Per ceiling resource, the sum of the nominal quotas over all flavors, in milli units.
    fn ceiling_sums(groups: &[ResourceGroup]) -> Vec<i128> {
        CeilingResource::ALL
            .iter()
            .map(|resource| {
                groups
                    .iter()
                    .flat_map(|group| &group.flavors)
                    .flat_map(|flavor| &flavor.resources)
                    .filter(|quota| quota.name == resource.as_str())
                    .map(|quota| {
                        crate::quantity::Quantity::parse(&quota.nominal_quota.0)
                            .unwrap()
                            .milli()
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn a_topology_pool_puts_every_resource_of_the_queue_in_one_group() {
        let (cell, yaml) = plan(
            r#"pool "train" reserved=16 burst=8 cpu="60" memory="600Gi" pods=40
               pool "plain" reserved=8 cpu="20" memory="100Gi" pods=10"#,
        );
        let groups = groups(&cell);
        assert_eq!(groups.len(), 1);
        let group = &groups[0];
        assert_eq!(
            group.covered_resources[..3],
            ["cpu".to_string(), "memory".to_string(), "pods".to_string()]
        );
        let names: Vec<&str> = group.flavors.iter().map(|f| f.name.as_str()).collect();
        // The ceiling flavor first: pods without GPUs stop there, GPU pods move on.
        assert_eq!(names, [CEILING_FLAVOR, "pool-train", "pool-plain"]);
        // Across flavors, the ceilings hold exactly once, and no flavor borrows or lends them.
        assert_eq!(
            ceiling_sums(&groups),
            [100_000, 1000 * 1024 * 1024 * 1024 * 1000, 100_000]
        );
        for flavor in &group.flavors {
            assert_eq!(flavor.resources.len(), group.covered_resources.len());
            for quota in &flavor.resources[..3] {
                assert_eq!(quota.borrowing_limit, Some(count(0)), "{}", flavor.name);
                assert_eq!(quota.lending_limit, Some(count(0)), "{}", flavor.name);
            }
        }
        // The ceiling flavor holds no GPU.
        for quota in &group.flavors[0].resources[3..] {
            assert_eq!(
                (&quota.nominal_quota, &quota.borrowing_limit),
                (&count(0), &Some(count(0)))
            );
        }
        // The rest of the ceilings (100 - 60 - 20 cpu) stays on the ceiling flavor.
        assert_eq!(
            group.flavors[0].resources[0].nominal_quota,
            Quantity("20".to_string())
        );
        assert!(yaml.contains("- name: pool-train\n      resources:\n      - name: cpu\n        nominalQuota: \"60\"\n"), "{yaml}");
    }

    #[test]
    fn without_topology_the_ceiling_flavor_holds_the_whole_ceiling() {
        let (cell, _) = plan(r#"pool "plain" reserved=8"#);
        let groups = groups(&cell);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].flavors.len(), 1);
        assert_eq!(groups[0].flavors[0].name, CEILING_FLAVOR);
        assert_eq!(
            ceiling_sums(&groups),
            [100_000, 1000 * 1024 * 1024 * 1024 * 1000, 100_000]
        );
        assert!(
            groups[1]
                .covered_resources
                .iter()
                .all(|resource| CeilingResource::ALL.iter().all(|r| r.as_str() != resource))
        );
    }

    #[test]
    fn a_topology_pool_gets_a_topology_and_its_flavor_names_it() {
        let (cell, _) = plan(r#"pool "train" reserved=16 cpu="60" memory="600Gi" pods=40"#);
        let objects = cell_objects(&cell).unwrap();
        let files: Vec<&str> = objects.iter().map(|(file, _, _)| file.as_str()).collect();
        assert!(files.contains(&"topology-pool-train.yaml"), "{files:?}");
        // Only the pool with a topology.
        assert!(!files.contains(&"topology-pool-plain.yaml"), "{files:?}");
        let text = |file: &str| {
            let (_, body, _) = objects.iter().find(|(f, _, _)| f == file).unwrap();
            body.as_str().to_string()
        };
        assert!(text("topology-pool-train.yaml").contains(
            "  levels:\n  - nodeLabel: example.com/rack\n  - nodeLabel: kubernetes.io/hostname\n"
        ));
        assert!(text("resourceflavor-pool-train.yaml").contains("  topologyName: pool-train\n"));
        assert!(!text("resourceflavor-pool-plain.yaml").contains("topologyName"));
    }
}
