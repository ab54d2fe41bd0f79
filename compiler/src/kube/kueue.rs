//! Kueue objects (`kueue.x-k8s.io/v1beta2`), typed, for the subset tenantc emits.
//!
//! Consumes: the values `lower` decides on (names, flavors, quotas, policies).
//! Produces: [`ResourceFlavor`], [`Topology`], [`Cohort`], [`ClusterQueue`], [`LocalQueue`] and
//! [`WorkloadPriorityClass`] values that serialize through serde to the objects Kueue expects,
//! and [`webhook_violations`], the rules of Kueue's admission webhooks, which neither the CRD
//! schema nor the API server of the conformance tests checks.
//!
//! Version: the structs follow Kueue v0.19.2 (the CRDs vendored in `schema/crds/kueue/`) at API
//! version v1beta2, which Kueue serves and stores since 0.16; v1beta1 is deprecated.
//! Only the fields tenantc sets are modelled, and never `status`.
//! Fields are in the order of the Go types in `apis/kueue/v1beta2/*_types.go`, which is the
//! order in which the API server returns them.
//!
//! Re-checking against a newer Kueue: copy the release's
//! `config/components/crd/bases/kueue.x-k8s.io_*.yaml` over `schema/crds/kueue/` and run
//! `cargo test --locked --lib kube`.
//! The tests build a maximal instance of every kind (every optional field set, every list
//! non-empty), serialize it and walk it against the `v1beta2` schema of its CRD: they name every
//! key the new schema lacks, every required key left out, every enum whose values changed and
//! any schema construct the walker does not understand.
//! Then compare the webhook rules here with `pkg/webhooks/` of the release (the tests of each rule
//! say what it refuses).
//!
//! Invariants: `apiVersion` and `kind` are set only by the constructors, so they cannot be
//! misspelt; every enum-valued field is a Rust enum that serializes as the API spells it; the
//! webhook checks never panic, whatever the values, and report every violation, not the first.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Serialize;

use crate::names;

#[cfg(test)]
mod tests;

/// The API version of every object here.
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// The node label that may only be the last (finest) level of a [`Topology`].
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// At most this many resource groups per ClusterQueue or Cohort.
pub const MAX_RESOURCE_GROUPS: usize = 16;
/// At most this many covered resources in one resource group (and at least one).
pub const MAX_RESOURCES_PER_GROUP: usize = 64;
/// At most this many flavors in one resource group (and at least one).
pub const MAX_FLAVORS_PER_GROUP: usize = 64;
/// At most this many covered resources over all resource groups of one object.
pub const MAX_RESOURCES: usize = 256;
/// At most this many flavors over all resource groups of one object.
pub const MAX_FLAVORS: usize = 256;
/// At most this many (flavor, resource) pairs in one resource group.
pub const MAX_PAIRS_PER_GROUP: usize = 512;
/// At most this many node labels, node taints and tolerations (each) on a ResourceFlavor.
pub const MAX_FLAVOR_NODE_ITEMS: usize = 8;
/// At most this many levels in a Topology (and at least one).
pub const MAX_TOPOLOGY_LEVELS: usize = 16;
/// The CRD's length limit of a topology level's node label.
pub const MAX_TOPOLOGY_LABEL_CHARS: usize = 316;
/// Names that jobs quote as label values (LocalQueue and WorkloadPriorityClass names) are at
/// most this long, although the API would take 253 characters.
pub const MAX_LABEL_VALUE_NAME_CHARS: usize = 63;
/// The CRD's length limit of a WorkloadPriorityClass description.
pub const MAX_DESCRIPTION_CHARS: usize = 2048;

/// The taint effects the ResourceFlavor CRD accepts.
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// A quantity in the wire form of the API from an exact quantity of the compiler, printed in
/// the canonical form the API server stores.
pub fn quantity(value: crate::quantity::Quantity) -> Quantity {
    Quantity(value.to_string())
}

/// Defines an enum of the strings an API field accepts: each variant serializes as the API
/// spells it, `as_str` gives that spelling and `ALL` lists the variants.
macro_rules! api_enum {
    (
        $(#[$doc:meta])*
        $name:ident {
            $($(#[$variant_doc:meta])* $variant:ident => $text:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum $name {
            $(
                $(#[$variant_doc])*
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in the order the CRD's `enum` lists them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The value as the API spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

api_enum! {
    /// How a ClusterQueue orders its pending workloads (`spec.queueingStrategy`).
    QueueingStrategy {
        /// The oldest workload that does not fit blocks all newer ones.
        StrictFifo => "StrictFIFO",
        /// Newer workloads that fit are admitted past older ones that do not (the default).
        BestEffortFifo => "BestEffortFIFO",
    }
}

api_enum! {
    /// Whether a ClusterQueue admits workloads (`spec.stopPolicy`).
    StopPolicy {
        /// Workloads are admitted (the default).
        None => "None",
        /// No new admissions; admitted workloads run to completion.
        Hold => "Hold",
        /// No new admissions, and admitted workloads are evicted.
        HoldAndDrain => "HoldAndDrain",
    }
}

api_enum! {
    /// Which workloads of its own ClusterQueue a pending workload may preempt
    /// (`spec.preemption.withinClusterQueue`).
    WithinClusterQueuePolicy {
        /// None (the default).
        Never => "Never",
        /// Those of lower priority.
        LowerPriority => "LowerPriority",
        /// Those of lower priority, or of equal priority and newer.
        LowerOrNewerEqualPriority => "LowerOrNewerEqualPriority",
    }
}

api_enum! {
    /// Which workloads that borrow this ClusterQueue's nominal quota a pending workload may
    /// preempt to reclaim it (`spec.preemption.reclaimWithinCohort`).
    ReclaimWithinCohortPolicy {
        /// None (the default).
        Never => "Never",
        /// Those of lower priority.
        LowerPriority => "LowerPriority",
        /// Any of them.
        Any => "Any",
    }
}

api_enum! {
    /// Whether a workload that borrows may preempt in other ClusterQueues of the cohort
    /// (`spec.preemption.borrowWithinCohort.policy`).
    BorrowWithinCohortPolicy {
        /// No (the default).
        Never => "Never",
        /// Workloads of lower priority.
        LowerPriority => "LowerPriority",
    }
}

api_enum! {
    /// Whether flavor assignment stops at a flavor that needs borrowing or preemption
    /// (`spec.flavorFungibility.whenCanBorrow` and `whenCanPreempt`).
    FlavorFungibilityPolicy {
        /// Stop at this flavor (the default of `whenCanBorrow`).
        MayStopSearch => "MayStopSearch",
        /// Try the next flavor first (the default of `whenCanPreempt`).
        TryNextFlavor => "TryNextFlavor",
    }
}

api_enum! {
    /// Which of borrowing and preemption flavor assignment prefers when every flavor needs one
    /// (`spec.flavorFungibility.preference`).
    FlavorFungibilityPreference {
        /// Borrowing (the default behaviour).
        BorrowingOverPreemption => "BorrowingOverPreemption",
        /// Preemption.
        PreemptionOverBorrowing => "PreemptionOverBorrowing",
    }
}

/// What every Kueue kind here has in common.
pub trait KueueObject: Serialize {
    /// The kind, as the CRD names it.
    const KIND: &'static str;
    /// Whether objects of the kind live in a namespace (only LocalQueue does).
    const NAMESPACED: bool;

    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// Every rule of Kueue's admission webhooks that the object breaks, as one message each;
    /// see [`webhook_violations`].
    fn webhook_violations(&self) -> Vec<String>;
}

/// Every rule that Kueue's admission webhooks would refuse `object` for, one message each,
/// naming the kind, the object and the field; empty when Kueue accepts it.
///
/// The rules are those of Kueue v0.19.2 (`pkg/webhooks/`): limits of resource groups, flavors
/// and resources, flavors that list the covered resources in order, quantities and limits,
/// preemption and fungibility combinations, fair-sharing weights, ResourceFlavor node fields,
/// Topology levels and names; LocalQueue and WorkloadPriorityClass names are also held to 63
/// characters, since jobs quote them in labels. A few rules are also CEL rules or schema limits
/// of the CRDs, checked here too so that one call says whether Kueue takes the object.
pub fn webhook_violations<T: KueueObject>(object: &T) -> Vec<String> {
    object.webhook_violations()
}

fn object_meta(name: String, namespace: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace,
        ..ObjectMeta::default()
    }
}

/// A ResourceFlavor: the nodes one kind of capacity lives on (one per pool or node group).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavor {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace) and labels.
    pub metadata: ObjectMeta,
    /// The flavor.
    pub spec: ResourceFlavorSpec,
}

impl ResourceFlavor {
    /// A ResourceFlavor with the given name.
    pub fn new(name: impl Into<String>, spec: ResourceFlavorSpec) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), None),
            spec,
        }
    }
}

/// The spec of a [`ResourceFlavor`]; an empty spec is a valid flavor.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavorSpec {
    /// Labels of the flavor's nodes; Kueue injects them into the nodeSelector of admitted pods.
    /// At most 8.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// Taints of the flavor's nodes: a workload gets the flavor only if it tolerates them (or the
    /// flavor's own tolerations do). At most 8, unique by key and effect.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_taints: Vec<Taint>,
    /// Tolerations Kueue injects into admitted pods. At most 8.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// The [`Topology`] of the flavor's nodes, for topology-aware scheduling; needs at least one
    /// node label and cannot be changed once set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_name: Option<String>,
}

/// A Topology: the node labels of the levels of a pool's network, coarsest first.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace) and labels.
    pub metadata: ObjectMeta,
    /// The levels.
    pub spec: TopologySpec,
}

impl Topology {
    /// A Topology with the given name.
    pub fn new(name: impl Into<String>, spec: TopologySpec) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), None),
            spec,
        }
    }
}

/// The spec of a [`Topology`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpec {
    /// 1 to 16 unique levels, coarsest first; `kubernetes.io/hostname` may only be the last.
    /// Immutable in v0.19.2.
    pub levels: Vec<TopologyLevel>,
}

/// One level of a [`Topology`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevel {
    /// The node label whose values name the domains of this level.
    pub node_label: String,
}

/// A Cohort: a node of the borrowing tree that ClusterQueues and Cohorts join.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cohort {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace) and labels.
    pub metadata: ObjectMeta,
    /// The cohort.
    pub spec: CohortSpec,
}

impl Cohort {
    /// A Cohort with the given name.
    pub fn new(name: impl Into<String>, spec: CohortSpec) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), None),
            spec,
        }
    }
}

/// The spec of a [`Cohort`].
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CohortSpec {
    /// The parent cohort; unset for the root of a tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_name: Option<String>,
    /// Quota of the cohort itself, added on top of its members' quotas; borrowing and lending
    /// limits only when `parent_name` is set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_groups: Vec<ResourceGroup>,
    /// The cohort's weight when fair sharing splits its parent's unused quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

/// A ClusterQueue: a tenant's quota per flavor and resource, and its admission policies.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueue {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped; no namespace) and labels.
    pub metadata: ObjectMeta,
    /// The queue.
    pub spec: ClusterQueueSpec,
}

impl ClusterQueue {
    /// A ClusterQueue with the given name.
    pub fn new(name: impl Into<String>, spec: ClusterQueueSpec) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), None),
            spec,
        }
    }
}

/// The spec of a [`ClusterQueue`].
///
/// There is no `Default`: `namespace_selector` must be chosen, since its default (`{}`) would
/// let every namespace submit.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueSpec {
    /// At most 16 groups; each resource and each flavor in at most one of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_groups: Vec<ResourceGroup>,
    /// The cohort the queue borrows from and lends to; unset means neither.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort_name: Option<String>,
    /// How pending workloads are ordered; the API server fills in `BestEffortFIFO`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queueing_strategy: Option<QueueingStrategy>,
    /// The namespaces whose LocalQueues may submit to this queue. Required here, although the
    /// CRD makes it optional: left out, it means that no namespace may submit.
    pub namespace_selector: LabelSelector,
    /// Whether flavor assignment tries the next flavor before borrowing or preempting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor_fungibility: Option<FlavorFungibility>,
    /// Preemption policies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<ClusterQueuePreemption>,
    /// Whether the queue admits workloads; the API server fills in `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_policy: Option<StopPolicy>,
    /// The queue's weight under fair sharing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

/// A group of resources that the same flavors provide (`spec.resourceGroups[]`).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroup {
    /// 1 to 64 resource names, such as `cpu` and `nvidia.com/gpu`.
    pub covered_resources: Vec<String>,
    /// 1 to 64 flavors, tried first to last; each lists the covered resources in the same order.
    pub flavors: Vec<FlavorQuotas>,
}

/// The quotas of one flavor in a [`ResourceGroup`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuotas {
    /// The [`ResourceFlavor`]'s name.
    pub name: String,
    /// One quota per covered resource, in the order of `covered_resources`.
    pub resources: Vec<ResourceQuota>,
}

/// The quota of one (flavor, resource) pair.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    /// The resource, equal to the covered resource at the same position.
    pub name: String,
    /// What the queue (or cohort) may use at once without borrowing; at least 0.
    pub nominal_quota: Quantity,
    /// How much it may borrow on top; unset means without limit. Only within a cohort (on a
    /// Cohort: only with a parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<Quantity>,
    /// How much of the nominal quota it may lend; unset means all of it. Only within a cohort
    /// (on a Cohort: only with a parent); on a ClusterQueue at most `nominal_quota`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lending_limit: Option<Quantity>,
}

/// Preemption policies of a [`ClusterQueue`]; unset fields mean `Never`.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePreemption {
    /// Which borrowers of this queue's nominal quota a pending workload may preempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaim_within_cohort: Option<ReclaimWithinCohortPolicy>,
    /// Whether a borrowing workload may preempt in the cohort; a policy other than `Never` needs
    /// `reclaim_within_cohort` other than `Never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrow_within_cohort: Option<BorrowWithinCohort>,
    /// Which workloads of this queue a pending workload may preempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_cluster_queue: Option<WithinClusterQueuePolicy>,
}

/// Preemption while borrowing (`spec.preemption.borrowWithinCohort`).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BorrowWithinCohort {
    /// The policy; unset means `Never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<BorrowWithinCohortPolicy>,
    /// Only workloads of at most this priority may be preempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_priority_threshold: Option<i32>,
}

/// Flavor fungibility of a [`ClusterQueue`] (`spec.flavorFungibility`).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FlavorFungibility {
    /// Unset means `MayStopSearch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when_can_borrow: Option<FlavorFungibilityPolicy>,
    /// Unset means `TryNextFlavor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when_can_preempt: Option<FlavorFungibilityPolicy>,
    /// Only when both policies are `TryNextFlavor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preference: Option<FlavorFungibilityPreference>,
}

/// Fair-sharing properties of a [`ClusterQueue`] or [`Cohort`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FairSharing {
    /// 0 (always loses) or above 1e-9; Kueue's default is 1.
    pub weight: Quantity,
}

/// A LocalQueue: the queue jobs of one namespace name (`kueue.x-k8s.io/queue-name`).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueue {
    api_version: &'static str,
    kind: &'static str,
    /// Namespace and name (at most 63 characters: jobs quote it in a label).
    pub metadata: ObjectMeta,
    /// The queue.
    pub spec: LocalQueueSpec,
}

impl LocalQueue {
    /// A LocalQueue with the given namespace and name.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        spec: LocalQueueSpec,
    ) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), Some(namespace.into())),
            spec,
        }
    }
}

/// The spec of a [`LocalQueue`].
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueSpec {
    /// The ClusterQueue it submits to; immutable.
    pub cluster_queue: String,
}

/// A WorkloadPriorityClass: the priority jobs name with `kueue.x-k8s.io/priority-class`.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPriorityClass {
    api_version: &'static str,
    kind: &'static str,
    /// Name (cluster-scoped, at most 63 characters: jobs quote it in a label) and labels.
    pub metadata: ObjectMeta,
    /// The priority of the workloads of the class (no cap at 1e9, unlike a PriorityClass).
    pub value: i32,
    /// When to use the class; at most 2048 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl WorkloadPriorityClass {
    /// A WorkloadPriorityClass with the given name, value and description.
    pub fn new(name: impl Into<String>, value: i32, description: Option<String>) -> Self {
        Self {
            api_version: API_VERSION,
            kind: Self::KIND,
            metadata: object_meta(name.into(), None),
            value,
            description,
        }
    }
}

/// The violations found in one object, each prefixed with its kind and name.
struct Violations {
    object: String,
    found: Vec<String>,
}

impl Violations {
    /// Starts the list for `object` with the checks of its metadata.
    fn of<T: KueueObject>(object: &T, name_is_label_value: bool) -> Self {
        let metadata = object.metadata();
        let name = metadata.name.as_deref().unwrap_or_default();
        let mut violations = Self {
            object: format!("{} `{name}`", T::KIND),
            found: Vec::new(),
        };
        if name.is_empty() {
            violations.add("metadata.name", "is missing");
        } else if let Err(reason) = names::dns_subdomain(name) {
            violations.add("metadata.name", reason);
        } else if name_is_label_value && name.chars().count() > MAX_LABEL_VALUE_NAME_CHARS {
            violations.add(
                "metadata.name",
                format!(
                    "is {} characters long, but jobs quote it in a label, whose values are at most {MAX_LABEL_VALUE_NAME_CHARS}",
                    name.chars().count()
                ),
            );
        }
        match (&metadata.namespace, T::NAMESPACED) {
            (None, true) => violations.add("metadata.namespace", "is missing"),
            (Some(namespace), true) => {
                if let Err(reason) = names::dns_label(namespace) {
                    violations.add("metadata.namespace", format!("`{namespace}` {reason}"));
                }
            }
            (Some(namespace), false) => violations.add(
                "metadata.namespace",
                format!("is `{namespace}`, but a {} has no namespace", T::KIND),
            ),
            (None, false) => {}
        }
        violations
    }

    fn add(&mut self, path: impl fmt::Display, problem: impl fmt::Display) {
        self.found
            .push(format!("{} {path}: {problem}", self.object));
    }

    /// Checks that a referenced object name is a DNS-1123 subdomain.
    fn reference(&mut self, path: impl fmt::Display, name: &str) {
        if let Err(reason) = names::dns_subdomain(name) {
            self.add(path, format!("`{name}` {reason}"));
        }
    }

    /// Reads a quantity exactly, reporting one that tenantc cannot compare.
    fn exact(
        &mut self,
        path: impl fmt::Display,
        value: &Quantity,
    ) -> Option<crate::quantity::Quantity> {
        match crate::quantity::Quantity::parse(&value.0) {
            Ok(exact) => Some(exact),
            Err(error) => {
                self.add(path, format!("`{}`: {error}", value.0));
                None
            }
        }
    }

    /// Reads a quantity that must not be negative.
    fn non_negative(
        &mut self,
        path: impl fmt::Display + Copy,
        value: &Quantity,
    ) -> Option<crate::quantity::Quantity> {
        let exact = self.exact(path, value)?;
        if exact.milli() < 0 {
            self.add(path, format!("`{}` is negative", value.0));
        }
        Some(exact)
    }

    fn fair_sharing(&mut self, fair_sharing: Option<&FairSharing>) {
        let Some(fair_sharing) = fair_sharing else {
            return;
        };
        // Exact quantities are whole thousandths, so any positive one is above 1e-9.
        if let Some(weight) = self.exact("spec.fairSharing.weight", &fair_sharing.weight)
            && weight.milli() < 0
        {
            self.add(
                "spec.fairSharing.weight",
                format!("`{}` must be 0 or above 1e-9", fair_sharing.weight.0),
            );
        }
    }

    /// The rules of `spec.resourceGroups`, shared by ClusterQueues and Cohorts. `limits_owner` is
    /// the field (`spec.cohortName`, `spec.parentName`) without which borrowing and lending
    /// limits are refused, with whether it is set.
    fn resource_groups(
        &mut self,
        groups: &[ResourceGroup],
        limits_owner: (&str, bool),
        lending_at_most_nominal: bool,
    ) {
        if groups.len() > MAX_RESOURCE_GROUPS {
            self.add(
                "spec.resourceGroups",
                format!(
                    "has {} groups, Kueue allows at most {MAX_RESOURCE_GROUPS}",
                    groups.len()
                ),
            );
        }
        let resources: usize = groups
            .iter()
            .map(|group| group.covered_resources.len())
            .sum();
        if resources > MAX_RESOURCES {
            self.add(
                "spec.resourceGroups",
                format!("cover {resources} resources in all, Kueue allows at most {MAX_RESOURCES}"),
            );
        }
        let flavors: usize = groups.iter().map(|group| group.flavors.len()).sum();
        if flavors > MAX_FLAVORS {
            self.add(
                "spec.resourceGroups",
                format!("list {flavors} flavors in all, Kueue allows at most {MAX_FLAVORS}"),
            );
        }
        let mut resource_group: BTreeMap<&str, usize> = BTreeMap::new();
        let mut flavor_group: BTreeMap<&str, usize> = BTreeMap::new();
        for (group_idx, group) in groups.iter().enumerate() {
            let path = format!("spec.resourceGroups[{group_idx}]");
            let covered = &group.covered_resources;
            if covered.is_empty() || covered.len() > MAX_RESOURCES_PER_GROUP {
                self.add(
                    format_args!("{path}.coveredResources"),
                    format!(
                        "has {} resources, a group needs 1 to {MAX_RESOURCES_PER_GROUP}",
                        covered.len()
                    ),
                );
            }
            if group.flavors.is_empty() || group.flavors.len() > MAX_FLAVORS_PER_GROUP {
                self.add(
                    format_args!("{path}.flavors"),
                    format!(
                        "has {} flavors, a group needs 1 to {MAX_FLAVORS_PER_GROUP}",
                        group.flavors.len()
                    ),
                );
            }
            let pairs = group.flavors.len().saturating_mul(covered.len());
            if pairs > MAX_PAIRS_PER_GROUP {
                self.add(
                    &path,
                    format!(
                        "has {} flavors of {} resources, {pairs} (flavor, resource) pairs; Kueue allows at most {MAX_PAIRS_PER_GROUP} per group",
                        group.flavors.len(),
                        covered.len()
                    ),
                );
            }
            for (resource_idx, resource) in covered.iter().enumerate() {
                let resource_path = format!("{path}.coveredResources[{resource_idx}]");
                if let Err(reason) = names::qualified_name(resource) {
                    self.add(&resource_path, format!("`{resource}` {reason}"));
                }
                match resource_group.get(resource.as_str()) {
                    Some(earlier) => self.add(
                        &resource_path,
                        format!(
                            "`{resource}` is already covered by resourceGroups[{earlier}]; a resource belongs to one group"
                        ),
                    ),
                    None => {
                        resource_group.insert(resource, group_idx);
                    }
                }
            }
            for (flavor_idx, flavor) in group.flavors.iter().enumerate() {
                let flavor_path = format!("{path}.flavors[{flavor_idx}]");
                self.reference(format_args!("{flavor_path}.name"), &flavor.name);
                match flavor_group.get(flavor.name.as_str()) {
                    Some(earlier) => self.add(
                        format_args!("{flavor_path}.name"),
                        format!(
                            "`{}` is already listed in resourceGroups[{earlier}]; a flavor belongs to one group",
                            flavor.name
                        ),
                    ),
                    None => {
                        flavor_group.insert(&flavor.name, group_idx);
                    }
                }
                self.flavor_quotas(
                    flavor,
                    covered,
                    &flavor_path,
                    limits_owner,
                    lending_at_most_nominal,
                );
            }
        }
    }

    fn flavor_quotas(
        &mut self,
        flavor: &FlavorQuotas,
        covered: &[String],
        flavor_path: &str,
        (owner, owner_set): (&str, bool),
        lending_at_most_nominal: bool,
    ) {
        if flavor.resources.len() != covered.len() {
            self.add(
                format_args!("{flavor_path}.resources"),
                format!(
                    "lists {} resources, but the group covers {}",
                    flavor.resources.len(),
                    covered.len()
                ),
            );
        }
        for (quota_idx, quota) in flavor.resources.iter().enumerate() {
            let quota_path = format!("{flavor_path}.resources[{quota_idx}]");
            match covered.get(quota_idx) {
                Some(expected) if *expected != quota.name => self.add(
                    format_args!("{quota_path}.name"),
                    format!(
                        "is `{}`, but coveredResources[{quota_idx}] is `{expected}`; a flavor lists the covered resources in the same order",
                        quota.name
                    ),
                ),
                _ => {}
            }
            let nominal_path = format!("{quota_path}.nominalQuota");
            let nominal = self.non_negative(nominal_path.as_str(), &quota.nominal_quota);
            if let Some(limit) = &quota.borrowing_limit {
                let limit_path = format!("{quota_path}.borrowingLimit");
                if !owner_set {
                    self.add(&limit_path, format!("is set, but {owner} is not"));
                }
                self.non_negative(limit_path.as_str(), limit);
            }
            if let Some(limit) = &quota.lending_limit {
                let limit_path = format!("{quota_path}.lendingLimit");
                if !owner_set {
                    self.add(&limit_path, format!("is set, but {owner} is not"));
                }
                let lending = self.non_negative(limit_path.as_str(), limit);
                if let (true, Some(lending), Some(nominal)) =
                    (lending_at_most_nominal, lending, nominal)
                    && lending.milli() > nominal.milli()
                {
                    self.add(
                        &limit_path,
                        format!(
                            "`{}` is above the nominalQuota `{}`",
                            limit.0, quota.nominal_quota.0
                        ),
                    );
                }
            }
        }
    }

    fn label_selector(&mut self, path: &str, selector: &LabelSelector) {
        for (key, value) in selector.match_labels.iter().flatten() {
            self.label(format_args!("{path}.matchLabels"), key, value);
        }
        for (idx, requirement) in selector.match_expressions.iter().flatten().enumerate() {
            let requirement_path = format!("{path}.matchExpressions[{idx}]");
            if let Err(reason) = names::qualified_name(&requirement.key) {
                self.add(
                    format_args!("{requirement_path}.key"),
                    format!("`{}` {reason}", requirement.key),
                );
            }
            let values = requirement.values.as_deref().unwrap_or_default();
            match requirement.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => self.add(
                    format_args!("{requirement_path}.values"),
                    format!("must not be empty with operator `{}`", requirement.operator),
                ),
                "Exists" | "DoesNotExist" if !values.is_empty() => self.add(
                    format_args!("{requirement_path}.values"),
                    format!("must be empty with operator `{}`", requirement.operator),
                ),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => self.add(
                    format_args!("{requirement_path}.operator"),
                    format!("`{other}` is not one of `In`, `NotIn`, `Exists` and `DoesNotExist`"),
                ),
            }
            for value in values {
                if let Err(reason) = names::label_value(value) {
                    self.add(
                        format_args!("{requirement_path}.values"),
                        format!("`{value}` {reason}"),
                    );
                }
            }
        }
    }

    /// Checks a label key and value.
    fn label(&mut self, path: impl fmt::Display, key: &str, value: &str) {
        if let Err(reason) = names::qualified_name(key) {
            self.add(&path, format!("key `{key}` {reason}"));
        }
        if let Err(reason) = names::label_value(value) {
            self.add(&path, format!("value `{value}` of `{key}` {reason}"));
        }
    }

    fn at_most(&mut self, path: &str, count: usize, limit: usize, what: &str) {
        if count > limit {
            self.add(
                path,
                format!("has {count} {what}, Kueue allows at most {limit}"),
            );
        }
    }

    fn taint(&mut self, path: &str, taint: &Taint) {
        if let Err(reason) = names::qualified_name(&taint.key) {
            self.add(
                format_args!("{path}.key"),
                format!("`{}` {reason}", taint.key),
            );
        }
        if let Some(value) = &taint.value
            && let Err(reason) = names::label_value(value)
        {
            self.add(format_args!("{path}.value"), format!("`{value}` {reason}"));
        }
        if !TAINT_EFFECTS.contains(&taint.effect.as_str()) {
            self.add(
                format_args!("{path}.effect"),
                format!(
                    "`{}` is not one of `NoSchedule`, `PreferNoSchedule` and `NoExecute`",
                    taint.effect
                ),
            );
        }
    }

    fn toleration(&mut self, path: &str, toleration: &Toleration) {
        let operator = toleration.operator.as_deref();
        match toleration.key.as_deref() {
            None | Some("") => {
                if operator != Some("Exists") {
                    self.add(
                        format_args!("{path}.operator"),
                        "must be `Exists` when the key is empty",
                    );
                }
            }
            Some(key) => {
                if let Err(reason) = names::qualified_name(key) {
                    self.add(format_args!("{path}.key"), format!("`{key}` {reason}"));
                }
            }
        }
        match (operator, &toleration.value) {
            (None | Some("Equal"), Some(value)) => {
                if let Err(reason) = names::label_value(value) {
                    self.add(format_args!("{path}.value"), format!("`{value}` {reason}"));
                }
            }
            (Some("Exists"), Some(value)) => self.add(
                format_args!("{path}.value"),
                format!("is `{value}`, but operator `Exists` takes no value"),
            ),
            (None | Some("Equal" | "Exists"), None) => {}
            (Some(other), _) => self.add(
                format_args!("{path}.operator"),
                format!("`{other}` is not one of `Equal` and `Exists`"),
            ),
        }
        if let Some(effect) = &toleration.effect
            && !TAINT_EFFECTS.contains(&effect.as_str())
        {
            self.add(
                format_args!("{path}.effect"),
                format!(
                    "`{effect}` is not one of `NoSchedule`, `PreferNoSchedule` and `NoExecute`"
                ),
            );
        }
        if toleration.toleration_seconds.is_some()
            && toleration.effect.as_deref() != Some("NoExecute")
        {
            self.add(
                format_args!("{path}.tolerationSeconds"),
                "is set, but the effect is not `NoExecute`",
            );
        }
    }
}

impl KueueObject for ResourceFlavor {
    const KIND: &'static str = "ResourceFlavor";
    const NAMESPACED: bool = false;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, false);
        let spec = &self.spec;
        violations.at_most(
            "spec.nodeLabels",
            spec.node_labels.len(),
            MAX_FLAVOR_NODE_ITEMS,
            "labels",
        );
        for (key, value) in &spec.node_labels {
            violations.label("spec.nodeLabels", key, value);
        }
        violations.at_most(
            "spec.nodeTaints",
            spec.node_taints.len(),
            MAX_FLAVOR_NODE_ITEMS,
            "taints",
        );
        let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (idx, taint) in spec.node_taints.iter().enumerate() {
            let path = format!("spec.nodeTaints[{idx}]");
            violations.taint(&path, taint);
            match seen.get(&(taint.key.as_str(), taint.effect.as_str())) {
                Some(earlier) => violations.add(
                    &path,
                    format!(
                        "repeats the key `{}` and effect `{}` of nodeTaints[{earlier}]; taints are unique by key and effect",
                        taint.key, taint.effect
                    ),
                ),
                None => {
                    seen.insert((&taint.key, &taint.effect), idx);
                }
            }
        }
        violations.at_most(
            "spec.tolerations",
            spec.tolerations.len(),
            MAX_FLAVOR_NODE_ITEMS,
            "tolerations",
        );
        for (idx, toleration) in spec.tolerations.iter().enumerate() {
            violations.toleration(&format!("spec.tolerations[{idx}]"), toleration);
        }
        if let Some(topology) = &spec.topology_name {
            violations.reference("spec.topologyName", topology);
            if spec.node_labels.is_empty() {
                violations.add(
                    "spec.topologyName",
                    "is set, but a flavor with a topology needs at least one node label",
                );
            }
        }
        violations.found
    }
}

impl KueueObject for Topology {
    const KIND: &'static str = "Topology";
    const NAMESPACED: bool = false;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, false);
        let levels = &self.spec.levels;
        if levels.is_empty() || levels.len() > MAX_TOPOLOGY_LEVELS {
            violations.add(
                "spec.levels",
                format!(
                    "has {} levels, a topology needs 1 to {MAX_TOPOLOGY_LEVELS}",
                    levels.len()
                ),
            );
        }
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (idx, level) in levels.iter().enumerate() {
            let path = format!("spec.levels[{idx}].nodeLabel");
            let label = level.node_label.as_str();
            if let Err(reason) = names::qualified_name(label) {
                violations.add(&path, format!("`{label}` {reason}"));
            } else if label.chars().count() > MAX_TOPOLOGY_LABEL_CHARS {
                violations.add(
                    &path,
                    format!("is longer than {MAX_TOPOLOGY_LABEL_CHARS} characters"),
                );
            }
            match seen.get(label) {
                Some(earlier) => violations.add(
                    &path,
                    format!("`{label}` is already levels[{earlier}]; levels are unique"),
                ),
                None => {
                    seen.insert(label, idx);
                }
            }
            if label == HOSTNAME_LABEL && idx + 1 != levels.len() {
                violations.add(
                    &path,
                    format!("`{HOSTNAME_LABEL}` may only be the last (finest) level"),
                );
            }
        }
        violations.found
    }
}

impl KueueObject for Cohort {
    const KIND: &'static str = "Cohort";
    const NAMESPACED: bool = false;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, false);
        let spec = &self.spec;
        if let Some(parent) = &spec.parent_name {
            violations.reference("spec.parentName", parent);
        }
        // A cohort's quota is added to its members'; unlike a ClusterQueue's, its lending limit
        // may exceed its nominal quota.
        violations.resource_groups(
            &spec.resource_groups,
            ("spec.parentName", spec.parent_name.is_some()),
            false,
        );
        violations.fair_sharing(spec.fair_sharing.as_ref());
        violations.found
    }
}

impl KueueObject for ClusterQueue {
    const KIND: &'static str = "ClusterQueue";
    const NAMESPACED: bool = false;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, false);
        let spec = &self.spec;
        if let Some(cohort) = &spec.cohort_name {
            violations.reference("spec.cohortName", cohort);
        }
        violations.resource_groups(
            &spec.resource_groups,
            ("spec.cohortName", spec.cohort_name.is_some()),
            true,
        );
        violations.label_selector("spec.namespaceSelector", &spec.namespace_selector);
        if let Some(fungibility) = &spec.flavor_fungibility
            && let Some(preference) = fungibility.preference
        {
            let when_can_borrow = fungibility
                .when_can_borrow
                .unwrap_or(FlavorFungibilityPolicy::MayStopSearch);
            let when_can_preempt = fungibility
                .when_can_preempt
                .unwrap_or(FlavorFungibilityPolicy::TryNextFlavor);
            if when_can_borrow != FlavorFungibilityPolicy::TryNextFlavor
                || when_can_preempt != FlavorFungibilityPolicy::TryNextFlavor
            {
                violations.add(
                    "spec.flavorFungibility.preference",
                    format!(
                        "`{preference}` needs whenCanBorrow and whenCanPreempt `TryNextFlavor`, but they are `{when_can_borrow}` and `{when_can_preempt}`"
                    ),
                );
            }
        }
        if let Some(preemption) = &spec.preemption {
            let reclaim = preemption
                .reclaim_within_cohort
                .unwrap_or(ReclaimWithinCohortPolicy::Never);
            let borrow = preemption
                .borrow_within_cohort
                .as_ref()
                .and_then(|borrow| borrow.policy)
                .unwrap_or(BorrowWithinCohortPolicy::Never);
            if borrow != BorrowWithinCohortPolicy::Never
                && reclaim == ReclaimWithinCohortPolicy::Never
            {
                violations.add(
                    "spec.preemption.borrowWithinCohort.policy",
                    format!("`{borrow}` needs reclaimWithinCohort other than `Never`"),
                );
            }
        }
        violations.fair_sharing(spec.fair_sharing.as_ref());
        violations.found
    }
}

impl KueueObject for LocalQueue {
    const KIND: &'static str = "LocalQueue";
    const NAMESPACED: bool = true;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, true);
        violations.reference("spec.clusterQueue", &self.spec.cluster_queue);
        violations.found
    }
}

impl KueueObject for WorkloadPriorityClass {
    const KIND: &'static str = "WorkloadPriorityClass";
    const NAMESPACED: bool = false;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn webhook_violations(&self) -> Vec<String> {
        let mut violations = Violations::of(self, true);
        if let Some(description) = &self.description {
            let chars = description.chars().count();
            if chars > MAX_DESCRIPTION_CHARS {
                violations.add(
                    "description",
                    format!("is {chars} characters long, the limit is {MAX_DESCRIPTION_CHARS}"),
                );
            }
        }
        violations.found
    }
}
