//! Checks that a fleet reservation matches the cells it is split over.

use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::facts::split::{
    FleetSplitError, counted_reservations, fleet_cell_parts, pool_of, reserved_gpus_of_model,
};
use crate::model::{Cell, FleetCellShare, FleetReservation, PoolQuota, Quota, Sharing, Tenant};
use crate::source::Span;
use crate::validate::duplicates;
use std::collections::{BTreeMap, BTreeSet};

/// A fleet reservation splits into its cells, and each cell's part is what the tenant reserves
/// there.
pub(super) fn check_fleet(
    tenant: &Tenant,
    cells: &BTreeMap<&str, &Cell>,
    diagnostics: &mut Vec<Diagnostic>,
) {
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
