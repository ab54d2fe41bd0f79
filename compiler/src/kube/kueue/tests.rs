//! Tests of the Kueue structs: every field against the vendored CRD schemas, and every webhook
//! rule shown able to fail.
//!
//! Consumes: the CRDs in `schema/crds/kueue/` (compiled in with `include_str!`).
//! Produces: nothing; assertions only.
//!
//! Invariant: the maximal instances below are written as full struct literals (no
//! `..Default::default()`), so a field added to a struct does not compile until it is set here
//! and thereby checked against the CRD.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use serde_json::Value;

use super::*;
use crate::kube::crd_schema;
use crate::testing::Rng;

/// The vendored CRD of each kind.
const CRDS: [(&str, &str); 6] = [
    (
        "ResourceFlavor",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_resourceflavors.yaml"),
    ),
    (
        "Topology",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_topologies.yaml"),
    ),
    (
        "Cohort",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_cohorts.yaml"),
    ),
    (
        "ClusterQueue",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_clusterqueues.yaml"),
    ),
    (
        "LocalQueue",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_localqueues.yaml"),
    ),
    (
        "WorkloadPriorityClass",
        include_str!("../../../../schema/crds/kueue/kueue.x-k8s.io_workloadpriorityclasses.yaml"),
    ),
];

/// The version of the CRDs the structs follow.
const VERSION: &str = "v1beta2";

fn crd(kind: &str) -> Value {
    let (_, text) = CRDS.iter().find(|(name, _)| *name == kind).unwrap();
    crd_schema::load(text).unwrap()
}

fn schema(kind: &str) -> Value {
    crd_schema::version_schema(&crd(kind), VERSION)
        .unwrap()
        .clone()
}

fn q(text: &str) -> Quantity {
    Quantity(text.to_string())
}

fn quota(name: &str, nominal: &str, borrowing: &str, lending: &str) -> ResourceQuota {
    ResourceQuota {
        name: name.to_string(),
        nominal_quota: q(nominal),
        borrowing_limit: Some(q(borrowing)),
        lending_limit: Some(q(lending)),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn maximal_resource_flavor() -> ResourceFlavor {
    let mut flavor = ResourceFlavor::new(
        "us-east-1a.h100-train",
        ResourceFlavorSpec {
            node_labels: labels(&[
                ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
                ("tenantc.io/pool", "h100-train"),
            ]),
            node_taints: vec![Taint {
                effect: "NoSchedule".to_string(),
                key: "tenantc.io/pool".to_string(),
                // tenantc never sets the time a taint was added: output has no timestamps.
                time_added: None,
                value: Some("h100-train".to_string()),
            }],
            tolerations: vec![
                Toleration {
                    effect: Some("NoSchedule".to_string()),
                    key: Some("tenantc.io/pool".to_string()),
                    operator: Some("Equal".to_string()),
                    toleration_seconds: None,
                    value: Some("h100-train".to_string()),
                },
                Toleration {
                    effect: Some("NoExecute".to_string()),
                    key: Some("nvidia.com/gpu".to_string()),
                    operator: Some("Exists".to_string()),
                    toleration_seconds: Some(300),
                    value: None,
                },
            ],
            topology_name: Some("h100-train".to_string()),
        },
    );
    flavor.metadata.labels = Some(labels(&[("app.kubernetes.io/managed-by", "tenantc")]));
    flavor
}

fn maximal_topology() -> Topology {
    Topology::new(
        "h100-train",
        TopologySpec {
            levels: [
                "example.com/nvlink-domain",
                "example.com/rack",
                HOSTNAME_LABEL,
            ]
            .into_iter()
            .map(|label| TopologyLevel {
                node_label: label.to_string(),
            })
            .collect(),
        },
    )
}

fn maximal_resource_groups() -> Vec<ResourceGroup> {
    vec![
        ResourceGroup {
            covered_resources: strings(&["cpu", "memory", "nvidia.com/gpu"]),
            flavors: vec![
                FlavorQuotas {
                    name: "us-east-1a.h100-train".to_string(),
                    resources: vec![
                        quota("cpu", "64", "32", "16"),
                        quota("memory", "512Gi", "256Gi", "128Gi"),
                        quota("nvidia.com/gpu", "8", "8", "4"),
                    ],
                },
                FlavorQuotas {
                    name: "us-east-1a.h100-spot".to_string(),
                    resources: vec![
                        quota("cpu", "0", "16", "0"),
                        quota("memory", "0", "128Gi", "0"),
                        quota("nvidia.com/gpu", "0", "4", "0"),
                    ],
                },
            ],
        },
        ResourceGroup {
            covered_resources: strings(&["nvidia.com/mig-1g.10gb"]),
            flavors: vec![FlavorQuotas {
                name: "us-east-1a.a100-mig".to_string(),
                resources: vec![quota("nvidia.com/mig-1g.10gb", "14", "7", "7")],
            }],
        },
    ]
}

fn maximal_cohort() -> Cohort {
    Cohort::new(
        "us-east-1a.acme",
        CohortSpec {
            parent_name: Some("us-east-1a".to_string()),
            resource_groups: maximal_resource_groups(),
            fair_sharing: Some(FairSharing { weight: q("2") }),
        },
    )
}

fn maximal_cluster_queue() -> ClusterQueue {
    ClusterQueue::new(
        "acme-research",
        ClusterQueueSpec {
            resource_groups: maximal_resource_groups(),
            cohort_name: Some("us-east-1a.acme".to_string()),
            queueing_strategy: Some(QueueingStrategy::BestEffortFifo),
            namespace_selector: LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "kubernetes.io/metadata.name".to_string(),
                    operator: "In".to_string(),
                    values: Some(strings(&["acme-research-train", "acme-research-serve"])),
                }]),
                match_labels: Some(labels(&[("tenantc.io/tenant", "acme-research")])),
            },
            flavor_fungibility: Some(FlavorFungibility {
                when_can_borrow: Some(FlavorFungibilityPolicy::TryNextFlavor),
                when_can_preempt: Some(FlavorFungibilityPolicy::TryNextFlavor),
                preference: Some(FlavorFungibilityPreference::BorrowingOverPreemption),
            }),
            preemption: Some(ClusterQueuePreemption {
                reclaim_within_cohort: Some(ReclaimWithinCohortPolicy::Any),
                borrow_within_cohort: Some(BorrowWithinCohort {
                    policy: Some(BorrowWithinCohortPolicy::LowerPriority),
                    max_priority_threshold: Some(100),
                }),
                within_cluster_queue: Some(WithinClusterQueuePolicy::LowerPriority),
            }),
            stop_policy: Some(StopPolicy::None),
            fair_sharing: Some(FairSharing { weight: q("1500m") }),
        },
    )
}

fn maximal_local_queue() -> LocalQueue {
    LocalQueue::new(
        "acme-research-train",
        "default",
        LocalQueueSpec {
            cluster_queue: "acme-research".to_string(),
        },
    )
}

fn maximal_workload_priority_class() -> WorkloadPriorityClass {
    WorkloadPriorityClass::new(
        "serving",
        1_000_000,
        Some("Latency-sensitive serving; preempts batch".to_string()),
    )
}

/// Checks one object against the `v1beta2` schema of its CRD, and its apiVersion, kind and
/// scope against the CRD's header.
fn fits_its_crd<T: KueueObject>(object: &T) {
    let crd = crd(T::KIND);
    let value = serde_json::to_value(object).unwrap();
    let schema = crd_schema::version_schema(&crd, VERSION).unwrap();
    assert_eq!(
        crd_schema::violations(schema, &value),
        Vec::<String>::new(),
        "{} does not fit its CRD",
        T::KIND
    );
    let group = crd["spec"]["group"].as_str().unwrap();
    assert_eq!(value["apiVersion"], format!("{group}/{VERSION}"));
    assert_eq!(API_VERSION, format!("{group}/{VERSION}"));
    assert_eq!(value["kind"], crd["spec"]["names"]["kind"]);
    assert_eq!(
        T::NAMESPACED,
        crd["spec"]["scope"] == "Namespaced",
        "{}",
        T::KIND
    );
    assert_eq!(
        value["metadata"].get("namespace").is_some(),
        T::NAMESPACED,
        "{}",
        T::KIND
    );
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|version| version["name"] == VERSION)
        .unwrap();
    assert_eq!(
        version["served"],
        true,
        "{} {VERSION} is not served",
        T::KIND
    );
    assert_eq!(
        version["storage"],
        true,
        "{} {VERSION} is not stored",
        T::KIND
    );
    // The type's keys come first, then the metadata, as in every Kubernetes object.
    assert_key_order(object, &["apiVersion", "kind", "metadata"]);
}

/// Asserts that the serialized `object` has `keys` in this order (each key once).
fn assert_key_order<T: Serialize>(object: &T, keys: &[&str]) {
    // `serde_json::Value` sorts keys; the text keeps the order of the struct.
    let text = serde_json::to_string(object).unwrap();
    let positions: Vec<usize> = keys
        .iter()
        .map(|key| {
            let quoted = format!("\"{key}\":");
            assert_eq!(text.matches(&quoted).count(), 1, "{key} in {text}");
            text.find(&quoted).unwrap()
        })
        .collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "expected keys in the order {keys:?}: {text}"
    );
}

#[test]
fn every_field_of_a_maximal_instance_exists_in_the_crd_schema() {
    fits_its_crd(&maximal_resource_flavor());
    fits_its_crd(&maximal_topology());
    fits_its_crd(&maximal_cohort());
    fits_its_crd(&maximal_cluster_queue());
    fits_its_crd(&maximal_local_queue());
    fits_its_crd(&maximal_workload_priority_class());
}

#[test]
fn the_checker_fails_a_struct_with_a_field_the_crd_lacks() {
    // The same walk as above, of a serialized ClusterQueue with one misspelt key.
    let mut value = serde_json::to_value(maximal_cluster_queue()).unwrap();
    let preemption = value["spec"]["preemption"].as_object_mut().unwrap();
    let policy = preemption.remove("withinClusterQueue").unwrap();
    preemption.insert("withinClusterqueue".to_string(), policy);
    let found = crd_schema::violations(&schema("ClusterQueue"), &value);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("spec.preemption: key `withinClusterqueue` is not in the schema"),
        "{found:?}"
    );
}

#[test]
fn serializes_in_kubernetes_order_with_api_spellings() {
    assert_key_order(
        &maximal_cluster_queue(),
        &[
            "apiVersion",
            "kind",
            "metadata",
            "spec",
            "resourceGroups",
            "cohortName",
            "queueingStrategy",
            "namespaceSelector",
            "flavorFungibility",
            "preemption",
            "stopPolicy",
            "fairSharing",
        ],
    );
    assert_key_order(
        &maximal_workload_priority_class(),
        &["apiVersion", "kind", "metadata", "value", "description"],
    );
    let value = serde_json::to_value(maximal_cluster_queue()).unwrap();
    assert_eq!(value["spec"]["queueingStrategy"], "BestEffortFIFO");
    assert_eq!(
        value["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"],
        "512Gi"
    );
    let empty = ClusterQueue::new(
        "empty",
        ClusterQueueSpec {
            resource_groups: Vec::new(),
            cohort_name: None,
            queueing_strategy: None,
            namespace_selector: LabelSelector::default(),
            flavor_fungibility: None,
            preemption: None,
            stop_policy: None,
            fair_sharing: None,
        },
    );
    // Unset options and empty optional lists are left out; the selector is always written.
    assert_eq!(
        serde_json::to_value(empty).unwrap()["spec"],
        serde_json::json!({"namespaceSelector": {}})
    );
}

/// The values of the enum at a property path of a kind's schema.
fn crd_enum(kind: &str, path: &[&str]) -> Vec<String> {
    let schema = schema(kind);
    let node =
        crd_schema::schema_at(&schema, path).unwrap_or_else(|| panic!("{kind} has no {path:?}"));
    node["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{kind} {path:?} is not an enum"))
        .iter()
        .map(|value| value.as_str().unwrap().to_string())
        .collect()
}

fn spellings<T: Serialize + Copy>(all: &[T], as_str: fn(T) -> &'static str) -> Vec<String> {
    for value in all {
        assert_eq!(
            serde_json::to_value(value).unwrap(),
            Value::String(as_str(*value).to_string())
        );
    }
    all.iter().map(|value| as_str(*value).to_string()).collect()
}

#[test]
fn every_enum_has_exactly_the_values_of_the_crd() {
    let cq = "ClusterQueue";
    assert_eq!(
        spellings(QueueingStrategy::ALL, QueueingStrategy::as_str),
        crd_enum(cq, &["spec", "queueingStrategy"])
    );
    assert_eq!(
        spellings(StopPolicy::ALL, StopPolicy::as_str),
        crd_enum(cq, &["spec", "stopPolicy"])
    );
    assert_eq!(
        spellings(
            WithinClusterQueuePolicy::ALL,
            WithinClusterQueuePolicy::as_str
        ),
        crd_enum(cq, &["spec", "preemption", "withinClusterQueue"])
    );
    assert_eq!(
        spellings(
            ReclaimWithinCohortPolicy::ALL,
            ReclaimWithinCohortPolicy::as_str
        ),
        crd_enum(cq, &["spec", "preemption", "reclaimWithinCohort"])
    );
    assert_eq!(
        spellings(
            BorrowWithinCohortPolicy::ALL,
            BorrowWithinCohortPolicy::as_str
        ),
        crd_enum(cq, &["spec", "preemption", "borrowWithinCohort", "policy"])
    );
    for field in ["whenCanBorrow", "whenCanPreempt"] {
        assert_eq!(
            spellings(
                FlavorFungibilityPolicy::ALL,
                FlavorFungibilityPolicy::as_str
            ),
            crd_enum(cq, &["spec", "flavorFungibility", field])
        );
    }
    assert_eq!(
        spellings(
            FlavorFungibilityPreference::ALL,
            FlavorFungibilityPreference::as_str
        ),
        crd_enum(cq, &["spec", "flavorFungibility", "preference"])
    );
}

#[test]
fn quantities_are_written_in_canonical_form() {
    let exact = crate::quantity::Quantity::parse("2048Mi").unwrap();
    assert_eq!(quantity(exact), q("2Gi"));
}

#[test]
fn maximal_instances_break_no_webhook_rule() {
    assert_eq!(
        webhook_violations(&maximal_resource_flavor()),
        Vec::<String>::new()
    );
    assert_eq!(
        webhook_violations(&maximal_topology()),
        Vec::<String>::new()
    );
    assert_eq!(webhook_violations(&maximal_cohort()), Vec::<String>::new());
    assert_eq!(
        webhook_violations(&maximal_cluster_queue()),
        Vec::<String>::new()
    );
    assert_eq!(
        webhook_violations(&maximal_local_queue()),
        Vec::<String>::new()
    );
    assert_eq!(
        webhook_violations(&maximal_workload_priority_class()),
        Vec::<String>::new()
    );
}

/// Asserts that `object` breaks the rule `case`, and only it: every violation names it.
fn assert_rejected<T: KueueObject>(case: &str, object: &T, expected: &str) {
    let found = webhook_violations(object);
    assert!(!found.is_empty(), "{case}: accepted");
    assert!(
        found.iter().all(|violation| violation.contains(expected)),
        "{case}: expected only violations containing `{expected}`, got {found:#?}"
    );
}

fn assert_accepted<T: KueueObject>(case: &str, object: &T) {
    assert_eq!(webhook_violations(object), Vec::<String>::new(), "{case}");
}

/// A group of `resources` resources and `flavors` flavors, named after `tag`, without
/// borrowing or lending limits.
fn group(tag: &str, resources: usize, flavors: usize) -> ResourceGroup {
    let covered: Vec<String> = (0..resources)
        .map(|idx| format!("example.com/{tag}-r{idx}"))
        .collect();
    ResourceGroup {
        flavors: (0..flavors)
            .map(|idx| FlavorQuotas {
                name: format!("{tag}-f{idx}"),
                resources: covered
                    .iter()
                    .map(|name| ResourceQuota {
                        name: name.clone(),
                        nominal_quota: q("1"),
                        borrowing_limit: None,
                        lending_limit: None,
                    })
                    .collect(),
            })
            .collect(),
        covered_resources: covered,
    }
}

type Mutation<T> = fn(&mut T);

fn cluster_queue_with(mutate: Mutation<ClusterQueueSpec>) -> ClusterQueue {
    let mut cq = maximal_cluster_queue();
    mutate(&mut cq.spec);
    cq
}

fn first_quota(spec: &mut ClusterQueueSpec) -> &mut ResourceQuota {
    &mut spec.resource_groups[0].flavors[0].resources[0]
}

fn drop_limits(groups: &mut [ResourceGroup], borrowing: bool, lending: bool) {
    for quota in groups
        .iter_mut()
        .flat_map(|group| &mut group.flavors)
        .flat_map(|flavor| &mut flavor.resources)
    {
        if borrowing {
            quota.borrowing_limit = None;
        }
        if lending {
            quota.lending_limit = None;
        }
    }
}

#[test]
fn rejects_cluster_queues_that_break_a_webhook_rule() {
    let cases: [(&str, Mutation<ClusterQueueSpec>, &str); 27] = [
        (
            "17 resource groups",
            |spec| {
                spec.resource_groups = (0..17).map(|idx| group(&format!("g{idx}"), 1, 1)).collect()
            },
            "spec.resourceGroups: has 17 groups, Kueue allows at most 16",
        ),
        (
            "a group without resources",
            |spec| {
                spec.resource_groups[1].covered_resources.clear();
                spec.resource_groups[1].flavors[0].resources.clear();
            },
            "spec.resourceGroups[1].coveredResources: has 0 resources, a group needs 1 to 64",
        ),
        (
            "a group of 65 resources",
            |spec| spec.resource_groups[1] = group("big", 65, 1),
            "spec.resourceGroups[1].coveredResources: has 65 resources, a group needs 1 to 64",
        ),
        (
            "a group without flavors",
            |spec| spec.resource_groups[1].flavors.clear(),
            "spec.resourceGroups[1].flavors: has 0 flavors, a group needs 1 to 64",
        ),
        (
            "a group of 65 flavors",
            |spec| spec.resource_groups[1] = group("big", 1, 65),
            "spec.resourceGroups[1].flavors: has 65 flavors, a group needs 1 to 64",
        ),
        (
            "257 resources in all",
            |spec| {
                spec.resource_groups = (0..5).map(|idx| group(&format!("g{idx}"), 52, 1)).collect()
            },
            "spec.resourceGroups: cover 260 resources in all, Kueue allows at most 256",
        ),
        (
            "257 flavors in all",
            |spec| {
                spec.resource_groups = (0..5).map(|idx| group(&format!("g{idx}"), 1, 52)).collect()
            },
            "spec.resourceGroups: list 260 flavors in all, Kueue allows at most 256",
        ),
        (
            "513 pairs in a group",
            |spec| spec.resource_groups[1] = group("big", 9, 64),
            "spec.resourceGroups[1]: has 64 flavors of 9 resources, 576 (flavor, resource) pairs",
        ),
        (
            "a resource in two groups",
            |spec| {
                spec.resource_groups[1].covered_resources[0] = "cpu".to_string();
                spec.resource_groups[1].flavors[0].resources[0].name = "cpu".to_string();
            },
            "spec.resourceGroups[1].coveredResources[0]: `cpu` is already covered by resourceGroups[0]",
        ),
        (
            "a flavor in two groups",
            |spec| spec.resource_groups[1].flavors[0].name = "us-east-1a.h100-train".to_string(),
            "spec.resourceGroups[1].flavors[0].name: `us-east-1a.h100-train` is already listed in resourceGroups[0]",
        ),
        (
            "a flavor listing the covered resources out of order",
            |spec| spec.resource_groups[0].flavors[1].resources.swap(0, 1),
            "a flavor lists the covered resources in the same order",
        ),
        (
            "a flavor listing fewer resources than the group covers",
            |spec| {
                spec.resource_groups[0].flavors[1].resources.pop();
            },
            "spec.resourceGroups[0].flavors[1].resources: lists 2 resources, but the group covers 3",
        ),
        (
            "a negative nominal quota",
            |spec| {
                let quota = first_quota(spec);
                quota.nominal_quota = q("-1");
                quota.lending_limit = None;
            },
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: `-1` is negative",
        ),
        (
            "a negative borrowing limit",
            |spec| first_quota(spec).borrowing_limit = Some(q("-500m")),
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: `-500m` is negative",
        ),
        (
            "a negative lending limit",
            |spec| first_quota(spec).lending_limit = Some(q("-1")),
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: `-1` is negative",
        ),
        (
            "a quantity that does not parse",
            |spec| first_quota(spec).nominal_quota = q("lots"),
            "nominalQuota: `lots`: not a quantity",
        ),
        (
            "a borrowing limit without a cohort",
            |spec| {
                spec.cohort_name = None;
                drop_limits(&mut spec.resource_groups, false, true);
            },
            ".borrowingLimit: is set, but spec.cohortName is not",
        ),
        (
            "a lending limit without a cohort",
            |spec| {
                spec.cohort_name = None;
                drop_limits(&mut spec.resource_groups, true, false);
            },
            ".lendingLimit: is set, but spec.cohortName is not",
        ),
        (
            "a lending limit above the nominal quota",
            |spec| spec.resource_groups[0].flavors[0].resources[2].lending_limit = Some(q("9")),
            "resources[2].lendingLimit: `9` is above the nominalQuota `8`",
        ),
        (
            "borrowWithinCohort with reclaimWithinCohort Never",
            |spec| {
                spec.preemption.as_mut().unwrap().reclaim_within_cohort =
                    Some(ReclaimWithinCohortPolicy::Never)
            },
            "spec.preemption.borrowWithinCohort.policy: `LowerPriority` needs reclaimWithinCohort other than `Never`",
        ),
        (
            "borrowWithinCohort with reclaimWithinCohort left to its default",
            |spec| spec.preemption.as_mut().unwrap().reclaim_within_cohort = None,
            "spec.preemption.borrowWithinCohort.policy: `LowerPriority` needs reclaimWithinCohort other than `Never`",
        ),
        (
            "a fungibility preference with whenCanBorrow left to its default",
            |spec| spec.flavor_fungibility.as_mut().unwrap().when_can_borrow = None,
            "spec.flavorFungibility.preference: `BorrowingOverPreemption` needs whenCanBorrow and whenCanPreempt `TryNextFlavor`, but they are `MayStopSearch` and `TryNextFlavor`",
        ),
        (
            "a negative fair-sharing weight",
            |spec| spec.fair_sharing = Some(FairSharing { weight: q("-1") }),
            "spec.fairSharing.weight: `-1` must be 0 or above 1e-9",
        ),
        (
            "a cohort name that is not a DNS subdomain",
            |spec| spec.cohort_name = Some("Acme".to_string()),
            "spec.cohortName: `Acme` may contain only lowercase letters",
        ),
        (
            "a flavor name that is not a DNS subdomain",
            |spec| spec.resource_groups[1].flavors[0].name = "a100_mig".to_string(),
            "spec.resourceGroups[1].flavors[0].name: `a100_mig`",
        ),
        (
            "a covered resource that is not a qualified name",
            |spec| {
                let name = "nvidia.com/mig 1g".to_string();
                spec.resource_groups[1].covered_resources[0] = name.clone();
                spec.resource_groups[1].flavors[0].resources[0].name = name;
            },
            "spec.resourceGroups[1].coveredResources[0]: `nvidia.com/mig 1g`",
        ),
        (
            "a namespace selector with an unknown operator",
            |spec| {
                spec.namespace_selector.match_expressions.as_mut().unwrap()[0].operator =
                    "Within".to_string()
            },
            "spec.namespaceSelector.matchExpressions[0].operator: `Within` is not one of",
        ),
    ];
    for (case, mutate, expected) in cases {
        assert_rejected(case, &cluster_queue_with(mutate), expected);
    }
    let mut missing_values = maximal_cluster_queue();
    missing_values
        .spec
        .namespace_selector
        .match_expressions
        .as_mut()
        .unwrap()[0]
        .values = None;
    assert_rejected(
        "In without values",
        &missing_values,
        "matchExpressions[0].values: must not be empty with operator `In`",
    );
    let mut bad_label = maximal_cluster_queue();
    bad_label.spec.namespace_selector.match_labels = Some(labels(&[("tenantc.io/tenant", "-a")]));
    assert_rejected(
        "a match label value that is not a label value",
        &bad_label,
        "spec.namespaceSelector.matchLabels: value `-a` of `tenantc.io/tenant`",
    );
}

#[test]
fn accepts_the_boundaries_of_the_cluster_queue_rules() {
    let cases: [(&str, Mutation<ClusterQueueSpec>); 7] = [
        ("16 resource groups", |spec| {
            spec.resource_groups = (0..16).map(|idx| group(&format!("g{idx}"), 1, 1)).collect()
        }),
        ("64 resources and 8 flavors in a group: 512 pairs", |spec| {
            spec.resource_groups[1] = group("big", 64, 8)
        }),
        ("256 resources and 256 flavors in all", |spec| {
            spec.resource_groups = (0..4).map(|idx| group(&format!("g{idx}"), 63, 1)).collect();
            spec.resource_groups
                .extend((4..8).map(|idx| group(&format!("g{idx}"), 1, 63)));
        }),
        ("a lending limit equal to the nominal quota", |spec| {
            spec.resource_groups[0].flavors[0].resources[2].lending_limit = Some(q("8"))
        }),
        ("no cohort and no limits", |spec| {
            spec.cohort_name = None;
            drop_limits(&mut spec.resource_groups, true, true);
        }),
        ("a zero fair-sharing weight", |spec| {
            spec.fair_sharing = Some(FairSharing { weight: q("0") })
        }),
        (
            "borrowWithinCohort Never without reclaimWithinCohort",
            |spec| {
                let preemption = spec.preemption.as_mut().unwrap();
                preemption.reclaim_within_cohort = None;
                preemption.borrow_within_cohort = Some(BorrowWithinCohort {
                    policy: Some(BorrowWithinCohortPolicy::Never),
                    max_priority_threshold: None,
                });
            },
        ),
    ];
    for (case, mutate) in cases {
        assert_accepted(case, &cluster_queue_with(mutate));
    }
}

#[test]
fn rejects_metadata_that_kueue_or_the_api_server_would_refuse() {
    let mut unnamed = maximal_cluster_queue();
    unnamed.metadata.name = None;
    assert_rejected(
        "no name",
        &unnamed,
        "ClusterQueue `` metadata.name: is missing",
    );
    let mut upper = maximal_cluster_queue();
    upper.metadata.name = Some("Acme".to_string());
    assert_rejected(
        "a name that is not a DNS subdomain",
        &upper,
        "ClusterQueue `Acme` metadata.name: may contain only lowercase letters",
    );
    let mut namespaced = maximal_cluster_queue();
    namespaced.metadata.namespace = Some("default".to_string());
    assert_rejected(
        "a namespace on a cluster-scoped object",
        &namespaced,
        "metadata.namespace: is `default`, but a ClusterQueue has no namespace",
    );
}

#[test]
fn rejects_cohorts_that_break_a_webhook_rule() {
    let cases: [(&str, Mutation<CohortSpec>, &str); 5] = [
        (
            "a borrowing limit without a parent",
            |spec| {
                spec.parent_name = None;
                drop_limits(&mut spec.resource_groups, false, true);
            },
            ".borrowingLimit: is set, but spec.parentName is not",
        ),
        (
            "a lending limit without a parent",
            |spec| {
                spec.parent_name = None;
                drop_limits(&mut spec.resource_groups, true, false);
            },
            ".lendingLimit: is set, but spec.parentName is not",
        ),
        (
            "a parent name that is not a DNS subdomain",
            |spec| spec.parent_name = Some("us_east".to_string()),
            "spec.parentName: `us_east`",
        ),
        (
            "a negative fair-sharing weight",
            |spec| spec.fair_sharing = Some(FairSharing { weight: q("-2") }),
            "spec.fairSharing.weight: `-2` must be 0 or above 1e-9",
        ),
        (
            "a flavor in two groups",
            |spec| spec.resource_groups[1].flavors[0].name = "us-east-1a.h100-spot".to_string(),
            "is already listed in resourceGroups[0]",
        ),
    ];
    for (case, mutate, expected) in cases {
        let mut cohort = maximal_cohort();
        mutate(&mut cohort.spec);
        assert_rejected(case, &cohort, expected);
    }
    // Unlike a ClusterQueue's, a Cohort's lending limit may exceed its nominal quota.
    let mut lends_more = maximal_cohort();
    lends_more.spec.resource_groups[0].flavors[0].resources[2].lending_limit = Some(q("9"));
    assert_accepted("a cohort lending more than its nominal quota", &lends_more);
    let mut root = maximal_cohort();
    root.spec.parent_name = None;
    drop_limits(&mut root.spec.resource_groups, true, true);
    assert_accepted("a root cohort without limits", &root);
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        effect: effect.to_string(),
        key: key.to_string(),
        time_added: None,
        value: None,
    }
}

fn toleration(key: Option<&str>, operator: Option<&str>, value: Option<&str>) -> Toleration {
    Toleration {
        effect: None,
        key: key.map(str::to_string),
        operator: operator.map(str::to_string),
        toleration_seconds: None,
        value: value.map(str::to_string),
    }
}

#[test]
fn rejects_resource_flavors_that_break_a_webhook_rule() {
    let cases: [(&str, Mutation<ResourceFlavorSpec>, &str); 13] = [
        (
            "9 node labels",
            |spec| {
                spec.node_labels = (0..9)
                    .map(|idx| (format!("example.com/l{idx}"), "x".to_string()))
                    .collect()
            },
            "spec.nodeLabels: has 9 labels, Kueue allows at most 8",
        ),
        (
            "9 node taints",
            |spec| {
                spec.node_taints = (0..9)
                    .map(|idx| taint(&format!("example.com/t{idx}"), "NoSchedule"))
                    .collect()
            },
            "spec.nodeTaints: has 9 taints, Kueue allows at most 8",
        ),
        (
            "9 tolerations",
            |spec| {
                spec.tolerations = (0..9)
                    .map(|idx| {
                        toleration(Some(&format!("example.com/t{idx}")), Some("Exists"), None)
                    })
                    .collect()
            },
            "spec.tolerations: has 9 tolerations, Kueue allows at most 8",
        ),
        (
            "two taints with the same key and effect",
            |spec| {
                spec.node_taints
                    .push(taint("tenantc.io/pool", "NoSchedule"))
            },
            "spec.nodeTaints[1]: repeats the key `tenantc.io/pool` and effect `NoSchedule` of nodeTaints[0]",
        ),
        (
            "a topology name without node labels",
            |spec| spec.node_labels.clear(),
            "spec.topologyName: is set, but a flavor with a topology needs at least one node label",
        ),
        (
            "a topology name that is not a DNS subdomain",
            |spec| spec.topology_name = Some("H100".to_string()),
            "spec.topologyName: `H100`",
        ),
        (
            "a node label key that is not a qualified name",
            |spec| {
                spec.node_labels
                    .insert("example.com/a b".to_string(), "x".to_string());
            },
            "spec.nodeLabels: key `example.com/a b`",
        ),
        (
            "a node label value that is not a label value",
            |spec| {
                spec.node_labels
                    .insert("example.com/a".to_string(), "x/y".to_string());
            },
            "spec.nodeLabels: value `x/y` of `example.com/a`",
        ),
        (
            "a taint effect that does not exist",
            |spec| spec.node_taints[0].effect = "NoAdmit".to_string(),
            "spec.nodeTaints[0].effect: `NoAdmit` is not one of",
        ),
        (
            "a toleration with operator Exists and a value",
            |spec| spec.tolerations[1].value = Some("yes".to_string()),
            "spec.tolerations[1].value: is `yes`, but operator `Exists` takes no value",
        ),
        (
            "a toleration without a key that is not Exists",
            |spec| spec.tolerations[0].key = None,
            "spec.tolerations[0].operator: must be `Exists` when the key is empty",
        ),
        (
            "toleration seconds without NoExecute",
            |spec| spec.tolerations[1].effect = Some("NoSchedule".to_string()),
            "spec.tolerations[1].tolerationSeconds: is set, but the effect is not `NoExecute`",
        ),
        (
            "a toleration operator that does not exist",
            |spec| spec.tolerations[0].operator = Some("Gt".to_string()),
            "spec.tolerations[0].operator: `Gt` is not one of `Equal` and `Exists`",
        ),
    ];
    for (case, mutate, expected) in cases {
        let mut flavor = maximal_resource_flavor();
        mutate(&mut flavor.spec);
        assert_rejected(case, &flavor, expected);
    }
    let mut other_effect = maximal_resource_flavor();
    other_effect
        .spec
        .node_taints
        .push(taint("tenantc.io/pool", "NoExecute"));
    assert_accepted("the same taint key with another effect", &other_effect);
    let mut eight = maximal_resource_flavor();
    eight.spec.node_labels = (0..8)
        .map(|idx| (format!("example.com/l{idx}"), "x".to_string()))
        .collect();
    assert_accepted("8 node labels", &eight);
    assert_accepted(
        "an empty flavor",
        &ResourceFlavor::new("default", ResourceFlavorSpec::default()),
    );
}

fn topology_of(levels: &[&str]) -> Topology {
    Topology::new(
        "pool",
        TopologySpec {
            levels: levels
                .iter()
                .map(|label| TopologyLevel {
                    node_label: label.to_string(),
                })
                .collect(),
        },
    )
}

#[test]
fn rejects_topologies_that_break_a_webhook_rule() {
    let sixteen: Vec<String> = (0..16).map(|idx| format!("example.com/l{idx}")).collect();
    let mut seventeen: Vec<&str> = sixteen.iter().map(String::as_str).collect();
    assert_accepted("16 levels", &topology_of(&seventeen));
    seventeen.push(HOSTNAME_LABEL);
    assert_rejected(
        "17 levels",
        &topology_of(&seventeen),
        "spec.levels: has 17 levels, a topology needs 1 to 16",
    );
    assert_rejected(
        "no levels",
        &topology_of(&[]),
        "spec.levels: has 0 levels, a topology needs 1 to 16",
    );
    assert_rejected(
        "a level twice",
        &topology_of(&["example.com/rack", "example.com/rack"]),
        "spec.levels[1].nodeLabel: `example.com/rack` is already levels[0]",
    );
    assert_rejected(
        "hostname above another level",
        &topology_of(&[HOSTNAME_LABEL, "example.com/gpu"]),
        "spec.levels[0].nodeLabel: `kubernetes.io/hostname` may only be the last (finest) level",
    );
    assert_rejected(
        "a level that is not a qualified name",
        &topology_of(&["example.com/nvlink domain"]),
        "spec.levels[0].nodeLabel: `example.com/nvlink domain`",
    );
}

#[test]
fn rejects_queue_and_priority_names_that_do_not_fit_a_label_value() {
    // A DNS subdomain of 64 characters (each part is at most 63).
    let long = format!("{}.{}", "a".repeat(31), "b".repeat(32));
    let mut queue = maximal_local_queue();
    queue.metadata.name = Some(long.clone());
    assert_rejected(
        "a 64-character LocalQueue name",
        &queue,
        "metadata.name: is 64 characters long, but jobs quote it in a label, whose values are at most 63",
    );
    let mut queue = maximal_local_queue();
    queue.metadata.name = Some(long[1..].to_string());
    assert_accepted("a 63-character LocalQueue name", &queue);
    let class = WorkloadPriorityClass::new(long.clone(), 1, None);
    assert_rejected(
        "a 64-character WorkloadPriorityClass name",
        &class,
        "metadata.name: is 64 characters long, but jobs quote it in a label",
    );
    // Other kinds take any DNS subdomain, up to 253 characters.
    assert_accepted(
        "a 64-character Cohort name",
        &Cohort::new(long, CohortSpec::default()),
    );
}

#[test]
fn rejects_local_queues_and_priority_classes_that_break_a_webhook_rule() {
    let mut no_namespace = maximal_local_queue();
    no_namespace.metadata.namespace = None;
    assert_rejected(
        "a LocalQueue without a namespace",
        &no_namespace,
        "LocalQueue `default` metadata.namespace: is missing",
    );
    let mut bad_namespace = maximal_local_queue();
    bad_namespace.metadata.namespace = Some("acme.research".to_string());
    assert_rejected(
        "a LocalQueue namespace that is not a DNS label",
        &bad_namespace,
        "metadata.namespace: `acme.research`",
    );
    let mut bad_queue = maximal_local_queue();
    bad_queue.spec.cluster_queue = "Acme".to_string();
    assert_rejected(
        "a cluster queue reference that is not a DNS subdomain",
        &bad_queue,
        "spec.clusterQueue: `Acme`",
    );
    let long = WorkloadPriorityClass::new("batch", 1, Some("é".repeat(2049)));
    assert_rejected(
        "a description of 2049 characters",
        &long,
        "description: is 2049 characters long, the limit is 2048",
    );
    assert_accepted(
        "a description of 2048 characters",
        &WorkloadPriorityClass::new("batch", 1, Some("é".repeat(2048))),
    );
}

/// One of `items`, which must not be empty.
fn any<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[rng.below(items.len())]
}

/// Valid resource groups of a random shape: up to 16 small groups, or up to 3 groups at the
/// limits of resources, flavors and pairs per group. Limits only when `limits` is true.
fn random_groups(rng: &mut Rng, limits: bool) -> Vec<ResourceGroup> {
    let shapes: Vec<(usize, usize)> = if rng.below(4) == 0 {
        (0..MAX_RESOURCE_GROUPS)
            .map(|_| (1 + rng.below(3), 1 + rng.below(3)))
            .collect()
    } else {
        (0..rng.below(4))
            .map(|_| match rng.below(6) {
                0 => (
                    MAX_RESOURCES_PER_GROUP,
                    MAX_PAIRS_PER_GROUP / MAX_RESOURCES_PER_GROUP,
                ),
                1 => (1, MAX_FLAVORS_PER_GROUP),
                2 => (MAX_RESOURCES_PER_GROUP, 1),
                _ => (1 + rng.below(3), 1 + rng.below(3)),
            })
            .collect()
    };
    shapes
        .into_iter()
        .enumerate()
        .map(|(group_idx, (resources, flavors))| {
            let mut group = group(&format!("g{group_idx}"), resources, flavors);
            for quota in group
                .flavors
                .iter_mut()
                .flat_map(|flavor| &mut flavor.resources)
            {
                let nominal = any(rng, &[0, 1, 4, 8, 16]);
                quota.nominal_quota = q(&nominal.to_string());
                if limits && rng.below(2) == 0 {
                    quota.borrowing_limit = Some(q(any(rng, &["0", "4", "512Gi", "500m"])));
                }
                if limits && rng.below(2) == 0 {
                    quota.lending_limit = Some(q(&rng.below(nominal + 1).to_string()));
                }
            }
            group
        })
        .collect()
}

/// A DNS subdomain one character longer than the API allows.
fn too_long_name() -> String {
    format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(62)
    )
}

/// Breaks one rule of valid resource groups; returns what the violation must say.
fn break_groups(rng: &mut Rng, groups: &mut Vec<ResourceGroup>) -> &'static str {
    if groups.len() < 2 {
        groups.push(group("extra-a", 1, 1));
        groups.push(group("extra-b", 2, 1));
    }
    let idx = rng.below(groups.len());
    let target = &mut groups[idx];
    match rng.below(12) {
        0 => {
            let count = groups.len();
            groups.extend((count..=MAX_RESOURCE_GROUPS).map(|idx| group(&format!("x{idx}"), 1, 1)));
            "groups, Kueue allows at most 16"
        }
        1 => {
            target.covered_resources.clear();
            for flavor in &mut target.flavors {
                flavor.resources.clear();
            }
            "has 0 resources, a group needs 1 to 64"
        }
        2 => {
            target.flavors.clear();
            "has 0 flavors, a group needs 1 to 64"
        }
        3 => {
            *target = group("wide", MAX_RESOURCES_PER_GROUP + 1, 1);
            "has 65 resources, a group needs 1 to 64"
        }
        4 => {
            *target = group("long", 1, MAX_FLAVORS_PER_GROUP + 1);
            "has 65 flavors, a group needs 1 to 64"
        }
        5 => {
            let copy = target.flavors[0].clone();
            target.flavors.push(copy);
            "is already listed in resourceGroups"
        }
        6 => {
            let resource = target.covered_resources[0].clone();
            target.covered_resources.push(resource);
            for flavor in &mut target.flavors {
                let copy = flavor.resources[0].clone();
                flavor.resources.push(copy);
            }
            "is already covered by resourceGroups"
        }
        7 => {
            let resource = groups[0].covered_resources[0].clone();
            groups[1].covered_resources[0] = resource.clone();
            for flavor in &mut groups[1].flavors {
                flavor.resources[0].name = resource.clone();
            }
            "is already covered by resourceGroups[0]"
        }
        8 => {
            groups[1].flavors[0].name = groups[0].flavors[0].name.clone();
            "is already listed in resourceGroups[0]"
        }
        9 => {
            if target.covered_resources.len() < 2 {
                *target = group("pair", 2, 1);
            }
            target.flavors[0].resources.swap(0, 1);
            "a flavor lists the covered resources in the same order"
        }
        10 => {
            target.flavors[0].resources.pop();
            "resources, but the group covers"
        }
        _ => {
            let quota = &mut target.flavors[0].resources[0];
            quota.nominal_quota = q("-4");
            quota.lending_limit = None;
            "nominalQuota: `-4` is negative"
        }
    }
}

fn random_cluster_queue(rng: &mut Rng) -> ClusterQueue {
    let cohort = rng.below(4) != 0;
    let reclaim = (rng.below(2) == 0).then(|| any(rng, ReclaimWithinCohortPolicy::ALL));
    let borrow_policies = match reclaim {
        Some(ReclaimWithinCohortPolicy::LowerPriority | ReclaimWithinCohortPolicy::Any) => {
            BorrowWithinCohortPolicy::ALL
        }
        _ => &[BorrowWithinCohortPolicy::Never],
    };
    let when_can_borrow = (rng.below(2) == 0).then(|| any(rng, FlavorFungibilityPolicy::ALL));
    let when_can_preempt = (rng.below(2) == 0).then(|| any(rng, FlavorFungibilityPolicy::ALL));
    let both_try_next = when_can_borrow == Some(FlavorFungibilityPolicy::TryNextFlavor)
        && when_can_preempt != Some(FlavorFungibilityPolicy::MayStopSearch);
    ClusterQueue::new(
        "generated",
        ClusterQueueSpec {
            resource_groups: random_groups(rng, cohort),
            cohort_name: cohort.then(|| "cohort".to_string()),
            queueing_strategy: (rng.below(2) == 0).then(|| any(rng, QueueingStrategy::ALL)),
            namespace_selector: LabelSelector {
                match_expressions: (rng.below(2) == 0).then(|| {
                    let operator = any(rng, &["In", "NotIn", "Exists", "DoesNotExist"]);
                    vec![LabelSelectorRequirement {
                        key: "kubernetes.io/metadata.name".to_string(),
                        operator: operator.to_string(),
                        values: operator
                            .starts_with(['I', 'N'])
                            .then(|| strings(&["a-train", "a-serve"])),
                    }]
                }),
                match_labels: (rng.below(2) == 0).then(|| labels(&[("tenantc.io/tenant", "a")])),
            },
            flavor_fungibility: (rng.below(2) == 0).then(|| FlavorFungibility {
                when_can_borrow,
                when_can_preempt,
                preference: (both_try_next && rng.below(2) == 0)
                    .then(|| any(rng, FlavorFungibilityPreference::ALL)),
            }),
            preemption: (rng.below(2) == 0).then(|| ClusterQueuePreemption {
                reclaim_within_cohort: reclaim,
                borrow_within_cohort: (rng.below(2) == 0).then(|| BorrowWithinCohort {
                    policy: Some(any(rng, borrow_policies)),
                    max_priority_threshold: (rng.below(2) == 0).then_some(1000),
                }),
                within_cluster_queue: (rng.below(2) == 0)
                    .then(|| any(rng, WithinClusterQueuePolicy::ALL)),
            }),
            stop_policy: (rng.below(2) == 0).then(|| any(rng, StopPolicy::ALL)),
            fair_sharing: (rng.below(2) == 0).then(|| FairSharing {
                weight: q(any(rng, &["0", "1", "1500m", "2"])),
            }),
        },
    )
}

/// Breaks one rule of a valid ClusterQueue; returns what the violation must say.
fn break_cluster_queue(rng: &mut Rng, cq: &mut ClusterQueue) -> &'static str {
    let spec = &mut cq.spec;
    match rng.below(10) {
        0 => {
            spec.cohort_name = Some(too_long_name());
            "is 254 characters long, the limit is 253"
        }
        1 => {
            spec.cohort_name = None;
            spec.resource_groups.push(group("limited", 1, 1));
            spec.resource_groups.last_mut().unwrap().flavors[0].resources[0].borrowing_limit =
                Some(q("1"));
            "borrowingLimit: is set, but spec.cohortName is not"
        }
        2 => {
            spec.cohort_name = Some("cohort".to_string());
            spec.resource_groups.push(group("lender", 1, 1));
            spec.resource_groups.last_mut().unwrap().flavors[0].resources[0].lending_limit =
                Some(q("1001m"));
            "lendingLimit: `1001m` is above the nominalQuota `1`"
        }
        3 => {
            let preemption = spec.preemption.get_or_insert_with(Default::default);
            preemption.reclaim_within_cohort =
                any(rng, &[None, Some(ReclaimWithinCohortPolicy::Never)]);
            preemption
                .borrow_within_cohort
                .get_or_insert_with(Default::default)
                .policy = Some(BorrowWithinCohortPolicy::LowerPriority);
            "needs reclaimWithinCohort other than `Never`"
        }
        4 => {
            let fungibility = spec.flavor_fungibility.get_or_insert_with(Default::default);
            fungibility.preference = Some(any(rng, FlavorFungibilityPreference::ALL));
            fungibility.when_can_preempt = Some(FlavorFungibilityPolicy::MayStopSearch);
            "needs whenCanBorrow and whenCanPreempt `TryNextFlavor`"
        }
        5 => {
            spec.fair_sharing = Some(FairSharing { weight: q("-1m") });
            "spec.fairSharing.weight: `-1m` must be 0 or above 1e-9"
        }
        6 => {
            spec.namespace_selector.match_expressions = Some(vec![LabelSelectorRequirement {
                key: "kubernetes.io/metadata.name".to_string(),
                operator: "Exists".to_string(),
                values: Some(strings(&["a"])),
            }]);
            "must be empty with operator `Exists`"
        }
        _ => break_groups(rng, &mut spec.resource_groups),
    }
}

fn random_cohort(rng: &mut Rng) -> Cohort {
    let parent = rng.below(4) != 0;
    Cohort::new(
        "generated",
        CohortSpec {
            parent_name: parent.then(|| "parent".to_string()),
            resource_groups: random_groups(rng, parent),
            fair_sharing: (rng.below(2) == 0).then(|| FairSharing {
                weight: q(any(rng, &["0", "1", "250m"])),
            }),
        },
    )
}

/// Breaks one rule of a valid Cohort; returns what the violation must say.
fn break_cohort(rng: &mut Rng, cohort: &mut Cohort) -> &'static str {
    let spec = &mut cohort.spec;
    match rng.below(5) {
        0 => {
            spec.parent_name = Some(too_long_name());
            "is 254 characters long, the limit is 253"
        }
        1 => {
            spec.parent_name = None;
            spec.resource_groups.push(group("limited", 1, 1));
            spec.resource_groups.last_mut().unwrap().flavors[0].resources[0].lending_limit =
                Some(q("1"));
            "lendingLimit: is set, but spec.parentName is not"
        }
        _ => break_groups(rng, &mut spec.resource_groups),
    }
}

const TAINT_KEYS: [&str; 3] = ["example.com/a", "example.com/b", "nvidia.com/gpu"];

fn random_resource_flavor(rng: &mut Rng) -> ResourceFlavor {
    let topology = rng.below(2) == 0;
    let label_count = if topology { 1 } else { 0 } + rng.below(MAX_FLAVOR_NODE_ITEMS);
    let mut taints = Vec::new();
    for _ in 0..rng.below(MAX_FLAVOR_NODE_ITEMS + 1) {
        let candidate = taint(any(rng, &TAINT_KEYS), any(rng, &TAINT_EFFECTS));
        if !taints
            .iter()
            .any(|taken: &Taint| taken.key == candidate.key && taken.effect == candidate.effect)
        {
            taints.push(candidate);
        }
    }
    ResourceFlavor::new(
        "generated",
        ResourceFlavorSpec {
            node_labels: (0..label_count)
                .map(|idx| (format!("example.com/l{idx}"), "x".to_string()))
                .collect(),
            node_taints: taints,
            tolerations: (0..rng.below(MAX_FLAVOR_NODE_ITEMS + 1))
                .map(|_| match rng.below(3) {
                    0 => toleration(None, Some("Exists"), None),
                    1 => Toleration {
                        effect: Some("NoExecute".to_string()),
                        toleration_seconds: Some(30),
                        ..toleration(Some(any(rng, &TAINT_KEYS)), Some("Exists"), None)
                    },
                    _ => Toleration {
                        effect: (rng.below(2) == 0).then(|| any(rng, &TAINT_EFFECTS).to_string()),
                        ..toleration(
                            Some(any(rng, &TAINT_KEYS)),
                            any(rng, &[None, Some("Equal")]),
                            Some("v"),
                        )
                    },
                })
                .collect(),
            topology_name: topology.then(|| "topology".to_string()),
        },
    )
}

/// Breaks one rule of a valid ResourceFlavor; returns what the violation must say.
fn break_resource_flavor(rng: &mut Rng, flavor: &mut ResourceFlavor) -> &'static str {
    let spec = &mut flavor.spec;
    let plain = toleration(Some("example.com/a"), Some("Equal"), Some("v"));
    match rng.below(11) {
        0 => {
            spec.node_labels = (0..=MAX_FLAVOR_NODE_ITEMS)
                .map(|idx| (format!("example.com/l{idx}"), "x".to_string()))
                .collect();
            "spec.nodeLabels: has 9 labels, Kueue allows at most 8"
        }
        1 => {
            spec.node_taints = (0..=MAX_FLAVOR_NODE_ITEMS)
                .map(|idx| taint(&format!("example.com/t{idx}"), "NoSchedule"))
                .collect();
            "spec.nodeTaints: has 9 taints, Kueue allows at most 8"
        }
        2 => {
            spec.tolerations = vec![plain; MAX_FLAVOR_NODE_ITEMS + 1];
            "spec.tolerations: has 9 tolerations, Kueue allows at most 8"
        }
        3 => {
            spec.node_taints.truncate(MAX_FLAVOR_NODE_ITEMS - 2);
            let twice = taint(any(rng, &TAINT_KEYS), any(rng, &TAINT_EFFECTS));
            spec.node_taints.push(twice.clone());
            spec.node_taints.push(twice);
            "taints are unique by key and effect"
        }
        4 => {
            spec.node_labels.clear();
            spec.topology_name = Some("topology".to_string());
            "needs at least one node label"
        }
        5 => {
            spec.node_taints.truncate(MAX_FLAVOR_NODE_ITEMS - 1);
            spec.node_taints.push(taint("example.com/z", "NoAdmit"));
            "`NoAdmit` is not one of"
        }
        6 => {
            spec.tolerations.truncate(MAX_FLAVOR_NODE_ITEMS - 1);
            spec.tolerations
                .push(toleration(Some("example.com/a"), Some("Exists"), Some("v")));
            "but operator `Exists` takes no value"
        }
        7 => {
            spec.tolerations.truncate(MAX_FLAVOR_NODE_ITEMS - 1);
            spec.tolerations.push(toleration(
                any(rng, &[None, Some("")]),
                any(rng, &[None, Some("Equal")]),
                None,
            ));
            "must be `Exists` when the key is empty"
        }
        8 => {
            spec.tolerations.truncate(MAX_FLAVOR_NODE_ITEMS - 1);
            spec.tolerations.push(Toleration {
                toleration_seconds: Some(10),
                ..plain
            });
            "is set, but the effect is not `NoExecute`"
        }
        9 => {
            spec.tolerations.truncate(MAX_FLAVOR_NODE_ITEMS - 1);
            spec.tolerations.push(Toleration {
                operator: Some("Lt".to_string()),
                ..plain
            });
            "`Lt` is not one of `Equal` and `Exists`"
        }
        _ => {
            spec.topology_name = Some(too_long_name());
            spec.node_labels
                .insert("example.com/l".to_string(), "x".to_string());
            spec.node_labels = spec
                .node_labels
                .clone()
                .into_iter()
                .take(MAX_FLAVOR_NODE_ITEMS)
                .collect();
            "is 254 characters long, the limit is 253"
        }
    }
}

fn random_topology(rng: &mut Rng) -> Topology {
    let mut levels: Vec<String> = (0..1 + rng.below(MAX_TOPOLOGY_LEVELS))
        .map(|idx| format!("example.com/l{idx}"))
        .collect();
    if rng.below(2) == 0
        && let Some(last) = levels.last_mut()
    {
        *last = HOSTNAME_LABEL.to_string();
    }
    topology_of(&levels.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Breaks one rule of a valid Topology; returns what the violation must say.
fn break_topology(rng: &mut Rng, topology: &mut Topology) -> &'static str {
    let levels = &mut topology.spec.levels;
    let level = |label: &str| TopologyLevel {
        node_label: label.to_string(),
    };
    match rng.below(5) {
        0 => {
            levels.clear();
            "has 0 levels, a topology needs 1 to 16"
        }
        1 => {
            let count = levels.len();
            levels.extend(
                (count..=MAX_TOPOLOGY_LEVELS).map(|idx| level(&format!("example.com/x{idx}"))),
            );
            "has 17 levels, a topology needs 1 to 16"
        }
        2 => {
            let copy = levels[rng.below(levels.len())].clone();
            levels.insert(0, copy);
            "levels are unique"
        }
        3 => {
            levels.insert(0, level(HOSTNAME_LABEL));
            "may only be the last (finest) level"
        }
        _ => {
            let idx = rng.below(levels.len());
            levels[idx] = level("example.com/-rack");
            "`example.com/-rack` must start and end with a letter or digit"
        }
    }
}

/// Checks that the webhook rules and the CRD schema accept a valid generated object, and that
/// the rules refuse it, naming the broken rule, once one fault is put in.
fn check_generated<T: KueueObject + Clone>(
    seed: u64,
    rng: &mut Rng,
    schema: &Value,
    object: T,
    break_rule: fn(&mut Rng, &mut T) -> &'static str,
) {
    let value = serde_json::to_value(&object).unwrap();
    assert_eq!(
        webhook_violations(&object),
        Vec::<String>::new(),
        "seed {seed}: a valid {} is refused: {value}",
        T::KIND
    );
    // The rules' limits are within the schema's, so what they accept the API server accepts.
    assert_eq!(
        crd_schema::violations(schema, &value),
        Vec::<String>::new(),
        "seed {seed}: the CRD schema refuses a {} the webhook rules accept: {value}",
        T::KIND
    );
    let mut broken = object;
    let expected = break_rule(rng, &mut broken);
    let found = webhook_violations(&broken);
    assert!(
        found.iter().any(|violation| violation.contains(expected)),
        "seed {seed}: a {} with the fault `{expected}` is not refused for it: {found:#?}",
        T::KIND
    );
}

#[test]
fn valid_generated_objects_pass_and_each_injected_fault_is_named() {
    let cluster_queues = schema("ClusterQueue");
    let cohorts = schema("Cohort");
    let flavors = schema("ResourceFlavor");
    let topologies = schema("Topology");
    for seed in 1..=300_u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let cq = random_cluster_queue(&mut rng);
        check_generated(seed, &mut rng, &cluster_queues, cq, break_cluster_queue);
        let cohort = random_cohort(&mut rng);
        check_generated(seed, &mut rng, &cohorts, cohort, break_cohort);
        let flavor = random_resource_flavor(&mut rng);
        check_generated(seed, &mut rng, &flavors, flavor, break_resource_flavor);
        let topology = random_topology(&mut rng);
        check_generated(seed, &mut rng, &topologies, topology, break_topology);
    }
}
