//! The showback reports: `<cell>/reports/showback.{md,csv,json}` and the fleet's
//! `reports/showback.{md,csv,json}`.
//!
//! Consumes: the cells' showback figures (`plan::showback`). Produces: per tenant, cell, pool and
//! resource the reservation and its committed monthly cost, the burst ceiling and its cost if
//! fully used; per tenant and per org their sums; per pool its monthly cost split into what the
//! tenants committed, what no tenant reserved (the platform's cost) and what its MIG layouts
//! strand; the stranded capacity of each MIG layout apart.
//!
//! Invariants: reads only the plan; money is integer cents formatted here, every sum is the sum
//! of the rounded figures it lists, and a pool without a price is left out of every sum and
//! named; rows keep the plan's order (cells by name, tenants by name, pools in declaration
//! order), so the bytes are the same on every platform.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::plan::showback::{
    HOURS_PER_MONTH, PoolCost, ResourceCost, ShowbackPlan, TenantCost, format_cents, format_price,
};
use crate::plan::{CellPlan, Plan};

/// What every showback report says of its figures, word for word.
pub const METHOD: &str = "A month is 730 hours (365 × 24 / 12). \
A device's share of a GPU is its compute slices over the GPU's on a MIG pool, one replica over the replicas on a time-sliced or MPS pool, one on an exclusive pool. \
Each figure is devices × share × price per GPU-hour × 730, computed in integers and rounded once to the cent, half up; every sum adds up the rounded figures it lists. \
Money is in the currency of the pools' prices.";

/// One cell's showback figures, named.
struct Cell<'a> {
    name: &'a str,
    plan: &'a ShowbackPlan,
}

fn cells_of(plan: &Plan) -> Vec<Cell<'_>> {
    plan.cells.iter().map(cell_of).collect()
}

fn cell_of(cell: &CellPlan) -> Cell<'_> {
    Cell {
        name: &cell.name,
        plan: &cell.showback,
    }
}

/// The three bodies (without headers) of one cell's showback report: `(json, markdown, csv)`.
pub fn cell_report(cell: &CellPlan) -> (Value, String, String) {
    let cells = [cell_of(cell)];
    let title = format!("Showback of cell `{}`", cell.name);
    (json(&cells), markdown(&title, &cells), csv(&cells))
}

/// The three bodies (without headers) of the fleet's showback report: `(json, markdown, csv)`.
///
/// The three are made in parallel on the current rayon pool, each from the plan alone.
pub fn fleet_report(plan: &Plan) -> (Value, String, String) {
    let cells = cells_of(plan);
    let (json, (markdown, csv)) = rayon::join(
        || json(&cells),
        || rayon::join(|| markdown("Showback of the fleet", &cells), || csv(&cells)),
    );
    (json, markdown, csv)
}

/// Money or `-` for a pool without a price.
fn money(cents: Option<i64>) -> String {
    cents.map_or_else(|| "-".to_string(), format_cents)
}

fn money_json(cents: Option<i64>) -> Value {
    cents.map_or(Value::Null, |cents| Value::from(format_cents(cents)))
}

/// The greatest common divisor, for reduced fractions.
fn gcd(mut left: i64, mut right: i64) -> i64 {
    while right != 0 {
        (left, right) = (right, left % right);
    }
    left.abs().max(1)
}

/// One device's share of a GPU as a reduced fraction `(numerator, denominator)`.
pub fn device_share(pool: &PoolCost, resource: &ResourceCost) -> (i64, i64) {
    let numerator = resource.slices;
    let denominator = resource.capacity.saturating_mul(pool.slices_per_gpu);
    if denominator <= 0 {
        return (0, 1);
    }
    let divisor = gcd(numerator, denominator);
    (numerator / divisor, denominator / divisor)
}

/// A share as a reduced fraction: `1`, `1/7`, `3/7`.
pub fn share_text((numerator, denominator): (i64, i64)) -> String {
    let divisor = gcd(numerator, denominator);
    let (numerator, denominator) = (numerator / divisor, denominator / divisor);
    if denominator == 1 {
        numerator.to_string()
    } else {
        format!("{numerator}/{denominator}")
    }
}

/// The sum of the known costs.
fn total(costs: impl IntoIterator<Item = Option<i64>>) -> i64 {
    costs.into_iter().flatten().fold(0, i64::saturating_add)
}

/// A pool's figures: `(committed, unreserved, stranded)`, each a sum of rounded figures.
pub fn pool_split(cell: &ShowbackPlan, pool: &PoolCost) -> (i64, i64, i64) {
    let committed = total(pool.resources.iter().map(|r| r.reserved_monthly));
    let unreserved = total(pool.resources.iter().map(|r| r.unreserved_monthly));
    let stranded = total(
        cell.stranded
            .iter()
            .filter(|layout| layout.pool == pool.pool)
            .map(|layout| layout.monthly),
    );
    (committed, unreserved, stranded)
}

fn find<'a>(cell: &'a ShowbackPlan, row: &TenantCost) -> Option<(&'a PoolCost, &'a ResourceCost)> {
    let pool = cell.pools.iter().find(|pool| pool.pool == row.pool)?;
    let resource = pool
        .resources
        .iter()
        .find(|resource| resource.resource == row.resource)?;
    Some((pool, resource))
}

/// Per key (tenant or org): `(orgs or tenants, committed, burst)`.
type Sums = BTreeMap<String, (Vec<String>, i64, i64)>;

fn sums(cells: &[Cell], key: fn(&TenantCost) -> (&str, &str)) -> Sums {
    let mut sums: Sums = BTreeMap::new();
    for cell in cells {
        for row in &cell.plan.tenants {
            let (name, other) = key(row);
            let entry = sums.entry(name.to_string()).or_default();
            if !entry.0.iter().any(|seen| seen == other) {
                entry.0.push(other.to_string());
                entry.0.sort();
            }
            entry.1 = entry.1.saturating_add(row.reserved_monthly.unwrap_or(0));
            entry.2 = entry.2.saturating_add(row.burst_monthly.unwrap_or(0));
        }
    }
    sums
}

fn by_tenant(row: &TenantCost) -> (&str, &str) {
    (&row.tenant, &row.org)
}

fn by_org(row: &TenantCost) -> (&str, &str) {
    (&row.org, &row.tenant)
}

/// The pools without a price, as `cell/pool`.
fn unpriced(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .flat_map(|cell| {
            cell.plan
                .pools
                .iter()
                .filter(|pool| pool.price_micros.is_none())
                .map(move |pool| format!("{}/{}", cell.name, pool.pool))
        })
        .collect()
}

/// The fleet's or a cell's totals: `(pools, committed, unreserved, stranded)`.
fn totals(cells: &[Cell]) -> (i64, i64, i64, i64) {
    let mut sums = (0i64, 0i64, 0i64, 0i64);
    for cell in cells {
        for pool in &cell.plan.pools {
            let (committed, unreserved, stranded) = pool_split(cell.plan, pool);
            sums.0 = sums.0.saturating_add(pool.monthly.unwrap_or(0));
            sums.1 = sums.1.saturating_add(committed);
            sums.2 = sums.2.saturating_add(unreserved);
            sums.3 = sums.3.saturating_add(stranded);
        }
    }
    sums
}

/// The JSON rows of one cell's tenants.
fn tenant_rows(cell: &Cell) -> Vec<Value> {
    cell.plan
        .tenants
        .iter()
        .map(|row| {
            let share = find(cell.plan, row).map(|(pool, resource)| device_share(pool, resource));
            json!({
                "tenant": row.tenant,
                "org": row.org,
                "cell": cell.name,
                "pool": row.pool,
                "resource": row.resource,
                "reserved": row.reserved,
                "burst": row.burst,
                "gpu_share": share.map(|(numerator, denominator)| json!({"numerator": numerator, "denominator": denominator})),
                "price_per_gpu_hour": find(cell.plan, row).and_then(|(pool, _)| pool.price_micros).map(format_price),
                "committed_monthly": money_json(row.reserved_monthly),
                "burst_monthly": money_json(row.burst_monthly),
            })
        })
        .collect()
}

/// The JSON report; the tenants' rows of each cell are made in parallel on the current rayon
/// pool and joined in the cells' order.
fn json(cells: &[Cell]) -> Value {
    use rayon::prelude::*;
    let tenants: Vec<Vec<Value>> = cells.par_iter().map(tenant_rows).collect();
    let tenants: Vec<Value> = tenants.into_iter().flatten().collect();
    let sum_rows = |sums: Sums, key: &str, others: &str| -> Vec<Value> {
        sums.into_iter()
            .map(|(name, (members, committed, burst))| {
                json!({
                    key: name,
                    others: members,
                    "committed_monthly": format_cents(committed),
                    "burst_monthly": format_cents(burst),
                })
            })
            .collect()
    };
    let pools: Vec<Value> = cells
        .iter()
        .flat_map(|cell| {
            cell.plan.pools.iter().map(move |pool| {
                let (committed, unreserved, stranded) = pool_split(cell.plan, pool);
                let priced = pool.price_micros.is_some();
                json!({
                    "cell": cell.name,
                    "pool": pool.pool,
                    "gpu": pool.gpu,
                    "sharing": pool.sharing,
                    "gpus": pool.gpus,
                    "slices_per_gpu": pool.slices_per_gpu,
                    "price_per_gpu_hour": pool.price_micros.map(format_price),
                    "monthly": money_json(pool.monthly),
                    "committed_monthly": money_json(priced.then_some(committed)),
                    "unreserved_monthly": money_json(priced.then_some(unreserved)),
                    "stranded_monthly": money_json(priced.then_some(stranded)),
                    "resources": pool.resources.iter().map(|resource| {
                        let (numerator, denominator) = device_share(pool, resource);
                        json!({
                            "resource": resource.resource,
                            "capacity": resource.capacity,
                            "gpu_share": {"numerator": numerator, "denominator": denominator},
                            "reserved": resource.reserved,
                            "burst": resource.burst,
                            "unreserved": resource.unreserved,
                            "committed_monthly": money_json(resource.reserved_monthly),
                            "burst_monthly": money_json(resource.burst_monthly),
                            "unreserved_monthly": money_json(resource.unreserved_monthly),
                        })
                    }).collect::<Vec<_>>(),
                })
            })
        })
        .collect();
    let stranded: Vec<Value> = cells
        .iter()
        .flat_map(|cell| {
            cell.plan.stranded.iter().map(move |layout| {
                json!({
                    "cell": cell.name,
                    "pool": layout.pool,
                    "layout": layout.layout,
                    "gpus": layout.gpus,
                    "unused_compute_slices": layout.compute_slices,
                    "unused_memory_slices": layout.memory_slices,
                    "monthly": money_json(layout.monthly),
                })
            })
        })
        .collect();
    let (pools_total, committed, unreserved, stranded_total) = totals(cells);
    // The rows are moved into the report: `json!` would serialize an interpolated value into a
    // copy (thousands of rows for the fleet). The fields are in the order `json!` inserts them.
    let fields = [
        ("hours_per_month", json!(HOURS_PER_MONTH)),
        ("method", json!(METHOD)),
        (
            "cells",
            json!(cells.iter().map(|cell| cell.name).collect::<Vec<_>>()),
        ),
        ("tenants", Value::Array(tenants)),
        (
            "tenant_totals",
            Value::Array(sum_rows(sums(cells, by_tenant), "tenant", "orgs")),
        ),
        (
            "org_totals",
            Value::Array(sum_rows(sums(cells, by_org), "org", "tenants")),
        ),
        ("pools", Value::Array(pools)),
        ("stranded", Value::Array(stranded)),
        ("unpriced_pools", json!(unpriced(cells))),
        (
            "totals",
            json!({
                "monthly": format_cents(pools_total),
                "committed_monthly": format_cents(committed),
                "unreserved_monthly": format_cents(unreserved),
                "stranded_monthly": format_cents(stranded_total),
            }),
        ),
    ];
    Value::Object(
        fields
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    )
}

fn markdown(title: &str, cells: &[Cell]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {title}\n");
    out.push_str(
        "What each tenant committed to by reserving GPUs (Kueue nominal quota) and what its burst ceiling would cost if fully used; what no tenant reserved, which the platform pays for; and the capacity MIG layouts strand, shown apart.\n\n",
    );
    out.push_str(METHOD);
    out.push('\n');
    let unpriced = unpriced(cells);
    if !unpriced.is_empty() {
        let _ = writeln!(
            out,
            "\nPools without a price, left out of every sum: {}.",
            unpriced
                .iter()
                .map(|pool| format!("`{pool}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("\n## Committed by tenant\n\n");
    let rows: Vec<(&Cell, &TenantCost)> = cells
        .iter()
        .flat_map(|cell| cell.plan.tenants.iter().map(move |row| (cell, row)))
        .collect();
    if rows.is_empty() {
        out.push_str("No tenant reserves or bursts on a GPU resource.\n");
    } else {
        out.push_str("| tenant | org | cell | pool | resource | GPU share of a device | price per GPU-hour | reserved | committed per month | burst | burst per month if fully used |\n");
        out.push_str("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n");
        for (cell, row) in rows {
            let found = find(cell.plan, row);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | `{}` | {} | {} | {} | {} | {} | {} |",
                row.tenant,
                row.org,
                cell.name,
                row.pool,
                row.resource,
                found.map_or_else(
                    || "-".to_string(),
                    |(pool, resource)| share_text(device_share(pool, resource))
                ),
                found
                    .and_then(|(pool, _)| pool.price_micros)
                    .map_or_else(|| "-".to_string(), format_price),
                row.reserved,
                money(row.reserved_monthly),
                row.burst,
                money(row.burst_monthly),
            );
        }
    }
    sum_table(
        &mut out,
        ("Per tenant", "tenant", "org"),
        sums(cells, by_tenant),
        "No tenant has a GPU reservation.",
    );
    sum_table(
        &mut out,
        ("Per org", "org", "tenants"),
        sums(cells, by_org),
        "No org has a GPU reservation.",
    );
    out.push_str("\n## Pools\n\n");
    out.push_str("A pool's cost is what the tenants committed, plus what no tenant reserved (the platform's cost), plus what its MIG layouts strand.\n\n");
    out.push_str("| cell | pool | GPU | sharing | GPUs | slices per GPU | price per GPU-hour | pool per month | committed | platform | stranded |\n");
    out.push_str("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for cell in cells {
        for pool in &cell.plan.pools {
            let (committed, unreserved, stranded) = pool_split(cell.plan, pool);
            let priced = |cents: i64| money(pool.price_micros.map(|_| cents));
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell.name,
                pool.pool,
                pool.gpu,
                pool.sharing,
                pool.gpus,
                pool.slices_per_gpu,
                pool.price_micros
                    .map_or_else(|| "-".to_string(), format_price),
                money(pool.monthly),
                priced(committed),
                priced(unreserved),
                priced(stranded),
            );
        }
    }
    let (pools_total, committed, unreserved, stranded) = totals(cells);
    let _ = writeln!(
        out,
        "\nIn all: {} a month, of which tenants committed {}, the platform pays {} for what no tenant reserved, and {} is stranded.",
        format_cents(pools_total),
        format_cents(committed),
        format_cents(unreserved),
        format_cents(stranded)
    );
    out.push_str("\n## Not reserved by any tenant\n\n");
    out.push_str("What no tenant reserved: the root cohort's quota, which tenants may borrow as burst, and the platform's cost.\n\n");
    out.push_str("| cell | pool | resource | GPU share of a device | unreserved | per month |\n");
    out.push_str("|---|---|---|---:|---:|---:|\n");
    for cell in cells {
        for pool in &cell.plan.pools {
            for resource in &pool.resources {
                let _ = writeln!(
                    out,
                    "| {} | {} | `{}` | {} | {} | {} |",
                    cell.name,
                    pool.pool,
                    resource.resource,
                    share_text(device_share(pool, resource)),
                    resource.unreserved,
                    money(resource.unreserved_monthly)
                );
            }
        }
    }
    out.push_str("\n## Stranded MIG capacity\n\n");
    let stranded_rows: Vec<_> = cells
        .iter()
        .flat_map(|cell| cell.plan.stranded.iter().map(move |row| (cell.name, row)))
        .collect();
    if stranded_rows.is_empty() {
        out.push_str("No pool has a MIG layout.\n");
    } else {
        out.push_str("Compute slices no instance of a layout uses, on the placement the compiler proved (the capacity report shows it); they are paid for but no tenant can reserve them. Unused memory slices are shown and not priced: without compute they run nothing.\n\n");
        out.push_str("| cell | pool | layout | GPUs | unused compute slices | unused memory slices | per month |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|\n");
        for (cell, row) in stranded_rows {
            let _ = writeln!(
                out,
                "| {cell} | {} | {} | {} | {} | {} | {} |",
                row.pool,
                row.layout,
                row.gpus,
                row.compute_slices,
                row.memory_slices,
                money(row.monthly)
            );
        }
    }
    out
}

/// A table of sums, per tenant or per org: `(heading, key column, members column)`.
fn sum_table(
    out: &mut String,
    (heading, key, members): (&str, &str, &str),
    sums: Sums,
    empty: &str,
) {
    let _ = writeln!(out, "\n## {heading}\n");
    if sums.is_empty() {
        let _ = writeln!(out, "{empty}");
        return;
    }
    let _ = writeln!(
        out,
        "| {key} | {members} | committed per month | burst per month if fully used |"
    );
    out.push_str("|---|---|---:|---:|\n");
    for (name, (others, committed, burst)) in sums {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |",
            others.join(", "),
            format_cents(committed),
            format_cents(burst)
        );
    }
}

/// One CSV field: quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The header of the CSV report.
pub const CSV_COLUMNS: &str = "kind,cell,pool,resource,layout,tenant,org,devices,burst_devices,gpu_share,price_per_gpu_hour,monthly,burst_monthly";

fn csv(cells: &[Cell]) -> String {
    let mut out = String::from(CSV_COLUMNS);
    out.push('\n');
    let mut line = |fields: [String; 13]| {
        let fields: Vec<String> = fields.iter().map(|text| field(text)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    };
    let blank = || "".to_string();
    let money = |cents: Option<i64>| cents.map_or_else(String::new, format_cents);
    for cell in cells {
        for row in &cell.plan.tenants {
            let found = find(cell.plan, row);
            line([
                "committed".to_string(),
                cell.name.to_string(),
                row.pool.clone(),
                row.resource.clone(),
                blank(),
                row.tenant.clone(),
                row.org.clone(),
                row.reserved.to_string(),
                row.burst.to_string(),
                found.map_or_else(blank, |(pool, resource)| {
                    share_text(device_share(pool, resource))
                }),
                found
                    .and_then(|(pool, _)| pool.price_micros)
                    .map_or_else(blank, format_price),
                money(row.reserved_monthly),
                money(row.burst_monthly),
            ]);
        }
    }
    for cell in cells {
        for pool in &cell.plan.pools {
            for resource in &pool.resources {
                line([
                    "unreserved".to_string(),
                    cell.name.to_string(),
                    pool.pool.clone(),
                    resource.resource.clone(),
                    blank(),
                    blank(),
                    blank(),
                    resource.unreserved.to_string(),
                    blank(),
                    share_text(device_share(pool, resource)),
                    pool.price_micros.map_or_else(blank, format_price),
                    money(resource.unreserved_monthly),
                    blank(),
                ]);
            }
        }
        for row in &cell.plan.stranded {
            let pool = cell.plan.pools.iter().find(|pool| pool.pool == row.pool);
            line([
                "stranded".to_string(),
                cell.name.to_string(),
                row.pool.clone(),
                blank(),
                row.layout.clone(),
                blank(),
                blank(),
                blank(),
                blank(),
                pool.map_or_else(blank, |pool| {
                    share_text((row.compute_slices, pool.slices_per_gpu.max(1)))
                }),
                pool.and_then(|pool| pool.price_micros)
                    .map_or_else(blank, format_price),
                money(row.monthly),
                blank(),
            ]);
        }
    }
    out
}
