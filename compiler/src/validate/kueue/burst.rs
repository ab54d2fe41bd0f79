//! Checks that the bursts drawn on one pool resource stay within the cell's oversubscription
//! ratio.

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::hardware;
use crate::model::{Cell, PoolQuota, Tenant};
use std::collections::BTreeMap;

/// The sum of reserved plus burst over one pool resource stays within capacity times the
/// cell's oversubscription ratio.
pub(super) fn check_burst(
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
pub(super) fn ratio_text(milli: i128) -> String {
    let whole = milli / 1000;
    let fraction = milli % 1000;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:03}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}
