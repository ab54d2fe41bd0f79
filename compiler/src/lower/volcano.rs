//! The Volcano objects of a cell whose scheduler is Volcano, and of each tenant in it
//! ([docs/volcano.md](../../docs/volcano.md)).
//!
//! Consumes: the cell plan's org queues and a tenant's Volcano queue (`plan/volcano.rs`).
//! Produces: per cell, a parent Queue per org in `volcano/`; per tenant, its Queue in its own
//! folder (`queue.yaml`), labelled like its Kueue ClusterQueue would be.
//!
//! Invariants:
//! - Every object is a `kube::volcano::Queue`, and every name and number comes from the plan.
//! - Every queue lists every GPU resource of the cell in `capability` and `deserved` (0 where the
//!   tenant reserves none), with cpu and memory, so the capacity plugin never reads a missing
//!   resource as unlimited; `guarantee` lists only what is kept from lending.
//! - Every Queue passes `kube::volcano::queue_violations`, and the cell's guarantees fit its pools
//!   (`plan::volcano::guarantee_overflow`), or the build is an internal error: a plan that passed
//!   the checks never breaks either.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::tenant::tenant_labels;
use super::{body, managed_labels};
use crate::emit::{Body, InternalError};
use crate::kube::volcano::{Guarantee, Queue, QueueSpec, ResourceList, queue_violations};
use crate::plan::volcano::{VolcanoResource, guarantee_overflow};
use crate::plan::{CellPlan, TenantPlan};

/// The cell-wide Volcano objects as `(file, object, declaration files that decide it)`: the org
/// queues, which sum up their tenants, so their headers name the `tenants/` folder.
pub(super) fn cell_objects(
    cell: &CellPlan,
) -> Result<Vec<(String, Body, BTreeSet<String>)>, InternalError> {
    let queues: Vec<&crate::plan::volcano::VolcanoQueuePlan> = cell
        .tenants
        .iter()
        .filter_map(|tenant| tenant.volcano.as_ref())
        .collect();
    let overflow = guarantee_overflow(&cell.pools, &queues);
    if !overflow.is_empty() {
        let found: Vec<String> = overflow
            .iter()
            .map(|(resource, guaranteed, offered)| {
                format!("{resource}: {guaranteed} guaranteed, {offered} offered")
            })
            .collect();
        return Err(InternalError(format!(
            "the Volcano guarantees of cell {} exceed its pools: {}",
            cell.name,
            found.join("; ")
        )));
    }
    let mut objects = Vec::new();
    for org in &cell.volcano_orgs {
        let mut queue = Queue::new(
            org.name.clone(),
            QueueSpec {
                weight: count_i32(org.weight),
                capability: resource_list(&org.cpu, &org.memory, &org.resources, |held| {
                    held.capability
                }),
                reclaimable: Some(true),
                guarantee: Guarantee::default(),
                parent: None,
                deserved: resource_list(&org.cpu, &org.memory, &org.resources, |held| {
                    held.deserved
                }),
            },
        );
        queue.metadata.labels = Some(managed_labels());
        objects.push((
            format!("queue-{}.yaml", org.name),
            checked(&queue)?,
            BTreeSet::from(["tenants/".to_string()]),
        ));
    }
    Ok(objects)
}

/// A tenant's Volcano objects as `(path in the tenant folder, object)`: its Queue.
pub(super) fn tenant_objects(tenant: &TenantPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let Some(plan) = &tenant.volcano else {
        return Ok(Vec::new());
    };
    let mut labels = tenant_labels(tenant);
    labels.extend(tenant.chargeback.clone());
    let guarantee: ResourceList = plan
        .resources
        .iter()
        .filter(|held| held.guarantee > 0)
        .map(|held| (held.resource.clone(), count(held.guarantee)))
        .collect();
    let mut queue = Queue::new(
        plan.name.clone(),
        QueueSpec {
            weight: count_i32(plan.weight),
            capability: resource_list(&plan.cpu, &plan.memory, &plan.resources, |held| {
                held.capability
            }),
            // Reserved means guaranteed: what it holds above `deserved` (its burst) is taken
            // back when another queue needs what it deserves.
            reclaimable: Some(true),
            guarantee: Guarantee {
                resource: guarantee,
            },
            parent: Some(plan.parent.clone()),
            deserved: resource_list(&plan.cpu, &plan.memory, &plan.resources, |held| {
                held.deserved
            }),
        },
    );
    queue.metadata.labels = Some(labels);
    Ok(vec![("queue.yaml".to_string(), checked(&queue)?)])
}

/// cpu and memory as given, then every GPU resource with the amount `pick` takes of it.
fn resource_list(
    cpu: &str,
    memory: &str,
    resources: &[VolcanoResource],
    pick: fn(&VolcanoResource) -> i64,
) -> ResourceList {
    let mut list = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
    ]);
    for held in resources {
        list.insert(held.resource.clone(), count(pick(held)));
    }
    list
}

/// A device count as a quantity.
fn count(value: i64) -> Quantity {
    Quantity(value.to_string())
}

/// A weight as the CRD's int32; a validated weight is far inside it.
fn count_i32(value: i64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// The Queue as YAML, after the rules of `kube::volcano` found nothing wrong with it; a
/// violation is a bug in tenantc.
fn checked(queue: &Queue) -> Result<Body, InternalError> {
    let violations = queue_violations(queue);
    if !violations.is_empty() {
        return Err(InternalError(format!(
            "a Volcano Queue breaks the rules its plan must keep: {}",
            violations.join("; ")
        )));
    }
    body(queue)
}
