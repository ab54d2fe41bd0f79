//! Checks of each reservation: lending within it, a gang within its quota and its domains,
//! whole NVLink domains, the pools per tenant and the ceilings per pool.

use super::{MAX_CELL_GPU_RESOURCES, MAX_GROUP_PAIRS, MAX_TENANT_POOLS};
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::facts::split::{CeilingResource, counts_ceiling_per_pool, pool_ceilings, pool_of};
use crate::facts::topology::{Level, nvlink_domain_fits, nvlink_domain_gpus, topology_levels};
use crate::hardware;
use crate::model::{Cell, Pool, PoolQuota, Quota, Sharing, Tenant};
use crate::quantity::Quantity;
use std::collections::BTreeSet;

/// Kueue's webhook rejects a ClusterQueue whose lendingLimit exceeds its nominalQuota.
pub(super) fn check_lend(
    tenant: &Tenant,
    reservation: &PoolQuota,
    diagnostics: &mut Vec<Diagnostic>,
) {
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
pub(super) fn check_gang_quota(
    tenant: &Tenant,
    reservation: &PoolQuota,
    diagnostics: &mut Vec<Diagnostic>,
) {
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
pub(super) fn check_reservation(
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
pub(super) fn check_pool_count(
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
pub(super) fn check_pool_ceilings(
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
