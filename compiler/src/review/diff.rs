//! The semantic diff of two reviewer views, for `tenantc diff --base <revision>`.
//!
//! Consumes: the [`Review`] of a base and of a head compilation (and, for the file diff, their
//! output trees).
//! Produces: a [`ReviewDiff`]: per tenant and per cell, every fact that was added, removed or
//! changed (every key of the tenants' admission params among them), each marked as an
//! entitlement, access or policy change, with the reason it matters for security when it widens
//! what a tenant gets, and whether the API server must replace the
//! object (an immutable field: PriorityClass `value` and `preemptionPolicy`, RuntimeClass
//! `handler`, and a topology ResourceFlavor's node labels, tolerations and topology name and
//! its Topology's levels, as Kueue's CRD rules hold them); rendered as Markdown ([`markdown`], for a pull-request comment)
//! or JSON ([`json`]); and [`files`], a bounded unified diff of the two output trees.
//!
//! Invariants:
//! - One model, two renderings: every change is a difference of two [`Review`]s, flattened into
//!   keyed facts, never a comparison of YAML.
//! - Deterministic: tenants, cells and facts are sorted, so the same inputs print the same bytes.
//! - Every text from a declaration is escaped in Markdown (`md`), so no declared value can add
//!   markup, links or table cells to a pull-request comment.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{AccessSummary, CellSummary, Review};
use crate::emit::OutputTree;
use crate::facts::pod_security::PodSecurityLevel;
use crate::plan::showback::format_cents;
use crate::quantity::Quantity;

/// What a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    /// Reserved, burst and lent devices, ceilings and other quotas.
    Entitlement,
    /// What the tenant may read, write, reach and run.
    Access,
    /// Trust class, Pod Security, priorities and the cell's own policy objects.
    Policy,
    /// What the tenant is billed by and for: its chargeback labels and its monthly cost.
    Metering,
}

/// Whether a tenant or cell was added, removed or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Only in head.
    Added,
    /// Only in base.
    Removed,
    /// In both, with different facts.
    Changed,
}

/// One fact that differs between base and head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The cell it holds in, or `None` for the whole fleet.
    pub cell: Option<String>,
    /// What it is about.
    pub area: Area,
    /// The fact, in words.
    pub item: String,
    /// Its value in base, `None` when base does not have it.
    pub before: Option<String>,
    /// Its value in head, `None` when head does not have it.
    pub after: Option<String>,
    /// Why it matters for security, when it widens what a tenant gets.
    pub security: Option<String>,
    /// Whether a sync must delete and re-create the object (an immutable field changed).
    pub replaced_on_sync: bool,
    /// The cluster-scoped object the fact belongs to, `Kind/name`, for facts of a cell's own
    /// objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
}

/// The changes of one tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantDiff {
    /// The tenant.
    pub tenant: String,
    /// Added, removed or changed.
    pub status: Status,
    /// Its changes, by cell and fact.
    pub changes: Vec<Change>,
}

/// The changes of one cell's own facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellDiff {
    /// The cell.
    pub cell: String,
    /// Added, removed or changed.
    pub status: Status,
    /// Its changes, by fact.
    pub changes: Vec<Change>,
}

/// The semantic diff of two reviews.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewDiff {
    /// The base revision as the user named it.
    pub base: String,
    /// What head is (`work tree`).
    pub head: String,
    /// Tenants that changed, sorted.
    pub tenants: Vec<TenantDiff>,
    /// Cells whose own facts changed, sorted.
    pub cells: Vec<CellDiff>,
}

impl ReviewDiff {
    /// Every change, of tenants first, then of cells.
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.tenants
            .iter()
            .flat_map(|tenant| &tenant.changes)
            .chain(self.cells.iter().flat_map(|cell| &cell.changes))
    }

    /// How many changes are marked security-relevant.
    pub fn security_count(&self) -> usize {
        self.changes()
            .filter(|change| change.security.is_some())
            .count()
    }
}

/// How a fact's change is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Widen {
    /// Never security-relevant.
    Never,
    /// Security-relevant when added or changed.
    Presence(&'static str),
    /// Security-relevant when added or its rank rises.
    Rank(&'static str),
    /// Security-relevant on any change.
    Any(&'static str),
    /// Security-relevant when removed: a rule of the floor that keeps something out.
    Removal(&'static str),
}

/// One fact of a review.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fact {
    area: Area,
    value: String,
    /// A number to compare (devices, millicores, bytes, a Pod Security level), for `Widen::Rank`.
    rank: Option<i128>,
    widen: Widen,
    /// Whether a changed value replaces the object on sync.
    immutable: bool,
    /// The cluster-scoped object it belongs to, `Kind/name`.
    object: Option<String>,
}

/// Facts keyed by `(cell, item)`.
type Facts = BTreeMap<(Option<String>, String), Fact>;

fn fact(area: Area, value: impl Into<String>, widen: Widen) -> Fact {
    Fact {
        area,
        value: value.into(),
        rank: None,
        widen,
        immutable: false,
        object: None,
    }
}

fn ranked(area: Area, value: impl Into<String>, rank: Option<i128>, reason: &'static str) -> Fact {
    Fact {
        area,
        value: value.into(),
        rank,
        widen: Widen::Rank(reason),
        immutable: false,
        object: None,
    }
}

/// A quantity's rank: its value in thousandths.
fn quantity_rank(text: &str) -> Option<i128> {
    Quantity::parse(text).ok().map(|quantity| quantity.milli())
}

/// Pod Security levels from the strictest: a higher rank admits more.
fn level_rank(level: PodSecurityLevel) -> i128 {
    match level {
        PodSecurityLevel::Restricted => 0,
        PodSecurityLevel::Baseline => 1,
        PodSecurityLevel::Privileged => 2,
    }
}

const NEW_REGISTRY: &str = "new registry";
const NEW_DIGEST: &str = "new weight digest";
const HIGHER_QUOTA: &str = "higher quota";
const WIDER: &str = "widened access";
const NEW_EGRESS: &str = "new egress";
const NEW_INGRESS: &str = "new ingress";
const EXCEPTION: &str = "Pod Security exception";
const HOST_ACCESS: &str = "host access";
const TOLERATION: &str = "toleration allowed";
const LABEL_KEY: &str = "label key allowed";
const RUNTIME_CLASS: &str = "runtime class no longer required";
const GRACE_PERIOD: &str = "longer grace period";

/// The items of a comma-separated param, without empty ones.
fn param_list<'a>(params: &'a BTreeMap<String, String>, key: &str) -> Vec<&'a str> {
    params
        .get(key)
        .map(|value| value.split(',').filter(|item| !item.is_empty()).collect())
        .unwrap_or_default()
}

/// A list param, named by one fact per item: its key, the fact's words before the item, its
/// area, its value and how a change of it is judged.
type ListParam = (&'static str, &'static str, Area, &'static str, Widen);

/// The list params of a tenant in a cell that no other fact names.
const TENANT_LIST_PARAMS: [ListParam; 6] = [
    (
        "claimNamespaces",
        "claim templates in namespace",
        Area::Entitlement,
        "allowed",
        Widen::Never,
    ),
    (
        "hostPools",
        "host use on nodes",
        Area::Access,
        "allowed",
        Widen::Presence(HOST_ACCESS),
    ),
    (
        "forbiddenTaints",
        "may not tolerate",
        Area::Policy,
        "denied",
        Widen::Removal(TOLERATION),
    ),
    (
        "countedResources",
        "counted resource",
        Area::Entitlement,
        "counted",
        Widen::Never,
    ),
    // A class follows a reservation, whose quota is judged as a quota fact.
    (
        "deviceClasses",
        "device claims of class",
        Area::Entitlement,
        "allowed",
        Widen::Never,
    ),
    (
        "gpuModels",
        "chargeback sku",
        Area::Policy,
        "allowed",
        Widen::Never,
    ),
];

/// The list params that are the same for every tenant of a cell.
const CELL_LIST_PARAMS: [ListParam; 3] = [
    (
        "forbiddenLabelKeys",
        "forbidden label key",
        Area::Policy,
        "denied",
        Widen::Removal(LABEL_KEY),
    ),
    (
        "poolTaints",
        "pods without GPUs may not tolerate",
        Area::Policy,
        "denied",
        Widen::Removal(TOLERATION),
    ),
    (
        "queues",
        "LocalQueue of every namespace:",
        Area::Access,
        "allowed",
        Widen::Presence(WIDER),
    ),
];

/// One fact per item of each list param of `table`.
fn list_param_facts(
    params: &BTreeMap<String, String>,
    table: &[ListParam],
    put: &mut impl FnMut(String, Fact),
) {
    for (key, words, area, value, widen) in table {
        for item in param_list(params, key) {
            put(format!("{words} {item}"), fact(*area, *value, *widen));
        }
    }
}

/// The facts of a tenant's admission params in one cell that no other fact names.
fn param_facts(params: &BTreeMap<String, String>, put: &mut impl FnMut(String, Fact)) {
    let granted = params
        .get("hostAccess")
        .is_some_and(|value| value == "true");
    put(
        "host access (RDMA devices, Pod Security exceptions)".to_string(),
        ranked(
            Area::Access,
            if granted { "granted" } else { "denied" },
            Some(i128::from(granted)),
            HOST_ACCESS,
        ),
    );
    list_param_facts(params, &TENANT_LIST_PARAMS, put);
}

/// The facts of the admission params that are the same for every tenant of a cell.
fn cell_param_facts(params: &BTreeMap<String, String>, put: &mut impl FnMut(String, Fact)) {
    list_param_facts(params, &CELL_LIST_PARAMS, put);
    if let Some(required) = params.get("runtimeClassRequired") {
        let required = required == "true";
        put(
            "GPU pods must name a runtime class".to_string(),
            ranked(
                Area::Policy,
                if required { "yes" } else { "no" },
                Some(i128::from(!required)),
                RUNTIME_CLASS,
            ),
        );
    }
    if let Some(seconds) = params.get("maxGracePeriodSeconds") {
        put(
            "longest termination grace period".to_string(),
            ranked(
                Area::Policy,
                format!("{seconds}s"),
                seconds.parse().ok(),
                GRACE_PERIOD,
            ),
        );
    }
}

fn tenant_facts(summary: &AccessSummary) -> Facts {
    let mut facts = Facts::new();
    let mut put = |cell: Option<&str>, item: String, fact: Fact| {
        facts.insert((cell.map(str::to_string), item), fact);
    };
    put(
        None,
        "trust class".to_string(),
        fact(
            Area::Policy,
            &summary.trust,
            Widen::Any("trust class changed"),
        ),
    );
    put(
        None,
        "org".to_string(),
        fact(
            Area::Policy,
            &summary.org,
            Widen::Any("org changed: its cohort and shared pools"),
        ),
    );
    for group in &summary.groups {
        put(
            None,
            format!("{} group", group.role),
            fact(
                Area::Access,
                format!("{} ({})", group.group, group.cluster_role),
                Widen::Presence(WIDER),
            ),
        );
    }
    for registry in &summary.registries {
        put(
            None,
            format!("image registry {registry}"),
            fact(Area::Access, "allowed", Widen::Presence(NEW_REGISTRY)),
        );
    }
    for model in &summary.models {
        put(
            None,
            format!("model {} {}", model.name, model.version),
            fact(
                Area::Access,
                format!("{} at {}", model.digest, model.prefix),
                Widen::Presence(NEW_DIGEST),
            ),
        );
    }
    for cell in &summary.cells {
        let at = Some(cell.cell.as_str());
        for reservation in &cell.reservations {
            let what = format!("pool {} {}", reservation.pool, reservation.resource);
            put(
                at,
                format!("reserved on {what}"),
                ranked(
                    Area::Entitlement,
                    reservation.reserved.to_string(),
                    Some(i128::from(reservation.reserved)),
                    HIGHER_QUOTA,
                ),
            );
            put(
                at,
                format!("burst on {what}"),
                ranked(
                    Area::Entitlement,
                    reservation.burst.to_string(),
                    Some(i128::from(reservation.burst)),
                    HIGHER_QUOTA,
                ),
            );
            if let Some(lend) = reservation.lend {
                put(
                    at,
                    format!("lent at most on {what}"),
                    fact(Area::Entitlement, lend.to_string(), Widen::Never),
                );
            }
        }
        for (name, value) in [("cpu", &cell.ceiling.cpu), ("memory", &cell.ceiling.memory)] {
            put(
                at,
                format!("{name} ceiling"),
                ranked(Area::Entitlement, value, quantity_rank(value), HIGHER_QUOTA),
            );
        }
        put(
            at,
            "pods ceiling".to_string(),
            ranked(
                Area::Entitlement,
                cell.ceiling.pods.to_string(),
                Some(i128::from(cell.ceiling.pods)),
                HIGHER_QUOTA,
            ),
        );
        for pool in &cell.reachable_pools {
            put(
                at,
                format!("reaches pool {pool}"),
                fact(Area::Access, "yes", Widen::Presence(WIDER)),
            );
        }
        for pool in &cell.owned_pools {
            put(
                at,
                format!("owns pool {pool}"),
                fact(Area::Access, "yes", Widen::Presence(WIDER)),
            );
        }
        for namespace in &cell.namespaces {
            let ns = &namespace.name;
            put(
                at,
                format!("namespace {ns}"),
                fact(
                    Area::Access,
                    format!(
                        "{}, service account {}, priority {}",
                        namespace.workload,
                        namespace.service_account,
                        namespace.priority.as_deref().unwrap_or("none")
                    ),
                    Widen::Presence(WIDER),
                ),
            );
            put(
                at,
                format!("pod security of {ns}"),
                ranked(
                    Area::Policy,
                    namespace.pod_security.as_str(),
                    Some(level_rank(namespace.pod_security)),
                    EXCEPTION,
                ),
            );
            for exception in &namespace.exceptions {
                put(
                    at,
                    format!("exception {} in {ns}", exception.name),
                    fact(
                        Area::Policy,
                        format!(
                            "adds {}, approved by {}",
                            exception.capabilities.join(", "),
                            exception.approved_by
                        ),
                        Widen::Presence(EXCEPTION),
                    ),
                );
            }
            for (key, value) in &namespace.quota {
                put(
                    at,
                    format!("quota {key} in {ns}"),
                    ranked(Area::Entitlement, value, quantity_rank(value), HIGHER_QUOTA),
                );
            }
        }
        for peer in &cell.egress {
            put(
                at,
                format!("egress to {peer}"),
                fact(Area::Access, "allowed", Widen::Presence(NEW_EGRESS)),
            );
        }
        for peer in &cell.ingress {
            put(
                at,
                format!("ingress from {peer}"),
                fact(Area::Access, "allowed", Widen::Presence(NEW_INGRESS)),
            );
        }
        for class in &cell.runtime_classes {
            put(
                at,
                format!("runtime class {}", class.name),
                fact(
                    Area::Access,
                    format!("handler {}", class.handler),
                    Widen::Presence(WIDER),
                ),
            );
        }
        for storage in &cell.storage {
            let ns = &storage.namespace;
            put(
                at,
                format!("storage identity of {ns}"),
                fact(Area::Access, &storage.identity, Widen::Presence(WIDER)),
            );
            for bucket in &storage.buckets {
                put(
                    at,
                    format!("storage of {ns} in bucket {bucket}"),
                    fact(Area::Access, "granted", Widen::Presence(WIDER)),
                );
            }
            for (verb, prefixes) in [("reads", &storage.read), ("writes", &storage.write)] {
                for prefix in prefixes {
                    put(
                        at,
                        format!("storage of {ns} {verb} {prefix}"),
                        fact(Area::Access, "granted", Widen::Presence(WIDER)),
                    );
                }
            }
        }
        param_facts(&cell.admission, &mut |item, fact| put(at, item, fact));
        for (key, value) in &cell.metering_labels {
            put(
                at,
                format!("chargeback label {key}"),
                fact(Area::Metering, value, Widen::Never),
            );
        }
        for limits in &cell.serving {
            let model = &limits.model;
            put(
                at,
                format!("request rate on shared model {model}"),
                ranked(
                    Area::Entitlement,
                    format!("{} per second", limits.requests_per_second),
                    Some(i128::from(limits.requests_per_second)),
                    HIGHER_QUOTA,
                ),
            );
            put(
                at,
                format!("concurrency on shared model {model}"),
                ranked(
                    Area::Entitlement,
                    limits.concurrency.to_string(),
                    Some(i128::from(limits.concurrency)),
                    HIGHER_QUOTA,
                ),
            );
            put(
                at,
                format!("cache partition on shared model {model}"),
                fact(
                    Area::Policy,
                    format!("{} ({})", limits.cache, limits.stack),
                    Widen::Any("cache partition changed"),
                ),
            );
        }
        put(
            at,
            "committed monthly cost".to_string(),
            fact(
                Area::Metering,
                format_cents(cell.cost.committed_cents),
                Widen::Never,
            ),
        );
        put(
            at,
            "monthly cost of the burst if fully used".to_string(),
            fact(
                Area::Metering,
                format_cents(cell.cost.burst_cents),
                Widen::Never,
            ),
        );
    }
    facts
}

/// The facts of a cell: its own objects, and the admission params every tenant of it shares,
/// read from the first tenant in `review` with a quota there (a cell without tenants emits none).
fn cell_facts(summary: &CellSummary, review: &Review) -> Facts {
    let mut facts = Facts::new();
    let mut put = |item: String, fact: Fact| {
        facts.insert((Some(summary.cell.clone()), item), fact);
    };
    if let Some(params) = review
        .tenants
        .iter()
        .flat_map(|tenant| &tenant.cells)
        .find(|access| access.cell == summary.cell)
        .map(|access| &access.admission)
    {
        cell_param_facts(params, &mut put);
    }
    for priority in &summary.priorities {
        put(
            format!("priority class {} value", priority.name),
            Fact {
                immutable: true,
                object: Some(format!("PriorityClass/{}", priority.name)),
                ..fact(Area::Policy, priority.value.to_string(), Widen::Never)
            },
        );
        put(
            format!("priority class {} preemption", priority.name),
            Fact {
                immutable: true,
                object: Some(format!("PriorityClass/{}", priority.name)),
                ..fact(
                    Area::Policy,
                    if priority.preempt {
                        "PreemptLowerPriority"
                    } else {
                        "Never"
                    },
                    Widen::Never,
                )
            },
        );
    }
    for class in &summary.runtime_classes {
        put(
            format!("runtime class {} handler", class.name),
            Fact {
                immutable: true,
                object: Some(format!("RuntimeClass/{}", class.name)),
                ..fact(Area::Policy, &class.handler, Widen::Never)
            },
        );
        put(
            format!("runtime class {} trust classes", class.name),
            fact(Area::Policy, class.trust.join(", "), Widen::Presence(WIDER)),
        );
    }
    for (name, cidr) in &summary.endpoints {
        put(
            format!("endpoint {name}"),
            fact(Area::Access, cidr, Widen::Presence(NEW_EGRESS)),
        );
    }
    for pool in &summary.pools {
        // With a topology, Kueue's CRD refuses any change of these fields.
        let topology = pool.topology.is_some();
        let flavor = &pool.flavor;
        put(
            format!("pool {} owner", pool.name),
            fact(
                Area::Policy,
                pool.owner.as_deref().unwrap_or("none"),
                Widen::Never,
            ),
        );
        put(
            format!("resource flavor {flavor} node labels"),
            Fact {
                immutable: topology,
                object: Some(format!("ResourceFlavor/{flavor}")),
                ..fact(Area::Policy, pool.node_labels.join(", "), Widen::Never)
            },
        );
        put(
            format!("resource flavor {flavor} tolerations"),
            Fact {
                immutable: topology,
                object: Some(format!("ResourceFlavor/{flavor}")),
                ..fact(Area::Policy, pool.taints.join(", "), Widen::Never)
            },
        );
        put(
            format!("resource flavor {flavor} topology"),
            Fact {
                immutable: topology,
                object: Some(format!("ResourceFlavor/{flavor}")),
                ..fact(
                    Area::Policy,
                    pool.topology.as_deref().unwrap_or("none"),
                    Widen::Never,
                )
            },
        );
        if let Some(name) = &pool.topology {
            put(
                format!("topology {name} levels"),
                Fact {
                    immutable: true,
                    object: Some(format!("Topology/{name}")),
                    ..fact(Area::Policy, pool.levels.join(", "), Widen::Never)
                },
            );
        }
    }
    put(
        "GitOps user".to_string(),
        fact(
            Area::Policy,
            &summary.gitops_user,
            Widen::Any("who may change managed objects"),
        ),
    );
    put(
        "break-glass group".to_string(),
        fact(
            Area::Policy,
            &summary.break_glass,
            Widen::Any("who may change managed objects"),
        ),
    );
    facts
}

/// The changes from `base` to `head`, sorted by key.
fn compare(base: &Facts, head: &Facts) -> Vec<Change> {
    let keys: BTreeSet<&(Option<String>, String)> = base.keys().chain(head.keys()).collect();
    // A floor rule that goes with its tenant or cell keeps nothing out any more: it widens only
    // where head still has facts in that cell.
    let head_cells: BTreeSet<&Option<String>> = head.keys().map(|(cell, _)| cell).collect();
    let mut changes = Vec::new();
    for key in keys {
        let (before, after) = (base.get(key), head.get(key));
        if before.map(|fact| &fact.value) == after.map(|fact| &fact.value) {
            continue;
        }
        let Some(judged) = after.or(before) else {
            continue;
        };
        let security = match (judged.widen, before, after) {
            (Widen::Removal(reason), Some(_), None) if head_cells.contains(&key.0) => Some(reason),
            (Widen::Never | Widen::Removal(_), _, _) | (_, Some(_), None) => None,
            (Widen::Any(reason), _, _) | (Widen::Presence(reason), _, Some(_)) => Some(reason),
            (Widen::Rank(reason), None, Some(new)) => match new.rank {
                Some(rank) if rank <= 0 => None,
                _ => Some(reason),
            },
            (Widen::Rank(reason), Some(old), Some(new)) => match (old.rank, new.rank) {
                (Some(old), Some(new)) if new <= old => None,
                _ => Some(reason),
            },
            (_, None, None) => None,
        };
        changes.push(Change {
            cell: key.0.clone(),
            area: judged.area,
            item: key.1.clone(),
            before: before.map(|fact| fact.value.clone()),
            after: after.map(|fact| fact.value.clone()),
            security: security.map(str::to_string),
            // Whether the API server refuses the update depends on the object it holds.
            replaced_on_sync: before.is_some_and(|fact| fact.immutable) && after.is_some(),
            object: judged.object.clone(),
        });
    }
    changes
}

/// The objects a sync must replace, `Kind/name` per cell, sorted: those with a change marked
/// replaced on sync.
pub fn replaced_objects(diff: &ReviewDiff) -> BTreeSet<(String, String)> {
    diff.cells
        .iter()
        .flat_map(|cell| {
            cell.changes
                .iter()
                .filter(|change| change.replaced_on_sync)
                .filter_map(|change| Some((cell.cell.clone(), change.object.clone()?)))
        })
        .collect()
}

/// The semantic diff from `base` to `head`.
pub fn diff(base: &Review, head: &Review, base_name: &str, head_name: &str) -> ReviewDiff {
    let empty = Facts::new();
    let base_tenants: BTreeMap<&str, Facts> = base
        .tenants
        .iter()
        .map(|summary| (summary.tenant.as_str(), tenant_facts(summary)))
        .collect();
    let head_tenants: BTreeMap<&str, Facts> = head
        .tenants
        .iter()
        .map(|summary| (summary.tenant.as_str(), tenant_facts(summary)))
        .collect();
    let names: BTreeSet<&str> = base_tenants
        .keys()
        .chain(head_tenants.keys())
        .copied()
        .collect();
    let tenants = names
        .into_iter()
        .filter_map(|name| {
            let (before, after) = (base_tenants.get(name), head_tenants.get(name));
            let changes = compare(before.unwrap_or(&empty), after.unwrap_or(&empty));
            (!changes.is_empty()).then(|| TenantDiff {
                tenant: name.to_string(),
                status: status(before.is_some(), after.is_some()),
                changes,
            })
        })
        .collect();
    let base_cells: BTreeMap<&str, Facts> = base
        .cells
        .iter()
        .map(|summary| (summary.cell.as_str(), cell_facts(summary, base)))
        .collect();
    let head_cells: BTreeMap<&str, Facts> = head
        .cells
        .iter()
        .map(|summary| (summary.cell.as_str(), cell_facts(summary, head)))
        .collect();
    let names: BTreeSet<&str> = base_cells
        .keys()
        .chain(head_cells.keys())
        .copied()
        .collect();
    let cells = names
        .into_iter()
        .filter_map(|name| {
            let (before, after) = (base_cells.get(name), head_cells.get(name));
            let changes = compare(before.unwrap_or(&empty), after.unwrap_or(&empty));
            (!changes.is_empty()).then(|| CellDiff {
                cell: name.to_string(),
                status: status(before.is_some(), after.is_some()),
                changes,
            })
        })
        .collect();
    ReviewDiff {
        base: base_name.to_string(),
        head: head_name.to_string(),
        tenants,
        cells,
    }
}

fn status(before: bool, after: bool) -> Status {
    match (before, after) {
        (false, _) => Status::Added,
        (_, false) => Status::Removed,
        _ => Status::Changed,
    }
}

/// Text for a Markdown table cell or heading: ASCII punctuation that Markdown or HTML reads is
/// backslash-escaped (`&` as an entity), and line breaks and controls become spaces.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' | '@' | '$' => {
                out.push('\\');
                out.push(ch);
            }
            ch if ch.is_control() || crate::names::forbidden_char(&ch.to_string()).is_some() => {
                out.push(' ')
            }
            ch => out.push(ch),
        }
    }
    out
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Added => "added",
        Status::Removed => "removed",
        Status::Changed => "changed",
    }
}

fn area_word(area: Area) -> &'static str {
    match area {
        Area::Entitlement => "entitlement",
        Area::Access => "access",
        Area::Policy => "policy",
        Area::Metering => "metering",
    }
}

fn table(out: &mut String, changes: &[Change]) {
    out.push_str("| | cell | area | what | before | after |\n|---|---|---|---|---|---|\n");
    for change in changes {
        let mut marks = Vec::new();
        if let Some(reason) = &change.security {
            marks.push(format!("**security: {}**", md(reason)));
        }
        if change.replaced_on_sync {
            marks.push("**replaced on sync**".to_string());
        }
        let value = |value: &Option<String>| value.as_deref().map_or("—".to_string(), md);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            marks.join(" "),
            change.cell.as_deref().map_or("all".to_string(), md),
            area_word(change.area),
            md(&change.item),
            value(&change.before),
            value(&change.after),
        ));
    }
}

/// The diff as Markdown, for a pull-request comment.
pub fn markdown(diff: &ReviewDiff) -> String {
    let mut out = format!(
        "## tenantc diff: {} → {}\n\n",
        md(&diff.base),
        md(&diff.head)
    );
    if diff.tenants.is_empty() && diff.cells.is_empty() {
        out.push_str("No tenant or cell changes what it reserves, may access or runs under.\n");
        return out;
    }
    let security = diff.security_count();
    let count = |status: Status| {
        diff.tenants
            .iter()
            .filter(|tenant| tenant.status == status)
            .count()
    };
    out.push_str(&format!(
        "**{security} security-relevant change{}** · tenants: {} changed, {} added, {} removed · cells changed: {}\n",
        if security == 1 { "" } else { "s" },
        count(Status::Changed),
        count(Status::Added),
        count(Status::Removed),
        diff.cells.len()
    ));
    for tenant in &diff.tenants {
        out.push_str(&format!(
            "\n### Tenant {} ({})\n\n",
            md(&tenant.tenant),
            status_word(tenant.status)
        ));
        if tenant.status == Status::Removed {
            let cells: BTreeSet<&str> = tenant
                .changes
                .iter()
                .filter_map(|change| change.cell.as_deref())
                .collect();
            let cells: Vec<String> = cells.into_iter().map(md).collect();
            out.push_str(&format!(
                "Every namespace, quota and grant of the tenant is removed (cells: {}); the GitOps controller prunes them.\n",
                cells.join(", ")
            ));
            continue;
        }
        table(&mut out, &tenant.changes);
    }
    for cell in &diff.cells {
        out.push_str(&format!(
            "\n### Cell {} ({})\n\n",
            md(&cell.cell),
            status_word(cell.status)
        ));
        table(&mut out, &cell.changes);
    }
    out
}

/// The diff as one JSON document.
pub fn json(diff: &ReviewDiff) -> Result<String, serde_json::Error> {
    let mut document = serde_json::to_value(diff)?;
    if let serde_json::Value::Object(fields) = &mut document {
        // The envelope of every JSON document tenantc prints (docs/json.md).
        fields.insert(
            "tenantc".to_string(),
            serde_json::Value::from(crate::diag::render::JSON_ENVELOPE_VERSION),
        );
        fields.insert("kind".to_string(), serde_json::Value::from("diff"));
        fields.insert(
            "security_changes".to_string(),
            serde_json::Value::from(diff.security_count()),
        );
    }
    let mut text = serde_json::to_string_pretty(&document)?;
    text.push('\n');
    Ok(text)
}

/// Lines of one file's diff shown before it is cut.
pub const MAX_FILE_LINES: usize = 400;
/// Lines of the whole file diff shown before the rest is only counted.
pub const MAX_TOTAL_LINES: usize = 20_000;

/// A unified diff of two output trees (`a/` base, `b/` head), each file cut after
/// [`MAX_FILE_LINES`] lines and the whole after [`MAX_TOTAL_LINES`].
pub fn files(base: &OutputTree, head: &OutputTree) -> String {
    let paths: BTreeSet<&String> = base.keys().chain(head.keys()).collect();
    let mut out = String::new();
    let mut lines = 0usize;
    let mut skipped = 0usize;
    for path in paths {
        let (before, after) = (base.get(path), head.get(path));
        if before == after {
            continue;
        }
        if lines >= MAX_TOTAL_LINES {
            skipped += 1;
            continue;
        }
        let text = |bytes: Option<&Vec<u8>>| {
            bytes.map_or(String::new(), |bytes| {
                String::from_utf8_lossy(bytes).to_string()
            })
        };
        let body = crate::emit::diff::unified(&text(before), &text(after), MAX_FILE_LINES);
        let old = if before.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_string()
        };
        let new = if after.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_string()
        };
        let chunk = format!("--- {old}\n+++ {new}\n{body}");
        lines += chunk.lines().count();
        out.push_str(&chunk);
    }
    if skipped > 0 {
        out.push_str(&format!(
            "… {skipped} more changed files not shown (the diff stops after {MAX_TOTAL_LINES} lines)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::InputFile;
    use crate::testing::Rng;

    /// The keys of a tenant's admission params (`lower::admission::params`) that other facts of the
    /// view name, with the facts that do; every other key is named by [`param_facts`] for the
    /// tenant or [`cell_param_facts`] for the cell, and a test holds the three lists to every key
    /// the params carry.
    const PARAMS_NAMED_ELSEWHERE: &[(&str, &str)] = &[
        ("cell", "the cell of every fact"),
        ("tenant", "the tenant of every fact"),
        ("groups", "`<role> group`"),
        ("registries", "`image registry <registry>`"),
        ("weightDigests", "`model <name> <version>`"),
        ("namespaces", "`namespace <namespace>`"),
        (
            "inferenceNamespaces",
            "`namespace <namespace>` (its workload)",
        ),
        (
            "trainingServiceAccounts",
            "`namespace <namespace>` (its service account)",
        ),
        ("priorities", "`namespace <namespace>` (its priority)"),
        ("runtimeClasses", "`runtime class <name>` of the tenant"),
        (
            "gpuRuntimeClasses",
            "`runtime class <name> handler` of the cell",
        ),
    ];

    /// The keys [`param_facts`] names per tenant and cell: `hostAccess` and the list params.
    fn tenant_params() -> Vec<&'static str> {
        std::iter::once("hostAccess")
            .chain(TENANT_LIST_PARAMS.iter().map(|(key, ..)| *key))
            .collect()
    }

    /// The keys [`cell_param_facts`] names once per cell: the same for every tenant of the cell.
    fn cell_params() -> Vec<&'static str> {
        ["runtimeClassRequired", "maxGracePeriodSeconds"]
            .into_iter()
            .chain(CELL_LIST_PARAMS.iter().map(|(key, ..)| *key))
            .collect()
    }

    /// Issue 18 item 7: every key of the admission params is named by a fact of the diff, so
    /// a param that changes (host access above all) is never missing from the summary.
    #[test]
    fn every_admission_param_is_named_by_a_fact() {
        let review = example();
        let mut listed: Vec<&str> = PARAMS_NAMED_ELSEWHERE
            .iter()
            .map(|(key, _)| *key)
            .chain(tenant_params())
            .chain(cell_params())
            .collect();
        listed.sort_unstable();
        for tenant in &review.tenants {
            for cell in &tenant.cells {
                let keys: Vec<&str> = cell.admission.keys().map(String::as_str).collect();
                assert_eq!(keys, listed, "{} in {}", tenant.tenant, cell.cell);
            }
        }
        // Each named key gives a fact where its value is not empty.
        let facts = tenant_facts(&review.tenants[0]);
        let cell = &review.tenants[0].cells[0];
        for key in tenant_params() {
            if cell.admission[key].is_empty() {
                continue;
            }
            let value = if key == "hostAccess" {
                "host access".to_string()
            } else {
                cell.admission[key].split(',').next().unwrap().to_string()
            };
            assert!(
                facts
                    .keys()
                    .any(|(at, item)| at.as_deref() == Some(cell.cell.as_str())
                        && item.contains(&value)),
                "no fact names {key} = {value}: {:#?}",
                facts.keys()
            );
        }
        let summary = review.cells.iter().find(|c| c.cell == cell.cell).unwrap();
        let facts = cell_facts(summary, &review);
        for key in cell_params() {
            let value = cell.admission[key].split(',').next().unwrap().to_string();
            let named = facts.iter().any(|((_, item), fact)| {
                item.contains(&value) || fact.value.contains(&value) || fact.value == "yes"
            });
            assert!(named, "no cell fact names {key} = {value}");
        }
    }

    /// Issue 18 item 7: host access granted by a pool `owner` is named and marked, with the
    /// nodes it may be used on, and a floor rule that keeps something out is marked when it goes.
    #[test]
    fn host_access_and_withdrawn_floor_rules_are_marked() {
        let base = example();
        let mut head = base.clone();
        let tenant = head
            .tenants
            .iter_mut()
            .find(|tenant| {
                tenant
                    .cells
                    .iter()
                    .all(|cell| cell.admission["hostAccess"] == "false")
            })
            .unwrap();
        let name = tenant.tenant.clone();
        let cell = &mut tenant.cells[0];
        let at = cell.cell.clone();
        cell.admission.insert("hostAccess".into(), "true".into());
        cell.admission
            .insert("hostPools".into(), "pool=mine".into());
        let taint = cell.admission["poolTaints"]
            .split(',')
            .next()
            .unwrap()
            .to_string();
        cell.admission
            .insert("forbiddenTaints".into(), String::new());
        let changes = diff(&base, &head, "b", "h");
        let of_tenant: Vec<&Change> = changes
            .tenants
            .iter()
            .filter(|diff| diff.tenant == name)
            .flat_map(|diff| &diff.changes)
            .collect();
        let find = |item: &str| {
            of_tenant
                .iter()
                .find(|change| change.item == item && change.cell.as_deref() == Some(&at))
                .unwrap_or_else(|| panic!("no `{item}` in {of_tenant:#?}"))
        };
        let access = find("host access (RDMA devices, Pod Security exceptions)");
        assert_eq!(
            (access.before.as_deref(), access.after.as_deref()),
            (Some("denied"), Some("granted"))
        );
        assert_eq!(access.security.as_deref(), Some(HOST_ACCESS));
        assert_eq!(
            find("host use on nodes pool=mine").security.as_deref(),
            Some(HOST_ACCESS)
        );
        assert!(
            of_tenant
                .iter()
                .filter(|change| change.item.starts_with("may not tolerate "))
                .all(|change| change.after.is_none()
                    && change.security.as_deref() == Some(TOLERATION)),
            "{of_tenant:#?}"
        );
        assert!(!taint.is_empty());
        // The way back is listed, and marked only where it widens.
        let back = diff(&head, &base, "h", "b");
        assert!(
            back.changes()
                .all(|change| change.security.as_deref() != Some(HOST_ACCESS))
        );
    }

    /// A change as `(cell, item, before, after)`.
    type Row = (Option<String>, String, Option<String>, Option<String>);

    fn example() -> Review {
        let inputs: Vec<InputFile> = crate::testing::declaration_files(crate::testing::FLEET)
            .into_iter()
            .map(|(path, text)| InputFile {
                path,
                contents: text.into_bytes(),
            })
            .collect();
        let compilation = crate::compile(&inputs);
        super::super::review(compilation.plan.as_ref().unwrap())
    }

    /// A copy of `review` with seeded random edits: entries dropped, numbers moved.
    fn mutated(review: &Review, rng: &mut Rng) -> Review {
        let mut review = review.clone();
        if rng.below(4) == 0 && !review.tenants.is_empty() {
            let idx = rng.below(review.tenants.len());
            review.tenants.remove(idx);
        }
        for tenant in &mut review.tenants {
            if rng.below(3) == 0 {
                tenant.registries.push(format!("ghcr.io/x{}", rng.below(3)));
            }
            if rng.below(3) == 0 {
                tenant.registries.clear();
            }
            for cell in &mut tenant.cells {
                for reservation in &mut cell.reservations {
                    reservation.reserved += rng.below(5) as i64 - 2;
                    reservation.burst += rng.below(5) as i64 - 2;
                }
                if rng.below(3) == 0 {
                    cell.egress.pop();
                }
                if rng.below(3) == 0 {
                    cell.ceiling.pods += rng.below(3) as i64 - 1;
                }
            }
        }
        for cell in &mut review.cells {
            for priority in &mut cell.priorities {
                priority.value += rng.below(3) as i64 - 1;
            }
        }
        review
    }

    #[test]
    fn the_diff_is_empty_on_equal_reviews_and_reversing_it_swaps_the_sides() {
        let example = example();
        let mut rng = Rng(0x7e4a_11c3);
        for _ in 0..60 {
            let base = mutated(&example, &mut rng);
            let head = mutated(&example, &mut rng);
            assert!(diff(&base, &base, "b", "b").changes().next().is_none());
            let forward = diff(&base, &head, "b", "h");
            let backward = diff(&head, &base, "h", "b");
            let mut there: Vec<Row> = forward
                .changes()
                .map(|c| {
                    (
                        c.cell.clone(),
                        c.item.clone(),
                        c.before.clone(),
                        c.after.clone(),
                    )
                })
                .collect();
            let mut back: Vec<Row> = backward
                .changes()
                .map(|c| {
                    (
                        c.cell.clone(),
                        c.item.clone(),
                        c.after.clone(),
                        c.before.clone(),
                    )
                })
                .collect();
            there.sort();
            back.sort();
            assert_eq!(there, back);
            for change in forward.changes() {
                // Removing something never widens access (these reviews keep every floor rule),
                // and a number that falls never raises a quota.
                if change.after.is_none() {
                    assert_eq!(change.security, None, "{change:?}");
                }
                let numbers = (
                    change.before.as_deref().and_then(|v| v.parse::<i64>().ok()),
                    change.after.as_deref().and_then(|v| v.parse::<i64>().ok()),
                );
                if let (Some(before), Some(after)) = numbers
                    && change.security.as_deref() == Some(HIGHER_QUOTA)
                {
                    assert!(after > before, "{change:?}");
                }
                if let (Some(before), Some(after)) = numbers
                    && change.item.starts_with("reserved on")
                {
                    assert_eq!(change.security.is_some(), after > before, "{change:?}");
                }
                if change.item.starts_with("image registry") && change.before.is_none() {
                    assert_eq!(change.security.as_deref(), Some(NEW_REGISTRY));
                }
                if change.item.starts_with("priority class") {
                    assert!(change.replaced_on_sync, "{change:?}");
                }
            }
        }
    }

    #[test]
    fn markdown_escapes_what_declarations_say() {
        assert_eq!(
            md("a|b <img src=x> [l](u) `c` *e* @team\nnext & $x$"),
            "a\\|b \\<img src=x\\> \\[l\\](u) \\`c\\` \\*e\\* \\@team next &amp; \\$x\\$"
        );
        let mut review = example();
        let mut head = review.clone();
        head.tenants[0].registries.push("evil|<b>x</b>".to_string());
        review.tenants[0].registries.clear();
        let text = markdown(&diff(&review, &head, "main", "work tree"));
        assert!(
            text.contains("image registry evil\\|\\<b\\>x\\</b\\>"),
            "{text}"
        );
        assert!(!text.contains("<b>"), "{text}");
    }
}
