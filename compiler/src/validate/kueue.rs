//! Kueue checks: the declarations behind each cell's Kueue objects hold on the hardware.
//!
//! Consumes: the [`Fleet`] and the hardware catalog. Produces: diagnostics for lending above
//! the reservation (`lend-above-reserved`), bursts beyond the cell's oversubscription ratio
//! (`burst-oversubscribed`), pool topologies that are not a strict tree (`topology-not-tree`),
//! gangs that fit no domain or no quota (`gang-exceeds-domain`, `gang-exceeds-quota`),
//! reservations that split an NVLink domain (`reservation-splits-nvlink-domain`), ceiling
//! splits that do not add up (`ceiling-split-mismatch`), fleet reservations that do not match
//! the cells (`fleet-reservation-mismatch`) and Kueue's own limits (`kueue-limit-exceeded`).
//! The arithmetic these checks share with the plan lives in `facts/`: the exact splits
//! (`facts/split.rs`), a pool's topology levels and NVLink domain (`facts/topology.rs`) and the
//! node labels of each pool's ResourceFlavor (`facts/gpu.rs`).
//!
//! Invariants: pure; a reservation is counted against exactly the pool resource
//! [`hardware::resolve`] maps it to, as `validate::tenants` and `plan` count it; every split
//! is checked with the function `plan` resolves it with, so a fleet that passes these checks
//! lowers to namespace quotas that add up to its ceilings.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::facts::gpu::flavor_node_labels;
use crate::facts::split::{
    CeilingResource, FleetSplitError, counted_reservations, counts_ceiling_per_pool,
    fleet_cell_parts, pool_ceilings, pool_of, reserved_gpus_of_model, split_ceilings,
};
use crate::facts::topology::{Level, nvlink_domain_fits, nvlink_domain_gpus, topology_levels};
use crate::hardware;
use crate::model::{
    Cell, Fleet, FleetCellShare, FleetReservation, HOSTNAME_LABEL, Pool, PoolQuota, Quota, Sharing,
    Spanned, Tenant, Workload, WorkloadKind,
};
use crate::quantity::Quantity;
use crate::source::Span;

use super::duplicates;

/// The node labels of a Kueue ResourceFlavor: the pool's own plus those tenantc adds (see
/// [`flavor_node_labels`]).
pub const MAX_FLAVOR_LABELS: usize = crate::kube::kueue::MAX_FLAVOR_NODE_ITEMS;
/// The taints a pool may declare: a ResourceFlavor holds at most 8 `nodeTaints`.
pub const MAX_POOL_TAINTS: usize = crate::kube::kueue::MAX_FLAVOR_NODE_ITEMS;
/// The distinct GPU resources of a cell, `nvidia.com/gpu` included: every ClusterQueue's GPU
/// resource group and the root Cohort's cover them all, and a group covers at most 64.
pub const MAX_CELL_GPU_RESOURCES: usize = crate::kube::kueue::MAX_RESOURCES_PER_GROUP;
/// The pools of one cell: the root Cohort lists each pool's flavor in one resource group, which
/// holds at most 64 flavors.
pub const MAX_CELL_POOLS: usize = crate::kube::kueue::MAX_FLAVORS_PER_GROUP;
/// The pools of one cell a tenant may reserve in: a resource group holds at most 64 flavors.
pub const MAX_TENANT_POOLS: usize = crate::kube::kueue::MAX_FLAVORS_PER_GROUP;
/// The (flavor, resource) pairs of one resource group: pools times the cell's GPU resources.
pub const MAX_GROUP_PAIRS: usize = crate::kube::kueue::MAX_PAIRS_PER_GROUP;
/// The levels of a Kueue Topology, `kubernetes.io/hostname` included.
pub const MAX_TOPOLOGY_LEVELS: usize = 16;
/// The longest priority name: it becomes a WorkloadPriorityClass, named in a label value.
pub const MAX_PRIORITY_NAME: usize = 63;

// ---------------------------------------------------------------------------------------------
// Checks.

/// The reservations that draw on one pool resource.
type Reservations<'a> = Vec<(&'a Tenant, &'a PoolQuota)>;

/// Runs every Kueue check.
pub(super) fn check(fleet: &Fleet, catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    let cells: BTreeMap<&str, &Cell> = fleet
        .cells
        .iter()
        .map(|cell| (cell.name.value.as_str(), cell))
        .collect();
    // Built once per cell: a cell that declares GPU models gets a catalog of its own.
    let catalogs: BTreeMap<&str, Cow<'_, Catalog>> = fleet
        .cells
        .iter()
        .map(|cell| {
            (
                cell.name.value.as_str(),
                hardware::cell_catalog(cell, catalog),
            )
        })
        .collect();
    for cell in &fleet.cells {
        let cell_catalog = catalogs
            .get(cell.name.value.as_str())
            .map_or(catalog, |c| c);
        check_cell(cell, cell_catalog, diagnostics);
    }
    // (cell, pool, resource) -> reservations, for the burst check.
    let mut drawn: BTreeMap<(&str, &str, String), Reservations<'_>> = BTreeMap::new();
    for tenant in &fleet.tenants {
        let mut seen_cells = BTreeSet::new();
        for quota in &tenant.quotas {
            for reservation in &quota.pools {
                check_lend(tenant, reservation, diagnostics);
            }
            // A repeated quota is reported as a duplicate; only the first is checked further.
            if !seen_cells.insert(quota.cell.value.as_str()) {
                continue;
            }
            check_splits(tenant, quota, diagnostics);
            check_empty_shares(tenant, quota, diagnostics);
            let Some(cell) = cells.get(quota.cell.value.as_str()).filter(|c| c.complete) else {
                // Unknown cells are reported by `validate::tenants`; an incomplete cell may be
                // missing the pool a reservation names.
                for reservation in &quota.pools {
                    check_gang_quota(tenant, reservation, diagnostics);
                }
                continue;
            };
            let cell_catalog = catalogs
                .get(cell.name.value.as_str())
                .map_or(catalog, |c| c);
            for reservation in &quota.pools {
                check_reservation(tenant, cell, reservation, diagnostics);
            }
            check_pool_count(tenant, cell, quota, diagnostics);
            check_pool_ceilings(tenant, cell, quota, cell_catalog, diagnostics);
            for reservation in counted_reservations(quota) {
                if let Some((pool, offer)) = hardware::resolve(cell, reservation, cell_catalog) {
                    drawn
                        .entry((
                            cell.name.value.as_str(),
                            pool.name.value.as_str(),
                            offer.resource,
                        ))
                        .or_default()
                        .push((tenant, reservation));
                }
            }
        }
        check_fleet(tenant, &cells, diagnostics);
    }
    for ((cell_name, pool_name, resource), reservations) in &drawn {
        let cell_catalog = catalogs.get(cell_name).map_or(catalog, |c| c);
        check_burst(
            &cells,
            (cell_name, pool_name, resource),
            reservations,
            cell_catalog,
            diagnostics,
        );
    }
}

/// Kueue's webhook rejects a ClusterQueue whose lendingLimit exceeds its nominalQuota.
fn check_lend(tenant: &Tenant, reservation: &PoolQuota, diagnostics: &mut Vec<Diagnostic>) {
    let Some(lend) = &reservation.lend else {
        return;
    };
    let reserved = reservation.reserved.value;
    if lend.value <= reserved {
        return;
    }
    diagnostics.push(
        Diagnostic::error(
            Code::LendAboveReserved,
            lend.span,
            format!(
                "tenant `{}` lends {} devices of pool `{}` but reserves {}",
                tenant.name.value, lend.value, reservation.pool.value, reserved
            ),
        )
        .with_label(format!("more than the {reserved} reserved"))
        .with_secondary(reservation.reserved.span, "reserved here")
        .with_note("`lend` is the Kueue lendingLimit and `reserved` the nominalQuota; Kueue rejects a ClusterQueue that lends more than its nominal quota")
        .with_help(format!(
            "lower `lend` to at most {reserved}, or leave it out to lend all of the reservation"
        )),
    );
}

/// A gang needs all its devices at once: more than reserved plus burst is never admitted.
fn check_gang_quota(tenant: &Tenant, reservation: &PoolQuota, diagnostics: &mut Vec<Diagnostic>) {
    let Some(gang) = &reservation.gang else {
        return;
    };
    let reserved = reservation.reserved.value;
    let burst = reservation.burst.as_ref().map_or(0, |burst| burst.value);
    let ceiling = reserved.saturating_add(burst);
    if gang.value <= ceiling {
        return;
    }
    let mut diagnostic = Diagnostic::error(
        Code::GangExceedsQuota,
        gang.span,
        format!(
            "a gang of {} GPUs needs more than tenant `{}` may use in pool `{}`",
            gang.value, tenant.name.value, reservation.pool.value
        ),
    )
    .with_label(format!(
        "{} GPUs at once; reserved {reserved} + burst {burst} = {ceiling}",
        gang.value
    ))
    .with_secondary(reservation.reserved.span, format!("reserved {reserved}"));
    if let Some(burst) = &reservation.burst {
        diagnostic = diagnostic.with_secondary(burst.span, format!("burst {}", burst.value));
    }
    diagnostics.push(
        diagnostic
            .with_note("Kueue admits a job only when all of its pods fit the ClusterQueue's nominal quota plus its borrowing limit")
            .with_help(format!(
                "raise `burst` to at least {}, or lower `gang` to at most {ceiling}",
                gang.value - reserved
            )),
    );
}

/// The checks of one reservation that need its pool.
fn check_reservation(
    tenant: &Tenant,
    cell: &Cell,
    reservation: &PoolQuota,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(pool) = pool_of(cell, reservation) else {
        // `pool-unknown` is reported by `validate::tenants`.
        check_gang_quota(tenant, reservation, diagnostics);
        return;
    };
    if pool.sharing.value != Sharing::Exclusive {
        let fields = [
            reservation.gang.as_ref().map(|gang| ("gang", gang.span)),
            reservation
                .within
                .as_ref()
                .map(|within| ("within", within.span)),
        ];
        for (field, span) in fields.into_iter().flatten() {
            diagnostics.push(
                Diagnostic::error(
                    Code::FieldNotApplicable,
                    span,
                    format!(
                        "`{field}` does not apply to `{}` pool `{}`",
                        pool.sharing.value.as_str(),
                        pool.name.value
                    ),
                )
                .with_label("gangs are counted in whole GPUs of `exclusive` pools")
                .with_secondary(pool.sharing.span, "sharing mode set here")
                .with_help(format!(
                    "remove `{field}`, or reserve in an `exclusive` pool"
                )),
            );
        }
        return;
    }
    check_gang_quota(tenant, reservation, diagnostics);
    check_gang_domain(cell, pool, reservation, diagnostics);
    check_domain_split(tenant, pool, reservation, diagnostics);
}

fn level_text(level: &Level, gpus_per_node: i64) -> String {
    format!(
        "`{}` ({} node{}, {} GPUs)",
        level.label,
        level.nodes,
        if level.nodes == 1 { "" } else { "s" },
        level.nodes.saturating_mul(gpus_per_node)
    )
}

/// A gang fits one NVLink domain, or stays within one domain of a topology level.
fn check_gang_domain(
    cell: &Cell,
    pool: &Pool,
    reservation: &PoolQuota,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let levels = topology_levels(pool);
    let per_node = pool.gpus_per_node.value;
    let level_gpus = |level: &Level| level.nodes.saturating_mul(per_node);
    let where_declared = format!("pool `{}` of cell `{}`", pool.name.value, cell.name.value);
    if let Some(within) = &reservation.within {
        let Some(level) = levels.iter().find(|level| level.label == within.value) else {
            let diagnostic = Diagnostic::error(
                Code::GangExceedsDomain,
                within.span,
                format!("{where_declared} has no topology level `{}`", within.value),
            );
            let names = levels.iter().map(|level| level.label.as_str());
            let diagnostic = if levels.is_empty() {
                diagnostic.with_label("the pool declares no topology").with_help(format!(
                    "declare `topology {{ level \"<node label>\" nodes=<n> }}` on {where_declared}, or remove `within`"
                ))
            } else {
                match did_you_mean(&within.value, names.clone()) {
                    Some(close) => diagnostic.with_label(format!("did you mean `{close}`?")),
                    None => diagnostic.with_label("unknown level"),
                }
                .with_help(format!(
                    "the levels of pool `{}` are {}",
                    pool.name.value,
                    list_names(names)
                ))
            };
            diagnostics.push(diagnostic);
            return;
        };
        let Some(gang) = &reservation.gang else {
            return;
        };
        if gang.value <= level_gpus(level) {
            return;
        }
        let fitting = levels
            .iter()
            .rev()
            .find(|candidate| level_gpus(candidate) >= gang.value);
        diagnostics.push(
            Diagnostic::error(
                Code::GangExceedsDomain,
                gang.span,
                format!(
                    "a gang of {} GPUs does not fit one `{}` domain of pool `{}`",
                    gang.value, level.label, pool.name.value
                ),
            )
            .with_label(format!(
                "{} nodes x {per_node} GPUs = {} GPUs per domain",
                level.nodes,
                level_gpus(level)
            ))
            .with_secondary(within.span, "the gang must stay within one such domain")
            .with_help(match fitting {
                Some(fitting) => format!(
                    "stay within {} instead, or lower `gang` to at most {}",
                    level_text(fitting, per_node),
                    level_gpus(level)
                ),
                None => format!(
                    "lower `gang` to at most {}; no level of pool `{}` holds {} GPUs",
                    level_gpus(level),
                    pool.name.value,
                    gang.value
                ),
            }),
        );
        return;
    }
    let Some(gang) = &reservation.gang else {
        return;
    };
    let domain = nvlink_domain_gpus(pool);
    if gang.value <= domain {
        return;
    }
    let what = if pool.nvlink_domain.is_some() {
        format!(
            "one NVLink domain of pool `{}` ({domain} GPUs)",
            pool.name.value
        )
    } else {
        format!(
            "one node of pool `{}` ({domain} GPUs), the pool's NVLink domain since it declares no `nvlink-domain`",
            pool.name.value
        )
    };
    let fitting = levels
        .iter()
        .rev()
        .find(|level| level_gpus(level) >= gang.value);
    let help = match (fitting, levels.is_empty()) {
        (Some(level), _) => format!(
            "add `within=\"{}\"` to keep the gang in one {} domain, or lower `gang` to at most {domain}",
            level.label,
            level_text(level, per_node)
        ),
        (None, false) => format!(
            "lower `gang` to at most {domain}; no topology level of pool `{}` holds {} GPUs",
            pool.name.value, gang.value
        ),
        (None, true) => format!(
            "declare the `topology` of {where_declared} and add `within=\"<level>\"`, or lower `gang` to at most {domain}"
        ),
    };
    let mut diagnostic = Diagnostic::error(
        Code::GangExceedsDomain,
        gang.span,
        format!("a gang of {} GPUs does not fit {what}", gang.value),
    )
    .with_label("no `within` level is given for a larger gang");
    if let Some(nvlink) = &pool.nvlink_domain {
        diagnostic = diagnostic.with_secondary(nvlink.span, "NVLink domain declared here");
    }
    diagnostics.push(
        diagnostic
            .with_note(
                "a gang spread over NVLink domains talks over the slower network between them",
            )
            .with_help(help),
    );
}

/// Whole NVLink domains: a reservation that is not one splits a domain with another tenant.
fn check_domain_split(
    tenant: &Tenant,
    pool: &Pool,
    reservation: &PoolQuota,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(domain) = &pool.nvlink_domain else {
        return;
    };
    if !nvlink_domain_fits(pool) {
        // A domain the pool cannot hold is `topology-not-tree`; no reservation is whole in it.
        return;
    }
    let size = domain.value.max(1);
    let reserved = reservation.reserved.value;
    let partial = reserved % size;
    if partial == 0 {
        return;
    }
    let wasted = size - partial;
    let lower = reserved - partial;
    let upper = lower.saturating_add(size);
    let amounts = if lower == 0 {
        format!("{upper}")
    } else {
        format!("{lower} or {upper}")
    };
    diagnostics.push(
        Diagnostic::warning(
            Code::ReservationSplitsNvlinkDomain,
            reservation.reserved.span,
            format!(
                "tenant `{}` reserves {reserved} GPUs of pool `{}`, not a whole number of its {size}-GPU NVLink domains: {wasted} GPUs are wasted for NVLink gangs",
                tenant.name.value, pool.name.value
            ),
        )
        .with_label(format!(
            "{} whole domain{} and {partial} GPUs of another",
            lower / size,
            if lower / size == 1 { "" } else { "s" }
        ))
        .with_secondary(domain.span, format!("{size} GPUs per NVLink domain"))
        .with_note(format!(
            "the other {wasted} GPUs of the last domain go to another tenant, so neither can run a gang over the whole domain on them"
        ))
        .with_help(format!("reserve {amounts} GPUs (whole NVLink domains of {size})")),
    );
}

/// A ClusterQueue resource group holds at most 64 flavors: one per pool the tenant reserves in.
fn check_pool_count(
    tenant: &Tenant,
    cell: &Cell,
    quota: &Quota,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut pools = BTreeSet::new();
    for reservation in &quota.pools {
        if pools.insert(reservation.pool.value.as_str()) && pools.len() == MAX_TENANT_POOLS + 1 {
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    reservation.pool.span,
                    format!(
                        "tenant `{}` reserves in more than {MAX_TENANT_POOLS} pools of cell `{}`",
                        tenant.name.value, cell.name.value
                    ),
                )
                .with_label(format!("pool number {}", MAX_TENANT_POOLS + 1))
                .with_note("each pool is a Kueue ResourceFlavor of the tenant's ClusterQueue, and a resource group holds at most 64 flavors")
                .with_help(format!(
                    "reserve in at most {MAX_TENANT_POOLS} pools of cell `{}`, or merge pools of the same hardware",
                    cell.name.value
                )),
            );
        }
    }
}

/// Where a tenant's ClusterQueue counts cpu, memory and pods per pool flavor (see
/// [`counts_ceiling_per_pool`]), every pool of the quota declares its part of each ceiling, the
/// parts fit the ceilings, and the one resource group that then holds the ceiling flavor and
/// every pool flavor with cpu, memory, pods and the cell's GPU resources stays within Kueue's
/// limits.
fn check_pool_ceilings(
    tenant: &Tenant,
    cell: &Cell,
    quota: &Quota,
    cell_catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if !counts_ceiling_per_pool(quota, cell) {
        return;
    }
    let topology_pool = quota
        .pools
        .iter()
        .filter_map(|reservation| pool_of(cell, reservation))
        .find(|pool| pool.topology.is_some());
    let why = match topology_pool {
        Some(pool) => format!(
            "pool `{}` has a topology, and Kueue gives a topology-aware pod set one flavor for all the resources it requests, so the tenant's ClusterQueue counts cpu, memory and pods on each pool's flavor",
            pool.name.value
        ),
        None => "a reservation of this quota declares a part of the ceilings, so the tenant's ClusterQueue counts cpu, memory and pods on each pool's flavor".to_string(),
    };
    // Per pool, in the order the quota first names it: its first reservation and the fields
    // its reservations declare.
    let mut pools: Vec<(&PoolQuota, [bool; 3])> = Vec::new();
    for reservation in &quota.pools {
        if pool_of(cell, reservation).is_none() {
            continue;
        }
        let declared = [
            reservation.cpu.is_some(),
            reservation.memory.is_some(),
            reservation.pods.is_some(),
        ];
        match pools
            .iter_mut()
            .find(|(first, _)| first.pool.value == reservation.pool.value)
        {
            Some((_, seen)) => {
                for (seen, declared) in seen.iter_mut().zip(declared) {
                    *seen |= declared;
                }
            }
            None => pools.push((reservation, declared)),
        }
    }
    for (first, declared) in &pools {
        let missing: Vec<CeilingResource> = CeilingResource::ALL
            .into_iter()
            .zip(declared)
            .filter(|(_, declared)| !**declared)
            .map(|(resource, _)| resource)
            .collect();
        if missing.is_empty() {
            continue;
        }
        let example: Vec<&str> = missing
            .iter()
            .map(|resource| match resource {
                CeilingResource::Cpu => "cpu=\"<cores>\"",
                CeilingResource::Memory => "memory=\"<bytes>\"",
                CeilingResource::Pods => "pods=<n>",
            })
            .collect();
        let missing: Vec<&str> = missing.iter().map(|resource| resource.as_str()).collect();
        diagnostics.push(
            Diagnostic::error(
                Code::PoolCeilingMissing,
                first.pool.span,
                format!(
                    "tenant `{}` gives pool `{}` of cell `{}` no part of its {} ceiling{}",
                    tenant.name.value,
                    first.pool.value,
                    cell.name.value,
                    list_names(missing.iter().copied()),
                    if missing.len() > 1 { "s" } else { "" }
                ),
            )
            .with_label(format!("no {} part", missing.join("/")))
            .with_note(format!(
                "{why}; a pool without a part could admit no pod that requests it"
            ))
            .with_help(format!(
                "add {} to a reservation of pool `{}`: the part of the tenant's ceiling its pods may request (the rest stays for pods without GPUs)",
                example.join(" "),
                first.pool.value
            )),
        );
    }
    let Some(parts) = pool_ceilings(quota, cell) else {
        return;
    };
    let sums = [
        (
            CeilingResource::Cpu,
            parts.iter().map(|part| part.cpu.milli()).sum::<i128>(),
            quota.cpu.value.milli(),
            quota.cpu.value.format(),
            quota.cpu.span,
        ),
        (
            CeilingResource::Memory,
            parts.iter().map(|part| part.memory.milli()).sum::<i128>(),
            quota.memory.value.milli(),
            quota.memory.value.format(),
            quota.memory.span,
        ),
        (
            CeilingResource::Pods,
            parts.iter().map(|part| i128::from(part.pods)).sum::<i128>() * 1000,
            i128::from(quota.pods.value) * 1000,
            crate::quantity::Format::DecimalSi,
            quota.pods.span,
        ),
    ];
    for (resource, sum, ceiling, format, span) in sums {
        let field = resource.as_str();
        if sum <= ceiling {
            continue;
        }
        let show = |milli: i128| {
            Quantity::from_milli(milli, format)
                .map_or_else(|| format!("{milli}m"), |q| q.to_string())
        };
        let mut diagnostic = Diagnostic::error(
            Code::PoolCeilingsExceedCeiling,
            span,
            format!(
                "the pool parts of tenant `{}`'s `{field}` ceiling in cell `{}` add up to {}, more than the ceiling {}",
                tenant.name.value,
                cell.name.value,
                show(sum),
                show(ceiling)
            ),
        )
        .with_label(format!("ceiling {}", show(ceiling)));
        for reservation in &quota.pools {
            let part = match resource {
                CeilingResource::Cpu => reservation
                    .cpu
                    .as_ref()
                    .map(|q| (q.span, q.value.to_string())),
                CeilingResource::Memory => reservation
                    .memory
                    .as_ref()
                    .map(|q| (q.span, q.value.to_string())),
                CeilingResource::Pods => reservation
                    .pods
                    .as_ref()
                    .map(|q| (q.span, q.value.to_string())),
            };
            if let Some((part_span, value)) = part {
                diagnostic = diagnostic.with_secondary(
                    part_span,
                    format!("pool `{}` gets {value}", reservation.pool.value),
                );
            }
        }
        diagnostics.push(
            diagnostic
                .with_note("each pool's part is the cpu, memory or pods quota of the pool's flavor in the tenant's ClusterQueue; their sum is what the tenant's pods may request at once")
                .with_help(format!(
                    "lower the pools' `{field}` parts by {} in all, or raise the ceiling to {}",
                    show(sum - ceiling),
                    show(sum)
                )),
        );
    }
    // The ceiling flavor and every pool flavor, each covering cpu, memory, pods and every GPU
    // resource of the cell, in one resource group.
    let mut resources = BTreeSet::from([hardware::GPU_RESOURCE.to_string()]);
    for pool in &cell.pools {
        for offer in hardware::offers(pool, cell_catalog) {
            resources.insert(offer.resource);
        }
    }
    let flavors = pools.len() + 1;
    let covered = resources.len() + CEILING_RESOURCE_COUNT;
    let pairs = flavors.saturating_mul(covered);
    if flavors > MAX_TENANT_POOLS || covered > MAX_CELL_GPU_RESOURCES || pairs > MAX_GROUP_PAIRS {
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                quota.span,
                format!(
                    "tenant `{}`'s ClusterQueue in cell `{}` would hold {flavors} flavors and {covered} resources in one resource group ({pairs} pairs)",
                    tenant.name.value, cell.name.value
                ),
            )
            .with_label("quota with per-pool ceilings")
            .with_note(format!(
                "{why}; Kueue allows at most {MAX_TENANT_POOLS} flavors, {MAX_CELL_GPU_RESOURCES} resources and {MAX_GROUP_PAIRS} (flavor, resource) pairs in a resource group"
            ))
            .with_help("reserve in fewer pools of the cell, or use fewer distinct MIG profiles in it"),
        );
    }
}

/// cpu, memory and pods: the ceiling resources a ClusterQueue covers beside the GPU resources.
const CEILING_RESOURCE_COUNT: usize = CeilingResource::ALL.len();

/// The checks of one cell; `cell_catalog` is the catalog as the cell sees it.
fn check_cell(cell: &Cell, cell_catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    duplicates(cell.orgs.iter().map(|org| &org.name), "org", diagnostics);
    for priority in &cell.priorities {
        let length = priority.name.value.len();
        if length > MAX_PRIORITY_NAME {
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    priority.name.span,
                    format!("priority name is {length} characters long"),
                )
                .with_label(format!("at most {MAX_PRIORITY_NAME} characters"))
                .with_note("each priority becomes a Kueue WorkloadPriorityClass, which jobs name in the `kueue.x-k8s.io/priority-class` label")
                .with_help(format!(
                    "shorten the name to at most {MAX_PRIORITY_NAME} characters, and the workloads' `priority` with it"
                )),
            );
        }
    }
    let flavor_labels = flavor_node_labels(cell, cell_catalog);
    // Every tenant's GPU resource group and the root Cohort's cover `nvidia.com/gpu` and every
    // resource a pool offers.
    let mut resources = BTreeSet::from([hardware::GPU_RESOURCE.to_string()]);
    let mut over = false;
    for (idx, pool) in cell.pools.iter().enumerate() {
        if idx == MAX_CELL_POOLS {
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    pool.name.span,
                    format!(
                        "cell `{}` has {} pools, more than the {MAX_CELL_POOLS} flavors a Kueue resource group holds",
                        cell.name.value,
                        cell.pools.len()
                    ),
                )
                .with_label(format!("pool number {}", MAX_CELL_POOLS + 1))
                .with_note("each pool is a Kueue ResourceFlavor, and the cell's root Cohort lists every flavor in one resource group")
                .with_help(format!(
                    "declare at most {MAX_CELL_POOLS} pools in cell `{}`: merge pools of the same hardware, or move some to a cell of their own",
                    cell.name.value
                )),
            );
        }
        let labels = flavor_labels.get(&pool.name.value);
        check_flavor_limits(pool, labels, diagnostics);
        check_topology(pool, diagnostics);
        check_nvlink_domain(pool, diagnostics);
        for offer in hardware::offers(pool, cell_catalog) {
            resources.insert(offer.resource);
        }
        if !over && resources.len() > MAX_CELL_GPU_RESOURCES {
            over = true;
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    pool.name.span,
                    format!(
                        "cell `{}` offers more than {MAX_CELL_GPU_RESOURCES} GPU resources with this pool",
                        cell.name.value
                    ),
                )
                .with_label(format!("{} distinct resources up to here, `{}` included", resources.len(), hardware::GPU_RESOURCE))
                .with_note("every tenant's ClusterQueue covers each GPU resource of the cell and `nvidia.com/gpu`, and a resource group covers at most 64")
                .with_help("use fewer distinct MIG profiles across the cell's pools"),
            );
        }
    }
    let pools = cell.pools.len();
    let pairs = pools.saturating_mul(resources.len());
    if !over && pools <= MAX_CELL_POOLS && pairs > MAX_GROUP_PAIRS {
        let most_pools = MAX_GROUP_PAIRS / resources.len().max(1);
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                cell.name.span,
                format!(
                    "cell `{}` has {pools} pools and {} GPU resources: {pairs} (flavor, resource) pairs in one Kueue resource group, more than {MAX_GROUP_PAIRS}",
                    cell.name.value,
                    resources.len()
                ),
            )
            .with_label(format!("{pools} pools x {} resources = {pairs}", resources.len()))
            .with_note("the cell's root Cohort lists every pool's flavor with every GPU resource of the cell, `nvidia.com/gpu` included, and a tenant's ClusterQueue each pool it reserves in; Kueue allows at most 512 pairs in a resource group")
            .with_help(format!(
                "keep pools x GPU resources at most {MAX_GROUP_PAIRS}: with {} resources, at most {most_pools} pools; or use fewer distinct MIG profiles",
                resources.len()
            )),
        );
    }
}

/// A pool's ResourceFlavor carries its node labels (the pool's own and those tenantc adds) and
/// its taints, at most 8 of each, and no two taints with the same key and effect.
fn check_flavor_limits(
    pool: &Pool,
    flavor_labels: Option<&BTreeMap<String, String>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // In source order, so the finding points at the label written past the limit.
    let mut labels: Vec<&Spanned<String>> = pool.labels.iter().map(|(key, _)| key).collect();
    labels.sort_by_key(|key| key.span.start);
    let total = flavor_labels.map_or(labels.len(), BTreeMap::len);
    let added: Vec<&str> = flavor_labels
        .into_iter()
        .flat_map(BTreeMap::keys)
        .filter(|key| !labels.iter().any(|label| &label.value == *key))
        .map(String::as_str)
        .collect();
    let allowed = MAX_FLAVOR_LABELS.saturating_sub(added.len());
    if total > MAX_FLAVOR_LABELS
        && let Some(extra) = labels.get(allowed)
    {
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                extra.span,
                format!(
                    "pool `{}` gives its Kueue ResourceFlavor {total} node labels, more than {MAX_FLAVOR_LABELS}",
                    pool.name.value
                ),
            )
            .with_label(format!("label number {}", allowed + 1))
            .with_note(format!(
                "every node of the pool carries these {} labels, the flavor's nodeLabels: the pool's {} plus {}; a ResourceFlavor holds at most {MAX_FLAVOR_LABELS}",
                total,
                labels.len(),
                list_names(added.iter().copied())
            ))
            .with_help(format!(
                "keep at most {allowed} labels that tell the pool's nodes apart"
            )),
        );
    }
    if let Some(extra) = pool.taints.get(MAX_POOL_TAINTS) {
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                extra.key.span,
                format!(
                    "pool `{}` has {} taints; its Kueue ResourceFlavor takes at most {MAX_POOL_TAINTS}",
                    pool.name.value,
                    pool.taints.len()
                ),
            )
            .with_label(format!("taint number {}", MAX_POOL_TAINTS + 1))
            .with_note("a ResourceFlavor holds at most 8 node taints")
            .with_help(format!("keep at most {MAX_POOL_TAINTS} taints on the pool's nodes")),
        );
    }
    let mut seen: BTreeMap<(&str, &str), Span> = BTreeMap::new();
    for taint in &pool.taints {
        let key = (taint.key.value.as_str(), taint.effect.value.as_str());
        let Some(first) = seen.get(&key) else {
            seen.insert(key, taint.key.span);
            continue;
        };
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                taint.key.span,
                format!(
                    "pool `{}` repeats the taint key `{}` with effect `{}`",
                    pool.name.value, taint.key.value, taint.effect.value
                ),
            )
            .with_label("same key and effect as an earlier taint")
            .with_secondary(*first, "first taint with this key and effect")
            .with_note("a node holds one taint per key and effect, and Kueue's webhook refuses a ResourceFlavor whose nodeTaints repeat one")
            .with_help(format!(
                "keep one `{}` taint with effect `{}`, or give the other a different key or effect",
                taint.key.value, taint.effect.value
            )),
        );
    }
}

/// An NVLink domain fits the pool's GPUs: see [`nvlink_domain_fits`].
fn check_nvlink_domain(pool: &Pool, diagnostics: &mut Vec<Diagnostic>) {
    let Some(domain) = &pool.nvlink_domain else {
        return;
    };
    if nvlink_domain_fits(pool) {
        return;
    }
    let name = &pool.name.value;
    let per_node = pool.gpus_per_node.value;
    let gpus = pool.nodes.value.saturating_mul(per_node);
    let (message, help) = if domain.value > gpus {
        (
            format!(
                "an NVLink domain of {} GPUs is larger than pool `{name}` ({} nodes x {per_node} GPUs = {gpus})",
                domain.value, pool.nodes.value
            ),
            format!(
                "check `nvlink-domain gpus=` against the hardware: a domain holds at most the pool's {gpus} GPUs; declare the pool's full node count, or the domain's real size"
            ),
        )
    } else if domain.value > per_node && domain.value % per_node != 0 {
        (
            format!(
                "an NVLink domain of {} GPUs is not a whole number of pool `{name}`'s nodes of {per_node} GPUs",
                domain.value
            ),
            "check `nvlink-domain gpus=` against the hardware: a multi-node NVLink domain is made of whole nodes".to_string(),
        )
    } else if domain.value < per_node && per_node % domain.value.max(1) != 0 {
        (
            format!(
                "an NVLink domain of {} GPUs does not divide pool `{name}`'s nodes of {per_node} GPUs",
                domain.value
            ),
            format!(
                "check `nvlink-domain gpus=` against the hardware: a domain inside a node is a divisor of its {per_node} GPUs"
            ),
        )
    } else {
        (
            format!(
                "pool `{name}` ({gpus} GPUs) is not a whole number of its NVLink domains of {} GPUs",
                domain.value
            ),
            format!(
                "make the pool's node count a whole number of NVLink domains ({} nodes each)",
                domain.value / per_node.max(1)
            ),
        )
    };
    diagnostics.push(
        topology_error(domain.span, message)
            .with_label(format!("{} GPUs per NVLink domain", domain.value))
            .with_secondary(pool.nodes.span, format!("{} nodes x {per_node} GPUs", pool.nodes.value))
            .with_note("gangs, whole-domain reservations and topology levels are counted in NVLink domains, so a domain the pool cannot hold makes every one of them wrong")
            .with_help(help),
    );
}

fn topology_error(span: Span, message: String) -> Diagnostic {
    Diagnostic::error(Code::TopologyNotTree, span, message)
}

/// Levels go from coarse to fine, each domain a whole number of the next finer level's, over a
/// whole number of the coarsest domains, with hostname last and at most 16 levels; a pool whose
/// NVLink domain spans nodes has a level for it.
fn check_topology(pool: &Pool, diagnostics: &mut Vec<Diagnostic>) {
    let Some(topology) = &pool.topology else {
        return;
    };
    let name = &pool.name.value;
    let last = topology.levels.len().saturating_sub(1);
    // The levels that take part in the order checks: each label once, hostname only last.
    let mut chain: Vec<(&str, &Spanned<i64>)> = Vec::new();
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for (idx, level) in topology.levels.iter().enumerate() {
        let label = level.label.value.as_str();
        if let Some(first) = seen.get(label) {
            diagnostics.push(
                topology_error(
                    level.label.span,
                    format!("pool `{name}` repeats topology level `{label}`"),
                )
                .with_label("repeated here")
                .with_secondary(*first, "first given here")
                .with_help("give each node label once; Kueue requires unique levels"),
            );
            continue;
        }
        seen.insert(label, level.label.span);
        if label == HOSTNAME_LABEL {
            if idx != last {
                diagnostics.push(
                    topology_error(
                        level.label.span,
                        format!("`{HOSTNAME_LABEL}` is not the last topology level of pool `{name}`"),
                    )
                    .with_label("the finest level, one node per domain")
                    .with_help(format!(
                        "move it to the end, or leave it out: `{HOSTNAME_LABEL}` is the implied last level"
                    )),
                );
                continue;
            }
            if level.nodes.value != 1 {
                diagnostics.push(
                    topology_error(
                        level.nodes.span,
                        format!(
                            "a `{HOSTNAME_LABEL}` domain of pool `{name}` holds one node, not {}",
                            level.nodes.value
                        ),
                    )
                    .with_label("each node is its own hostname domain")
                    .with_help("write `nodes=1`, or leave the level out: it is implied"),
                );
                continue;
            }
        }
        chain.push((label, &level.nodes));
    }
    let implied = Spanned::new(1, topology.span);
    let explicit_hostname = chain
        .last()
        .is_some_and(|(label, _)| *label == HOSTNAME_LABEL);
    let total_levels = topology.levels.len()
        + usize::from(
            topology
                .levels
                .last()
                .is_none_or(|level| level.label.value != HOSTNAME_LABEL),
        );
    if total_levels > MAX_TOPOLOGY_LEVELS {
        let first_extra = MAX_TOPOLOGY_LEVELS - usize::from(!explicit_hostname);
        if let Some(level) = topology.levels.get(first_extra) {
            diagnostics.push(
                topology_error(
                    level.label.span,
                    format!(
                        "pool `{name}` has {total_levels} topology levels with `{HOSTNAME_LABEL}`, more than Kueue's {MAX_TOPOLOGY_LEVELS}"
                    ),
                )
                .with_label("past the limit")
                .with_help(format!(
                    "keep at most {} levels above `{HOSTNAME_LABEL}`",
                    MAX_TOPOLOGY_LEVELS - 1
                )),
            );
        }
    }
    if !explicit_hostname {
        chain.push((HOSTNAME_LABEL, &implied));
    }
    for pair in chain.windows(2) {
        let [(coarse_label, coarse), (fine_label, fine)] = pair else {
            continue;
        };
        if fine.value >= coarse.value {
            let diagnostic = if *fine_label == HOSTNAME_LABEL && !explicit_hostname {
                topology_error(
                    coarse.span,
                    format!(
                        "topology level `{coarse_label}` of pool `{name}` holds one node per domain, as `{HOSTNAME_LABEL}` does"
                    ),
                )
                .with_label("not coarser than the implied hostname level")
                .with_help(format!(
                    "remove the level, or give it more than one node; `{HOSTNAME_LABEL}` is the implied last level"
                ))
            } else {
                topology_error(
                    fine.span,
                    format!(
                        "topology level `{fine_label}` of pool `{name}` holds {} nodes per domain, not fewer than `{coarse_label}` ({})",
                        fine.value, coarse.value
                    ),
                )
                .with_label("levels go from coarse to fine")
                .with_secondary(coarse.span, format!("`{coarse_label}` holds {}", coarse.value))
                .with_help("order the levels from the largest domain to the smallest, each smaller than the one before")
            };
            diagnostics.push(diagnostic);
        } else if coarse.value % fine.value != 0 {
            diagnostics.push(
                topology_error(
                    fine.span,
                    format!(
                        "one `{coarse_label}` domain of pool `{name}` ({} nodes) is not a whole number of `{fine_label}` domains ({} nodes)",
                        coarse.value, fine.value
                    ),
                )
                .with_label(format!("{} does not divide {}", fine.value, coarse.value))
                .with_secondary(coarse.span, format!("`{coarse_label}` holds {}", coarse.value))
                .with_help(format!(
                    "make `{fine_label}` a divisor of {}, so each `{coarse_label}` domain is made of whole `{fine_label}` domains",
                    coarse.value
                )),
            );
        }
    }
    if let Some((coarse_label, coarse)) = chain.first()
        && coarse.value > 0
        && pool.nodes.value % coarse.value != 0
    {
        diagnostics.push(
            topology_error(
                coarse.span,
                format!(
                    "pool `{name}` has {} nodes, not a whole number of `{coarse_label}` domains of {}",
                    pool.nodes.value, coarse.value
                ),
            )
            .with_label(format!("{} does not divide {}", coarse.value, pool.nodes.value))
            .with_secondary(pool.nodes.span, "the pool's nodes")
            .with_help(format!(
                "make the pool's node count a multiple of {}, or `{coarse_label}` a divisor of {}",
                coarse.value, pool.nodes.value
            )),
        );
    }
    check_nvlink_level(pool, &chain, diagnostics);
}

/// A pool whose NVLink domain spans nodes needs a level that is exactly that domain, or Kueue
/// cannot keep a gang inside it.
fn check_nvlink_level(
    pool: &Pool,
    chain: &[(&str, &Spanned<i64>)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let (Some(domain), Some(topology)) = (&pool.nvlink_domain, &pool.topology) else {
        return;
    };
    let per_node = pool.gpus_per_node.value.max(1);
    if domain.value <= per_node {
        return;
    }
    if !nvlink_domain_fits(pool) {
        // Reported by `check_nvlink_domain`.
        return;
    }
    let name = &pool.name.value;
    let domain_nodes = domain.value / per_node;
    if chain.iter().any(|(_, nodes)| nodes.value == domain_nodes) {
        return;
    }
    let position = chain
        .iter()
        .position(|(_, nodes)| nodes.value < domain_nodes);
    let place = match position {
        Some(0) | None => chain
            .first()
            .map(|(label, _)| format!("before `{label}`, as the coarsest level"))
            .unwrap_or_default(),
        Some(idx) => {
            let coarser = chain
                .get(idx - 1)
                .map(|(label, _)| *label)
                .unwrap_or_default();
            let finer = chain.get(idx).map(|(label, _)| *label).unwrap_or_default();
            format!("between `{coarser}` and `{finer}`")
        }
    };
    diagnostics.push(
        topology_error(
            domain.span,
            format!(
                "no topology level of pool `{name}` holds exactly one NVLink domain ({domain_nodes} nodes)"
            ),
        )
        .with_label(format!("{} GPUs = {domain_nodes} nodes of {per_node}", domain.value))
        .with_secondary(topology.span, "levels declared here")
        .with_help(format!(
            "add `level \"<the node label naming the NVLink domain>\" nodes={domain_nodes}` {place}"
        )),
    );
}

/// Explicit splits name each workload once and add up to the ceilings.
fn check_splits(tenant: &Tenant, quota: &Quota, diagnostics: &mut Vec<Diagnostic>) {
    if quota.splits.is_empty() || !quota.complete || !tenant.complete {
        return;
    }
    let declared: BTreeMap<WorkloadKind, &Workload> = tenant
        .workloads
        .iter()
        .map(|workload| (workload.kind.value, workload))
        .collect();
    let where_ = format!(
        "tenant `{}` in cell `{}`",
        tenant.name.value, quota.cell.value
    );
    let mut seen: BTreeMap<WorkloadKind, Span> = BTreeMap::new();
    let mut listed_well = true;
    for split in &quota.splits {
        let kind = split.workload.value;
        if !declared.contains_key(&kind) {
            listed_well = false;
            diagnostics.push(
                Diagnostic::error(
                    Code::CeilingSplitMismatch,
                    split.workload.span,
                    format!(
                        "{where_} splits its ceilings to workload `{}`, which it does not declare",
                        kind.as_str()
                    ),
                )
                .with_label("no such workload")
                .with_help(format!(
                    "remove this split, or declare `workload \"{}\" …`",
                    kind.as_str()
                )),
            );
        } else if let Some(first) = seen.get(&kind) {
            listed_well = false;
            diagnostics.push(
                Diagnostic::error(
                    Code::CeilingSplitMismatch,
                    split.workload.span,
                    format!(
                        "{where_} splits its ceilings to workload `{}` twice",
                        kind.as_str()
                    ),
                )
                .with_label("split again here")
                .with_secondary(*first, "first split here")
                .with_help("merge the two splits into one"),
            );
        } else {
            seen.insert(kind, split.workload.span);
        }
    }
    for (kind, workload) in &declared {
        if seen.contains_key(kind) {
            continue;
        }
        listed_well = false;
        diagnostics.push(
            Diagnostic::error(
                Code::CeilingSplitMismatch,
                quota.cell.span,
                format!(
                    "the ceiling splits of {where_} leave out workload `{}`",
                    kind.as_str()
                ),
            )
            .with_label(format!("no split for `{}`", kind.as_str()))
            .with_secondary(workload.kind.span, "workload declared here")
            .with_note("with explicit splits, each workload namespace gets exactly its split; one without a split could run nothing")
            .with_help(format!(
                "add `split \"{}\" cpu=… memory=… pods=…` and make the splits add up to the ceilings",
                kind.as_str()
            )),
        );
    }
    if !listed_well {
        return;
    }
    let quantities = [
        (
            "cpu",
            &quota.cpu,
            quota.splits.iter().map(|s| &s.cpu).collect::<Vec<_>>(),
        ),
        (
            "memory",
            &quota.memory,
            quota.splits.iter().map(|s| &s.memory).collect(),
        ),
    ];
    for (field, ceiling, parts) in quantities {
        let sum: i128 = parts.iter().map(|part| part.value.milli()).sum();
        let format = ceiling.value.format();
        let show = |milli: i128| {
            Quantity::from_milli(milli, format)
                .map_or_else(|| format!("{milli}m"), |q| q.to_string())
        };
        if sum == ceiling.value.milli() {
            continue;
        }
        let difference = (ceiling.value.milli() - sum).abs();
        let mut diagnostic = Diagnostic::error(
            Code::CeilingSplitMismatch,
            ceiling.span,
            format!(
                "the `{field}` splits of {where_} add up to {}, not to its ceiling {}",
                show(sum),
                ceiling.value
            ),
        )
        .with_label(format!("ceiling {}", ceiling.value));
        for (split, part) in quota.splits.iter().zip(&parts) {
            diagnostic = diagnostic.with_secondary(
                part.span,
                format!("`{}` gets {}", split.workload.value.as_str(), part.value),
            );
        }
        diagnostics.push(diagnostic.with_help(split_help(
            field,
            sum < ceiling.value.milli(),
            &show(difference),
        )));
    }
    let pods_sum: i64 = quota
        .splits
        .iter()
        .map(|split| split.pods.value)
        .fold(0, i64::saturating_add);
    if pods_sum != quota.pods.value {
        let mut diagnostic = Diagnostic::error(
            Code::CeilingSplitMismatch,
            quota.pods.span,
            format!(
                "the `pods` splits of {where_} add up to {pods_sum}, not to its ceiling {}",
                quota.pods.value
            ),
        )
        .with_label(format!("ceiling {}", quota.pods.value));
        for split in &quota.splits {
            diagnostic = diagnostic.with_secondary(
                split.pods.span,
                format!(
                    "`{}` gets {}",
                    split.workload.value.as_str(),
                    split.pods.value
                ),
            );
        }
        diagnostics.push(diagnostic.with_help(split_help(
            "pods",
            pods_sum < quota.pods.value,
            &(quota.pods.value - pods_sum).abs().to_string(),
        )));
    }
}

/// One ceiling as [`check_empty_shares`] reads it: its field, span and text, each namespace's
/// part in units, the unit in thousandths, and a printer of thousandths.
type ShareField<'a> = (
    &'static str,
    Span,
    String,
    Vec<i128>,
    i128,
    &'a dyn Fn(i128) -> String,
);

/// A ceiling split by shares gives every workload namespace some cpu, memory and pods: a
/// namespace with none of one can run no pod at all (a warning, since the split itself adds
/// up).
fn check_empty_shares(tenant: &Tenant, quota: &Quota, diagnostics: &mut Vec<Diagnostic>) {
    if !quota.splits.is_empty() || !quota.complete || !tenant.complete {
        return;
    }
    let mut kinds: Vec<&Workload> = tenant.workloads.iter().collect();
    kinds.sort_by_key(|workload| workload.kind.value);
    kinds.dedup_by_key(|workload| workload.kind.value);
    let shares: Vec<i64> = kinds
        .iter()
        .map(|workload| {
            workload
                .share
                .as_ref()
                .map_or(1, |share| share.value)
                .max(1)
        })
        .collect();
    let share_sum: i128 = shares.iter().map(|share| i128::from(*share)).sum();
    let parts = split_ceilings(quota, &tenant.workloads);
    let cpu_format = quota.cpu.value.format();
    let memory_format = quota.memory.value.format();
    let fields: [ShareField<'_>; 3] = [
        (
            "cpu",
            quota.cpu.span,
            quota.cpu.value.to_string(),
            parts.iter().map(|part| part.cpu.milli()).collect(),
            1,
            &|milli| {
                Quantity::from_milli(milli, cpu_format)
                    .map_or_else(|| format!("{milli}m"), |q| q.to_string())
            },
        ),
        (
            "memory",
            quota.memory.span,
            quota.memory.value.to_string(),
            parts
                .iter()
                .map(|part| part.memory.milli() / 1000)
                .collect(),
            1000,
            &|milli| {
                Quantity::from_milli(milli, memory_format)
                    .map_or_else(|| format!("{}", milli / 1000), |q| q.to_string())
            },
        ),
        (
            "pods",
            quota.pods.span,
            quota.pods.value.to_string(),
            parts.iter().map(|part| i128::from(part.pods)).collect(),
            1000,
            &|milli| (milli / 1000).to_string(),
        ),
    ];
    for (field, span, ceiling, units, unit, show) in fields {
        let empty: Vec<(usize, &Workload)> = units
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (part, _))| **part <= 0)
            .map(|(idx, (_, workload))| (idx, *workload))
            .collect();
        let Some((_, first)) = empty.first() else {
            continue;
        };
        // The smallest ceiling (in units) whose split by shares gives each of these at least
        // one unit: `units * share >= share_sum` for a part after the first, and one unit for
        // the first, which gets the remainder.
        let needed: i128 = empty
            .iter()
            .map(|(idx, _)| {
                let share = i128::from(shares.get(*idx).copied().unwrap_or(1));
                if *idx == 0 {
                    1
                } else {
                    (share_sum + share - 1) / share
                }
            })
            .max()
            .unwrap_or(1);
        let names: Vec<&str> = empty.iter().map(|(_, w)| w.kind.value.as_str()).collect();
        let mut diagnostic = Diagnostic::warning(
            Code::CeilingSplitMismatch,
            span,
            format!(
                "the `{field}` ceiling {ceiling} of tenant `{}` in cell `{}`, split by shares, gives workload {} none",
                tenant.name.value,
                quota.cell.value,
                list_names(names.iter().copied())
            ),
        )
        .with_label(format!("split over {} workload namespaces", kinds.len()));
        for (_, workload) in &empty {
            diagnostic = diagnostic.with_secondary(
                workload
                    .share
                    .as_ref()
                    .map_or(workload.kind.span, |share| share.span),
                format!("`{}` gets 0 {field}", workload.kind.value.as_str()),
            );
        }
        diagnostics.push(
            diagnostic
                .with_note("a namespace's ResourceQuota holds its part of the ceiling, so a namespace with no cpu, memory or pods can run no pod")
                .with_help(format!(
                    "raise the `{field}` ceiling to at least {}, give `{}` a larger `share`, or split the ceilings explicitly with `split`",
                    show(needed * unit),
                    first.kind.value.as_str()
                )),
        );
    }
}

fn split_help(field: &str, short: bool, difference: &str) -> String {
    if short {
        format!(
            "give the splits {difference} more `{field}` in total, or lower the ceiling by {difference}; the splits must add up to it exactly"
        )
    } else {
        format!(
            "take {difference} `{field}` from the splits, or raise the ceiling by {difference}; the splits must add up to it exactly"
        )
    }
}

/// A fleet reservation splits into its cells, and each cell's part is what the tenant reserves
/// there.
fn check_fleet(tenant: &Tenant, cells: &BTreeMap<&str, &Cell>, diagnostics: &mut Vec<Diagnostic>) {
    duplicates(
        tenant.fleet.iter().map(|reservation| &reservation.gpu),
        "fleet reservation of GPU",
        diagnostics,
    );
    let quota_cells = || tenant.quotas.iter().map(|quota| quota.cell.value.as_str());
    // A repeated model is `name-duplicate`; the cells it leaves out are checked once.
    let mut checked_models = BTreeSet::new();
    for reservation in &tenant.fleet {
        let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
        let mut usable = true;
        for share in &reservation.cells {
            let cell = share.cell.value.as_str();
            if let Some(first) = seen.get(cell) {
                usable = false;
                diagnostics.push(
                    Diagnostic::error(
                        Code::FleetReservationMismatch,
                        share.cell.span,
                        format!(
                            "the `{}` fleet reservation of tenant `{}` names cell `{cell}` twice",
                            reservation.gpu.value, tenant.name.value
                        ),
                    )
                    .with_label("named again here")
                    .with_secondary(*first, "first named here")
                    .with_help("give each cell one part"),
                );
                continue;
            }
            seen.insert(cell, share.cell.span);
            if let (Some(_), Some(weight)) = (&share.gpus, &share.weight) {
                usable = false;
                diagnostics.push(
                    Diagnostic::error(
                        Code::FleetReservationMismatch,
                        weight.span,
                        format!(
                            "fleet cell `{cell}` of tenant `{}` has both a fixed part and a weight",
                            tenant.name.value
                        ),
                    )
                    .with_label("a weighted cell shares the rest; this one also has `gpus`")
                    .with_help("keep `gpus` for a fixed part, or `weight` for a share of what the fixed parts leave"),
                );
            }
            if tenant.complete && tenant.quota_in(cell).is_none() {
                usable = false;
                let diagnostic = Diagnostic::error(
                    Code::FleetReservationMismatch,
                    share.cell.span,
                    format!(
                        "tenant `{}` has no quota in cell `{cell}`",
                        tenant.name.value
                    ),
                );
                diagnostics.push(match did_you_mean(cell, quota_cells()) {
                    Some(close) => diagnostic
                        .with_label(format!("did you mean `{close}`?"))
                        .with_help(format!(
                            "the tenant has quotas in {}",
                            list_names(quota_cells())
                        )),
                    None => diagnostic.with_label("no quota here").with_help(format!(
                        "add a quota in cell `{cell}`, or name one of the tenant's cells: {}",
                        list_names(quota_cells())
                    )),
                });
            }
        }
        if tenant.complete && checked_models.insert(reservation.gpu.value.as_str()) {
            check_fleet_unlisted(tenant, reservation, &seen, cells, diagnostics);
        }
        if !usable {
            continue;
        }
        let parts = match fleet_cell_parts(reservation) {
            Ok(parts) => parts,
            Err(error) => {
                diagnostics.push(fleet_split_error(tenant, reservation, error));
                continue;
            }
        };
        if !tenant.complete {
            continue;
        }
        for (share, part) in reservation.cells.iter().zip(parts) {
            let Some(quota) = tenant.quota_in(&share.cell.value) else {
                continue;
            };
            let Some(cell) = cells.get(share.cell.value.as_str()).filter(|c| c.complete) else {
                continue;
            };
            if !quota.complete {
                continue;
            }
            check_fleet_cell(tenant, reservation, share, part, quota, cell, diagnostics);
        }
    }
}

/// A tenant's reservations of a fleet contract's GPU model in a cell the contract does not list
/// are outside the contract.
fn check_fleet_unlisted(
    tenant: &Tenant,
    reservation: &FleetReservation,
    listed: &BTreeMap<&str, Span>,
    cells: &BTreeMap<&str, &Cell>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let gpu = reservation.gpu.value.as_str();
    let mut seen_cells = BTreeSet::new();
    for quota in &tenant.quotas {
        let cell_name = quota.cell.value.as_str();
        if listed.contains_key(cell_name) || !seen_cells.insert(cell_name) || !quota.complete {
            continue;
        }
        let Some(cell) = cells.get(cell_name).filter(|c| c.complete) else {
            continue;
        };
        let counted: Vec<&PoolQuota> = counted_reservations(quota)
            .into_iter()
            .filter(|r| {
                pool_of(cell, r).is_some_and(|pool| {
                    pool.sharing.value == Sharing::Exclusive && pool.gpu.value == gpu
                })
            })
            .collect();
        let actual = counted
            .iter()
            .map(|r| r.reserved.value)
            .fold(0, i64::saturating_add);
        let Some((first, rest)) = counted.split_first().filter(|_| actual > 0) else {
            continue;
        };
        let mut diagnostic = Diagnostic::error(
            Code::FleetReservationMismatch,
            first.reserved.span,
            format!(
                "tenant `{}` reserves {actual} `{gpu}` GPUs in cell `{cell_name}`, which its `{gpu}` fleet reservation does not list",
                tenant.name.value
            ),
        )
        .with_label(format!("{} in pool `{}`", first.reserved.value, first.pool.value));
        for other in rest {
            diagnostic = diagnostic.with_secondary(
                other.reserved.span,
                format!("{} in pool `{}`", other.reserved.value, other.pool.value),
            );
        }
        diagnostics.push(
            diagnostic
                .with_secondary(reservation.gpu.span, format!("the fleet reservation of `{gpu}`"))
                .with_note("a fleet reservation is the tenant's whole contract for its GPU model: every `reserved` whole GPU of the model in an `exclusive` pool counts, in every cell")
                .with_help(format!(
                    "add `cell \"{cell_name}\" gpus={actual}` to the fleet reservation and raise its `gpus` by {actual}, or reserve no `{gpu}` GPUs in cell `{cell_name}`"
                )),
        );
    }
}

fn fleet_split_error(
    tenant: &Tenant,
    reservation: &FleetReservation,
    error: FleetSplitError,
) -> Diagnostic {
    let total = reservation.gpus.value;
    let gpu = &reservation.gpu.value;
    let fixed_labels = |mut diagnostic: Diagnostic| {
        for share in &reservation.cells {
            if let Some(gpus) = &share.gpus {
                diagnostic = diagnostic.with_secondary(
                    gpus.span,
                    format!("`{}` gets {}", share.cell.value, gpus.value),
                );
            }
        }
        diagnostic
    };
    match error {
        FleetSplitError::FixedAboveTotal { fixed } => fixed_labels(
            Diagnostic::error(
                Code::FleetReservationMismatch,
                reservation.gpus.span,
                format!(
                    "the fixed cell parts of tenant `{}`'s `{gpu}` fleet reservation add up to {fixed} GPUs, more than its {total}",
                    tenant.name.value
                ),
            )
            .with_label(format!("{total} GPUs in all")),
        )
        .with_help(format!(
            "lower the fixed parts by {} in total, or raise `gpus` to {fixed}",
            fixed - total
        )),
        FleetSplitError::RestWithoutWeight { rest } => fixed_labels(
            Diagnostic::error(
                Code::FleetReservationMismatch,
                reservation.gpus.span,
                format!(
                    "the fixed cell parts of tenant `{}`'s `{gpu}` fleet reservation leave {rest} of its {total} GPUs to no cell",
                    tenant.name.value
                ),
            )
            .with_label(format!("{total} GPUs in all")),
        )
        .with_help(format!(
            "give a cell `weight=1` to take the rest, or make the fixed parts add up to {total}"
        )),
        FleetSplitError::PartAmbiguous(idx) => {
            let span = reservation
                .cells
                .get(idx)
                .map_or(reservation.span, |share| share.span);
            Diagnostic::error(
                Code::FleetReservationMismatch,
                span,
                format!(
                    "a cell of tenant `{}`'s `{gpu}` fleet reservation has no single part",
                    tenant.name.value
                ),
            )
            .with_label("needs `gpus` or `weight`")
            .with_help("give the cell a fixed part `gpus=` or a weight `weight=`")
        }
    }
}

fn check_fleet_cell(
    tenant: &Tenant,
    reservation: &FleetReservation,
    share: &FleetCellShare,
    part: i64,
    quota: &Quota,
    cell: &Cell,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let gpu = reservation.gpu.value.as_str();
    if quota.pools.iter().any(|r| pool_of(cell, r).is_none()) {
        // A reservation of an unknown pool is `pool-unknown`; it may be the one that counts.
        return;
    }
    let actual = reserved_gpus_of_model(quota, cell, gpu);
    if actual == part {
        return;
    }
    let how = match (&share.gpus, &share.weight) {
        (Some(_), _) => format!("a fixed part of {part}"),
        (None, Some(weight)) => format!(
            "{part} by weight {} of what the fixed parts leave",
            weight.value
        ),
        (None, None) => format!("{part}"),
    };
    let cell_name = &cell.name.value;
    let mut diagnostic = Diagnostic::error(
        Code::FleetReservationMismatch,
        share.cell.span,
        format!(
            "tenant `{}` reserves {actual} `{gpu}` GPUs in cell `{cell_name}`; its fleet reservation gives the cell {part}",
            tenant.name.value
        ),
    )
    .with_label(how);
    let counted: Vec<&PoolQuota> = counted_reservations(quota)
        .into_iter()
        .filter(|r| {
            pool_of(cell, r).is_some_and(|pool| {
                pool.sharing.value == Sharing::Exclusive && pool.gpu.value == gpu
            })
        })
        .collect();
    for counted in &counted {
        diagnostic = diagnostic.with_secondary(
            counted.reserved.span,
            format!(
                "{} in pool `{}`",
                counted.reserved.value, counted.pool.value
            ),
        );
    }
    if counted.is_empty() {
        let has_pool = cell
            .pools
            .iter()
            .any(|pool| pool.sharing.value == Sharing::Exclusive && pool.gpu.value == gpu);
        diagnostic = diagnostic.with_secondary(
            quota.cell.span,
            if has_pool {
                format!("this quota reserves no `exclusive` `{gpu}` pool")
            } else {
                format!("cell `{cell_name}` has no `exclusive` pool of `{gpu}`")
            },
        );
    }
    let change = if actual < part {
        format!("reserve {} more", part - actual)
    } else {
        format!("reserve {} fewer", actual - part)
    };
    diagnostics.push(
        diagnostic
            .with_note("a fleet reservation counts `reserved` whole GPUs of its model in `exclusive` pools")
            .with_help(format!(
                "{change} `{gpu}` GPUs in cell `{cell_name}`, or change the fleet reservation's split"
            )),
    );
}

/// The sum of reserved plus burst over one pool resource stays within capacity times the
/// cell's oversubscription ratio.
fn check_burst(
    cells: &BTreeMap<&str, &Cell>,
    (cell_name, pool_name, resource): (&str, &str, &str),
    reservations: &[(&Tenant, &PoolQuota)],
    cell_catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(cell) = cells.get(cell_name).copied() else {
        return;
    };
    let Some(pool) = cell.pools.iter().find(|p| p.name.value == pool_name) else {
        return;
    };
    let Some(offer) = hardware::offers(pool, cell_catalog)
        .into_iter()
        .find(|offer| offer.resource == resource)
    else {
        return;
    };
    let capacity = i128::from(offer.capacity);
    let reserved: i128 = reservations
        .iter()
        .map(|(_, r)| i128::from(r.reserved.value))
        .sum();
    if reserved > capacity {
        // Reserved alone above capacity is `quota-over-capacity`, an error of its own.
        return;
    }
    let total: i128 = reservations
        .iter()
        .map(|(_, r)| {
            i128::from(r.reserved.value) + i128::from(r.burst.as_ref().map_or(0, |b| b.value))
        })
        .sum();
    let ratio_milli = ratio_milli(cell);
    if total * 1000 <= capacity * ratio_milli {
        return;
    }
    let allowed = capacity * ratio_milli / 1000;
    let what = match &offer.profile {
        Some(profile) => format!("`{profile}` slices"),
        None => format!("`{resource}`"),
    };
    let limit = match &cell.oversubscribe {
        Some(_) => format!(
            "capacity {capacity} x oversubscribe {} = {allowed}",
            ratio_text(ratio_milli)
        ),
        None => format!("capacity {capacity}; the cell declares no `oversubscribe`"),
    };
    let mut diagnostic = Diagnostic::warning(
        Code::BurstOversubscribed,
        pool.name.span,
        format!(
            "reserved plus burst of all tenants is {total} {what} in pool `{pool_name}` of cell `{cell_name}`, above {allowed}"
        ),
    )
    .with_label(limit);
    if let Some(ratio) = &cell.oversubscribe {
        diagnostic = diagnostic.with_secondary(ratio.span, "the cell's oversubscription ratio");
    }
    for (tenant, reservation) in reservations {
        let burst = reservation.burst.as_ref().map_or(0, |b| b.value);
        let span = reservation
            .burst
            .as_ref()
            .map_or(reservation.reserved.span, |b| b.span);
        diagnostic = diagnostic.with_secondary(
            span,
            format!(
                "`{}` reserves {} + bursts {burst}",
                tenant.name.value, reservation.reserved.value
            ),
        );
    }
    let excess = total - allowed;
    // The smallest ratio in thousandths that allows the total.
    let needed = if capacity > 0 {
        Some((total * 1000 + capacity - 1) / capacity)
    } else {
        None
    };
    let max_milli = (crate::schema::MAX_OVERSUBSCRIBE * 1000.0) as i128;
    let help = match needed.filter(|needed| *needed <= max_milli) {
        Some(needed) => format!(
            "declare `oversubscribe {}` (or more) in cell `{cell_name}` if the bursts may queue for each other, or lower the bursts by {excess} in total",
            ratio_text(needed)
        ),
        None => format!("lower the bursts by {excess} in total"),
    };
    diagnostics.push(
        diagnostic
            .with_note("`burst` is the Kueue borrowingLimit: tenants that burst at once wait for each other beyond the pool's capacity")
            .with_help(help),
    );
}

/// The cell's oversubscription ratio in thousandths (1000 when absent).
fn ratio_milli(cell: &Cell) -> i128 {
    cell.oversubscribe
        .as_ref()
        .map_or(1000, |ratio| (ratio.value * 1000.0).round() as i128)
}

/// A ratio in thousandths as a decimal without trailing zeros: `1500` is `1.5`.
fn ratio_text(milli: i128) -> String {
    let whole = milli / 1000;
    let fraction = milli % 1000;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:03}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    // The shared arithmetic lives in `facts/split.rs`; its tests stay here with the fleets
    // they are built on.
    use crate::facts::split::{FleetPart, fleet_split, split_by_shares};
    use crate::validate::test_support::{codes, compile_files, example_files, fleet};

    /// A deterministic generator for the seeded property loops.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % bound.max(1)
        }
    }

    /// A cell with an exclusive pool `train` of 8 nodes x 8 GPUs (64), one node per NVLink
    /// domain, blocks of 4 nodes and racks of 2, and a MIG pool `infer`; `extra` goes into the
    /// cell body.
    fn cell(extra: &str) -> String {
        format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    {extra}
    pool "train" {{
        gpu "H100-80GB-SXM"
        nodes 8 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        topology {{
            level "example.com/block" nodes=4
            level "example.com/rack" nodes=2
        }}
    }}
    pool "infer" {{
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        mig-layout "small" {{ profile "1g.10gb" 7; }}
    }}
}}
"#
        )
    }

    /// A tenant with `train` and `infer` workloads (the given shares) and a quota in `c1`; each
    /// reservation in the topology pool `train` gets a small part of the ceilings, which such a
    /// pool requires (see [`raw_tenant`] for a tenant without them).
    fn tenant(name: &str, quota_props: &str, quota_body: &str, extra: &str) -> String {
        let body = quota_body.replace(
            "pool \"train\" ",
            "pool \"train\" cpu=\"1m\" memory=\"1\" pods=1 ",
        );
        raw_tenant(name, quota_props, &body, extra)
    }

    /// A tenant with `train` and `infer` workloads and a quota in `c1`, written as given.
    fn raw_tenant(name: &str, quota_props: &str, quota_body: &str, extra: &str) -> String {
        format!(
            r#"tenant "{name}" {{
    org "acme"
    team "research"
    trust "mig"
    groups admin="{name}-admins"
    workload "train" service-account="trainer" priority="batch"
    workload "infer" service-account="server" priority="batch"
    quota cell="c1" cpu="64" memory="256Gi" pods=100 {quota_props} {{
        {quota_body}
    }}
    {extra}
}}
"#
        )
    }

    fn check_codes(cell_extra: &str, tenants: &[String]) -> Vec<Code> {
        let cell = cell(cell_extra);
        let mut files = vec![("cells/c1.kdl".to_string(), cell)];
        for text in tenants {
            let name = text.split('"').nth(1).unwrap_or_default().to_string();
            files.push((format!("tenants/{name}.kdl"), text.clone()));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        codes(&files)
    }

    fn one(body: &str) -> Vec<Code> {
        check_codes("", &[tenant("t0", "", body, "")])
    }

    /// The codes for one raw tenant (no parts added to `train` reservations).
    fn raw(body: &str) -> Vec<Code> {
        check_codes("", &[raw_tenant("t0", "", body, "")])
    }

    #[test]
    fn topology_pools_need_a_part_of_each_ceiling() {
        // The topology pool `train` without parts, with some of them, and with all.
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train""#),
            [Code::PoolCeilingMissing]
        );
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train" cpu="8""#),
            [Code::PoolCeilingMissing]
        );
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train" cpu="8" memory="64Gi" pods=10"#),
            []
        );
        // Parts on two reservations of the pool count together.
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train" cpu="8"
                   pool "train" reserved=8 workload="infer" memory="64Gi" pods=10"#),
            []
        );
        // Once the queue counts per pool, the MIG pool needs its parts as well.
        assert_eq!(
            raw(
                r#"pool "train" reserved=8 workload="train" cpu="8" memory="64Gi" pods=10
                   pool "infer" profile="1g.10gb" reserved=7 workload="infer""#
            ),
            [Code::PoolCeilingMissing]
        );
        // A declared part alone turns per-pool counting on, without a topology pool.
        assert_eq!(
            raw(r#"pool "infer" profile="1g.10gb" reserved=7 workload="infer" cpu="2""#),
            [Code::PoolCeilingMissing]
        );
        // Without topology and without parts the ceiling flavor holds it all.
        assert_eq!(
            raw(r#"pool "infer" profile="1g.10gb" reserved=7 workload="infer""#),
            []
        );
    }

    #[test]
    fn pool_parts_may_not_exceed_the_ceilings() {
        // The ceilings are cpu 64, memory 256Gi, pods 100.
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train" cpu="64" memory="256Gi" pods=100"#),
            []
        );
        assert_eq!(
            raw(r#"pool "train" reserved=8 workload="train" cpu="64001m" memory="256Gi" pods=100"#),
            [Code::PoolCeilingsExceedCeiling]
        );
        assert_eq!(
            raw(
                r#"pool "train" reserved=8 workload="train" cpu="40" memory="200Gi" pods=60
                   pool "infer" profile="1g.10gb" reserved=7 workload="infer" cpu="40" memory="57Gi" pods=41"#
            ),
            [Code::PoolCeilingsExceedCeiling; 3]
        );
    }

    #[test]
    fn a_one_group_queue_stays_within_kueues_flavor_limit() {
        // 64 pools, the first with a topology: with the ceiling flavor, 65 flavors in the one
        // resource group; 63 pools fit.
        let codes_for = |pools: usize| {
            let mut cell_text = String::from(
                "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n",
            );
            let mut body = String::new();
            for idx in 0..pools {
                let (nodes, topology) = if idx == 0 {
                    (4, "topology { level \"example.com/rack\" nodes=2; }")
                } else {
                    (1, "")
                };
                cell_text.push_str(&format!(
                    "    pool \"p{idx}\" {{ gpu \"H100-80GB-SXM\"; nodes {nodes} gpus-per-node=8; sharing \"exclusive\"; {topology} }}\n"
                ));
                body.push_str(&format!(
                    "pool \"p{idx}\" reserved=1 cpu=\"1m\" memory=\"1\" pods=1\n"
                ));
            }
            cell_text.push_str("}\n");
            let tenant_text = format!(
                "tenant \"t0\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"t0-admins\"\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"64\" memory=\"64Gi\" pods=100 {{\n{body}    }}\n}}\n"
            );
            codes(&[
                ("cells/c1.kdl", &cell_text),
                ("tenants/t0.kdl", &tenant_text),
            ])
        };
        assert_eq!(codes_for(63), []);
        assert_eq!(codes_for(64), [Code::KueueLimitExceeded]);
    }

    #[test]
    fn pool_ceilings_sum_each_pools_reservations() {
        let fleet = crate::validate::test_support::fleet(&[
            ("cells/c1.kdl", &cell("")),
            (
                "tenants/t0.kdl",
                &raw_tenant(
                    "t0",
                    "",
                    r#"pool "train" reserved=8 workload="train" cpu="1500m" memory="1Gi" pods=3
                       pool "infer" profile="1g.10gb" reserved=7 cpu="2" memory="2Gi" pods=4
                       pool "train" reserved=8 workload="infer" cpu="500m" memory="1Gi" pods=2"#,
                    "",
                ),
            ),
        ]);
        let quota = &fleet.tenants[0].quotas[0];
        let parts = pool_ceilings(quota, &fleet.cells[0]).unwrap();
        let shown: Vec<(String, String, String, i64)> = parts
            .iter()
            .map(|part| {
                (
                    part.pool.clone(),
                    part.cpu.to_string(),
                    part.memory.to_string(),
                    part.pods,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("train".to_string(), "2".to_string(), "2Gi".to_string(), 5),
                ("infer".to_string(), "2".to_string(), "2Gi".to_string(), 4),
            ]
        );
        // Without topology pools or parts there are none.
        let fleet = crate::validate::test_support::fleet(&[
            ("cells/c1.kdl", &cell("")),
            (
                "tenants/t0.kdl",
                &raw_tenant("t0", "", r#"pool "infer" profile="1g.10gb" reserved=7"#, ""),
            ),
        ]);
        assert_eq!(
            pool_ceilings(&fleet.tenants[0].quotas[0], &fleet.cells[0]),
            None
        );
    }

    #[test]
    fn accepts_kueue_fields_that_hold() {
        let body = r#"pool "train" reserved=32 burst=16 lend=16 gang=32 within="example.com/block" workload="train""#;
        assert_eq!(one(body), []);
        let with_weights = tenant("t0", "weight=3", body, "");
        assert_eq!(
            check_codes(r#"oversubscribe 1.5; org "acme" weight=2"#, &[with_weights]),
            []
        );
    }

    #[test]
    fn rejects_lending_more_than_reserved() {
        assert_eq!(
            one(r#"pool "train" reserved=32 lend=33 workload="train""#),
            [Code::LendAboveReserved]
        );
        assert_eq!(
            one(r#"pool "train" reserved=32 lend=32 workload="train""#),
            []
        );
    }

    #[test]
    fn warns_when_bursts_exceed_capacity_times_the_ratio() {
        let a = tenant(
            "a",
            "",
            r#"pool "train" reserved=32 burst=32 workload="train""#,
            "",
        );
        let b = tenant(
            "b",
            "",
            r#"pool "train" reserved=16 burst=16 workload="train""#,
            "",
        );
        let both = [a, b];
        // Both are Acme's, so the cell lists them (`org-membership-undeclared` otherwise).
        let acme = r#"org "acme" { tenants "a" "b"; }"#;
        // 96 against 64.
        assert_eq!(check_codes(acme, &both), [Code::BurstOversubscribed]);
        assert_eq!(
            check_codes(&format!("oversubscribe 1.49; {acme}"), &both),
            [Code::BurstOversubscribed]
        );
        assert_eq!(
            check_codes(&format!("oversubscribe 1.5; {acme}"), &both),
            []
        );
        // Reserved alone above capacity is the capacity error only.
        let big = tenant(
            "c",
            "",
            r#"pool "train" reserved=40 burst=8 workload="train""#,
            "",
        );
        assert_eq!(
            check_codes(
                r#"oversubscribe 4; org "acme" { tenants "a" "c"; }"#,
                &[big.clone(), both[0].clone()]
            ),
            [Code::QuotaOverCapacity]
        );
        // MIG slices are counted per profile: 2 nodes x 8 GPUs x 7 slices of `1g.10gb`.
        let slices = tenant(
            "d",
            "",
            r#"pool "infer" profile="1g.10gb" reserved=100 burst=13 workload="infer""#,
            "",
        );
        assert_eq!(check_codes("", &[slices]), [Code::BurstOversubscribed]);
    }

    #[test]
    fn rejects_gangs_that_fit_no_domain() {
        let gang = |props: &str| {
            one(&format!(
                r#"pool "train" reserved=64 {props} workload="train""#
            ))
        };
        assert_eq!(gang("gang=8"), []);
        assert_eq!(gang("gang=16"), [Code::GangExceedsDomain]);
        assert_eq!(gang(r#"gang=16 within="example.com/rack""#), []);
        assert_eq!(
            gang(r#"gang=16 within="example.com/rak""#),
            [Code::GangExceedsDomain]
        );
        assert_eq!(
            gang(r#"gang=24 within="example.com/rack""#),
            [Code::GangExceedsDomain]
        );
        assert_eq!(
            gang(r#"gang=64 within="example.com/block""#),
            [Code::GangExceedsDomain]
        );
        assert_eq!(gang(r#"gang=8 within="kubernetes.io/hostname""#), []);
        assert_eq!(
            gang(r#"gang=9 within="kubernetes.io/hostname""#),
            [Code::GangExceedsDomain]
        );
    }

    #[test]
    fn rejects_gangs_larger_than_reserved_plus_burst() {
        let gang = |props: &str| one(&format!(r#"pool "train" {props} workload="train""#));
        assert_eq!(gang("reserved=8 burst=8 gang=8"), []);
        assert_eq!(
            gang(r#"reserved=8 burst=7 gang=16 within="example.com/rack""#),
            [Code::GangExceedsQuota]
        );
        assert_eq!(
            gang(r#"reserved=8 burst=8 gang=16 within="example.com/rack""#),
            []
        );
        // Without a pool to compare with, the quota is still checked.
        assert_eq!(
            one(r#"pool "trian" reserved=8 gang=9 workload="train""#),
            [Code::PoolUnknown, Code::GangExceedsQuota]
        );
    }

    #[test]
    fn gangs_apply_to_exclusive_pools_only() {
        assert_eq!(
            one(r#"pool "infer" profile="1g.10gb" reserved=4 gang=2 workload="infer""#),
            [Code::FieldNotApplicable]
        );
    }

    #[test]
    fn warns_on_reservations_that_split_an_nvlink_domain() {
        assert_eq!(
            one(r#"pool "train" reserved=12 workload="train""#),
            [Code::ReservationSplitsNvlinkDomain]
        );
        assert_eq!(
            one(r#"pool "train" reserved=4 workload="train""#),
            [Code::ReservationSplitsNvlinkDomain]
        );
        assert_eq!(one(r#"pool "train" reserved=16 workload="train""#), []);
        assert_eq!(one(r#"pool "train" reserved=0 workload="train""#), []);
    }

    /// The codes of a cell whose pool has the given nodes, NVLink domain and levels.
    fn topology_codes(nodes: i64, nvlink: i64, levels: &str) -> Vec<Code> {
        let cell = format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    pool "p" {{
        gpu "H100-80GB-SXM"
        nodes {nodes} gpus-per-node=4
        sharing "exclusive"
        nvlink-domain gpus={nvlink}
        topology {{ {levels} }}
    }}
}}
"#
        );
        codes(&[("cells/c1.kdl", &cell)])
    }

    #[test]
    fn accepts_topologies_that_form_a_strict_tree() {
        assert_eq!(
            topology_codes(32, 4, r#"level "b" nodes=16; level "r" nodes=4"#),
            []
        );
        assert_eq!(
            topology_codes(
                32,
                4,
                r#"level "b" nodes=16; level "r" nodes=4; level "kubernetes.io/hostname" nodes=1"#
            ),
            []
        );
        assert_eq!(
            topology_codes(32, 8, r#"level "b" nodes=16; level "nvl" nodes=2"#),
            []
        );
        assert_eq!(
            topology_codes(3, 4, r#"level "kubernetes.io/hostname" nodes=1"#),
            []
        );
    }

    #[test]
    fn rejects_topologies_that_are_not_a_strict_tree() {
        let not_tree = [Code::TopologyNotTree];
        for levels in [
            // Finer levels must hold fewer nodes.
            r#"level "b" nodes=4; level "r" nodes=8"#,
            r#"level "b" nodes=4; level "r" nodes=4"#,
            // Each domain a whole number of the next finer one.
            r#"level "b" nodes=16; level "r" nodes=3"#,
            // One node per domain is the hostname level's.
            r#"level "b" nodes=16; level "r" nodes=1"#,
            // Hostname last, with one node.
            r#"level "kubernetes.io/hostname" nodes=1; level "b" nodes=16"#,
            r#"level "b" nodes=16; level "kubernetes.io/hostname" nodes=2"#,
            // Each label once.
            r#"level "b" nodes=16; level "b" nodes=4"#,
            // The pool's 32 nodes are a whole number of the coarsest domains.
            r#"level "b" nodes=12; level "r" nodes=4"#,
            r#"level "b" nodes=64"#,
        ] {
            assert_eq!(topology_codes(32, 4, levels), not_tree, "{levels}");
        }
        // An NVLink domain of 2 nodes needs a level of exactly 2 nodes.
        assert_eq!(
            topology_codes(32, 8, r#"level "b" nodes=16; level "r" nodes=4"#),
            not_tree
        );
        // An NVLink domain of a node and a half has no level at all.
        assert_eq!(topology_codes(32, 6, r#"level "b" nodes=16"#), not_tree);
        // Kueue takes 16 levels with hostname.
        let levels = |count: u32| {
            (0..count)
                .map(|idx| format!("level \"l{idx}\" nodes={}", 1_u64 << (count - idx)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        assert_eq!(topology_codes(1 << 15, 4, &levels(15)), []);
        assert_eq!(topology_codes(1 << 16, 4, &levels(16)), not_tree);
    }

    /// The codes of a cell whose exclusive pool has the given nodes of 8 GPUs and NVLink domain,
    /// without topology, and a tenant reserving `reserved` in it.
    fn nvlink_codes(nodes: i64, nvlink: i64, reserved: i64) -> Vec<Code> {
        let cell = format!(
            "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"exclusive\"\n        nvlink-domain gpus={nvlink}\n    }}\n}}\n"
        );
        let tenant = format!(
            "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"p\" reserved={reserved}\n    }}\n}}\n"
        );
        codes(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)])
    }

    #[test]
    fn rejects_nvlink_domains_the_pool_cannot_hold() {
        // Whole nodes, or a divisor of a node, over a whole number of domains.
        assert_eq!(nvlink_codes(2, 16, 16), []);
        assert_eq!(nvlink_codes(2, 4, 16), []);
        assert_eq!(nvlink_codes(9, 72, 72), []);
        // Larger than the pool: no `reserve 72` warning beside the error.
        assert_eq!(nvlink_codes(2, 72, 16), [Code::TopologyNotTree]);
        // A node and a half, a domain that does not divide a node, 3 nodes of 2-node domains.
        assert_eq!(nvlink_codes(4, 12, 16), [Code::TopologyNotTree]);
        assert_eq!(nvlink_codes(2, 3, 16), [Code::TopologyNotTree]);
        assert_eq!(nvlink_codes(3, 16, 16), [Code::TopologyNotTree]);
    }

    #[test]
    fn warns_when_a_share_split_leaves_a_namespace_nothing() {
        let with = |props: &str| {
            check_codes(
                "",
                &[
                    tenant("t0", "", r#"pool "train" reserved=8 workload="train""#, "")
                        .replace(r#"cpu="64" memory="256Gi" pods=100"#, props),
                ],
            )
        };
        assert_eq!(with(r#"cpu="2m" memory="2" pods=2"#), []);
        // Two workloads of share 1: `infer` gets nothing of 1m, of 1 byte, of 1 pod.
        assert_eq!(
            with(r#"cpu="1m" memory="1Gi" pods=2"#),
            [Code::CeilingSplitMismatch]
        );
        assert_eq!(
            with(r#"cpu="1" memory="1" pods=1"#),
            [Code::CeilingSplitMismatch; 2]
        );
        let found = compile_files(&[
            ("cells/c1.kdl", &cell("")),
            (
                "tenants/t0.kdl",
                &tenant("t0", "", r#"pool "train" reserved=8 workload="train""#, "").replace(
                    r#"cpu="64" memory="256Gi" pods=100"#,
                    r#"cpu="1m" memory="1Gi" pods=2"#,
                ),
            ),
        ]);
        let warning = found.diagnostics.first().unwrap();
        assert!(!warning.is_error());
        assert_eq!(
            warning.help,
            "raise the `cpu` ceiling to at least 2m, give `infer` a larger `share`, or split the ceilings explicitly with `split`"
        );
        // Explicit splits are the user's own: only their sums are checked.
        let explicit = r#"pool "train" reserved=8 workload="train"
        split "train" cpu="1m" memory="1Gi" pods=2
        split "infer" cpu="0" memory="0" pods=0"#;
        assert_eq!(
            check_codes(
                "",
                &[tenant("t0", "", explicit, "").replace(
                    r#"cpu="64" memory="256Gi" pods=100"#,
                    r#"cpu="1m" memory="1Gi" pods=2"#
                )]
            ),
            []
        );
    }

    #[test]
    fn a_topology_with_several_faults_reports_each_once() {
        let found = topology_codes(
            30,
            4,
            r#"level "kubernetes.io/hostname" nodes=1; level "b" nodes=16; level "b" nodes=4"#,
        );
        // Hostname not last, the repeated label, and 30 nodes over blocks of 16.
        assert_eq!(found, [Code::TopologyNotTree; 3]);
    }

    #[test]
    fn rejects_ceiling_splits_that_do_not_add_up() {
        let split = |body: &str| {
            one(&format!(
                "pool \"train\" reserved=8 workload=\"train\"\n{body}"
            ))
        };
        let train = r#"split "train" cpu="48" memory="192Gi" pods=75"#;
        let infer = r#"split "infer" cpu="16" memory="64Gi" pods=25"#;
        assert_eq!(split(&format!("{train}\n{infer}")), []);
        assert_eq!(
            split(&format!(
                "{train}\n{}",
                infer.replace("\"16\"", "\"15500m\"")
            )),
            [Code::CeilingSplitMismatch]
        );
        assert_eq!(
            split(&format!("{train}\n{}", infer.replace("64Gi", "65Gi"))),
            [Code::CeilingSplitMismatch]
        );
        assert_eq!(
            split(&format!("{train}\n{}", infer.replace("25", "24"))),
            [Code::CeilingSplitMismatch]
        );
        // A missing workload, a repeated one: each reported, without the sums.
        assert_eq!(split(train), [Code::CeilingSplitMismatch]);
        assert_eq!(
            split(&format!("{train}\n{infer}\n{infer}")),
            [Code::CeilingSplitMismatch]
        );
        // A workload the tenant does not declare.
        let single = "tenant \"s\" {\n    org \"acme\"\n    team \"t\"\n    trust \"mig\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"64\" memory=\"256Gi\" pods=100 {\n        split \"train\" cpu=\"64\" memory=\"256Gi\" pods=100\n        split \"infer\" cpu=\"0\" memory=\"0\" pods=0\n    }\n}\n";
        assert_eq!(
            check_codes("", &[single.to_string()]),
            [Code::CeilingSplitMismatch]
        );
    }

    /// Two cells with one exclusive H100 pool each, and a tenant reserving 64 in `c1` and 32
    /// in `c2` with the given fleet reservation.
    fn fleet_codes(fleet_decl: &str) -> Vec<Code> {
        fleet_codes_with(fleet_decl, |tenant| tenant.to_string())
    }

    /// As [`fleet_codes`], with the tenant's text changed by `edit`.
    fn fleet_codes_with(fleet_decl: &str, edit: impl Fn(&str) -> String) -> Vec<Code> {
        let cell = |name: &str| {
            format!(
                "cell \"{name}\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    pool \"h100\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 16 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n    pool \"a100\" {{\n        gpu \"A100-80GB-SXM\"\n        nodes 4 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n}}\n"
            )
        };
        let tenant = format!(
            "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"h100\" reserved=64\n        pool \"a100\" reserved=8\n    }}\n    quota cell=\"c2\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"h100\" reserved=32\n    }}\n    {fleet_decl}\n}}\n"
        );
        codes(&[
            ("cells/c1.kdl", &cell("c1")),
            ("cells/c2.kdl", &cell("c2")),
            ("tenants/t.kdl", &edit(&tenant)),
        ])
    }

    #[test]
    fn accepts_fleet_reservations_that_match_the_cells() {
        for fleet in [
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#,
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" weight=2; cell "c2" weight=1; }"#,
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" weight=5; }"#,
            r#"fleet gpu="A100-80GB-SXM" gpus=8 { cell "c1" weight=1; cell "c2" gpus=0; }"#,
        ] {
            assert_eq!(fleet_codes(fleet), [], "{fleet}");
        }
    }

    #[test]
    fn rejects_fleet_reservations_that_do_not_match_the_cells() {
        for fleet in [
            // Fixed parts above the total, a rest no cell takes.
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=40; }"#,
            r#"fleet gpu="H100-80GB-SXM" gpus=128 { cell "c1" gpus=64; cell "c2" gpus=32; }"#,
            // A cell twice, a cell without quota, both a part and a weight.
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; cell "c1" gpus=0; }"#,
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; cell "c3" gpus=0; }"#,
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64 weight=1; cell "c2" weight=1; }"#,
            // A cell the contract does not list, where the tenant reserves the model.
            r#"fleet gpu="H100-80GB-SXM" gpus=64 { cell "c1" weight=1; }"#,
        ] {
            assert_eq!(
                fleet_codes(fleet),
                [Code::FleetReservationMismatch],
                "{fleet}"
            );
        }
        // Listing the cell, or reserving no GPU of the model there, is fine.
        assert_eq!(
            fleet_codes_with(
                r#"fleet gpu="H100-80GB-SXM" gpus=64 { cell "c1" weight=1; }"#,
                |tenant| tenant.replace(r#"pool "h100" reserved=32"#, r#"pool "h100" reserved=0"#)
            ),
            []
        );
        assert_eq!(
            fleet_codes(r#"fleet gpu="A100-80GB-SXM" gpus=8 { cell "c1" weight=1; }"#),
            []
        );
        // Per cell: 96 by equal weights is 48 and 48; the tenant reserves 64 and 32.
        assert_eq!(
            fleet_codes(
                r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" weight=1; cell "c2" weight=1; }"#
            ),
            [Code::FleetReservationMismatch; 2]
        );
        // A misspelt pool is `pool-unknown` only, not also a fleet mismatch.
        let fleet =
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#;
        assert_eq!(
            fleet_codes_with(fleet, |tenant| tenant
                .replace(r#"pool "h100" reserved=64"#, r#"pool "h1OO" reserved=64"#)),
            [Code::PoolUnknown]
        );
        // A model the tenant reserves nowhere.
        assert_eq!(
            fleet_codes(r#"fleet gpu="B200" gpus=8 { cell "c1" weight=1; }"#),
            [Code::FleetReservationMismatch]
        );
        // Two fleet reservations of one model.
        let twice =
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#;
        assert_eq!(
            fleet_codes(&format!("{twice}\n{twice}")),
            [Code::NameDuplicate]
        );
    }

    #[test]
    fn rejects_what_exceeds_kueue_limits() {
        let labels: String = (0..8)
            .map(|idx| format!("label \"l{idx}\" \"v\"\n"))
            .collect();
        let cell_with = |pool_extra: &str, cell_extra: &str| {
            format!(
                "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    {cell_extra}\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n        {pool_extra}\n    }}\n}}\n"
            )
        };
        let first = |count: usize| labels.lines().take(count).collect::<Vec<_>>().join("\n");
        // An H100 pool's flavor also gets `nvidia.com/device-plugin.config` and
        // `nvidia.com/mig.config=all-disabled`: 6 labels fit, 7 do not.
        assert_eq!(codes(&[("cells/c1.kdl", &cell_with(&first(6), ""))]), []);
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell_with(&first(7), ""))]),
            [Code::KueueLimitExceeded]
        );
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell_with(&labels, ""))]),
            [Code::KueueLimitExceeded]
        );
        // An L40S has no MIG: 7 labels fit.
        let l40s = |labels: &str| cell_with(labels, "").replace("H100-80GB-SXM", "L40S");
        assert_eq!(codes(&[("cells/c1.kdl", &l40s(&first(7)))]), []);
        assert_eq!(
            codes(&[("cells/c1.kdl", &l40s(&first(8)))]),
            [Code::KueueLimitExceeded]
        );
        // A MIG pool with one layout carries its `nvidia.com/mig.config`; with two, no node
        // label is common to both, so one more label fits.
        let mig = |labels: &str, layouts: &str| {
            cell_with(labels, "")
                .replace("nodes 1", "nodes 2")
                .replace("\"exclusive\"", &format!("\"mig\"\n        {layouts}"))
        };
        let one = r#"mig-layout "a" { profile "1g.10gb" 7; }"#;
        let two = r#"mig-layout "a" nodes=1 { profile "1g.10gb" 7; }
        mig-layout "b" nodes=1 { profile "3g.40gb" 2; }"#;
        assert_eq!(codes(&[("cells/c1.kdl", &mig(&first(6), one))]), []);
        assert_eq!(
            codes(&[("cells/c1.kdl", &mig(&first(7), one))]),
            [Code::KueueLimitExceeded]
        );
        assert_eq!(codes(&[("cells/c1.kdl", &mig(&first(7), two))]), []);
        // Two taints with one key and effect.
        let repeated =
            "taint \"k\" \"a\" effect=\"NoSchedule\"\ntaint \"k\" \"b\" effect=\"NoSchedule\"";
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell_with(repeated, ""))]),
            [Code::KueueLimitExceeded]
        );
        let other_effect =
            "taint \"k\" \"a\" effect=\"NoSchedule\"\ntaint \"k\" \"b\" effect=\"NoExecute\"";
        assert_eq!(codes(&[("cells/c1.kdl", &cell_with(other_effect, ""))]), []);
        let taints: String = (0..9)
            .map(|idx| format!("taint \"t{idx}\" effect=\"NoSchedule\"\n"))
            .collect();
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell_with(&taints, ""))]),
            [Code::KueueLimitExceeded]
        );
        // A subdomain of 64 characters: a valid PriorityClass name, too long for a label.
        let long = format!("priority \"{}.{}\" value=1", "p".repeat(40), "q".repeat(23));
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell_with("", &long))]),
            [Code::KueueLimitExceeded]
        );
        let fits = format!("priority \"{}.{}\" value=1", "p".repeat(40), "q".repeat(22));
        assert_eq!(codes(&[("cells/c1.kdl", &cell_with("", &fits))]), []);
    }

    #[test]
    fn rejects_a_cell_with_more_gpu_resources_than_a_resource_group_covers() {
        // Each declared model has one MIG profile of its own, so each pool offers a resource.
        let cell = |count: u32| {
            let mut text = String::from(
                "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n",
            );
            for idx in 1..=count {
                text.push_str(&format!(
                    "    gpu-model \"m{idx}\" {{\n        pci-ids \"0x{idx:04X}10DE\"\n        sharing \"mig\"\n        mig compute-slices=1 memory-slices=1 placement-units=1 {{\n            profile \"1g.{idx}gb\" compute=1 memory=1 max=1 size=1 {{ starts 0; }}\n        }}\n    }}\n    pool \"p{idx}\" {{\n        gpu \"m{idx}\"\n        nodes 1 gpus-per-node=1\n        sharing \"mig\"\n        mig-layout \"one\" {{ profile \"1g.{idx}gb\" 1; }}\n    }}\n"
                ));
            }
            text.push_str("}\n");
            text
        };
        // With `nvidia.com/gpu`, 64 pools cover 65 resources.
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell(64))]),
            [Code::KueueLimitExceeded]
        );
        // 22 pools x 23 resources = 506 (flavor, resource) pairs in the root Cohort; 23 x 24 =
        // 552 are more than Kueue's 512.
        assert_eq!(codes(&[("cells/c1.kdl", &cell(22))]), []);
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell(23))]),
            [Code::KueueLimitExceeded]
        );
    }

    #[test]
    fn rejects_a_tenant_reserving_in_more_pools_than_a_resource_group_holds() {
        let cell = |count: u32| {
            let mut text = String::from(
                "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n",
            );
            for idx in 0..count {
                text.push_str(&format!(
                    "    pool \"p{idx}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n"
                ));
            }
            text.push_str("}\n");
            text
        };
        let tenant = |count: u32| {
            let pools: String = (0..count)
                .map(|idx| format!("        pool \"p{idx}\" reserved=1\n"))
                .collect();
            format!(
                "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n{pools}    }}\n}}\n"
            )
        };
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell(64)), ("tenants/t.kdl", &tenant(64))]),
            []
        );
        // The cell's 65th pool is past the root Cohort's 64 flavors, and the tenant's 65th
        // reservation past its ClusterQueue's.
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell(65)), ("tenants/t.kdl", &tenant(64))]),
            [Code::KueueLimitExceeded]
        );
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell(65)), ("tenants/t.kdl", &tenant(65))]),
            [Code::KueueLimitExceeded; 2]
        );
    }

    #[test]
    fn rejects_a_repeated_org() {
        assert_eq!(
            check_codes(r#"org "acme" weight=2; org "acme""#, &[]),
            [Code::NameDuplicate]
        );
    }

    #[test]
    fn splits_by_shares_exactly_with_the_remainder_to_the_first_part() {
        assert_eq!(split_by_shares(10, 1, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(split_by_shares(1_536_000, 1, &[3, 1]), [1_152_000, 384_000]);
        // Memory in whole bytes: 1001 milli-bytes over two shares.
        assert_eq!(split_by_shares(3_001, 1000, &[1, 1]), [2_001, 1_000]);
        assert_eq!(split_by_shares(0, 1, &[1, 2]), [0, 0]);
        assert_eq!(split_by_shares(7, 1, &[]), Vec::<i128>::new());
        assert_eq!(split_by_shares(5, 1, &[0, -3]), [3, 2]);
    }

    #[test]
    fn share_splits_always_add_up_and_stay_proportional() {
        let mut random = Lcg(7);
        for _ in 0..2_000 {
            let count = 1 + random.below(4) as usize;
            let shares: Vec<i64> = (0..count).map(|_| 1 + random.below(1_000) as i64).collect();
            let unit = [1_i128, 1000][random.below(2) as usize];
            let total = i128::from(random.below(1 << 40))
                * [1, 1000, 1_048_576_000][random.below(3) as usize];
            let parts = split_by_shares(total, unit, &shares);
            assert_eq!(parts.iter().sum::<i128>(), total, "{total} {shares:?}");
            let share_sum: i128 = shares.iter().map(|&s| i128::from(s)).sum();
            for (idx, (part, share)) in parts.iter().zip(&shares).enumerate() {
                // Within two units of the exact share: one for the floor, one for what is
                // below a unit of the total.
                let ideal = total * i128::from(*share) / share_sum;
                assert!(*part >= 0);
                assert_eq!(part % unit, if idx == 0 { total % unit } else { 0 });
                if idx > 0 {
                    assert!(ideal - part < 2 * unit, "{total} {shares:?} {parts:?}");
                    assert!(*part <= ideal, "{total} {shares:?} {parts:?}");
                }
            }
        }
    }

    #[test]
    fn splits_ceilings_by_declared_splits_or_by_shares() {
        let text = tenant("t0", "", "", "").replace(
            "priority=\"batch\"\n    workload \"infer\" service-account=\"server\" priority=\"batch\"",
            "priority=\"batch\" share=3\n    workload \"infer\" service-account=\"server\" priority=\"batch\"",
        );
        let cell = cell("");
        let shared = fleet(&[("cells/c1.kdl", &cell), ("tenants/t0.kdl", &text)]);
        let sharing = shared.tenants.first().unwrap();
        let parts = split_ceilings(sharing.quotas.first().unwrap(), &sharing.workloads);
        let shown: Vec<(WorkloadKind, String, String, i64)> = parts
            .iter()
            .map(|p| (p.workload, p.cpu.to_string(), p.memory.to_string(), p.pods))
            .collect();
        assert_eq!(
            shown,
            [
                (WorkloadKind::Train, "48".into(), "192Gi".into(), 75),
                (WorkloadKind::Infer, "16".into(), "64Gi".into(), 25),
            ]
        );
        let declared = tenant(
            "t0",
            "",
            r#"split "infer" cpu="60" memory="250Gi" pods=99; split "train" cpu="4" memory="6Gi" pods=1"#,
            "",
        );
        let split = fleet(&[("cells/c1.kdl", &cell), ("tenants/t0.kdl", &declared)]);
        let splitting = split.tenants.first().unwrap();
        let parts = split_ceilings(splitting.quotas.first().unwrap(), &splitting.workloads);
        let shown: Vec<(WorkloadKind, String, i64)> = parts
            .iter()
            .map(|p| (p.workload, p.cpu.to_string(), p.pods))
            .collect();
        assert_eq!(
            shown,
            [
                (WorkloadKind::Train, "4".into(), 1),
                (WorkloadKind::Infer, "60".into(), 99),
            ]
        );
    }

    #[test]
    fn splits_fleet_reservations_by_fixed_parts_and_weights() {
        use FleetPart::{Fixed, Weight};
        assert_eq!(fleet_split(128, &[Fixed(96), Weight(1)]), Ok(vec![96, 32]));
        assert_eq!(
            fleet_split(10, &[Weight(1), Weight(1), Weight(1)]),
            Ok(vec![4, 3, 3])
        );
        assert_eq!(
            fleet_split(11, &[Fixed(1), Weight(1), Weight(2), Weight(1)]),
            Ok(vec![1, 3, 5, 2])
        );
        assert_eq!(fleet_split(8, &[Fixed(8)]), Ok(vec![8]));
        assert_eq!(fleet_split(8, &[Fixed(8), Weight(3)]), Ok(vec![8, 0]));
        assert_eq!(
            fleet_split(8, &[Fixed(6), Fixed(3)]),
            Err(FleetSplitError::FixedAboveTotal { fixed: 9 })
        );
        assert_eq!(
            fleet_split(8, &[Fixed(6)]),
            Err(FleetSplitError::RestWithoutWeight { rest: 2 })
        );
    }

    #[test]
    fn fleet_splits_always_add_up_and_keep_fixed_parts() {
        let mut random = Lcg(11);
        for _ in 0..2_000 {
            let count = 1 + random.below(6) as usize;
            let parts: Vec<FleetPart> = (0..count)
                .map(|_| match random.below(2) {
                    0 => FleetPart::Fixed(random.below(100) as i64),
                    _ => FleetPart::Weight(1 + random.below(10) as i64),
                })
                .collect();
            let total = random.below(600) as i64;
            match fleet_split(total, &parts) {
                Ok(split) => {
                    assert_eq!(split.iter().sum::<i64>(), total, "{total} {parts:?}");
                    let weights: i64 = parts
                        .iter()
                        .map(|p| if let FleetPart::Weight(w) = p { *w } else { 0 })
                        .sum();
                    let fixed: i64 = parts
                        .iter()
                        .map(|p| if let FleetPart::Fixed(g) = p { *g } else { 0 })
                        .sum();
                    for (part, gpus) in parts.iter().zip(&split) {
                        match part {
                            FleetPart::Fixed(fixed) => assert_eq!(gpus, fixed),
                            FleetPart::Weight(weight) => {
                                let ideal = (total - fixed) * weight / weights;
                                assert!(
                                    *gpus == ideal || *gpus == ideal + 1,
                                    "{total} {parts:?} {split:?}"
                                );
                            }
                        }
                    }
                }
                Err(FleetSplitError::FixedAboveTotal { fixed }) => assert!(fixed > total),
                Err(FleetSplitError::RestWithoutWeight { rest }) => {
                    assert!(rest > 0);
                    assert!(parts.iter().all(|p| matches!(p, FleetPart::Fixed(_))));
                }
                Err(FleetSplitError::PartAmbiguous(_)) => unreachable!("no entry is ambiguous"),
            }
        }
    }

    #[test]
    fn the_example_fleet_splits_every_ceiling_and_fleet_reservation_exactly() {
        let files = example_files();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        assert_eq!(codes(&files), []);
        let fleet = fleet(&files);
        let mut checked = 0;
        for tenant in &fleet.tenants {
            for quota in &tenant.quotas {
                let parts = split_ceilings(quota, &tenant.workloads);
                assert_eq!(parts.len(), tenant.workloads.len(), "{}", tenant.name.value);
                let cpu: i128 = parts.iter().map(|p| p.cpu.milli()).sum();
                let memory: i128 = parts.iter().map(|p| p.memory.milli()).sum();
                let pods: i64 = parts.iter().map(|p| p.pods).sum();
                assert_eq!(cpu, quota.cpu.value.milli(), "{}", tenant.name.value);
                assert_eq!(memory, quota.memory.value.milli(), "{}", tenant.name.value);
                assert_eq!(pods, quota.pods.value, "{}", tenant.name.value);
                checked += 1;
            }
            for reservation in &tenant.fleet {
                let parts = fleet_cell_parts(reservation).unwrap();
                assert_eq!(parts.iter().sum::<i64>(), reservation.gpus.value);
                for (share, part) in reservation.cells.iter().zip(parts) {
                    let cell = fleet
                        .cells
                        .iter()
                        .find(|c| c.name.value == share.cell.value)
                        .unwrap();
                    let quota = tenant.quota_in(&share.cell.value).unwrap();
                    assert_eq!(
                        reserved_gpus_of_model(quota, cell, &reservation.gpu.value),
                        part
                    );
                }
            }
        }
        assert!(checked >= 6, "{checked}");
        assert!(
            fleet.tenants.iter().any(|t| !t.fleet.is_empty()),
            "the example has no fleet reservation"
        );
        assert!(
            fleet
                .tenants
                .iter()
                .flat_map(|t| &t.quotas)
                .any(|q| !q.splits.is_empty()),
            "the example has no ceiling split"
        );
    }

    #[test]
    fn topology_levels_end_with_the_hostname_level() {
        let fleet = fleet(&[("cells/c1.kdl", &cell(""))]);
        let pool = fleet.cells.first().unwrap().pools.first().unwrap();
        let levels: Vec<(String, i64)> = topology_levels(pool)
            .into_iter()
            .map(|level| (level.label, level.nodes))
            .collect();
        assert_eq!(
            levels,
            [
                ("example.com/block".to_string(), 4),
                ("example.com/rack".to_string(), 2),
                (HOSTNAME_LABEL.to_string(), 1),
            ]
        );
        assert_eq!(nvlink_domain_gpus(pool), 8);
        let infer = fleet.cells.first().unwrap().pools.get(1).unwrap();
        assert!(topology_levels(infer).is_empty());
        assert_eq!(nvlink_domain_gpus(infer), 8);
    }

    #[test]
    fn ratios_print_without_trailing_zeros() {
        assert_eq!(ratio_text(1000), "1");
        assert_eq!(ratio_text(1500), "1.5");
        assert_eq!(ratio_text(1625), "1.625");
        assert_eq!(ratio_text(1050), "1.05");
        assert_eq!(ratio_text(100_000), "100");
    }
}

#[cfg(test)]
mod limit_props {
    //! Generated cells around Kueue's limits: whatever a user declares, a compile either
    //! reports a diagnostic or emits objects that pass Kueue's webhook rules, never an internal
    //! error.

    use crate::catalog::Catalog;
    use crate::hardware;
    use crate::validate::test_support::{compile_files, fleet};

    /// A deterministic generator for the seeded property loop.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % bound.max(1)
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items
                .get(self.below(items.len() as u64) as usize)
                .copied()
                .unwrap_or_default()
        }
    }

    /// One generated pool: its declaration, and a reservation a tenant may make in it.
    /// What one round may get wrong: each knob is mostly within Kueue's limits, so that most
    /// rounds compile and lower, and sometimes past them.
    struct Knobs<'a> {
        /// The most labels a pool declares.
        max_labels: u64,
        /// The most taints a pool declares.
        max_taints: u64,
        /// The keys taints draw from; empty for a distinct key per taint.
        taint_keys: &'a [&'a str],
        /// The NVLink domains a pool may declare.
        domains: &'a [&'a str],
        /// One pool in this many has a GPU model (and a resource) of its own.
        own_model_every: u64,
    }

    fn pool(
        random: &mut Lcg,
        idx: u64,
        knobs: &Knobs<'_>,
        models: &mut String,
    ) -> (String, String) {
        let mut body = String::new();
        let labels = random.below(knobs.max_labels + 1);
        for label in 0..labels {
            body.push_str(&format!("        label \"example.com/l{label}\" \"v\"\n"));
        }
        let taints = random.below(knobs.max_taints + 1);
        for taint in 0..taints {
            let key = match knobs.taint_keys {
                [] => format!("example.com/t{taint}"),
                keys => random.pick(keys).to_string(),
            };
            let value = random.pick(&["", " \"x\"", " \"y\""]);
            let effect = random.pick(&["NoSchedule", "NoExecute", "PreferNoSchedule"]);
            body.push_str(&format!(
                "        taint \"{key}\"{value} effect=\"{effect}\"\n"
            ));
        }
        let nodes = 1 + random.below(4);
        let reserved = 8 * (1 + random.below(nodes));
        let kind = if random.below(knobs.own_model_every) == 0 {
            7
        } else {
            random.below(7)
        };
        match kind {
            0..=4 => {
                let gpu = random.pick(&["H100-80GB-SXM", "L40S", "A100-80GB-SXM"]);
                if random.below(5) == 0 {
                    let domain = random.pick(knobs.domains);
                    body.push_str(&format!("        nvlink-domain gpus={domain}\n"));
                }
                let text = format!(
                    "    pool \"p{idx}\" {{\n        gpu \"{gpu}\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"exclusive\"\n{body}    }}\n"
                );
                (text, format!("pool \"p{idx}\" reserved={reserved}"))
            }
            5 | 6 => {
                let layouts = if random.below(2) == 0 {
                    "mig-layout \"small\" { profile \"1g.10gb\" 7; }"
                } else {
                    "mig-layout \"small\" nodes=1 { profile \"1g.10gb\" 7; }\n        mig-layout \"big\" nodes=1 { profile \"3g.40gb\" 2; }"
                };
                let text = format!(
                    "    pool \"p{idx}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 2 gpus-per-node=8\n        sharing \"mig\"\n        {layouts}\n{body}    }}\n"
                );
                (
                    text,
                    format!("pool \"p{idx}\" profile=\"1g.10gb\" reserved=7"),
                )
            }
            _ => {
                // A model of its own with a profile of its own: one more GPU resource.
                models.push_str(&format!(
                    "    gpu-model \"m{idx}\" {{\n        pci-ids \"0x{:04X}10DE\"\n        sharing \"mig\"\n        mig compute-slices=1 memory-slices=1 placement-units=1 {{\n            profile \"1g.{idx}gb\" compute=1 memory=1 max=1 size=1 {{ starts 0; }}\n        }}\n    }}\n",
                    idx + 1
                ));
                let text = format!(
                    "    pool \"p{idx}\" {{\n        gpu \"m{idx}\"\n        nodes {nodes} gpus-per-node=1\n        sharing \"mig\"\n        mig-layout \"one\" {{ profile \"1g.{idx}gb\" 1; }}\n{body}    }}\n"
                );
                (
                    text,
                    format!("pool \"p{idx}\" profile=\"1g.{idx}gb\" reserved=1"),
                )
            }
        }
    }

    #[test]
    fn generated_cells_around_kueue_limits_never_end_in_an_internal_error() {
        let mut random = Lcg(2024);
        let mut failures = Vec::new();
        let (mut emitted, mut planned) = (0, 0);
        for round in 0..120 {
            let count = match random.below(3) {
                0 => 1 + random.below(8),
                1 => 40 + random.below(40),
                _ => 60 + random.below(10),
            };
            let past = |random: &mut Lcg| random.below(5) == 0;
            let knobs = Knobs {
                max_labels: if past(&mut random) { 9 } else { 5 },
                max_taints: if past(&mut random) { 9 } else { 3 },
                taint_keys: if past(&mut random) {
                    &["example.com/a", "example.com/b"]
                } else {
                    &[]
                },
                domains: if past(&mut random) {
                    &["8", "16", "24", "72"]
                } else {
                    &["4", "8"]
                },
                own_model_every: if past(&mut random) { 2 } else { 64 },
            };
            let mut models = String::new();
            let mut pools = String::new();
            let mut reservations = String::new();
            for idx in 0..count {
                let (text, reservation) = pool(&mut random, idx, &knobs, &mut models);
                pools.push_str(&text);
                if random.below(2) == 0 {
                    reservations.push_str(&format!("        {reservation}\n"));
                }
            }
            let cell = format!(
                "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1\n{models}{pools}}}\n"
            );
            let (cpu, pods) = [("64", "100"), ("1m", "1"), ("2", "1")][random.below(3) as usize];
            let tenant = format!(
                "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"mig\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\" priority=\"batch\"\n    workload \"infer\" service-account=\"s\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"{cpu}\" memory=\"1Gi\" pods={pods} {{\n{}    }}\n}}\n",
                reservations.replace("reserved=", "workload=\"train\" reserved=")
            );
            let compilation = compile_files(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)]);
            if let Some(error) = compilation.internal_error {
                failures.push(format!("round {round} ({count} pools): {error}"));
            }
            if compilation.output.is_some() {
                emitted += 1;
            }
            // The validation's count of flavor labels is the plan's.
            if let Some(plan) = &compilation.plan {
                let fleet = fleet(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)]);
                let declared = fleet.cells.first().unwrap();
                let counted = super::flavor_node_labels(
                    declared,
                    &hardware::cell_catalog(declared, Catalog::builtin()),
                );
                for pool in &plan.cells.first().unwrap().pools {
                    assert_eq!(
                        counted.get(&pool.name),
                        Some(&pool.node_labels),
                        "round {round}"
                    );
                }
                planned += 1;
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // The loop must reach lowering often enough to mean something.
        assert!(emitted >= 30 && planned >= emitted, "{emitted} {planned}");
    }
}
