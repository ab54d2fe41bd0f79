//! The text of `tenantc what-if`: the changes, each changed pool, then each tenant that loses
//! anything, and the verdict a maintenance pipeline gates on.
//!
//! Consumes: a [`WhatIf`]. Produces: lines for people, every figure as the JSON has it.
//!
//! Invariant: deterministic, in the order of the result; the last line says whether every
//! reservation is still backed, and names the tenants whose reservations are not.

use std::fmt::Write as _;

use super::{AppliedChange, ContractImpact, GangImpact, ReservationImpact, WhatIf};
use crate::diag::list_names;

/// The result as text.
pub fn human(result: &WhatIf) -> String {
    let mut out = String::new();
    for change in &result.changes {
        let _ = writeln!(out, "what if: {}", change_text(change));
    }
    for pool in &result.pools {
        let _ = writeln!(
            out,
            "\npool {}/{}: {} → {} nodes",
            pool.cell, pool.pool, pool.nodes_before, pool.nodes_after
        );
        for layout in &pool.layouts {
            let _ = writeln!(
                out,
                "  layout {}: {} → {} nodes",
                layout.layout, layout.nodes_before, layout.nodes_after
            );
        }
        for resource in &pool.resources {
            let _ = writeln!(
                out,
                "  {}: {} → {} devices, {} reserved{}",
                resource.resource,
                resource.capacity_before,
                resource.capacity_after,
                resource.reserved,
                if resource.shortfall > 0 {
                    format!(", {} short", resource.shortfall)
                } else {
                    String::new()
                }
            );
        }
    }
    for tenant in &result.tenants {
        let shown: Vec<&ReservationImpact> = tenant
            .reservations
            .iter()
            .filter(|row| row.capacity_after != row.capacity_before)
            .collect();
        // A tenant of a changed pool whose resources all kept their devices is only in the JSON.
        if shown.is_empty() && tenant.gangs.is_empty() && tenant.fleet.is_empty() {
            continue;
        }
        let verdict = if tenant.backed {
            "every reservation still backed".to_string()
        } else if tenant.unbacked > 0 {
            format!("{} reserved devices no longer backed", tenant.unbacked)
        } else {
            "reserved gangs no longer fit".to_string()
        };
        let _ = writeln!(out, "\n{}: {verdict}", tenant.tenant);
        // The JSON lists every reservation in a changed pool; the text those whose resource
        // lost devices.
        for row in shown {
            let _ = writeln!(out, "  {}", reservation_text(row));
        }
        for gang in &tenant.gangs {
            let _ = writeln!(out, "  {}", gang_text(gang));
        }
        for contract in &tenant.fleet {
            let _ = writeln!(out, "  {}", contract_text(contract));
        }
    }
    if result.backed {
        out.push_str("\nevery reservation is still backed\n");
    } else {
        let _ = writeln!(
            out,
            "\nreservations no longer backed: {}",
            list_names(result.unbacked_tenants.iter().map(String::as_str))
        );
    }
    out
}

fn change_text(change: &AppliedChange) -> String {
    let place = match (&change.pool, &change.layout) {
        (Some(pool), Some(layout)) => format!("{}/{pool} (layout {layout})", change.cell),
        (Some(pool), None) => format!("{}/{pool}", change.cell),
        _ => change.cell.clone(),
    };
    match (change.change, &change.level, change.count) {
        ("lose-cell", _, _) => format!("lose cell {} ({} nodes)", change.cell, change.nodes),
        ("remove-layout", _, _) => format!(
            "remove MIG layout {} of {}/{} ({} nodes)",
            change.layout.as_deref().unwrap_or_default(),
            change.cell,
            change.pool.as_deref().unwrap_or_default(),
            change.nodes
        ),
        (_, Some(level), Some(count)) => format!(
            "drain {count} {} of {level} ({} nodes) in {place}",
            if count == 1 { "domain" } else { "domains" },
            change.nodes
        ),
        _ => format!(
            "drain {} {} of {place}",
            change.nodes,
            if change.nodes == 1 { "node" } else { "nodes" }
        ),
    }
}

fn reservation_text(row: &ReservationImpact) -> String {
    format!(
        "{}/{} {}: reserved {}, {} unbacked; burst {}, backed {} → {}; effective {} → {}",
        row.cell,
        row.pool,
        row.resource,
        row.reserved,
        row.unbacked,
        row.burst,
        row.burst_backed_before,
        row.burst_backed_after,
        row.effective_before,
        row.effective_after
    )
}

fn gang_text(gang: &GangImpact) -> String {
    let within = gang.within.as_deref().unwrap_or("an NVLink domain");
    format!(
        "gang of {} within {within} ({} GPUs): {} → {} fit at once{}, {} reserved{}",
        gang.gang,
        gang.domain_gpus,
        gang.gangs_before,
        gang.gangs_after,
        if gang.worst_case { " (worst case)" } else { "" },
        gang.reserved_gangs,
        if gang.fits {
            ""
        } else {
            "; no domain holds one"
        }
    )
}

fn contract_text(contract: &ContractImpact) -> String {
    let parts: Vec<String> = contract
        .parts
        .iter()
        .map(|part| format!("{} {} of {}", part.cell, part.lost, part.gpus))
        .collect();
    let rehome = if contract.short == 0 {
        "its cells' spare takes it".to_string()
    } else if contract.overcommits.is_empty() {
        format!("{} cannot be re-homed in its cells", contract.short)
    } else {
        format!(
            "re-homing {} would overcommit {}",
            contract.short,
            list_names(contract.overcommits.iter().map(String::as_str))
        )
    };
    format!(
        "fleet {} {} GPUs: {} lost ({}); {} spare; {rehome}",
        contract.gpu,
        contract.total,
        contract.lost,
        parts.join(", "),
        contract.spare
    )
}
