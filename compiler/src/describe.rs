//! `tenantc describe`: one tenant's view of the plan, cell by cell.
//!
//! Consumes: a [`Plan`], a tenant name and optionally a cell name. Produces: a [`View`] of the
//! tenant's plan in each cell it has a quota in (or a [`LookupError`] with a did-you-mean and the
//! names it knows), rendered by [`human`] as text for people or by [`json`] as one JSON document
//! of the plan structs: org, team and trust; the namespaces with their ResourceQuota parts and
//! allowed priority; the ClusterQueue with its cohort and entitlements per flavor and resource;
//! the effective capacity per pool resource with its three terms and the one that binds; and the
//! pools the tenant can reach and cannot, each with the reason and the tenant the cell reserves
//! the pool for, if any.
//!
//! Invariants: reads only the plan, never the emitted YAML; cells are in the plan's sorted order;
//! the binding term shown is the plan's; names typed by the user are escaped before they are
//! shown.

use std::fmt::Write as _;

use serde_json::Value;

use crate::diag::{did_you_mean, list_names};
use crate::escape::escape_str;
use crate::plan::showback::{HOURS_PER_MONTH, format_cents, tenant_monthly};
use crate::plan::{CEILING_FLAVOR, CellPlan, LOCAL_QUEUE, Plan, TenantPlan};
use crate::report::{TERMS, term_value};

/// How many known names an unknown-name error lists before it counts the rest.
const LISTED_NAMES: usize = 10;

/// One tenant in the cells chosen, in the plan's order.
#[derive(Debug, Clone)]
pub struct View<'a> {
    /// The tenant.
    pub tenant: &'a str,
    /// Each cell with the tenant's plan in it.
    pub cells: Vec<(&'a CellPlan, &'a TenantPlan)>,
}

/// Why a tenant or a cell could not be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// No declaration names the tenant.
    UndeclaredTenant {
        /// The name asked for, escaped.
        tenant: String,
        /// A close name, if any.
        suggestion: Option<String>,
        /// Every declared tenant, sorted.
        tenants: Vec<String>,
    },
    /// The tenant is declared, but no cell has a quota for it, so nothing is planned for it.
    WithoutQuota {
        /// The tenant.
        tenant: String,
        /// Every tenant with a quota somewhere, sorted.
        tenants: Vec<String>,
    },
    /// No cell of that name.
    UnknownCell {
        /// The name asked for, escaped.
        cell: String,
        /// A close name, if any.
        suggestion: Option<String>,
        /// Every cell, sorted.
        cells: Vec<String>,
    },
    /// The cell exists but the tenant has no quota in it.
    NotInCell {
        /// The tenant.
        tenant: String,
        /// The cell asked for.
        cell: String,
        /// The cells the tenant has a quota in, sorted.
        cells: Vec<String>,
    },
}

impl LookupError {
    /// The error line, lowercase, with a did-you-mean where a name is close.
    pub fn message(&self) -> String {
        let hint = |suggestion: &Option<String>| {
            suggestion
                .as_ref()
                .map(|close| format!("; did you mean `{close}`?"))
                .unwrap_or_default()
        };
        match self {
            LookupError::UndeclaredTenant {
                tenant, suggestion, ..
            } => format!("tenant `{tenant}` is not declared{}", hint(suggestion)),
            LookupError::WithoutQuota { tenant, .. } => {
                format!("tenant `{tenant}` has no quota in any cell")
            }
            LookupError::UnknownCell {
                cell, suggestion, ..
            } => format!("cell `{cell}` is not declared{}", hint(suggestion)),
            LookupError::NotInCell { tenant, cell, .. } => {
                format!("tenant `{tenant}` has no quota in cell `{cell}`")
            }
        }
    }

    /// The help line: the names that exist.
    pub fn help(&self) -> String {
        match self {
            LookupError::UndeclaredTenant { tenants, .. } if tenants.is_empty() => {
                "no tenant is declared; a tenant is a file `tenants/<name>.kdl` or `.yaml`"
                    .to_string()
            }
            LookupError::UndeclaredTenant { tenants, .. } => format!(
                "declared tenants are {}",
                list_some(tenants.iter().map(String::as_str))
            ),
            LookupError::WithoutQuota { tenants, .. } if tenants.is_empty() => {
                "no tenant has a quota in any cell; a tenant is described where it has a `quota`"
                    .to_string()
            }
            LookupError::WithoutQuota { tenants, .. } => format!(
                "a tenant is described where it has a `quota`; tenants with a quota are {}",
                list_some(tenants.iter().map(String::as_str))
            ),
            LookupError::UnknownCell { cells, .. } => format!(
                "declared cells are {}",
                list_some(cells.iter().map(String::as_str))
            ),
            LookupError::NotInCell { tenant, cells, .. } => format!(
                "`{tenant}` has a quota in {}; leave out `--cell` to see every one",
                list_some(cells.iter().map(String::as_str))
            ),
        }
    }
}

/// At most [`LISTED_NAMES`] names as `a`, `b` and `c`, then how many more there are.
fn list_some<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.len() <= LISTED_NAMES {
        return list_names(names);
    }
    let shown: Vec<String> = names
        .iter()
        .take(LISTED_NAMES)
        .map(|name| format!("`{name}`"))
        .collect();
    format!(
        "{} and {} more",
        shown.join(", "),
        names.len().saturating_sub(LISTED_NAMES)
    )
}

/// Finds the tenant in every cell it has a quota in, or only in `cell`; `declared` names every
/// declared tenant, so that a name nobody declared is not reported as a tenant without quota.
pub fn lookup<'a>(
    plan: &'a Plan,
    declared: &[&str],
    tenant: &str,
    cell: Option<&str>,
) -> Result<View<'a>, LookupError> {
    if !declared.contains(&tenant) {
        let mut tenants: Vec<String> = declared.iter().map(|name| name.to_string()).collect();
        tenants.sort();
        tenants.dedup();
        return Err(LookupError::UndeclaredTenant {
            tenant: escape_str(tenant),
            suggestion: did_you_mean(tenant, declared.iter().copied()).map(str::to_string),
            tenants,
        });
    }
    let found: Vec<(&CellPlan, &TenantPlan)> = plan
        .cells
        .iter()
        .filter_map(|cell_plan| {
            let tenant_plan = cell_plan.tenants.iter().find(|t| t.name == tenant)?;
            Some((cell_plan, tenant_plan))
        })
        .collect();
    let Some((_, first)) = found.first() else {
        let mut tenants: Vec<String> = plan
            .cells
            .iter()
            .flat_map(|cell_plan| &cell_plan.tenants)
            .map(|t| t.name.clone())
            .collect();
        tenants.sort();
        tenants.dedup();
        return Err(LookupError::WithoutQuota {
            tenant: escape_str(tenant),
            tenants,
        });
    };
    let name = first.name.as_str();
    let Some(wanted) = cell else {
        return Ok(View {
            tenant: name,
            cells: found,
        });
    };
    if !plan.cells.iter().any(|cell_plan| cell_plan.name == wanted) {
        let cells: Vec<String> = plan.cells.iter().map(|c| c.name.clone()).collect();
        return Err(LookupError::UnknownCell {
            cell: escape_str(wanted),
            suggestion: did_you_mean(wanted, cells.iter().map(String::as_str)).map(str::to_string),
            cells,
        });
    }
    let cells: Vec<String> = found.iter().map(|(c, _)| c.name.clone()).collect();
    let chosen: Vec<(&CellPlan, &TenantPlan)> = found
        .into_iter()
        .filter(|(cell_plan, _)| cell_plan.name == wanted)
        .collect();
    if chosen.is_empty() {
        return Err(LookupError::NotInCell {
            tenant: name.to_string(),
            cell: wanted.to_string(),
            cells,
        });
    }
    Ok(View {
        tenant: name,
        cells: chosen,
    })
}

/// A kind of thing a tenant's pods may use or may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// A pool of the cell: its flavor, taints and resources.
    Pool,
    /// A RuntimeClass of the cell.
    RuntimeClass,
    /// The node's network, PID or IPC namespace.
    HostNetwork,
    /// `rdma/*` devices.
    RdmaDevices,
    /// A Linux capability a Pod Security exception lets containers add, in one namespace.
    LinuxCapability,
    /// An image registry.
    Registry,
    /// A verified weight digest.
    WeightDigest,
    /// A LocalQueue of a namespace.
    Queue,
    /// A WorkloadPriorityClass, in one namespace.
    Priority,
}

/// One capability the plan grants or denies a tenant in a cell, as `describe --format json`
/// lists it under `grants`; conformance `words_and_enforcement_agree` uses each on the real API
/// server and requires that what is granted runs and what is denied is refused.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Grant {
    /// What kind of thing.
    pub capability: Capability,
    /// Which one: a pool, class, registry, digest, queue or capability name.
    pub value: String,
    /// The namespace it holds in, where it differs per namespace.
    pub namespace: Option<String>,
    /// Whether the tenant's pods may use it.
    pub granted: bool,
    /// Why, in words.
    pub why: String,
}

/// Every capability the plan grants or denies `tenant` in `cell`, sorted.
pub fn grants(cell: &CellPlan, tenant: &TenantPlan) -> Vec<Grant> {
    let grant = |capability, value: &str, namespace: Option<&str>, granted, why: String| Grant {
        capability,
        value: value.to_string(),
        namespace: namespace.map(str::to_string),
        granted,
        why,
    };
    let mut grants = Vec::new();
    for reach in &tenant.reach {
        grants.push(grant(
            Capability::Pool,
            &reach.pool,
            None,
            reach.reachable,
            reach.why.clone(),
        ));
    }
    for class in &cell.runtime_classes {
        let allowed = class.trust.contains(&tenant.trust);
        grants.push(grant(
            Capability::RuntimeClass,
            &class.name,
            None,
            allowed,
            format!(
                "for trust {}; the tenant is `{}`",
                class
                    .trust
                    .iter()
                    .map(|trust| trust.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                tenant.trust
            ),
        ));
    }
    grants.push(grant(
        Capability::HostNetwork,
        "hostNetwork",
        None,
        false,
        "never granted: no NetworkPolicy applies on the node's network".to_string(),
    ));
    let access = &tenant.cell_host_access;
    grants.push(grant(
        Capability::RdmaDevices,
        "rdma/*",
        None,
        access.granted,
        access.why.clone(),
    ));
    for namespace in &tenant.namespaces {
        for capability in namespace.excepted_capabilities() {
            grants.push(grant(
                Capability::LinuxCapability,
                &capability,
                Some(&namespace.name),
                true,
                "a reviewed Pod Security exception of the namespace".to_string(),
            ));
        }
        match &tenant.volcano {
            Some(queue) => grants.push(grant(
                Capability::Queue,
                &queue.name,
                Some(&namespace.name),
                true,
                "the tenant's Volcano queue".to_string(),
            )),
            None => grants.push(grant(
                Capability::Queue,
                LOCAL_QUEUE,
                Some(&namespace.name),
                true,
                "the namespace's LocalQueue".to_string(),
            )),
        }
        if let Some(priority) = &namespace.priority {
            grants.push(grant(
                Capability::Priority,
                priority,
                Some(&namespace.name),
                true,
                "the workload's priority".to_string(),
            ));
        }
        for priority in &namespace.denied_priorities {
            grants.push(grant(
                Capability::Priority,
                priority,
                Some(&namespace.name),
                false,
                "a priority class other than the workload's".to_string(),
            ));
        }
    }
    // Another tenant's registry or digest is denied unless the tenant has it too (two tenants
    // may pin the same open weights).
    let owns = |capability: Capability, value: &str| {
        (capability == Capability::Registry && tenant.registries.iter().any(|own| own == value))
            || (capability == Capability::WeightDigest
                && tenant.weights.iter().any(|own| own.digest == value))
    };
    for other in &cell.tenants {
        let own = other.name == tenant.name;
        let why = |what: &str| {
            if own {
                format!("its own {what}")
            } else {
                format!("a {what} of tenant `{}`", other.name)
            }
        };
        for registry in &other.registries {
            if !own && owns(Capability::Registry, registry) {
                continue;
            }
            grants.push(grant(
                Capability::Registry,
                registry,
                None,
                own,
                why("registry"),
            ));
        }
        for model in &other.weights {
            if !own && owns(Capability::WeightDigest, &model.digest) {
                continue;
            }
            grants.push(grant(
                Capability::WeightDigest,
                &model.digest,
                None,
                own,
                why(&format!(
                    "verified model ({} {})",
                    model.name, model.version
                )),
            ));
        }
    }
    grants.sort();
    grants.dedup_by(|later, earlier| {
        later.capability == earlier.capability
            && later.value == earlier.value
            && later.namespace == earlier.namespace
    });
    grants
}

/// The view as one JSON document: `{"tenant", "cells": [{"cell", …the tenant's plan…}]}`.
///
/// Each capacity row names its binding term by the key of that term in the row (`quota`,
/// `cell_admit` or `topology_fit`).
pub fn json(view: &View<'_>) -> Result<Value, serde_json::Error> {
    let mut cells = Vec::new();
    for (cell, tenant) in &view.cells {
        let mut object = serde_json::Map::new();
        object.insert("cell".to_string(), Value::from(cell.name.clone()));
        object.insert("cell_source".to_string(), Value::from(cell.source.clone()));
        if let Value::Object(fields) = serde_json::to_value(tenant)? {
            object.extend(fields);
        }
        object.insert(
            "grants".to_string(),
            serde_json::to_value(grants(cell, tenant))?,
        );
        object.insert(
            "metering_labels".to_string(),
            serde_json::to_value(&tenant.chargeback)?,
        );
        object.insert(
            "monthly_cost".to_string(),
            serde_json::to_value(tenant_monthly(&cell.showback, &tenant.name))?,
        );
        cells.push(Value::Object(object));
    }
    Ok(serde_json::json!({ "tenant": view.tenant, "cells": cells }))
}

/// A table: columns separated by two spaces, the `right` ones right-aligned, no trailing spaces.
fn table(indent: &str, header: &[&str], right: &[usize], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|title| title.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::from(indent);
        for (idx, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if idx > 0 {
                line.push_str("  ");
            }
            let pad = width.saturating_sub(cell.chars().count());
            if right.contains(&idx) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The view as text for people.
pub fn human(view: &View<'_>) -> String {
    let mut out = String::new();
    let source = view
        .cells
        .first()
        .map(|(_, tenant)| tenant.source.as_str())
        .unwrap_or_default();
    let _ = writeln!(out, "tenant `{}` ({source})", view.tenant);
    for (cell, tenant) in &view.cells {
        out.push('\n');
        cell_text(&mut out, cell, tenant);
    }
    out
}

/// The Pod Security of the tenant's namespaces, with every reviewed exception, and whether
/// its pods may reach the host.
fn pod_security_text(out: &mut String, tenant: &TenantPlan) {
    let access = &tenant.cell_host_access;
    let _ = writeln!(
        out,
        "    RDMA devices and Pod Security exceptions: {} ({})",
        if access.granted {
            "granted"
        } else {
            "not granted"
        },
        access.why
    );
    out.push_str("    Host network, PID and IPC: never granted (no NetworkPolicy applies on the node's network; RDMA devices work in the pod's own)\n");
    let excepted: Vec<_> = tenant
        .namespaces
        .iter()
        .filter(|namespace| !namespace.exceptions.is_empty())
        .collect();
    if excepted.is_empty() {
        out.push_str("    Pod Security: `restricted` (enforce, audit, warn) in every namespace.\n");
        return;
    }
    out.push_str(
        "    Pod Security: `restricted` (enforce, audit, warn), except these reviewed exceptions \
(audit and warn stay `restricted`; policy `",
    );
    out.push_str(crate::facts::naming::EXCEPTIONS_NAME);
    out.push_str("` enforces every other `restricted` rule):\n");
    for namespace in excepted {
        for exception in &namespace.exceptions {
            let _ = writeln!(
                out,
                "      {}: enforce `{}`; exception `{}` adds {}, approved by {}: {}",
                namespace.name,
                namespace.enforce_level(),
                exception.name,
                exception.capabilities.join(", "),
                exception.approved_by,
                exception.reason
            );
        }
    }
}

/// The tenant's limits on the cell's shared models.
fn serving_text(out: &mut String, tenant: &TenantPlan) {
    if tenant.serving.is_empty() {
        return;
    }
    out.push_str(
        "\n  Shared models: the gateway keys these limits by the header it sets from the authenticated tenant, and answers 429 with retry-after above them.\n",
    );
    let rows: Vec<Vec<String>> = tenant
        .serving
        .iter()
        .map(|limits| {
            vec![
                limits.model.clone(),
                limits.stack.as_str().to_string(),
                limits.requests_per_second.to_string(),
                limits.concurrency.to_string(),
                format!("{}={}", limits.cache.field, limits.cache.value),
            ]
        })
        .collect();
    out.push_str(&table(
        "    ",
        &[
            "model",
            "stack",
            "requests/s",
            "concurrent",
            "cache partition",
        ],
        &[2, 3],
        &rows,
    ));
}

/// The chargeback labels and what the tenant's reservations cost a month.
fn metering_text(out: &mut String, cell: &CellPlan, tenant: &TenantPlan) {
    let labels: Vec<String> = tenant
        .chargeback
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let carriers = match tenant.volcano {
        Some(_) => "its Namespaces and Volcano Queue",
        None => "its Namespaces, ClusterQueue and LocalQueues",
    };
    let _ = writeln!(
        out,
        "\n  Chargeback labels (on {carriers}): {}",
        labels.join(", ")
    );
    let cost = tenant_monthly(&cell.showback, &tenant.name);
    let _ = writeln!(
        out,
        "  Monthly cost ({HOURS_PER_MONTH} hours): committed {}, burst {} if fully used",
        format_cents(cost.committed_cents),
        format_cents(cost.burst_cents)
    );
    if cost.rows.is_empty() {
        out.push_str("    No GPU reservation in this cell.\n");
        return;
    }
    let money = |cents: Option<i64>| cents.map_or_else(|| "no price".to_string(), format_cents);
    let rows: Vec<Vec<String>> = cost
        .rows
        .iter()
        .map(|row| {
            vec![
                row.pool.clone(),
                row.resource.clone(),
                row.reserved.to_string(),
                money(row.reserved_monthly),
                row.burst.to_string(),
                money(row.burst_monthly),
            ]
        })
        .collect();
    out.push_str(&table(
        "    ",
        &[
            "pool",
            "resource",
            "reserved",
            "committed",
            "burst",
            "burst if used",
        ],
        &[2, 3, 4, 5],
        &rows,
    ));
    if !cost.unpriced_pools.is_empty() {
        let _ = writeln!(
            out,
            "    pools without a price (not in the sums): {}",
            cost.unpriced_pools.join(", ")
        );
    }
}

fn cell_text(out: &mut String, cell: &CellPlan, tenant: &TenantPlan) {
    let _ = writeln!(out, "cell `{}` ({})", cell.name, cell.source);
    let _ = writeln!(
        out,
        "  org `{}`, team `{}`, trust `{}`",
        tenant.org, tenant.team, tenant.trust
    );

    out.push_str(
        "\n  Namespaces: each ResourceQuota holds the namespace's part of the tenant's ceiling and \
the GPUs of its reservations (reserved plus burst); pods may use only the allowed priority.\n",
    );
    let rows: Vec<Vec<String>> = tenant
        .namespaces
        .iter()
        .map(|namespace| {
            let gpus: Vec<String> = namespace
                .gpu
                .iter()
                .filter(|(_, amount)| **amount != 0)
                .map(|(resource, amount)| format!("{resource} {amount}"))
                .collect();
            vec![
                namespace.name.clone(),
                namespace.workload.to_string(),
                namespace.service_account.clone(),
                namespace
                    .priority
                    .clone()
                    .unwrap_or_else(|| "-".to_string()),
                namespace.cpu.clone(),
                namespace.memory.clone(),
                namespace.pods.to_string(),
                if gpus.is_empty() {
                    "none".to_string()
                } else {
                    gpus.join(", ")
                },
            ]
        })
        .collect();
    out.push_str(&table(
        "    ",
        &[
            "namespace",
            "workload",
            "service account",
            "priority",
            "cpu",
            "memory",
            "pods",
            "GPUs",
        ],
        &[4, 5, 6],
        &rows,
    ));
    pod_security_text(out, tenant);

    if let Some(queue) = &tenant.volcano {
        volcano_text(out, queue);
    } else {
        cluster_queue_text(out, cell, tenant);
    }

    metering_text(out, cell, tenant);
    serving_text(out, tenant);
    contracts_text(out, cell, tenant);
}

/// A tenant's Volcano queue: its parent, weight and what it holds per resource.
fn volcano_text(out: &mut String, queue: &crate::plan::volcano::VolcanoQueuePlan) {
    let _ = writeln!(
        out,
        "\n  Volcano queue `{}` under `{}`, weight {}, reclaimable",
        queue.name, queue.parent, queue.weight
    );
    let _ = writeln!(
        out,
        "    ceiling across its namespaces: cpu {}, memory {} (deserved and capability)",
        queue.cpu, queue.memory
    );
    let rows: Vec<Vec<String>> = queue
        .resources
        .iter()
        .filter(|held| held.capability > 0 || held.deserved > 0)
        .map(|held| {
            vec![
                held.resource.clone(),
                held.deserved.to_string(),
                held.capability.to_string(),
                held.guarantee.to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("    No GPU resource: every GPU resource has a capability of 0.\n");
    } else {
        out.push_str(&table(
            "    ",
            &["resource", "deserved", "capability", "guarantee"],
            &[1, 2, 3],
            &rows,
        ));
        out.push_str(
            "    Deserved is `reserved`, capability `reserved + burst`, guarantee what it keeps from \
lending; every other GPU resource is 0. Its pods name the queue and `schedulerName: volcano`, \
and tolerate only its pools' taints.\n",
        );
    }
}

/// A tenant's Kueue ClusterQueue: its cohort, ceilings, preemption and entitlements per flavor.
fn cluster_queue_text(out: &mut String, cell: &CellPlan, tenant: &TenantPlan) {
    let queue = &tenant.queue;
    let weight = queue
        .weight
        .map(|weight| format!(", fair-sharing weight {weight}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n  ClusterQueue `{}` in cohort `{}`{weight}",
        queue.name, queue.cohort
    );
    match &queue.ceiling_rest {
        None => {
            let _ = writeln!(
                out,
                "    ceiling across its namespaces: cpu {}, memory {}, pods {} (flavor `{CEILING_FLAVOR}`)",
                queue.cpu, queue.memory, queue.pods
            );
        }
        Some(rest) => {
            let _ = writeln!(
                out,
                "    ceiling across its namespaces: cpu {}, memory {}, pods {}, counted per flavor (a topology pool's jobs get one flavor for all their resources):",
                queue.cpu, queue.memory, queue.pods
            );
            let _ = writeln!(
                out,
                "      `{CEILING_FLAVOR}` (pods without GPUs): cpu {}, memory {}, pods {}",
                rest.cpu, rest.memory, rest.pods
            );
            for flavor in &queue.flavors {
                if let Some(part) = &flavor.ceiling {
                    let _ = writeln!(
                        out,
                        "      `{}`: cpu {}, memory {}, pods {}",
                        flavor.flavor, part.cpu, part.memory, part.pods
                    );
                }
            }
            if cell.pools.iter().any(|pool| {
                pool.topology.is_some() && queue.flavors.iter().any(|f| f.pool == pool.name)
            }) {
                out.push_str("    jobs on a topology pool must set `kueue.x-k8s.io/podset-required-topology`, `-preferred-topology` or `-unconstrained-topology` on their pod template\n");
            }
        }
    }
    out.push_str(if queue.preempt_within {
        "    preemption: a workload may preempt lower-priority workloads of this queue\n"
    } else {
        "    preemption: no workload preempts another of this queue\n"
    });
    let mut rows = Vec::new();
    for flavor in &queue.flavors {
        for entitlement in &flavor.resources {
            if entitlement.nominal == 0
                && entitlement.borrowing == 0
                && entitlement.lending.is_none_or(|lending| lending == 0)
            {
                continue;
            }
            rows.push(vec![
                flavor.flavor.clone(),
                flavor.pool.clone(),
                entitlement.resource.clone(),
                entitlement.nominal.to_string(),
                entitlement.borrowing.to_string(),
                entitlement
                    .lending
                    .map_or_else(|| "-".to_string(), |lending| lending.to_string()),
            ]);
        }
    }
    if rows.is_empty() {
        out.push_str("    No GPU flavor: every GPU resource has a quota of 0.\n");
    } else {
        out.push_str(&table(
            "    ",
            &[
                "flavor",
                "pool",
                "resource",
                "nominal",
                "borrowing",
                "lending",
            ],
            &[3, 4, 5],
            &rows,
        ));
        out.push_str(
            "    Nominal is `reserved`, borrowing the `burst` limit; a lending limit of `-` lends \
all of the nominal quota; every other GPU resource is 0.\n",
        );
    }
}

/// A tenant's fleet contracts, weights, effective capacity and reach in a cell.
fn contracts_text(out: &mut String, cell: &CellPlan, tenant: &TenantPlan) {
    for share in &tenant.fleet {
        let split: Vec<String> = share
            .parts
            .iter()
            .map(|(cell, part)| format!("{cell} {part}"))
            .collect();
        out.push_str(&format!(
            "\n  Fleet contract: {} `{}` GPUs across the fleet ({}); this cell's part {}, reserved here {}.\n",
            share.total,
            share.gpu,
            split.join(", "),
            share.part,
            share.reserved
        ));
    }
    for model in &tenant.weights {
        let _ = writeln!(
            out,
            "\n  Model `{} {}`: weights at `{}`, digest `{}` (verified, {}).",
            model.name, model.version, model.prefix, model.digest, model.signature
        );
    }
    out.push_str(
        "\n  Effective capacity = min(quota, cell, topology); `*` marks the term that binds.\n",
    );
    if tenant.capacity.is_empty() {
        out.push_str("    No GPU reservation in this cell.\n");
    } else {
        let gangs = tenant.capacity.iter().any(|row| row.gang.is_some());
        let rows: Vec<Vec<String>> = tenant
            .capacity
            .iter()
            .map(|row| {
                let mut cells = vec![row.pool.clone(), row.resource.clone()];
                cells.extend(TERMS.iter().map(|term| {
                    let mark = if *term == row.binding { "*" } else { " " };
                    format!("{}{mark}", term_value(row, *term))
                }));
                cells.push(row.effective.to_string());
                cells.push(row.binding.as_str().to_string());
                if gangs {
                    cells.push(match (row.gang, row.domain) {
                        (Some(gang), Some(domain)) => format!("gangs of {gang} in {domain}"),
                        _ => "-".to_string(),
                    });
                }
                cells
            })
            .collect();
        let mut header = vec![
            "pool",
            "resource",
            "quota ",
            "cell ",
            "topology ",
            "effective",
            "binds",
        ];
        if gangs {
            header.push("gang");
        }
        out.push_str(&table("    ", &header, &[2, 3, 4, 5], &rows));
        out.push_str(
            "    quota: reserved plus burst; cell: the pool's capacity minus what other tenants may \
not lend; topology: what whole gangs can use, or the capacity.\n",
        );
    }

    let (reachable, unreachable): (Vec<_>, Vec<_>) =
        tenant.reach.iter().partition(|reach| reach.reachable);
    for (title, reaches) in [
        ("Pools it can reach", reachable),
        ("Pools it cannot reach", unreachable),
    ] {
        let _ = writeln!(out, "\n  {title}:");
        if reaches.is_empty() {
            out.push_str("    none\n");
        }
        let width = reaches
            .iter()
            .map(|reach| reach.pool.chars().count())
            .max()
            .unwrap_or(0);
        for reach in reaches {
            let owner = cell
                .pools
                .iter()
                .find(|pool| pool.name == reach.pool)
                .and_then(|pool| pool.owner.as_deref())
                .map(|owner| format!("; the platform reserves the pool for `{owner}`"))
                .unwrap_or_default();
            let _ = writeln!(out, "    {:<width$}  {}{owner}", reach.pool, reach.why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{generated_fleet, plan_of, random_rows};
    use crate::testing::Rng;

    /// The rows of the effective capacity table of one cell's text, split on runs of spaces.
    fn effective_rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .skip_while(|line| !line.starts_with("  Effective capacity"))
            .skip(2)
            .take_while(|line| line.starts_with("    ") && !line.starts_with("    quota:"))
            .map(|line| line.split_whitespace().map(str::to_string).collect())
            .collect()
    }

    /// Asserts that the text and the JSON mark, for every row, the term that is the minimum.
    fn assert_marks_the_minimum(view: &View<'_>, context: &str) {
        for (cell, tenant) in &view.cells {
            let single = View {
                tenant: view.tenant,
                cells: vec![(*cell, *tenant)],
            };
            let text = human(&single);
            let shown = effective_rows(&text);
            assert_eq!(shown.len(), tenant.capacity.len(), "{context}\n{text}");
            for (row, shown) in tenant.capacity.iter().zip(&shown) {
                let minimum = row.quota.min(row.cell_admit).min(row.topology_fit);
                // Columns: pool, resource, quota, cell, topology, effective, binds.
                let marked: Vec<usize> = (2..5).filter(|idx| shown[*idx].ends_with('*')).collect();
                assert_eq!(marked.len(), 1, "{context}: {shown:?}");
                assert_eq!(
                    shown[marked[0]].trim_end_matches('*'),
                    minimum.to_string(),
                    "{context}: {shown:?}"
                );
                assert_eq!(
                    TERMS[marked[0] - 2].as_str(),
                    shown[6],
                    "{context}: {shown:?}"
                );
                assert_eq!(shown[5], minimum.to_string(), "{context}: {shown:?}");
            }
        }
        let document = json(view).unwrap();
        for cell in document["cells"].as_array().unwrap() {
            for row in cell["capacity"].as_array().unwrap() {
                let minimum = ["quota", "cell_admit", "topology_fit"]
                    .iter()
                    .map(|key| row[key].as_i64().unwrap())
                    .min()
                    .unwrap();
                let binding = row["binding"].as_str().unwrap();
                assert_eq!(row[binding].as_i64(), Some(minimum), "{context}: {row}");
                assert_eq!(row["effective"].as_i64(), Some(minimum), "{context}: {row}");
            }
        }
    }

    #[test]
    fn the_binding_term_shown_is_the_minimum_over_generated_fleets() {
        for seed in 1..=60 {
            let plan = plan_of(&generated_fleet(&mut Rng(seed)));
            let tenants: Vec<String> = plan.cells[0]
                .tenants
                .iter()
                .map(|t| t.name.clone())
                .collect();
            for tenant in tenants {
                let view = lookup(&plan, &declared(&plan), &tenant, None).unwrap();
                assert_marks_the_minimum(&view, &format!("seed {seed}, {tenant}"));
            }
        }
    }

    #[test]
    fn the_monthly_cost_shown_per_tenant_adds_up_to_what_the_pools_committed() {
        let mut priced = 0;
        for seed in 1..=40 {
            let plan = plan_of(&generated_fleet(&mut Rng(seed)));
            for cell in &plan.cells {
                // The pools' side of the showback: what every tenant reserved of each resource,
                // priced per pool and summed there.
                let committed: i64 = cell
                    .showback
                    .pools
                    .iter()
                    .flat_map(|pool| &pool.resources)
                    .filter_map(|resource| resource.reserved_monthly)
                    .sum();
                let mut shown = 0;
                for tenant in &cell.tenants {
                    let view =
                        lookup(&plan, &declared(&plan), &tenant.name, Some(&cell.name)).unwrap();
                    let document = json(&view).unwrap();
                    let cost = &document["cells"][0]["monthly_cost"];
                    let cents = cost["committed_cents"].as_i64().unwrap();
                    let text = human(&view);
                    let line = format!(
                        "  Monthly cost (730 hours): committed {}, burst {} if fully used\n",
                        format_cents(cents),
                        format_cents(cost["burst_cents"].as_i64().unwrap())
                    );
                    assert!(text.contains(&line), "seed {seed}: {line}\n{text}");
                    assert_eq!(
                        document["cells"][0]["metering_labels"]["tenant.platform/tenant"],
                        tenant.name.as_str()
                    );
                    shown += cents;
                }
                assert_eq!(shown, committed, "seed {seed}, cell {}", cell.name);
                priced += usize::from(committed > 0);
            }
        }
        assert!(
            priced > 20,
            "only {priced} of 40 fleets have a committed cost"
        );
    }

    #[test]
    fn the_binding_term_shown_is_the_minimum_of_hand_made_rows() {
        let mut rng = Rng(5);
        let mut plan = plan_of(&generated_fleet(&mut Rng(3)));
        for round in 0..300 {
            for tenant in &mut plan.cells[0].tenants {
                tenant.capacity = random_rows(&mut rng);
            }
            let names = declared(&plan);
            for tenant in &plan.cells[0].tenants {
                let view = lookup(&plan, &names, &tenant.name, Some("c1")).unwrap();
                assert_marks_the_minimum(&view, &format!("round {round}, {}", tenant.name));
            }
        }
    }

    /// The names of the tenants the plan holds, as the declared tenants.
    fn declared(plan: &Plan) -> Vec<&str> {
        plan.cells
            .iter()
            .flat_map(|cell| &cell.tenants)
            .map(|tenant| tenant.name.as_str())
            .collect()
    }

    /// Declared tenants: those of [`fleet`], and `idle`, which has no quota anywhere.
    const DECLARED: [&str; 3] = ["idle", "research", "serving"];

    fn fleet() -> Plan {
        // Each cell lists the members of the org `o` it has: an org listed anywhere is closed
        // everywhere.
        let cell = |name: &str, orgs: &str| {
            crate::InputFile {
            path: format!("cells/{name}.kdl"),
            contents: format!(
                "cell \"{name}\" {{\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n{orgs}    priority \"batch\" value=1000\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n}}\n"
            )
            .into_bytes(),
        }
        };
        let tenant = |name: &str, cells: &[&str]| {
            let quotas: String = cells
                .iter()
                .map(|cell| {
                    format!(
                        "    quota cell=\"{cell}\" cpu=\"8\" memory=\"8Gi\" pods=10 {{\n        pool \"p\" reserved=4 burst=8\n    }}\n"
                    )
                })
                .collect();
            crate::InputFile {
                path: format!("tenants/{name}.kdl"),
                contents: format!(
                    "tenant \"{name}\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\" member=\"m\"\n{quotas}    workload \"train\" service-account=\"sa\" priority=\"batch\"\n}}\n"
                )
                .into_bytes(),
            }
        };
        plan_of(&[
            cell("east", "    org \"o\" { tenants \"research\"; }\n"),
            cell(
                "west",
                "    org \"o\" { tenants \"research\" \"serving\"; }\n",
            ),
            tenant("research", &["east", "west"]),
            tenant("serving", &["west"]),
        ])
    }

    #[test]
    fn finds_a_tenant_in_every_cell_or_in_the_one_asked_for() {
        let plan = fleet();
        let names = |view: View<'_>| -> Vec<String> {
            view.cells
                .iter()
                .map(|(cell, _)| cell.name.clone())
                .collect()
        };
        assert_eq!(
            names(lookup(&plan, &DECLARED, "research", None).unwrap()),
            ["east", "west"]
        );
        assert_eq!(
            names(lookup(&plan, &DECLARED, "research", Some("west")).unwrap()),
            ["west"]
        );
        assert_eq!(
            names(lookup(&plan, &DECLARED, "serving", None).unwrap()),
            ["west"]
        );
    }

    /// Issue 18 item 5: a name no declaration has is "not declared", with the declared names;
    /// a declared tenant without quota is said to have none.
    #[test]
    fn an_undeclared_tenant_is_not_declared_and_suggests_a_close_name() {
        let plan = fleet();
        let error = lookup(&plan, &DECLARED, "reserch", None).unwrap_err();
        assert_eq!(
            error.message(),
            "tenant `reserch` is not declared; did you mean `research`?"
        );
        assert_eq!(
            error.help(),
            "declared tenants are `idle`, `research` and `serving`"
        );
        let error = lookup(&plan, &DECLARED, "zeta", None).unwrap_err();
        assert_eq!(error.message(), "tenant `zeta` is not declared");
        let error = lookup(&plan, &DECLARED, "zzz\u{1b}[2J", None).unwrap_err();
        assert_eq!(
            error.message(),
            "tenant `zzz\\u{1b}[2J` is not declared",
            "typed names are escaped"
        );
        let error = lookup(&plan, &DECLARED, "idle", None).unwrap_err();
        assert_eq!(error.message(), "tenant `idle` has no quota in any cell");
        assert_eq!(
            error.help(),
            "a tenant is described where it has a `quota`; tenants with a quota are `research` and `serving`"
        );
    }

    #[test]
    fn an_unknown_cell_and_a_cell_without_the_tenant_are_errors() {
        let plan = fleet();
        let error = lookup(&plan, &DECLARED, "serving", Some("wast")).unwrap_err();
        assert_eq!(
            error.message(),
            "cell `wast` is not declared; did you mean `west`?"
        );
        assert_eq!(error.help(), "declared cells are `east` and `west`");
        let error = lookup(&plan, &DECLARED, "serving", Some("east")).unwrap_err();
        assert_eq!(
            error.message(),
            "tenant `serving` has no quota in cell `east`"
        );
        assert_eq!(
            error.help(),
            "`serving` has a quota in `west`; leave out `--cell` to see every one"
        );
    }

    #[test]
    fn long_name_lists_are_cut() {
        let names: Vec<String> = (0..12).map(|idx| format!("t{idx:02}")).collect();
        assert_eq!(
            list_some(names.iter().map(String::as_str)),
            "`t00`, `t01`, `t02`, `t03`, `t04`, `t05`, `t06`, `t07`, `t08`, `t09` and 2 more"
        );
    }

    #[test]
    fn tables_align_without_trailing_spaces() {
        let text = table(
            "  ",
            &["a", "number", "c"],
            &[1],
            &[
                vec!["long".into(), "1".into(), String::new()],
                vec!["x".into(), "200".into(), "z".into()],
            ],
        );
        assert_eq!(
            text,
            "  a     number  c\n  long       1\n  x        200  z\n"
        );
    }
}
