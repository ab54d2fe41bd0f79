//! The reviewer view: per tenant, what it may read, write, reach and run, and what it reserves
//! where, computed from the resolved plan.
//!
//! Consumes: a [`Plan`] (never the declarations and never emitted YAML).
//! Produces: a [`Review`]: one [`AccessSummary`] per tenant, one [`CellSummary`] per cell (the
//! cell-wide facts a tenant change can ride on: priority classes, runtime classes, endpoints,
//! GitOps identities), and [`render`], the stable text the golden test keeps in
//! `golden/review/<tenant>.txt`; `diff.rs` compares two reviews for `tenantc diff`.
//!
//! Invariants:
//! - Pure and deterministic: tenants, cells, pools, namespaces, prefixes and rules are sorted or
//!   in the plan's own stable order, so the same plan renders the same bytes.
//! - Every fact is read from the plan or from the facts and plan functions the lowering itself
//!   writes from (`facts::rbac::access_of`, `plan::storage::read_prefixes` and `write_prefixes`,
//!   `plan::admission::params` for each tenant's admission params), so the view cannot claim
//!   other access than what is emitted.
//! - A tenant with no quota in any cell has no plan and so no summary: it is granted nothing.

pub mod diff;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::cloud::{google_account_email, role_arn};
use crate::facts::pod_security::PodSecurityLevel;
use crate::facts::rbac::TenantRole;
use crate::facts::rbac::{access_of, cluster_role_of};
use crate::plan::showback::{TenantMonthly, format_cents, tenant_monthly};
use crate::plan::storage::{IdentityPlan, read_prefixes, write_prefixes};
use crate::plan::{CellPlan, Plan, TenantPlan};

/// The reviewer view of a whole fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Review {
    /// One summary per tenant with a quota somewhere, sorted by tenant.
    pub tenants: Vec<AccessSummary>,
    /// One summary per cell, sorted by cell.
    pub cells: Vec<CellSummary>,
}

/// What one tenant may read, write, reach and run, and what it reserves where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessSummary {
    /// The tenant.
    pub tenant: String,
    /// Its declaring file, relative.
    pub source: String,
    /// Its org.
    pub org: String,
    /// Its team.
    pub team: String,
    /// Its trust class.
    pub trust: String,
    /// Its identity groups and what their roles grant in each of its namespaces, by role.
    pub groups: Vec<GroupAccess>,
    /// The image registries (with path prefix) its pods may pull from, as declared.
    pub registries: Vec<String>,
    /// Its verified model weights.
    pub models: Vec<ModelAccess>,
    /// Per cell it has a quota in, sorted by cell.
    pub cells: Vec<CellAccess>,
}

/// One identity group of a tenant and the tenant role it is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupAccess {
    /// `admin`, `member` or `viewer`.
    pub role: TenantRole,
    /// The group name.
    pub group: String,
    /// The ClusterRole its RoleBindings name.
    pub cluster_role: String,
    /// What the role grants, per resource, sorted by API group and resource: the rows of
    /// `facts::rbac::access_of` the schedulers and device modes of the tenant's cells.
    pub rules: Vec<RuleAccess>,
}

/// The verbs a role holds on one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleAccess {
    /// The API group, empty for the core group.
    pub api_group: String,
    /// The resource, or `resource/subresource`.
    pub resource: String,
    /// The verbs, in the table's order.
    pub verbs: Vec<String>,
    /// For a tenant whose cells run different backends, the backend whose cells alone grant
    /// the row, as the declaration spells it: a scheduler (`kueue`, `volcano`) for its kinds,
    /// `dra` for ResourceClaims; `None` when every cell of the tenant grants it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_in: Option<String>,
}

impl RuleAccess {
    /// `resource` for the core group, `group/resource` otherwise.
    pub fn qualified(&self) -> String {
        if self.api_group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.api_group, self.resource)
        }
    }
}

/// A verified model version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelAccess {
    /// The model.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Where its weights are.
    pub prefix: String,
    /// The model-signing root digest the admission floor pins.
    pub digest: String,
    /// How it was signed.
    pub signature: String,
}

/// What a tenant gets in one cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellAccess {
    /// The cell.
    pub cell: String,
    /// Its GPU reservations per pool and resource, in pool order.
    pub reservations: Vec<ReservationAccess>,
    /// Its cpu, memory and pods ceilings.
    pub ceiling: CeilingAccess,
    /// The pools its pods can be admitted to, in pool order.
    pub reachable_pools: Vec<String>,
    /// The pools the cell reserves for it (`owner`), in pool order: closed to every other
    /// tenant, and the only pools where it can get host access.
    pub owned_pools: Vec<String>,
    /// Whether its pods may use RDMA devices and its Pod Security exceptions' capabilities
    /// (`plan/host.rs`), and why; the host's network, PID and IPC are never granted.
    pub host_access: String,
    /// Its namespaces, sorted by workload kind.
    pub namespaces: Vec<NamespaceAccess>,
    /// Where its pods may connect to, one line per NetworkPolicy peer.
    pub egress: Vec<String>,
    /// Who may connect to its pods, one line per NetworkPolicy peer.
    pub ingress: Vec<String>,
    /// The runtime classes its GPU pods may name, sorted by name.
    pub runtime_classes: Vec<RuntimeAccess>,
    /// Its object-storage grants per namespace, where the cell declares storage.
    pub storage: Vec<StorageAccess>,
    /// Its admission params in the cell, exactly as `plan::admission::params` gives them to the emitted ConfigMap: what
    /// the tenant floor judges its requests by; `diff.rs` names every key.
    pub admission: BTreeMap<String, String>,
    /// The chargeback labels on its Namespaces, ClusterQueue and LocalQueues, as the plan
    /// computed them (`plan/metering.rs`), sorted by key.
    pub metering_labels: Vec<(String, String)>,
    /// What its reservations in the cell cost a month, from the cell's showback figures.
    pub cost: TenantMonthly,
    /// Its limits on the cell's shared models (`plan/serving.rs`), sorted by model.
    pub serving: Vec<ServingAccess>,
}

/// A tenant's limits on one shared model, as the gateway policies hold them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServingAccess {
    /// The model.
    pub model: String,
    /// Its engine.
    pub stack: String,
    /// Requests per second the gateway lets through.
    pub requests_per_second: i64,
    /// Concurrent requests.
    pub concurrency: i64,
    /// The cache partition setting, `field=value`.
    pub cache: String,
}

/// A reservation on one pool resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReservationAccess {
    /// The pool.
    pub pool: String,
    /// The extended resource.
    pub resource: String,
    /// Devices reserved (Kueue nominal quota).
    pub reserved: i64,
    /// Devices it may borrow beyond (Kueue borrowing limit).
    pub burst: i64,
    /// Devices it lends, where limited.
    pub lend: Option<i64>,
}

/// A tenant's ceilings in a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CeilingAccess {
    /// CPU requests.
    pub cpu: String,
    /// Memory requests.
    pub memory: String,
    /// Pods.
    pub pods: i64,
}

/// One namespace of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamespaceAccess {
    /// The namespace.
    pub name: String,
    /// Its workload kind.
    pub workload: String,
    /// Its workload's ServiceAccount.
    pub service_account: String,
    /// The priority class its pods may use.
    pub priority: Option<String>,
    /// The Pod Security level its `enforce` label names.
    pub pod_security: PodSecurityLevel,
    /// Its reviewed exceptions to `restricted`.
    pub exceptions: Vec<ExceptionAccess>,
    /// Its ResourceQuota keys beyond cpu, memory, pods and GPUs that are not zero, sorted.
    pub quota: Vec<(String, String)>,
}

/// A reviewed Pod Security exception.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionAccess {
    /// Its name.
    pub name: String,
    /// The capabilities it lets containers add.
    pub capabilities: Vec<String>,
    /// Who approved it.
    pub approved_by: String,
}

/// A runtime class a tenant may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeAccess {
    /// The RuntimeClass.
    pub name: String,
    /// Its CRI handler.
    pub handler: String,
}

/// The object-storage grants of one tenant namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageAccess {
    /// The namespace whose ServiceAccount holds them.
    pub namespace: String,
    /// The cloud identity (AWS role ARN or Google service account).
    pub identity: String,
    /// The buckets the grants apply to.
    pub buckets: Vec<String>,
    /// Object prefixes it may read: a prefix read in every bucket as is, one read in some
    /// buckets only (a shared base granted there) as `<prefix> in <bucket>, <bucket>`.
    pub read: Vec<String>,
    /// Object prefixes it may write.
    pub write: Vec<String>,
}

/// The cell-wide facts a review needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellSummary {
    /// The cell.
    pub cell: String,
    /// Its declaring file, relative.
    pub source: String,
    /// Its priority classes, sorted by name.
    pub priorities: Vec<PrioritySummary>,
    /// Its runtime classes, sorted by name.
    pub runtime_classes: Vec<RuntimeClassSummary>,
    /// The endpoints tenant pods may reach on 443, `(name, cidr)`, sorted by name.
    pub endpoints: Vec<(String, String)>,
    /// The GitOps controller's user, which may change managed objects.
    pub gitops_user: String,
    /// The break-glass group, which may change managed objects.
    pub break_glass: String,
    /// Its pools' Kueue ResourceFlavors and Topologies, in pool order.
    pub pools: Vec<PoolSummary>,
}

/// A pool's ResourceFlavor and Topology; with a topology, the flavor's node labels, tolerations
/// and topology name, and the Topology's levels, cannot change in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolSummary {
    /// The pool.
    pub name: String,
    /// Its ResourceFlavor.
    pub flavor: String,
    /// The flavor's node labels, `key=value`, sorted by key.
    pub node_labels: Vec<String>,
    /// The pool's taints, which the flavor tolerates, as kubectl prints them.
    pub taints: Vec<String>,
    /// Its Topology's name, where it declares one.
    pub topology: Option<String>,
    /// The Topology's levels, coarse to fine.
    pub levels: Vec<String>,
    /// The tenant the cell reserves the pool for, where it names one.
    pub owner: Option<String>,
}

/// A priority class; `value` and `preempt` cannot change in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrioritySummary {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: i64,
    /// Whether its pods preempt lower ones (`preemptionPolicy`).
    pub preempt: bool,
}

/// A runtime class; `handler` cannot change in place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeClassSummary {
    /// Its name.
    pub name: String,
    /// Its CRI handler.
    pub handler: String,
    /// The trust classes that may use it.
    pub trust: Vec<String>,
}

/// The reviewer view of a plan.
pub fn review(plan: &Plan) -> Review {
    // The backends of the cells each tenant runs in, which decide the rows of its roles.
    let mut backends: BTreeMap<&str, CellBackends> = BTreeMap::new();
    for cell in &plan.cells {
        for tenant in &cell.tenants {
            let entry = backends.entry(tenant.name.as_str()).or_default();
            entry.schedulers.push(cell.backends.scheduler);
            entry.devices.push(cell.backends.devices);
        }
    }
    let mut tenants: BTreeMap<String, AccessSummary> = BTreeMap::new();
    for cell in &plan.cells {
        for tenant in &cell.tenants {
            tenants
                .entry(tenant.name.clone())
                .or_insert_with(|| {
                    tenant_summary(
                        tenant,
                        backends
                            .get(tenant.name.as_str())
                            .unwrap_or(&CellBackends::default()),
                    )
                })
                .cells
                .push(cell_access(cell, tenant));
        }
    }
    let mut tenants: Vec<AccessSummary> = tenants.into_values().collect();
    for summary in &mut tenants {
        summary
            .cells
            .sort_by(|left, right| left.cell.cmp(&right.cell));
    }
    let mut cells: Vec<CellSummary> = plan.cells.iter().map(cell_summary).collect();
    cells.sort_by(|left, right| left.cell.cmp(&right.cell));
    Review { tenants, cells }
}

/// The schedulers and device modes of the cells a tenant runs in, one entry per cell.
#[derive(Debug, Default)]
struct CellBackends {
    schedulers: Vec<crate::facts::backends::Scheduler>,
    devices: Vec<crate::facts::backends::DeviceMode>,
}

impl CellBackends {
    /// The backend whose cells alone grant `access`, when the tenant also runs in cells that do
    /// not: a scheduler's kinds, or a DRA cell's claims.
    fn only_in(&self, row: &crate::facts::rbac::Access) -> Option<String> {
        use crate::facts::backends::DeviceMode;
        use crate::facts::rbac::{ACCESS, DRA_ACCESS, access};
        if ACCESS.contains(row) {
            return None;
        }
        if DRA_ACCESS.contains(row) {
            let every = self.devices.iter().all(|mode| *mode == DeviceMode::Dra);
            return (!every).then(|| DeviceMode::Dra.to_string());
        }
        self.schedulers
            .iter()
            .copied()
            .find(|scheduler| access(*scheduler, DeviceMode::DevicePlugin).contains(row))
            .filter(|_| {
                self.schedulers
                    .iter()
                    .any(|other| !access(*other, DeviceMode::DevicePlugin).contains(row))
            })
            .map(|scheduler| scheduler.to_string())
    }
}

/// A tenant's summary, its roles' rows those of every backend it runs under.
fn tenant_summary(tenant: &TenantPlan, backends: &CellBackends) -> AccessSummary {
    let table = access_of(&backends.schedulers, &backends.devices);
    let groups = tenant
        .groups
        .iter()
        .map(|(role, group)| {
            let role = *role;
            GroupAccess {
                role,
                group: group.clone(),
                cluster_role: cluster_role_of(role).to_string(),
                rules: table
                    .iter()
                    .filter(|access| !access.verbs(role).is_empty())
                    .map(|access| RuleAccess {
                        api_group: access.api_group.to_string(),
                        resource: access.resource.to_string(),
                        verbs: access
                            .verbs(role)
                            .iter()
                            .map(|verb| verb.to_string())
                            .collect(),
                        only_in: backends.only_in(access),
                    })
                    .collect(),
            }
        })
        .collect();
    let mut registries = tenant.registries.clone();
    registries.sort();
    registries.dedup();
    AccessSummary {
        tenant: tenant.name.clone(),
        source: tenant.source.clone(),
        org: tenant.org.clone(),
        team: tenant.team.clone(),
        trust: tenant.trust.to_string(),
        groups,
        registries,
        models: tenant
            .weights
            .iter()
            .map(|model| ModelAccess {
                name: model.name.clone(),
                version: model.version.clone(),
                prefix: model.prefix.clone(),
                digest: model.digest.clone(),
                signature: model.signature.clone(),
            })
            .collect(),
        cells: Vec::new(),
    }
}

fn cell_access(cell: &CellPlan, tenant: &TenantPlan) -> CellAccess {
    let reservations = tenant
        .queue
        .flavors
        .iter()
        .flat_map(|flavor| {
            flavor
                .resources
                .iter()
                .filter(|entitlement| {
                    entitlement.nominal > 0
                        || entitlement.borrowing > 0
                        || entitlement.lending.is_some_and(|lend| lend > 0)
                })
                .map(|entitlement| ReservationAccess {
                    pool: flavor.pool.clone(),
                    resource: entitlement.resource.clone(),
                    reserved: entitlement.nominal,
                    burst: entitlement.borrowing,
                    lend: entitlement.lending,
                })
        })
        .collect();
    let own: Vec<String> = tenant
        .namespaces
        .iter()
        .map(|namespace| namespace.name.clone())
        .collect();
    let network = &cell.network;
    let mut egress = vec![format!(
        "dns: pods {}={} in namespace {} on udp and tcp 53",
        network.dns_selector.0, network.dns_selector.1, network.dns_namespace
    )];
    if let Some(block) = &network.node_local_dns {
        egress.push(format!("node-local dns: {block} on udp and tcp 53"));
    }
    egress.push(format!("own namespaces: {}", own.join(", ")));
    for (name, cidr) in &network.endpoints {
        egress.push(format!("endpoint {name}: {cidr} on tcp 443"));
    }
    let mut ingress = vec![format!("own namespaces: {}", own.join(", "))];
    if let Some((namespace, selector)) = &network.metrics {
        ingress.push(match selector {
            Some((key, value)) => format!("metrics: pods {key}={value} in namespace {namespace}"),
            None => format!("metrics: every pod in namespace {namespace}"),
        });
    }
    let runtime_classes = cell
        .runtime_classes
        .iter()
        .filter(|class| class.trust.contains(&tenant.trust))
        .map(|class| RuntimeAccess {
            name: class.name.clone(),
            handler: class.handler.clone(),
        })
        .collect();
    let storage = cell
        .storage
        .as_ref()
        .map(|storage| {
            tenant
                .namespaces
                .iter()
                .map(|namespace| StorageAccess {
                    namespace: namespace.name.clone(),
                    identity: match &storage.identity {
                        IdentityPlan::AwsPodIdentity { account, .. }
                        | IdentityPlan::AwsIrsa { account, .. } => role_arn(
                            account,
                            &cell.name,
                            &tenant.name,
                            namespace.workload.as_str(),
                        ),
                        IdentityPlan::Gcp { project, .. } => {
                            google_account_email(project, &tenant.name, namespace.workload.as_str())
                        }
                    },
                    buckets: storage.buckets.clone(),
                    read: read_by_bucket(tenant, namespace.workload.as_str(), &storage.buckets),
                    write: write_prefixes(tenant, namespace.workload.as_str()),
                })
                .collect()
        })
        .unwrap_or_default();
    CellAccess {
        cell: cell.name.clone(),
        reservations,
        ceiling: CeilingAccess {
            cpu: tenant.queue.cpu.clone(),
            memory: tenant.queue.memory.clone(),
            pods: tenant.queue.pods,
        },
        reachable_pools: tenant
            .reach
            .iter()
            .filter(|reach| reach.reachable)
            .map(|reach| reach.pool.clone())
            .collect(),
        owned_pools: cell
            .pools
            .iter()
            .filter(|pool| pool.owner.as_deref() == Some(tenant.name.as_str()))
            .map(|pool| pool.name.clone())
            .collect(),
        host_access: format!(
            "{} ({})",
            if tenant.cell_host_access.granted {
                "granted"
            } else {
                "not granted"
            },
            tenant.cell_host_access.why
        ),
        namespaces: tenant
            .namespaces
            .iter()
            .map(|namespace| NamespaceAccess {
                name: namespace.name.clone(),
                workload: namespace.workload.to_string(),
                service_account: namespace.service_account.clone(),
                priority: namespace.priority.clone(),
                pod_security: namespace.enforce_level(),
                exceptions: namespace
                    .exceptions
                    .iter()
                    .map(|exception| ExceptionAccess {
                        name: exception.name.clone(),
                        capabilities: exception.capabilities.clone(),
                        approved_by: exception.approved_by.clone(),
                    })
                    .collect(),
                quota: namespace
                    .other_quota
                    .iter()
                    .filter(|(_, value)| value.as_str() != "0")
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            })
            .collect(),
        egress,
        ingress,
        runtime_classes,
        storage,
        admission: crate::plan::admission::params(tenant, cell),
        metering_labels: tenant
            .chargeback
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        cost: tenant_monthly(&cell.showback, &tenant.name),
        serving: tenant
            .serving
            .iter()
            .map(|limits| ServingAccess {
                model: limits.model.clone(),
                stack: limits.stack.as_str().to_string(),
                requests_per_second: limits.requests_per_second,
                concurrency: limits.concurrency,
                cache: format!("{}={}", limits.cache.field, limits.cache.value),
            })
            .collect(),
    }
}

fn cell_summary(cell: &CellPlan) -> CellSummary {
    CellSummary {
        cell: cell.name.clone(),
        source: cell.source.clone(),
        priorities: cell
            .priorities
            .iter()
            .map(|priority| PrioritySummary {
                name: priority.name.clone(),
                value: priority.value,
                preempt: priority.preempt,
            })
            .collect(),
        runtime_classes: cell
            .runtime_classes
            .iter()
            .map(|class| RuntimeClassSummary {
                name: class.name.clone(),
                handler: class.handler.clone(),
                trust: class.trust.iter().map(|trust| trust.to_string()).collect(),
            })
            .collect(),
        endpoints: cell.network.endpoints.clone(),
        gitops_user: cell.gitops.user.clone(),
        break_glass: cell.gitops.break_glass.clone(),
        pools: cell
            .pools
            .iter()
            .map(|pool| PoolSummary {
                name: pool.name.clone(),
                flavor: pool.flavor.clone(),
                node_labels: pool
                    .node_labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect(),
                taints: pool.taints.iter().map(|taint| taint.display()).collect(),
                topology: pool.topology.as_ref().map(|topology| topology.name.clone()),
                levels: pool
                    .topology
                    .as_ref()
                    .map(|topology| {
                        topology
                            .levels
                            .iter()
                            .map(|level| level.label.clone())
                            .collect()
                    })
                    .unwrap_or_default(),
                owner: pool.owner.clone(),
            })
            .collect(),
    }
}

/// The reviewer view of one tenant as text: the file the golden test keeps in
/// `golden/review/<tenant>.txt`.
pub fn render(summary: &AccessSummary) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!(
        "# What tenant {} may read, write, reach and run, and what it reserves where.",
        summary.tenant
    ));
    line("# Generated by the tenantc golden test from the resolved plan; a change here changes access.".to_string());
    line(String::new());
    line(format!("tenant {}", summary.tenant));
    line(format!("  declared in {}", summary.source));
    line(format!(
        "  org {}, team {}, trust {}",
        summary.org, summary.team, summary.trust
    ));
    line(String::new());
    line("groups (bound in every namespace of the tenant)".to_string());
    if summary.groups.is_empty() {
        line("  none".to_string());
    }
    for group in &summary.groups {
        line(format!(
            "  {} {} -> ClusterRole {}",
            group.role, group.group, group.cluster_role
        ));
        for rule in &group.rules {
            let only = rule
                .only_in
                .as_ref()
                .map(|backend| format!(" (in its {backend} cells only)"))
                .unwrap_or_default();
            line(format!(
                "    {}: {}{only}",
                rule.qualified(),
                rule.verbs.join(" ")
            ));
        }
    }
    line(String::new());
    line("runs".to_string());
    line(format!("  images from: {}", list(&summary.registries)));
    if summary.models.is_empty() {
        line("  verified models: none".to_string());
    }
    for model in &summary.models {
        line(format!(
            "  verified model {} {}: {} at {} ({})",
            model.name, model.version, model.digest, model.prefix, model.signature
        ));
    }
    for cell in &summary.cells {
        line(String::new());
        line(format!("cell {}", cell.cell));
        line("  reserves".to_string());
        if cell.reservations.is_empty() {
            line("    no GPUs".to_string());
        }
        for reservation in &cell.reservations {
            let lend = reservation
                .lend
                .map(|lend| format!(", lends at most {lend}"))
                .unwrap_or_default();
            line(format!(
                "    pool {} {}: reserved {}, burst {}{lend}",
                reservation.pool, reservation.resource, reservation.reserved, reservation.burst
            ));
        }
        line(format!(
            "    ceiling: cpu {}, memory {}, pods {}",
            cell.ceiling.cpu, cell.ceiling.memory, cell.ceiling.pods
        ));
        line(format!("  reaches pools: {}", list(&cell.reachable_pools)));
        if !cell.owned_pools.is_empty() {
            line(format!(
                "  owns pools (closed to other tenants): {}",
                list(&cell.owned_pools)
            ));
        }
        line(format!(
            "  RDMA devices and Pod Security exceptions: {}",
            cell.host_access
        ));
        line("  host network, PID and IPC: never granted".to_string());
        line("  namespaces".to_string());
        for namespace in &cell.namespaces {
            line(format!(
                "    {} ({}): service account {}, priority {}, pod security {}",
                namespace.name,
                namespace.workload,
                namespace.service_account,
                namespace.priority.as_deref().unwrap_or("none"),
                namespace.pod_security
            ));
            for exception in &namespace.exceptions {
                line(format!(
                    "      exception {}: adds {}, approved by {}",
                    exception.name,
                    exception.capabilities.join(", "),
                    exception.approved_by
                ));
            }
            for (key, value) in &namespace.quota {
                line(format!("      quota {key}: {value}"));
            }
        }
        line("  network".to_string());
        for peer in &cell.egress {
            line(format!("    egress to {peer}"));
        }
        for peer in &cell.ingress {
            line(format!("    ingress from {peer}"));
        }
        let classes: Vec<String> = cell
            .runtime_classes
            .iter()
            .map(|class| format!("{} (handler {})", class.name, class.handler))
            .collect();
        line(format!("  runtime classes: {}", list(&classes)));
        if cell.storage.is_empty() {
            line("  object storage: none".to_string());
        }
        line(format!(
            "  metering labels: {}",
            list(
                &cell
                    .metering_labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
            )
        ));
        line(format!(
            "  monthly cost: committed {}, burst {} if fully used{}",
            format_cents(cell.cost.committed_cents),
            format_cents(cell.cost.burst_cents),
            if cell.cost.unpriced_pools.is_empty() {
                String::new()
            } else {
                format!(
                    " (pools without a price: {})",
                    cell.cost.unpriced_pools.join(", ")
                )
            }
        ));
        for row in &cell.cost.rows {
            let money =
                |cents: Option<i64>| cents.map_or_else(|| "no price".to_string(), format_cents);
            line(format!(
                "    pool {} {}: reserved {} for {}, burst {} for {}",
                row.pool,
                row.resource,
                row.reserved,
                money(row.reserved_monthly),
                row.burst,
                money(row.burst_monthly)
            ));
        }
        for limits in &cell.serving {
            line(format!(
                "  shared model {} ({}): {} requests per second, {} concurrent, {}",
                limits.model,
                limits.stack,
                limits.requests_per_second,
                limits.concurrency,
                limits.cache
            ));
        }
        for storage in &cell.storage {
            line(format!(
                "  object storage of {} as {}",
                storage.namespace, storage.identity
            ));
            line(format!("    buckets: {}", list(&storage.buckets)));
            line(format!("    reads: {}", list(&storage.read)));
            line(format!("    writes: {}", list(&storage.write)));
        }
    }
    out
}

/// What a workload reads over `buckets`, as [`StorageAccess::read`] lists it.
fn read_by_bucket(tenant: &TenantPlan, kind: &str, buckets: &[String]) -> Vec<String> {
    let per_bucket: Vec<(&String, Vec<String>)> = buckets
        .iter()
        .map(|bucket| (bucket, read_prefixes(tenant, kind, bucket)))
        .collect();
    let mut prefixes: Vec<&String> = per_bucket.iter().flat_map(|(_, read)| read).collect();
    prefixes.sort();
    prefixes.dedup();
    prefixes
        .into_iter()
        .map(|prefix| {
            let holding: Vec<&str> = per_bucket
                .iter()
                .filter(|(_, read)| read.contains(prefix))
                .map(|(bucket, _)| bucket.as_str())
                .collect();
            if holding.len() == per_bucket.len() {
                prefix.clone()
            } else {
                format!("{prefix} in {}", holding.join(", "))
            }
        })
        .collect()
}

/// The items joined by `, `, or `none`.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::InputFile;
    use crate::facts::rbac::Access;

    /// The fixture fleet (a copy of the example fleet) with `edit` applied to the text of `path`.
    fn example_with(path: &str, edit: impl Fn(&str) -> String) -> Review {
        let inputs: Vec<InputFile> = crate::testing::declaration_files(crate::testing::FLEET)
            .into_iter()
            .map(|(name, text)| {
                let text = if name == path { edit(&text) } else { text };
                InputFile {
                    path: name,
                    contents: text.into_bytes(),
                }
            })
            .collect();
        let compilation = crate::compile(&inputs);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        review(compilation.plan.as_ref().unwrap())
    }

    fn rendered(review: &Review) -> BTreeMap<String, String> {
        review
            .tenants
            .iter()
            .map(|summary| (summary.tenant.clone(), render(summary)))
            .collect()
    }

    #[test]
    fn every_widening_of_one_tenant_shows_in_its_view_and_nowhere_else() {
        const FILE: &str = "tenants/acme-research.kdl";
        let base = rendered(&example_with(FILE, str::to_string));
        let widenings: [(&str, &str, &str); 6] = [
            (
                "registry \"registry.acme.internal/research\"",
                "registry \"registry.acme.internal/research\"\n    registry \"ghcr.io/anyone\"",
                "ghcr.io/anyone",
            ),
            ("burst=32 gang=32", "burst=40 gang=32", "burst 40"),
            (
                "groups admin=\"acme-research-admins\"",
                "groups viewer=\"everyone-at-acme\" admin=\"acme-research-admins\"",
                "viewer everyone-at-acme -> ClusterRole tenantc:tenant-viewer",
            ),
            (
                "exception \"rdma\"",
                "exception \"pinned\" capabilities=\"IPC_LOCK\" reason=\"r\" approved-by=\"x\"\n        exception \"rdma\"",
                "exception pinned: adds IPC_LOCK, approved by x",
            ),
            ("cpu=\"2048\"", "cpu=\"4096\"", "ceiling: cpu 4096"),
            (
                "storage=\"200Ti\"",
                "storage=\"300Ti\"",
                "requests.storage: 300Ti",
            ),
        ];
        for (from, to, shown) in widenings {
            let head = rendered(&example_with(FILE, |text| {
                assert!(text.contains(from), "{from}");
                text.replacen(from, to, 1)
            }));
            for (tenant, text) in &head {
                if tenant == "acme-research" {
                    assert_ne!(&base[tenant], text, "{to}");
                    assert!(text.contains(shown), "{to}:\n{text}");
                } else {
                    assert_eq!(&base[tenant], text, "{to} changed the view of {tenant}");
                }
            }
        }
    }

    #[test]
    fn a_pool_the_cell_reserves_for_a_tenant_shows_in_its_view_and_nowhere_else() {
        const FILE: &str = "cells/eu-west-4b.kdl";
        const FROM: &str = "taint \"train-exclusive\" \"true\" effect=\"NoSchedule\"\n        price per-gpu-hour=1.40\n";
        let base = rendered(&example_with(FILE, str::to_string));
        let head = rendered(&example_with(FILE, |text| {
            assert!(text.contains(FROM), "{text}");
            text.replacen(FROM, &format!("{FROM}        owner \"globex-vision\"\n"), 1)
        }));
        for (tenant, text) in &head {
            if tenant == "globex-vision" {
                assert!(
                    text.contains("  owns pools (closed to other tenants): a100-train\n"),
                    "{text}"
                );
                assert!(!base[tenant].contains("owns pools"), "{}", base[tenant]);
            } else {
                assert_eq!(
                    &base[tenant], text,
                    "the owner changed the view of {tenant}"
                );
            }
        }
    }

    #[test]
    fn the_view_claims_exactly_the_rows_of_the_tenant_roles() {
        let review = example_with("tenants/acme-research.kdl", str::to_string);
        for summary in &review.tenants {
            for group in &summary.groups {
                let claimed: Vec<(&str, &str, Vec<&str>)> = group
                    .rules
                    .iter()
                    .map(|rule| {
                        (
                            rule.api_group.as_str(),
                            rule.resource.as_str(),
                            rule.verbs.iter().map(String::as_str).collect(),
                        )
                    })
                    .collect();
                let column = |access: &Access| match group.role {
                    TenantRole::Admin => access.admin,
                    TenantRole::Member => access.member,
                    TenantRole::Viewer => access.viewer,
                };
                // The example's cells are Kueue cells with the device plugin.
                let rows = crate::facts::rbac::access(
                    crate::facts::backends::Scheduler::Kueue,
                    crate::facts::backends::DeviceMode::DevicePlugin,
                );
                let table: Vec<(&str, &str, Vec<&str>)> = rows
                    .iter()
                    .filter(|access| !column(access).is_empty())
                    .map(|access| (access.api_group, access.resource, column(access).to_vec()))
                    .collect();
                assert_eq!(claimed, table, "{} {}", summary.tenant, group.role);
                assert_eq!(group.cluster_role.as_str(), cluster_role_of(group.role));
            }
        }
    }

    #[test]
    fn a_price_change_is_a_metering_change_of_exactly_the_tenant_it_bills() {
        let base = example_with("cells/us-east-1a.kdl", str::to_string);
        // The first price of the cell is the h100-train pool's, which the cell reserves for
        // acme-research (64 GPUs reserved, 32 of burst).
        let head = example_with("cells/us-east-1a.kdl", |text| {
            text.replacen("price per-gpu-hour=2.10", "price per-gpu-hour=2.80", 1)
        });
        let diff = diff::diff(&base, &head, "base", "head");
        /// A change as `(tenant, item, before, after, area)`.
        type Row<'a> = (
            &'a str,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            diff::Area,
        );
        let changes: Vec<Row<'_>> = diff
            .tenants
            .iter()
            .flat_map(|tenant| {
                tenant.changes.iter().map(move |change| {
                    (
                        tenant.tenant.as_str(),
                        change.item.as_str(),
                        change.before.as_deref(),
                        change.after.as_deref(),
                        change.area,
                    )
                })
            })
            .collect();
        // 64 GPUs x 730 hours x 2.10 = 98,112.00 and x 2.80 = 130,816.00; the 32 GPUs of burst
        // 49,056.00 and 65,408.00.
        assert_eq!(
            changes,
            [
                (
                    "acme-research",
                    "committed monthly cost",
                    Some("98112.00"),
                    Some("130816.00"),
                    diff::Area::Metering
                ),
                (
                    "acme-research",
                    "monthly cost of the burst if fully used",
                    Some("49056.00"),
                    Some("65408.00"),
                    diff::Area::Metering
                ),
            ]
        );
        assert_eq!(diff.security_count(), 0);
        let markdown = diff::markdown(&diff);
        assert!(
            markdown.contains("| metering | committed monthly cost | 98112.00 | 130816.00 |"),
            "{markdown}"
        );
    }

    #[test]
    fn the_view_shows_the_chargeback_labels_and_the_monthly_cost_of_the_showback() {
        let review = example_with("cells/us-east-1a.kdl", str::to_string);
        let serving = review
            .tenants
            .iter()
            .find(|tenant| tenant.tenant == "acme-serving")
            .unwrap();
        let cell = serving
            .cells
            .iter()
            .find(|cell| cell.cell == "us-east-1a")
            .unwrap();
        // MIG slices of an H100 (7 compute slices) at 2.10 a GPU-hour, 730 hours a month:
        // 16 x 1g.10gb = 16/7 GPU -> 3,504.00; 1 x 2g.20gb = 2/7 -> 438.00;
        // 2 x 3g.40gb = 6/7 -> 1,314.00; committed 5,256.00; burst 4 x 1g.10gb = 876.00.
        assert_eq!(cell.cost.committed_cents, 525_600);
        assert_eq!(cell.cost.burst_cents, 87_600);
        assert!(cell.cost.unpriced_pools.is_empty());
        let labels: BTreeMap<&str, &str> = cell
            .metering_labels
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        assert_eq!(labels["tenant.platform/tenant"], "acme-serving");
        assert_eq!(labels["tenant.platform/sku"], "H100-80GB-SXM");
        let text = render(serving);
        assert!(
            text.contains("  monthly cost: committed 5256.00, burst 876.00 if fully used\n"),
            "{text}"
        );
        assert!(
            text.contains("    pool h100-infer nvidia.com/mig-1g.10gb: reserved 16 for 3504.00, burst 4 for 876.00\n"),
            "{text}"
        );
    }

    /// The fixture's us-east-1a with the example's shared model, acme-serving at `concurrency`.
    fn serving_cell(text: &str, concurrency: u32) -> String {
        let serving = format!(
            "    serving {{\n        gateway \"envoy-gateway\" name=\"inference\" namespace=\"envoy-gateway-system\" tenant-header=\"x-tenantc-tenant\" claim=\"tenant\"\n        model \"llama-70b\" stack=\"vllm\" namespace=\"serving-llama\" service=\"llama-70b\" port=8000 requests-per-second=200 concurrency=64 prefix-cache=\"shared\" {{\n            tenant \"acme-serving\" requests-per-second=120 concurrency={concurrency}\n            tenant \"globex-vision\" requests-per-second=60 concurrency=24\n        }}\n    }}\n"
        );
        text.replacen(
            "    pool \"h100-train\" {",
            &format!("{serving}    pool \"h100-train\" {{"),
            1,
        )
    }

    #[test]
    fn a_serving_limit_shows_in_the_view_and_a_raised_one_is_a_security_change() {
        let base = example_with("cells/us-east-1a.kdl", |text| serving_cell(text, 40));
        let head = example_with("cells/us-east-1a.kdl", |text| serving_cell(text, 48));
        let serving = base
            .tenants
            .iter()
            .find(|tenant| tenant.tenant == "acme-serving")
            .unwrap();
        let text = render(serving);
        assert!(
            text.contains("  shared model llama-70b (vllm): 120 requests per second, 40 concurrent, cache_salt=tenantc:us-east-1a:llama-70b:acme-serving\n"),
            "{text}"
        );
        let diff = diff::diff(&base, &head, "base", "head");
        /// A change as `(tenant, item, before, after, security)`.
        type Row<'a> = (
            &'a str,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let changes: Vec<Row<'_>> = diff
            .tenants
            .iter()
            .flat_map(|tenant| {
                tenant.changes.iter().map(move |change| {
                    (
                        tenant.tenant.as_str(),
                        change.item.as_str(),
                        change.before.as_deref(),
                        change.after.as_deref(),
                        change.security.as_deref(),
                    )
                })
            })
            .collect();
        assert_eq!(
            changes,
            [(
                "acme-serving",
                "concurrency on shared model llama-70b",
                Some("40"),
                Some("48"),
                Some("higher quota")
            )]
        );
    }
}
