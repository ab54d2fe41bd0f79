//! The fleet's showback page, `reports/index.html`: one static file a platform lead opens.
//!
//! Consumes: the plan (every cell's showback figures). Produces: an HTML5 page with, per cell
//! and pool, an inline SVG bar chart of reserved, free (reserved by no tenant) and stranded
//! capacity, stacked to the pool's size, and the tenants' burst ceiling below it, all in slices
//! of a GPU; then the showback tables (per tenant, cell, pool and resource; per org; per pool).
//!
//! Invariants: no script, no link, no image, no external style sheet or font: the page carries a
//! Content-Security-Policy of `default-src 'none'` with inline styles only, so a browser fetches
//! nothing for it; every bar width is an integer number of slices in the SVG's own coordinates;
//! every declared text is HTML-escaped; deterministic, like every report.

use std::fmt::Write as _;

use crate::plan::Plan;
use crate::plan::showback::{PoolCost, ShowbackPlan, format_cents, format_price};

use super::showback::{METHOD, device_share, pool_split, share_text};

/// The width of every chart, in CSS pixels.
pub const CHART_WIDTH: i64 = 640;
/// The height of one bar, in CSS pixels (and SVG units).
const BAR_HEIGHT: i64 = 22;
/// The gap between the two bars.
const BAR_GAP: i64 = 8;

/// The page's Content-Security-Policy: nothing may be fetched; inline styles only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

/// The four kinds of bar, with their colour, in the order they are drawn and explained.
pub const BARS: [(&str, &str, &str); 4] = [
    ("reserved", "#2b6cb0", "reserved by tenants"),
    ("free", "#a0aec0", "reserved by no tenant (the platform's)"),
    ("stranded", "#c53030", "stranded by MIG layouts"),
    ("burst", "#dd6b20", "tenants' burst ceiling"),
];

/// Text for HTML content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// `devices × slices / capacity` rounded half up: the slices `devices` of a resource take.
fn slices(devices: i64, slices: i64, capacity: i64) -> i64 {
    if capacity <= 0 {
        return 0;
    }
    let numerator = i128::from(devices) * i128::from(slices);
    let capacity = i128::from(capacity);
    i64::try_from((numerator * 2 + capacity) / (capacity * 2)).unwrap_or(i64::MAX)
}

/// A pool's bars in slices: `(reserved, free, stranded, burst)`.
pub fn pool_bars(cell: &ShowbackPlan, pool: &PoolCost) -> (i64, i64, i64, i64) {
    let mut bars = (0i64, 0i64, 0i64, 0i64);
    for resource in &pool.resources {
        bars.0 += slices(resource.reserved, resource.slices, resource.capacity);
        bars.1 += slices(resource.unreserved, resource.slices, resource.capacity);
        bars.3 += slices(resource.burst, resource.slices, resource.capacity);
    }
    bars.2 = cell
        .stranded
        .iter()
        .filter(|layout| layout.pool == pool.pool)
        .map(|layout| layout.compute_slices)
        .sum();
    bars
}

fn money(cents: Option<i64>) -> String {
    cents.map_or_else(|| "-".to_string(), format_cents)
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#1a202c;max-width:72rem}\
h1{font-size:1.6rem}h2{font-size:1.3rem;margin-top:2rem}h3{font-size:1.05rem;margin:1.2rem 0 .3rem}\
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #cbd5e0;padding:.25rem .5rem;text-align:left}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
figure{margin:0 0 1rem}figcaption{font-size:.9rem;margin-bottom:.3rem}\
.legend{font-size:.85rem;margin:.2rem 0}.swatch{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 .8rem;vertical-align:middle}";

/// The page.
pub fn index(plan: &Plan, header: &str) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n");
    let _ = writeln!(out, "<!-- {} -->", escape(header));
    out.push_str("<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">"
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<title>GPU fleet showback</title>\n");
    let _ = writeln!(out, "<style>{STYLE}</style>");
    out.push_str("</head>\n<body>\n<h1>GPU fleet showback</h1>\n");
    let _ = writeln!(out, "<p>{}</p>", escape(METHOD));
    out.push_str("<p class=\"legend\">");
    for (kind, colour, words) in BARS {
        let _ = write!(
            out,
            "<span class=\"swatch\" style=\"background:{colour}\"></span>{kind}: {words}"
        );
    }
    out.push_str("</p>\n");
    out.push_str("<p>Bars count slices of a GPU (compute slices on MIG pools, replicas on time-sliced and MPS pools, GPUs elsewhere); the top bar is the pool, the bottom bar the burst ceiling, which may exceed it.</p>\n");
    for cell in &plan.cells {
        let _ = writeln!(
            out,
            "<section class=\"cell\" id=\"cell-{0}\">\n<h2>Cell {0}</h2>",
            escape(&cell.name)
        );
        for pool in &cell.showback.pools {
            chart(&mut out, &cell.name, &cell.showback, pool);
        }
        out.push_str("</section>\n");
    }
    tables(&mut out, plan);
    out.push_str("</body>\n</html>\n");
    out
}

fn chart(out: &mut String, cell: &str, plan: &ShowbackPlan, pool: &PoolCost) {
    let (reserved, free, stranded, burst) = pool_bars(plan, pool);
    let size = reserved + free + stranded;
    let span = size.max(burst).max(1);
    let height = 2 * BAR_HEIGHT + BAR_GAP;
    let _ = writeln!(
        out,
        "<figure class=\"pool\" id=\"pool-{}-{}\" data-cell=\"{}\" data-pool=\"{}\" data-slices=\"{size}\">",
        escape(cell),
        escape(&pool.pool),
        escape(cell),
        escape(&pool.pool)
    );
    let _ = writeln!(
        out,
        "<h3>{}</h3>\n<figcaption>{} × <code>{}</code>, {}, {} slice{} per GPU; {} per GPU-hour, {} a month</figcaption>",
        escape(&pool.pool),
        pool.gpus,
        escape(&pool.gpu),
        pool.sharing,
        pool.slices_per_gpu,
        if pool.slices_per_gpu == 1 { "" } else { "s" },
        pool.price_micros
            .map_or_else(|| "no price".to_string(), format_price),
        money(pool.monthly)
    );
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"{}: reserved {reserved}, free {free}, stranded {stranded}, burst {burst} of {size} slices\" width=\"{CHART_WIDTH}\" height=\"{height}\" viewBox=\"0 0 {span} {height}\" preserveAspectRatio=\"none\">",
        escape(&pool.pool)
    );
    let mut x = 0;
    for (kind, value) in [
        ("reserved", reserved),
        ("free", free),
        ("stranded", stranded),
    ] {
        bar(out, kind, x, 0, value);
        x += value;
    }
    bar(out, "burst", 0, BAR_HEIGHT + BAR_GAP, burst);
    out.push_str("</svg>\n");
    let (committed, unreserved, stranded_cost) = pool_split(plan, pool);
    let priced = |cents: i64| money(pool.price_micros.map(|_| cents));
    let _ = writeln!(
        out,
        "<p class=\"legend\">reserved {reserved} ({}), free {free} ({}), stranded {stranded} ({}), burst ceiling {burst} ({} if fully used), of {size} slices</p>\n</figure>",
        priced(committed),
        priced(unreserved),
        priced(stranded_cost),
        priced(
            pool.resources
                .iter()
                .filter_map(|resource| resource.burst_monthly)
                .sum()
        ),
    );
}

fn bar(out: &mut String, kind: &str, x: i64, y: i64, width: i64) {
    let colour = BARS
        .iter()
        .find(|(name, _, _)| *name == kind)
        .map_or("#000000", |(_, colour, _)| colour);
    let _ = writeln!(
        out,
        "<rect class=\"{kind}\" x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"{BAR_HEIGHT}\" fill=\"{colour}\"><title>{kind}: {width} slices</title></rect>"
    );
}

fn tables(out: &mut String, plan: &Plan) {
    out.push_str("<h2>Committed by tenant</h2>\n<table id=\"tenants\">\n<thead><tr><th>tenant</th><th>org</th><th>cell</th><th>pool</th><th>resource</th><th class=\"num\">GPU share of a device</th><th class=\"num\">price per GPU-hour</th><th class=\"num\">reserved</th><th class=\"num\">committed per month</th><th class=\"num\">burst</th><th class=\"num\">burst per month if fully used</th></tr></thead>\n<tbody>\n");
    let mut orgs: std::collections::BTreeMap<&str, (i64, i64)> = std::collections::BTreeMap::new();
    for cell in &plan.cells {
        for row in &cell.showback.tenants {
            let pool = cell
                .showback
                .pools
                .iter()
                .find(|pool| pool.pool == row.pool);
            let share = pool
                .and_then(|pool| {
                    pool.resources
                        .iter()
                        .find(|resource| resource.resource == row.resource)
                        .map(|resource| share_text(device_share(pool, resource)))
                })
                .unwrap_or_else(|| "-".to_string());
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{share}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&row.tenant),
                escape(&row.org),
                escape(&cell.name),
                escape(&row.pool),
                escape(&row.resource),
                pool.and_then(|pool| pool.price_micros)
                    .map_or_else(|| "-".to_string(), format_price),
                row.reserved,
                money(row.reserved_monthly),
                row.burst,
                money(row.burst_monthly),
            );
            let entry = orgs.entry(&row.org).or_default();
            entry.0 += row.reserved_monthly.unwrap_or(0);
            entry.1 += row.burst_monthly.unwrap_or(0);
        }
    }
    out.push_str("</tbody>\n</table>\n");
    out.push_str("<h2>Per org</h2>\n<table id=\"orgs\">\n<thead><tr><th>org</th><th class=\"num\">committed per month</th><th class=\"num\">burst per month if fully used</th></tr></thead>\n<tbody>\n");
    for (org, (committed, burst)) in orgs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(org),
            format_cents(committed),
            format_cents(burst)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out.push_str("<h2>Pools</h2>\n<table id=\"pools\">\n<thead><tr><th>cell</th><th>pool</th><th class=\"num\">GPUs</th><th class=\"num\">pool per month</th><th class=\"num\">committed</th><th class=\"num\">platform</th><th class=\"num\">stranded</th></tr></thead>\n<tbody>\n");
    for cell in &plan.cells {
        for pool in &cell.showback.pools {
            let (committed, unreserved, stranded) = pool_split(&cell.showback, pool);
            let priced = |cents: i64| money(pool.price_micros.map(|_| cents));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&cell.name),
                escape(&pool.pool),
                pool.gpus,
                money(pool.monthly),
                priced(committed),
                priced(unreserved),
                priced(stranded),
            );
        }
    }
    out.push_str("</tbody>\n</table>\n");
}
