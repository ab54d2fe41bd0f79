//! Volcano's `scheduling.volcano.sh/v1beta1` Queue, typed, for the subset tenantc emits, and the
//! rules a Queue must keep to mean what tenantc planned ([docs/volcano.md](../../docs/volcano.md)).
//!
//! Consumes: the values `lower/volcano.rs` decides on (names, parents, resource lists, weights).
//! Produces: [`Queue`] values that serialize through serde to the objects Volcano v1.10.0 reads,
//! and [`queue_violations`], which names every rule a Queue breaks.
//!
//! Version: the structs follow Volcano v1.10.0 (`volcano.sh/apis@v1.10.0`,
//! `pkg/apis/scheduling/v1beta1/types.go`, `QueueSpec`), whose CRD is vendored in
//! `schema/crds/volcano/`; fields are in the order of the Go type. Only the fields tenantc sets
//! are modelled, and never `status`.
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructor; every field exists in the
//! vendored CRD (tested by walking a maximal instance against its schema); the checks never panic,
//! whatever the values, and report every violation, not the first.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// The API version of a Queue.
pub const API_VERSION: &str = "scheduling.volcano.sh/v1beta1";

/// The name of the scheduler a pod must name to be scheduled by Volcano (`schedulerName`), as
/// Volcano's charts install it and its PodGroup controller matches it by default
/// (`pkg/controllers/podgroup/pg_controller.go`, `schedulerNames`).
pub const SCHEDULER_NAME: &str = "volcano";

/// The annotation by which a pod names its queue; the PodGroup controller copies it into the
/// PodGroup it creates for the pod (`pkg/controllers/podgroup/pg_controller_handler.go`), and
/// Volcano's PodGroup webhook reads it from the namespace when a PodGroup names no queue
/// (`pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go`).
pub const QUEUE_ANNOTATION: &str = "scheduling.volcano.sh/queue-name";

/// The queue Volcano puts a PodGroup in when it names none and no namespace annotation does
/// (`volcano.sh/apis` `v1beta1.DefaultQueue`); no tenant queue may have this name.
pub const DEFAULT_QUEUE: &str = "default";

/// A resource list: resource name to quantity, sorted by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// A Queue: a share of the cluster that PodGroups name in `spec.queue`.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Queue {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace) and labels.
    pub metadata: ObjectMeta,
    /// The queue.
    pub spec: QueueSpec,
}

impl Queue {
    /// A Queue of that name with its `apiVersion` and `kind`.
    pub fn new(name: impl Into<String>, spec: QueueSpec) -> Queue {
        Queue {
            api_version: API_VERSION,
            kind: "Queue",
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec,
        }
    }
}

/// What a Queue may use (`QueueSpec` of v1.10.0, in its field order).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// The proportion plugin's share weight; Volcano's queue webhook refuses a weight below 1.
    pub weight: i32,
    /// The most the queue may hold of each resource (the capacity plugin's `capability`; a
    /// resource it leaves out is limited only by the cluster).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub capability: ResourceList,
    /// Whether other queues may reclaim what this queue holds above its `deserved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaimable: Option<bool>,
    /// What the cluster keeps for this queue alone.
    #[serde(skip_serializing_if = "Guarantee::is_empty")]
    pub guarantee: Guarantee,
    /// The parent queue (stored by v1.10.0, read by no scheduler plugin of that release).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// What the queue is entitled to and may take back by reclaim (the capacity plugin's
    /// `deserved`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub deserved: ResourceList,
}

/// What the cluster keeps for a queue alone (`Guarantee` of v1.10.0).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct Guarantee {
    /// The guaranteed resources.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource: ResourceList,
}

impl Guarantee {
    /// Whether it guarantees nothing, so the field is left out.
    pub fn is_empty(&self) -> bool {
        self.resource.is_empty()
    }
}

/// The amount of a quantity in thousandths, or `None` when it is not a quantity.
fn milli(quantity: &Quantity) -> Option<i128> {
    crate::quantity::Quantity::parse(&quantity.0)
        .ok()
        .map(|parsed| parsed.milli())
}

/// Every rule `queue` breaks, one message each, naming the queue and the resource:
///
/// - Volcano's queue webhook (`pkg/webhooks/admission/queues/validate/validate_queue.go`):
///   a weight of at least 1, and a name other than `default`, which Volcano owns;
/// - tenantc's own, for what the capacity plugin (`pkg/scheduler/plugins/capacity/capacity.go`)
///   reads: every quantity is one, and per resource `guarantee <= deserved <= capability`, with
///   every guaranteed or deserved resource also in `capability` (a resource missing from
///   `capability` is limited only by the cluster, so the queue could take more than it
///   deserves).
pub fn queue_violations(queue: &Queue) -> Vec<String> {
    let name = queue.metadata.name.as_deref().unwrap_or("(unnamed)");
    let mut found = Vec::new();
    if queue.spec.weight < 1 {
        found.push(format!(
            "Queue {name}: spec.weight {} is below 1",
            queue.spec.weight
        ));
    }
    if name == DEFAULT_QUEUE {
        found.push(format!(
            "Queue {name}: `{DEFAULT_QUEUE}` is Volcano's own queue"
        ));
    }
    let lists = [
        ("capability", &queue.spec.capability),
        ("deserved", &queue.spec.deserved),
        ("guarantee.resource", &queue.spec.guarantee.resource),
    ];
    for (field, list) in lists {
        for (resource, quantity) in list {
            match milli(quantity) {
                Some(amount) if amount >= 0 => {}
                Some(_) => found.push(format!(
                    "Queue {name}: spec.{field} of {resource} is negative"
                )),
                None => found.push(format!(
                    "Queue {name}: spec.{field} of {resource} is not a quantity: {}",
                    quantity.0
                )),
            }
        }
    }
    let capability = &queue.spec.capability;
    for (field, list, bound_field, bound) in [
        (
            "deserved",
            &queue.spec.deserved,
            "capability",
            &queue.spec.capability,
        ),
        (
            "guarantee.resource",
            &queue.spec.guarantee.resource,
            "deserved",
            &queue.spec.deserved,
        ),
    ] {
        for (resource, quantity) in list {
            let Some(amount) = milli(quantity) else {
                continue;
            };
            if !capability.contains_key(resource) {
                found.push(format!(
                    "Queue {name}: spec.{field} lists {resource}, which spec.capability does not limit"
                ));
            }
            match bound.get(resource) {
                // A bound that is not a quantity is reported above.
                Some(limit) if milli(limit).is_some_and(|limit| amount > limit) => {
                    found.push(format!(
                        "Queue {name}: spec.{field} of {resource} ({}) is above spec.{bound_field} ({})",
                        quantity.0, limit.0
                    ));
                }
                Some(_) => {}
                None if amount > 0 => found.push(format!(
                    "Queue {name}: spec.{field} of {resource} is above spec.{bound_field}, which does not list it"
                )),
                None => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::kube::crd_schema;

    const QUEUE_CRD: &str =
        include_str!("../../../schema/crds/volcano/scheduling.volcano.sh_queues.yaml");
    const PODGROUP_CRD: &str =
        include_str!("../../../schema/crds/volcano/scheduling.volcano.sh_podgroups.yaml");

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), Quantity(value.to_string())))
            .collect()
    }

    /// A queue with every field set, as tenantc writes a tenant's.
    fn maximal() -> Queue {
        let mut queue = Queue::new(
            "tenant-acme",
            QueueSpec {
                weight: 2,
                capability: list(&[
                    ("cpu", "64"),
                    ("memory", "512Gi"),
                    ("nvidia.com/gpu", "24"),
                    ("nvidia.com/mig-1g.10gb", "0"),
                ]),
                reclaimable: Some(true),
                guarantee: Guarantee {
                    resource: list(&[("nvidia.com/gpu", "8")]),
                },
                parent: Some("org-acme".to_string()),
                deserved: list(&[
                    ("cpu", "64"),
                    ("memory", "512Gi"),
                    ("nvidia.com/gpu", "16"),
                    ("nvidia.com/mig-1g.10gb", "0"),
                ]),
            },
        );
        queue.metadata.labels = Some(BTreeMap::from([(
            "app.kubernetes.io/managed-by".to_string(),
            "tenantc".to_string(),
        )]));
        queue
    }

    #[test]
    fn every_field_of_a_maximal_queue_exists_in_the_crd_schema() {
        let crd = crd_schema::load(QUEUE_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1beta1").unwrap();
        let value = serde_json::to_value(maximal()).unwrap();
        assert_eq!(value["apiVersion"], API_VERSION);
        assert_eq!(value["kind"], "Queue");
        assert_eq!(
            value["spec"]["guarantee"]["resource"]["nvidia.com/gpu"],
            "8"
        );
        let found = crd_schema::violations(schema, &value);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_field_the_queue_crd_does_not_have_is_found() {
        let crd = crd_schema::load(QUEUE_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1beta1").unwrap();
        let mut value = serde_json::to_value(maximal()).unwrap();
        value["spec"]["deserve"] = serde_json::json!({"cpu": "1"});
        assert!(!crd_schema::violations(schema, &value).is_empty());
        let mut value = serde_json::to_value(maximal()).unwrap();
        value["spec"]["guarantee"]["resources"] = serde_json::json!({"cpu": "1"});
        assert!(!crd_schema::violations(schema, &value).is_empty());
    }

    #[test]
    fn the_podgroup_crd_has_the_fields_the_floor_reads() {
        // The floor judges PodGroups by these fields (`lower/admission.rs`); a release that
        // renames one would let a PodGroup through unjudged.
        let crd = crd_schema::load(PODGROUP_CRD).unwrap();
        let schema = crd_schema::version_schema(&crd, "v1beta1").unwrap();
        for path in [
            &["spec", "queue"][..],
            &["spec", "priorityClassName"],
            &["spec", "minMember"],
            &["spec", "minResources"],
            &["status", "phase"],
        ] {
            assert!(crd_schema::schema_at(schema, path).is_some(), "{path:?}");
        }
        let podgroup = serde_json::json!({
            "apiVersion": API_VERSION,
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "acme-train"},
            "spec": {"minMember": 4, "queue": "tenant-acme", "priorityClassName": "batch",
                     "minResources": {"nvidia.com/gpu": "32"}},
        });
        let found = crd_schema::violations(schema, &podgroup);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_queue_tenantc_writes_breaks_no_rule() {
        assert_eq!(queue_violations(&maximal()), Vec::<String>::new());
    }

    #[test]
    fn names_a_guarantee_above_deserved_and_deserved_above_capability() {
        let mut queue = maximal();
        queue
            .spec
            .guarantee
            .resource
            .insert("nvidia.com/gpu".to_string(), Quantity("17".to_string()));
        queue
            .spec
            .deserved
            .insert("memory".to_string(), Quantity("1Ti".to_string()));
        assert_eq!(
            queue_violations(&queue),
            [
                "Queue tenant-acme: spec.deserved of memory (1Ti) is above spec.capability (512Gi)",
                "Queue tenant-acme: spec.guarantee.resource of nvidia.com/gpu (17) is above spec.deserved (16)",
            ]
        );
    }

    #[test]
    fn names_a_deserved_resource_that_capability_leaves_unlimited() {
        let mut queue = maximal();
        queue.spec.capability.remove("nvidia.com/mig-1g.10gb");
        queue.spec.deserved.insert(
            "nvidia.com/mig-1g.10gb".to_string(),
            Quantity("2".to_string()),
        );
        let found = queue_violations(&queue);
        assert_eq!(
            found,
            [
                "Queue tenant-acme: spec.deserved lists nvidia.com/mig-1g.10gb, which spec.capability does not limit",
                "Queue tenant-acme: spec.deserved of nvidia.com/mig-1g.10gb is above spec.capability, which does not list it",
            ]
        );
    }

    #[test]
    fn names_a_weight_below_one_the_default_queue_and_a_broken_quantity() {
        let mut queue = maximal();
        queue.spec.weight = 0;
        queue.metadata.name = Some(DEFAULT_QUEUE.to_string());
        queue
            .spec
            .capability
            .insert("cpu".to_string(), Quantity("lots".to_string()));
        let found = queue_violations(&queue);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].contains("spec.weight 0"));
        assert!(found[1].contains("Volcano's own queue"));
        assert!(found[2].contains("not a quantity: lots"));
    }
}
