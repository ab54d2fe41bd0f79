//! `tenantc what-if`: what tenants lose when the platform drains nodes, loses a cell or removes a
//! MIG layout, answered offline from the compiled plan before the change is made.
//!
//! Consumes: a [`FleetView`] (`view.rs`, the one reading of the plan) and the changes asked for
//! ([`Change`], parsed from the command line by [`parse_drain`] and its siblings and checked
//! against the fleet by [`resolve`], with a did-you-mean for every unknown name).
//! Produces: a [`WhatIf`]: per affected pool its nodes and capacity before and after; per tenant,
//! per reserved pool resource, the reserved devices no longer backed by hardware, the burst no
//! longer backed, the effective capacity before and after; per gang, how many fit at once before
//! and after; per fleet contract, what is lost, what its cells have spare, and which tenants
//! re-homing the rest would overcommit. Rendered by `render.rs` for people and by serde as JSON.
//!
//! The arithmetic (docs/what-if.md tells it with the example fleet):
//! - A pool resource's capacity after the change is the sum over node groups of the nodes left
//!   times what one node offers. Its shortfall is what all tenants reserve of it minus that
//!   capacity; every tenant reserving it has `min(reserved, shortfall)` devices no longer
//!   backed, since Kueue admits first come, first served, so any of them can be the one left
//!   without hardware when the others use their reservations.
//! - Backed burst is `min(burst, capacity - reserved by all)`, what the hardware holds beyond
//!   every reservation; the burst lost is its drop.
//! - Effective capacity after is the plan's `min(quota, cell, topology)` with the cell term less
//!   the devices taken out and the topology term counted on the domains that are left.
//! - A gang fits a domain of its level (or NVLink domain) with enough GPUs left. Nodes drained
//!   as whole domains of a level at least as coarse are exact; a count of nodes (or domains of a
//!   finer level) could sit anywhere, so the gangs after are the worst case over where they sit.
//! - A fleet contract loses the unbacked part of its reservations in the changed cells; its cells
//!   have spare what their exclusive pools of the model (the tenant's own or no one's) hold
//!   beyond every reservation after the change; what the spare cannot take would overcommit the
//!   tenants that reserve in those pools.
//!
//! Invariants: pure and deterministic (cells, pools, tenants sorted as the plan has them);
//! reads only the view; a reservation counts as backed only when its devices and its reserved
//! gangs all are.

mod render;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::diag::{did_you_mean, list_names};
use crate::hardware::GPU_RESOURCE;
pub use render::human;
use view::{CellView, FleetView, PoolView};

/// A change the platform is about to make, as the command line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Drain nodes of a pool: a count of nodes, or of domains of a topology level.
    Drain(DrainSpec),
    /// Lose every node of a cell.
    LoseCell(String),
    /// Remove a MIG layout: its nodes offer none of its profiles.
    RemoveLayout {
        /// The cell.
        cell: String,
        /// The pool.
        pool: String,
        /// The layout.
        layout: String,
    },
}

/// `<cell>/<pool>[/<layout>][@<level>][=<count>]`, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainSpec {
    /// The cell.
    pub cell: String,
    /// The pool.
    pub pool: String,
    /// The MIG layout whose nodes are drained.
    pub layout: Option<String>,
    /// The topology level whose domains are drained, as written (a label or its last part).
    pub level: Option<String>,
    /// Nodes, or domains of the level.
    pub count: i64,
}

/// A change that cannot be made: its message and the next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The error line, lowercase.
    pub message: String,
    /// What exists, or how to write it.
    pub help: String,
}

fn spec_error(message: impl Into<String>, help: impl Into<String>) -> SpecError {
    SpecError {
        message: message.into(),
        help: help.into(),
    }
}

const DRAIN_FORM: &str = "write `--drain <cell>/<pool>=<nodes>`, `--drain <cell>/<pool>/<layout>=<nodes>` \
or `--drain <cell>/<pool>@<level>=<domains>`";

/// Parses the value of `--drain`.
pub fn parse_drain(text: &str) -> Result<DrainSpec, SpecError> {
    let text = crate::escape::escape_str(text);
    let bad = |why: &str| spec_error(format!("`--drain {text}` {why}"), DRAIN_FORM);
    let (cell, rest) = text.split_once('/').ok_or_else(|| bad("names no pool"))?;
    let (target, count) = match rest.rsplit_once('=') {
        Some((target, count)) => (target, Some(count)),
        None => (rest, None),
    };
    let (path, level) = match target.split_once('@') {
        Some((path, level)) => (path, Some(level.to_string())),
        None => (target, None),
    };
    let (pool, layout) = match path.split_once('/') {
        Some((pool, layout)) => (pool, Some(layout.to_string())),
        None => (path, None),
    };
    if cell.is_empty() || pool.is_empty() || layout.as_deref() == Some("") {
        return Err(bad("leaves a name empty"));
    }
    if level.as_deref() == Some("") {
        return Err(bad("names no topology level after `@`"));
    }
    let count = match (count, &level) {
        (Some(count), _) => count
            .parse::<i64>()
            .ok()
            .filter(|count| *count >= 1)
            .ok_or_else(|| bad("needs a whole number of at least 1 after `=`"))?,
        (None, Some(_)) => 1,
        (None, None) => return Err(bad("does not say how many nodes")),
    };
    Ok(DrainSpec {
        cell: cell.to_string(),
        pool: pool.to_string(),
        layout,
        level,
        count,
    })
}

/// Parses the value of `--remove-layout`: `<cell>/<pool>/<layout>`.
pub fn parse_remove_layout(text: &str) -> Result<Change, SpecError> {
    let text = crate::escape::escape_str(text);
    let mut parts = text.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(cell), Some(pool), Some(layout))
            if !cell.is_empty() && !pool.is_empty() && !layout.is_empty() =>
        {
            Ok(Change::RemoveLayout {
                cell: cell.to_string(),
                pool: pool.to_string(),
                layout: layout.to_string(),
            })
        }
        _ => Err(spec_error(
            format!("`--remove-layout {text}` is not `<cell>/<pool>/<layout>`"),
            "write `--remove-layout us-east-1a/h100-infer/small`: the cell, the MIG pool and the \
             `mig-layout` name, as the cell declares them",
        )),
    }
}

/// One change as applied: what the command line asked, resolved against the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppliedChange {
    /// `drain`, `lose-cell` or `remove-layout`.
    pub change: &'static str,
    /// The cell.
    pub cell: String,
    /// The pool, for a drain or a removed layout.
    pub pool: Option<String>,
    /// The MIG layout whose nodes are drained or removed.
    pub layout: Option<String>,
    /// The topology level whose domains are drained (its full label).
    pub level: Option<String>,
    /// The domains of `level`, or the nodes, drained; `null` for a lost cell or removed layout.
    pub count: Option<i64>,
    /// The nodes the change takes out.
    pub nodes: i64,
}

/// What is drained of one pool: nodes per group, and how they sit in the topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Drained {
    /// Drained nodes, per group index.
    groups: BTreeMap<usize, i64>,
    /// Nodes per drained unit (1 for a count of nodes, the level's nodes for domains) and the
    /// units, when the pool has one drain.
    units: Option<(i64, i64)>,
}

/// What is drained, per `(cell, pool)`.
type DrainedPools = BTreeMap<(String, String), Drained>;

/// Resolves the changes against the fleet: every name known (else a did-you-mean), each pool,
/// layout and cell changed at most once, counts within what exists.
fn resolve(
    fleet: &FleetView,
    changes: &[Change],
) -> Result<(Vec<AppliedChange>, DrainedPools), SpecError> {
    let mut applied = Vec::new();
    let mut drained: BTreeMap<(String, String), Drained> = BTreeMap::new();
    let mut lost_cells: BTreeSet<String> = BTreeSet::new();
    for change in changes {
        match change {
            Change::LoseCell(cell) => {
                let found = find_cell(fleet, cell)?;
                if !lost_cells.insert(found.name.clone()) {
                    return Err(spec_error(
                        format!("cell `{}` is lost twice", found.name),
                        "give each `--lose-cell` once",
                    ));
                }
                let nodes = found.pools.iter().map(PoolView::nodes).sum();
                for pool in &found.pools {
                    let key = (found.name.clone(), pool.name.clone());
                    if drained.contains_key(&key) {
                        return Err(twice(&found.name, &pool.name));
                    }
                    drained.insert(
                        key,
                        Drained {
                            groups: (0..pool.groups.len())
                                .zip(pool.groups.iter().map(|group| group.nodes))
                                .collect(),
                            units: Some((pool.nodes(), 1)),
                        },
                    );
                }
                applied.push(AppliedChange {
                    change: "lose-cell",
                    cell: found.name.clone(),
                    pool: None,
                    layout: None,
                    level: None,
                    count: None,
                    nodes,
                });
            }
            Change::RemoveLayout { cell, pool, layout } => {
                let found_cell = find_cell(fleet, cell)?;
                let found_pool = find_pool(found_cell, pool)?;
                let idx = find_layout(found_cell, found_pool, layout)?;
                let nodes = found_pool.groups.get(idx).map_or(0, |group| group.nodes);
                let entry = entry(&mut drained, found_cell, found_pool, idx, &lost_cells)?;
                entry.groups.insert(idx, nodes);
                entry.units = None;
                applied.push(AppliedChange {
                    change: "remove-layout",
                    cell: found_cell.name.clone(),
                    pool: Some(found_pool.name.clone()),
                    layout: found_pool
                        .groups
                        .get(idx)
                        .and_then(|group| group.layout.clone()),
                    level: None,
                    count: None,
                    nodes,
                });
            }
            Change::Drain(spec) => {
                let found_cell = find_cell(fleet, &spec.cell)?;
                let pool = find_pool(found_cell, &spec.pool)?;
                let idx = match &spec.layout {
                    Some(layout) => find_layout(found_cell, pool, layout)?,
                    None if pool.groups.len() > 1 => {
                        let layouts: Vec<&str> = pool
                            .groups
                            .iter()
                            .filter_map(|group| group.layout.as_deref())
                            .collect();
                        return Err(spec_error(
                            format!(
                                "pool `{}/{}` has nodes of {} MIG layouts, so a count of its nodes does not say which",
                                found_cell.name,
                                pool.name,
                                layouts.len()
                            ),
                            format!(
                                "name the layout, as in `--drain {}/{}/{}={}`; its layouts are {}",
                                found_cell.name,
                                pool.name,
                                layouts.first().copied().unwrap_or_default(),
                                spec.count,
                                list_names(layouts.iter().copied())
                            ),
                        ));
                    }
                    None => 0,
                };
                let group_nodes = pool.groups.get(idx).map_or(0, |group| group.nodes);
                let (level, unit) = match &spec.level {
                    Some(level) => {
                        let found = find_level(found_cell, pool, level)?;
                        if pool.groups.len() > 1 {
                            return Err(spec_error(
                                format!(
                                    "pool `{}/{}` has several MIG layouts, and its topology does not say which layout a domain's nodes have",
                                    found_cell.name, pool.name
                                ),
                                "drain a count of one layout's nodes instead",
                            ));
                        }
                        (Some(found.label.clone()), found.nodes)
                    }
                    None => (None, 1),
                };
                let nodes = unit.saturating_mul(spec.count);
                if nodes > group_nodes {
                    let what = match (&level, &spec.layout) {
                        (Some(level), _) => format!(
                            "{} domains of `{level}` ({} nodes each)",
                            group_nodes / unit.max(1),
                            unit
                        ),
                        (None, Some(layout)) => format!("{group_nodes} nodes of layout `{layout}`"),
                        (None, None) => format!("{group_nodes} nodes"),
                    };
                    return Err(spec_error(
                        format!(
                            "`--drain {}` takes out {nodes} nodes, but pool `{}/{}` has {what}",
                            drain_text(spec),
                            found_cell.name,
                            pool.name
                        ),
                        format!(
                            "drain at most what the pool has, or lose the whole cell with `--lose-cell {}`",
                            found_cell.name
                        ),
                    ));
                }
                let entry = entry(&mut drained, found_cell, pool, idx, &lost_cells)?;
                entry.groups.insert(idx, nodes);
                entry.units = (entry.groups.len() == 1).then_some((unit, spec.count));
                applied.push(AppliedChange {
                    change: "drain",
                    cell: found_cell.name.clone(),
                    pool: Some(pool.name.clone()),
                    layout: pool.groups.get(idx).and_then(|group| group.layout.clone()),
                    level,
                    count: Some(spec.count),
                    nodes,
                });
            }
        }
    }
    Ok((applied, drained))
}

fn drain_text(spec: &DrainSpec) -> String {
    let mut text = format!("{}/{}", spec.cell, spec.pool);
    if let Some(layout) = &spec.layout {
        text.push('/');
        text.push_str(layout);
    }
    if let Some(level) = &spec.level {
        text.push('@');
        text.push_str(level);
    }
    format!("{text}={}", spec.count)
}

fn twice(cell: &str, pool: &str) -> SpecError {
    spec_error(
        format!("pool `{cell}/{pool}` is changed twice"),
        "give one change per pool and layout; a lost cell already takes out every pool of it",
    )
}

/// The drained record of a pool for one more change of group `idx`, refusing a second change of
/// the same group or of a lost cell's pool.
fn entry<'a>(
    drained: &'a mut BTreeMap<(String, String), Drained>,
    cell: &CellView,
    pool: &PoolView,
    idx: usize,
    lost_cells: &BTreeSet<String>,
) -> Result<&'a mut Drained, SpecError> {
    let record = drained
        .entry((cell.name.clone(), pool.name.clone()))
        .or_default();
    if lost_cells.contains(&cell.name) || record.groups.contains_key(&idx) {
        return Err(twice(&cell.name, &pool.name));
    }
    Ok(record)
}

fn find_cell<'a>(fleet: &'a FleetView, name: &str) -> Result<&'a CellView, SpecError> {
    let names: Vec<&str> = fleet.cells.iter().map(|cell| cell.name.as_str()).collect();
    fleet
        .cells
        .iter()
        .find(|cell| cell.name == name)
        .ok_or_else(|| {
            unknown(
                &format!("cell `{name}`"),
                "",
                name,
                &names,
                "declared cells are",
            )
        })
}

fn find_pool<'a>(cell: &'a CellView, name: &str) -> Result<&'a PoolView, SpecError> {
    let names: Vec<&str> = cell.pools.iter().map(|pool| pool.name.as_str()).collect();
    cell.pools
        .iter()
        .find(|pool| pool.name == name)
        .ok_or_else(|| {
            unknown(
                &format!("pool `{name}`"),
                &format!(" in cell `{}`", cell.name),
                name,
                &names,
                &format!("pools of `{}` are", cell.name),
            )
        })
}

fn find_layout(cell: &CellView, pool: &PoolView, name: &str) -> Result<usize, SpecError> {
    let names: Vec<&str> = pool
        .groups
        .iter()
        .filter_map(|group| group.layout.as_deref())
        .collect();
    if names.is_empty() {
        return Err(spec_error(
            format!(
                "pool `{}/{}` is not shared by MIG, so it has no layout `{name}`",
                cell.name, pool.name
            ),
            format!(
                "drain a count of its nodes, as in `--drain {}/{}=1`",
                cell.name, pool.name
            ),
        ));
    }
    pool.groups
        .iter()
        .position(|group| group.layout.as_deref() == Some(name))
        .ok_or_else(|| {
            unknown(
                &format!("MIG layout `{name}`"),
                &format!(" in pool `{}/{}`", cell.name, pool.name),
                name,
                &names,
                &format!("layouts of `{}` are", pool.name),
            )
        })
}

fn find_level<'a>(
    cell: &CellView,
    pool: &'a PoolView,
    name: &str,
) -> Result<&'a view::LevelView, SpecError> {
    if pool.levels.is_empty() {
        return Err(spec_error(
            format!(
                "pool `{}/{}` declares no topology, so it has no level `{name}`",
                cell.name, pool.name
            ),
            format!(
                "drain a count of its nodes, as in `--drain {}/{}=1`",
                cell.name, pool.name
            ),
        ));
    }
    // The full label, or its last part (`rack` for `cloud.example.com/rack`) when only one
    // level ends so.
    let short = |label: &str| label.rsplit('/').next().unwrap_or(label).to_string();
    if let Some(level) = pool.levels.iter().find(|level| level.label == name) {
        return Ok(level);
    }
    let by_short: Vec<&view::LevelView> = pool
        .levels
        .iter()
        .filter(|level| short(&level.label) == name)
        .collect();
    if let [only] = by_short.as_slice() {
        return Ok(only);
    }
    let names: Vec<&str> = pool
        .levels
        .iter()
        .map(|level| level.label.as_str())
        .collect();
    let shorts: Vec<String> = pool
        .levels
        .iter()
        .map(|level| short(&level.label))
        .collect();
    let close = did_you_mean(name, names.iter().copied())
        .map(str::to_string)
        .or_else(|| did_you_mean(name, shorts.iter().map(String::as_str)).map(str::to_string));
    Err(spec_error(
        format!(
            "pool `{}/{}` has no topology level `{name}`{}",
            cell.name,
            pool.name,
            close
                .map(|close| format!("; did you mean `{close}`?"))
                .unwrap_or_default()
        ),
        format!("levels of `{}` are {}", pool.name, list_names(names)),
    ))
}

fn unknown(what: &str, place: &str, name: &str, names: &[&str], listed: &str) -> SpecError {
    let close = did_you_mean(name, names.iter().copied())
        .map(|close| format!("; did you mean `{close}`?"))
        .unwrap_or_default();
    spec_error(
        format!("{what} is not declared{place}{close}"),
        format!("{listed} {}", list_names(names.iter().copied())),
    )
}

/// What the changes do to the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhatIf {
    /// The changes in the order given to [`what_if`] (the CLI gives drains, then lost cells,
    /// then removed layouts, each in command-line order).
    pub changes: Vec<AppliedChange>,
    /// Whether every reservation is still backed: its devices and its reserved gangs.
    pub backed: bool,
    /// The tenants with a reservation no longer backed, sorted.
    pub unbacked_tenants: Vec<String>,
    /// Every pool the changes take nodes out of, in cell and pool order.
    pub pools: Vec<PoolChange>,
    /// Every tenant with a reservation in such a pool or a fleet contract that loses GPUs,
    /// sorted by name.
    pub tenants: Vec<TenantImpact>,
}

/// A pool the changes take nodes out of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolChange {
    /// The cell.
    pub cell: String,
    /// The pool.
    pub pool: String,
    /// Nodes before.
    pub nodes_before: i64,
    /// Nodes left.
    pub nodes_after: i64,
    /// Per MIG layout, its nodes before and after (empty for a pool not shared by MIG).
    pub layouts: Vec<LayoutChange>,
    /// Per resource the pool offers.
    pub resources: Vec<ResourceChange>,
}

/// The nodes of one MIG layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutChange {
    /// The layout.
    pub layout: String,
    /// Nodes before.
    pub nodes_before: i64,
    /// Nodes left with the layout.
    pub nodes_after: i64,
}

/// One resource of a changed pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceChange {
    /// The extended resource.
    pub resource: String,
    /// Its MIG profile, for a MIG pool.
    pub profile: Option<String>,
    /// Devices before.
    pub capacity_before: i64,
    /// Devices left.
    pub capacity_after: i64,
    /// What all tenants reserve of it.
    pub reserved: i64,
    /// Reserved devices the pool no longer holds: `max(0, reserved - capacity_after)`.
    pub shortfall: i64,
}

/// What one tenant loses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantImpact {
    /// The tenant.
    pub tenant: String,
    /// Whether all its reservations are still backed.
    pub backed: bool,
    /// Reserved devices no longer backed, over its reservations.
    pub unbacked: i64,
    /// Backed burst lost, over its reservations.
    pub burst_lost: i64,
    /// Its reservations in changed pools, in cell and pool order.
    pub reservations: Vec<ReservationImpact>,
    /// Its gangs in changed pools.
    pub gangs: Vec<GangImpact>,
    /// Its fleet contracts that lose GPUs.
    pub fleet: Vec<ContractImpact>,
}

/// One reserved pool resource of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReservationImpact {
    /// The cell.
    pub cell: String,
    /// The pool.
    pub pool: String,
    /// The resource.
    pub resource: String,
    /// Its MIG profile, for a MIG pool.
    pub profile: Option<String>,
    /// Reserved (Kueue nominal quota).
    pub reserved: i64,
    /// Burst (Kueue borrowing limit).
    pub burst: i64,
    /// Devices of the resource in the pool before.
    pub capacity_before: i64,
    /// And after.
    pub capacity_after: i64,
    /// Reserved devices no longer backed: `min(reserved, shortfall)`.
    pub unbacked: i64,
    /// Burst the hardware held beyond every reservation before.
    pub burst_backed_before: i64,
    /// And after.
    pub burst_backed_after: i64,
    /// `burst_backed_before - burst_backed_after`.
    pub burst_lost: i64,
    /// The plan's effective capacity, `min(quota, cell, topology)`.
    pub effective_before: i64,
    /// The same after the change.
    pub effective_after: i64,
}

/// One gang of a tenant in a changed pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GangImpact {
    /// The cell.
    pub cell: String,
    /// The pool.
    pub pool: String,
    /// The resource.
    pub resource: String,
    /// GPUs one gang takes at once.
    pub gang: i64,
    /// The topology level it stays within; `null` for an NVLink domain.
    pub within: Option<String>,
    /// GPUs one domain holds.
    pub domain_gpus: i64,
    /// Gangs the reservation holds: `reserved / gang`.
    pub reserved_gangs: i64,
    /// Gangs that fit at once, domain by domain, before.
    pub gangs_before: i64,
    /// And after (the worst case over where the drained nodes sit, when `worst_case`).
    pub gangs_after: i64,
    /// Whether `gangs_after` is the worst case over where the drained nodes sit.
    pub worst_case: bool,
    /// The nodes drained in each domain that `gangs_after` counts with, largest first (the
    /// other domains keep all their nodes); the worst case when `worst_case`. Empty when the
    /// pool is too large to list them.
    pub drained_per_domain: Vec<i64>,
    /// Whether any domain still holds a whole gang.
    pub fits: bool,
}

/// One fleet contract of a tenant that loses GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContractImpact {
    /// The GPU model.
    pub gpu: String,
    /// Whole GPUs across the fleet.
    pub total: i64,
    /// Its cells, with their parts and what each loses.
    pub parts: Vec<PartImpact>,
    /// GPUs of the contract no longer backed.
    pub lost: i64,
    /// Whole GPUs of the model its cells hold beyond every reservation after the change, in
    /// exclusive pools the tenant may reserve in.
    pub spare: i64,
    /// What the spare cannot take: `max(0, lost - spare)`.
    pub short: i64,
    /// The tenants reserving in those pools, which re-homing the lost part would overcommit
    /// (empty when the spare takes it).
    pub overcommits: Vec<String>,
}

/// One cell of a fleet contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartImpact {
    /// The cell.
    pub cell: String,
    /// Its part of the contract.
    pub gpus: i64,
    /// What it loses.
    pub lost: i64,
}

/// Applies the changes to the view and says what tenants lose.
pub fn what_if(fleet: &FleetView, changes: &[Change]) -> Result<WhatIf, SpecError> {
    let (applied, drained) = resolve(fleet, changes)?;
    // Capacity before and after, and what all tenants reserve, per (cell, pool, resource).
    let mut capacity: BTreeMap<(&str, &str, &str), (i64, i64)> = BTreeMap::new();
    let mut reserved: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
    let mut pools = Vec::new();
    for cell in &fleet.cells {
        for pool in &cell.pools {
            let record = drained.get(&(cell.name.clone(), pool.name.clone()));
            for (idx, group) in pool.groups.iter().enumerate() {
                let gone = record
                    .and_then(|record| record.groups.get(&idx))
                    .copied()
                    .unwrap_or(0);
                let left = group.nodes.saturating_sub(gone).max(0);
                for (resource, _, devices) in &group.per_node {
                    let entry = capacity
                        .entry((&cell.name, &pool.name, resource))
                        .or_insert((0, 0));
                    entry.0 = entry.0.saturating_add(group.nodes.saturating_mul(*devices));
                    entry.1 = entry.1.saturating_add(left.saturating_mul(*devices));
                }
            }
        }
        for tenant in &cell.tenants {
            for row in &tenant.rows {
                let entry = reserved
                    .entry((&cell.name, &row.pool, &row.resource))
                    .or_insert(0);
                *entry = entry.saturating_add(row.nominal);
            }
        }
        for pool in &cell.pools {
            let Some(record) = drained.get(&(cell.name.clone(), pool.name.clone())) else {
                continue;
            };
            let gone = |idx: usize| record.groups.get(&idx).copied().unwrap_or(0);
            let mut resources: BTreeMap<&str, ResourceChange> = BTreeMap::new();
            for group in &pool.groups {
                for (resource, profile, _) in &group.per_node {
                    let (before, after) = capacity
                        .get(&(cell.name.as_str(), pool.name.as_str(), resource.as_str()))
                        .copied()
                        .unwrap_or((0, 0));
                    let all = reserved
                        .get(&(cell.name.as_str(), pool.name.as_str(), resource.as_str()))
                        .copied()
                        .unwrap_or(0);
                    resources
                        .entry(resource.as_str())
                        .or_insert_with(|| ResourceChange {
                            resource: resource.clone(),
                            profile: profile.clone(),
                            capacity_before: before,
                            capacity_after: after,
                            reserved: all,
                            shortfall: all.saturating_sub(after).max(0),
                        });
                }
            }
            let removed: i64 = (0..pool.groups.len()).map(gone).sum();
            pools.push(PoolChange {
                cell: cell.name.clone(),
                pool: pool.name.clone(),
                nodes_before: pool.nodes(),
                nodes_after: pool.nodes().saturating_sub(removed),
                layouts: pool
                    .groups
                    .iter()
                    .enumerate()
                    .filter_map(|(idx, group)| {
                        Some(LayoutChange {
                            layout: group.layout.clone()?,
                            nodes_before: group.nodes,
                            nodes_after: group.nodes.saturating_sub(gone(idx)),
                        })
                    })
                    .collect(),
                resources: resources.into_values().collect(),
            });
        }
    }

    let mut impacts: BTreeMap<String, TenantImpact> = BTreeMap::new();
    for cell in &fleet.cells {
        for tenant in &cell.tenants {
            for row in &tenant.rows {
                let Some(record) = drained.get(&(cell.name.clone(), row.pool.clone())) else {
                    continue;
                };
                let Some(pool) = cell.pools.iter().find(|pool| pool.name == row.pool) else {
                    continue;
                };
                let key = (cell.name.as_str(), row.pool.as_str(), row.resource.as_str());
                let (before, after) = capacity.get(&key).copied().unwrap_or((0, 0));
                let all = reserved.get(&key).copied().unwrap_or(0);
                let shortfall = |capacity: i64| all.saturating_sub(capacity).max(0);
                let unbacked =
                    row.nominal.min(shortfall(after)) - row.nominal.min(shortfall(before));
                let backed_burst =
                    |capacity: i64| row.borrowing.min(capacity.saturating_sub(all).max(0));
                let gang = row.gang.map(|(size, domain)| {
                    gang_impact(cell, pool, row, record, size, domain, after)
                });
                let topology_after = gang.as_ref().map_or(after, |gang| {
                    gang.gangs_after.saturating_mul(gang.gang).min(after)
                });
                let taken = before.saturating_sub(after);
                let cell_after = row.cell_admit.saturating_sub(taken).max(0);
                let quota = row.nominal.saturating_add(row.borrowing);
                let impact = impacts
                    .entry(tenant.name.clone())
                    .or_insert_with(|| empty_impact(&tenant.name));
                impact.reservations.push(ReservationImpact {
                    cell: cell.name.clone(),
                    pool: row.pool.clone(),
                    resource: row.resource.clone(),
                    profile: row.profile.clone(),
                    reserved: row.nominal,
                    burst: row.borrowing,
                    capacity_before: before,
                    capacity_after: after,
                    unbacked: unbacked.max(0),
                    burst_backed_before: backed_burst(before),
                    burst_backed_after: backed_burst(after),
                    burst_lost: backed_burst(before).saturating_sub(backed_burst(after)),
                    effective_before: row.effective,
                    effective_after: quota.min(cell_after).min(topology_after),
                });
                if let Some(gang) = gang {
                    impact.gangs.push(gang);
                }
            }
        }
    }

    // Fleet contracts, once per tenant and model, as the first of their cells records them.
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for cell in &fleet.cells {
        for tenant in &cell.tenants {
            for contract in &tenant.fleet {
                if !seen.insert((tenant.name.clone(), contract.gpu.clone())) {
                    continue;
                }
                let impact = contract_impact(fleet, &tenant.name, contract, &capacity, &reserved);
                if impact.lost > 0 {
                    impacts
                        .entry(tenant.name.clone())
                        .or_insert_with(|| empty_impact(&tenant.name))
                        .fleet
                        .push(impact);
                }
            }
        }
    }

    let mut tenants: Vec<TenantImpact> = impacts.into_values().collect();
    for impact in &mut tenants {
        impact.unbacked = impact.reservations.iter().map(|row| row.unbacked).sum();
        impact.burst_lost = impact.reservations.iter().map(|row| row.burst_lost).sum();
        impact.backed = impact.unbacked == 0
            && impact
                .gangs
                .iter()
                .all(|gang| gang.gangs_after >= gang.reserved_gangs);
    }
    let unbacked_tenants: Vec<String> = tenants
        .iter()
        .filter(|impact| !impact.backed)
        .map(|impact| impact.tenant.clone())
        .collect();
    Ok(WhatIf {
        changes: applied,
        backed: unbacked_tenants.is_empty(),
        unbacked_tenants,
        pools,
        tenants,
    })
}

fn empty_impact(tenant: &str) -> TenantImpact {
    TenantImpact {
        tenant: tenant.to_string(),
        backed: true,
        unbacked: 0,
        burst_lost: 0,
        reservations: Vec::new(),
        gangs: Vec::new(),
        fleet: Vec::new(),
    }
}

/// How many gangs fit at once before and after a drain.
fn gang_impact(
    cell: &CellView,
    pool: &PoolView,
    row: &view::RowView,
    record: &Drained,
    gang: i64,
    domain: i64,
    capacity_after: i64,
) -> GangImpact {
    let per_node = pool.gpus_per_node.max(1);
    // A domain of `span` nodes holds `fit(x)` gangs with `x` of its nodes left; a domain
    // smaller than a node is counted node by node.
    let (span, per_node_gangs) = if domain >= per_node && domain % per_node == 0 {
        (domain / per_node, None)
    } else {
        let domains_per_node = if domain > 0 { per_node / domain } else { 0 };
        (
            1,
            Some(domains_per_node * if gang > 0 { domain / gang } else { 0 }),
        )
    };
    let fit = |left: i64| match per_node_gangs {
        Some(gangs) => left * gangs,
        None if gang > 0 => left * per_node / gang,
        None => 0,
    };
    let nodes = pool.nodes();
    let domains = nodes / span.max(1);
    let before = domains * fit(span);
    let drained: i64 = record.groups.values().sum();
    let whole_domains =
        |count: i64| vec![span; usize::try_from(count.clamp(0, domains)).unwrap_or(0)];
    let (after, worst_case, placement) = if capacity_after == 0 || drained >= nodes {
        (0, false, whole_domains(domains))
    } else {
        match record.units {
            Some((unit, units)) if unit % span == 0 => {
                let whole = (unit / span) * units;
                (
                    (domains - whole).max(0) * fit(span),
                    false,
                    whole_domains(whole),
                )
            }
            Some((unit, units)) if span % unit == 0 => {
                let (lost, placed) = worst_loss(domains, span / unit, units, |taken| {
                    fit(span) - fit(span - taken * unit)
                });
                (
                    before - lost,
                    units > 1,
                    placed.into_iter().map(|taken| taken * unit).collect(),
                )
            }
            _ => {
                let (lost, placed) = worst_loss(domains, span, drained, |taken| {
                    fit(span) - fit(span - taken)
                });
                (before - lost, drained > 1, placed)
            }
        }
    };
    // The level whose domains hold exactly the gang's domain; one node's level is the NVLink
    // domain's, which is how a gang without `within` is declared.
    let within = pool
        .levels
        .iter()
        .filter(|level| level.label != crate::model::HOSTNAME_LABEL)
        .find(|level| level.nodes.saturating_mul(per_node) == domain)
        .map(|level| level.label.clone());
    GangImpact {
        cell: cell.name.clone(),
        pool: pool.name.clone(),
        resource: row.resource.clone(),
        gang,
        within,
        domain_gpus: domain,
        reserved_gangs: if gang > 0 { row.nominal / gang } else { 0 },
        gangs_before: before,
        gangs_after: after.max(0),
        worst_case,
        drained_per_domain: placement,
        fits: after > 0,
    }
}

/// The most gangs `units` drained units can cost, spread over `domains` domains of `slots`
/// units each, where `loss(k)` is what a domain loses with `k` of its units drained: the exact
/// maximum by dynamic programming over the domains (the domains are alike, so only how many
/// units each takes matters), with the units each affected domain takes in that worst case,
/// largest first (empty when the table to find them would exceed [`PLACEMENT_CELLS`]).
fn worst_loss(domains: i64, slots: i64, units: i64, loss: impl Fn(i64) -> i64) -> (i64, Vec<i64>) {
    let units = units.clamp(0, domains.saturating_mul(slots));
    let Ok(width) = usize::try_from(units) else {
        return (0, Vec::new());
    };
    // A domain takes at least one unit, so more than `units` domains never help.
    let rounds = usize::try_from(domains.min(units)).unwrap_or(0);
    let keep_choices = rounds.saturating_mul(width + 1) <= PLACEMENT_CELLS;
    // best[k]: the most lost with k units placed in the domains seen so far; None: impossible.
    let mut best: Vec<Option<i64>> = vec![None; width + 1];
    if let Some(first) = best.first_mut() {
        *first = Some(0);
    }
    // choices[round][k]: the units the round's domain takes in the best way to place k.
    let mut choices: Vec<Vec<i64>> = Vec::new();
    for _ in 0..rounds {
        let mut next = best.clone();
        let mut taken_here = vec![0_i64; if keep_choices { width + 1 } else { 0 }];
        for (placed, value) in best.iter().enumerate() {
            let Some(value) = value else { continue };
            for taken in 1..=slots {
                let Some(total) = usize::try_from(taken).ok().map(|taken| placed + taken) else {
                    break;
                };
                let Some(slot) = next.get_mut(total) else {
                    break;
                };
                let candidate = value + loss(taken);
                if slot.is_none_or(|current| candidate > current) {
                    *slot = Some(candidate);
                    if let Some(choice) = taken_here.get_mut(total) {
                        *choice = taken;
                    }
                }
            }
        }
        best = next;
        if keep_choices {
            choices.push(taken_here);
        }
    }
    let mut placement = Vec::new();
    let mut left = width;
    for round in choices.iter().rev() {
        let taken = round.get(left).copied().unwrap_or(0);
        if taken > 0 {
            placement.push(taken);
            left = left.saturating_sub(usize::try_from(taken).unwrap_or(0));
        }
    }
    placement.sort_unstable_by(|left, right| right.cmp(left));
    (best.get(width).copied().flatten().unwrap_or(0), placement)
}

/// The most entries of the table [`worst_loss`] keeps to say where the drained units sit.
const PLACEMENT_CELLS: usize = 1 << 22;

/// What a fleet contract loses, what its cells have spare, and whom re-homing would overcommit.
fn contract_impact(
    fleet: &FleetView,
    tenant: &str,
    contract: &view::ContractView,
    capacity: &BTreeMap<(&str, &str, &str), (i64, i64)>,
    reserved: &BTreeMap<(&str, &str, &str), i64>,
) -> ContractImpact {
    let mut parts = Vec::new();
    let mut spare = 0_i64;
    let mut destinations: BTreeSet<String> = BTreeSet::new();
    for (cell_name, gpus) in &contract.parts {
        let Some(cell) = fleet.cells.iter().find(|cell| &cell.name == cell_name) else {
            continue;
        };
        let eligible: Vec<&PoolView> = cell
            .pools
            .iter()
            .filter(|pool| pool.exclusive && pool.gpu == contract.gpu)
            .collect();
        let mut lost = 0_i64;
        for pool in &eligible {
            let key = (cell.name.as_str(), pool.name.as_str(), GPU_RESOURCE);
            let (before, after) = capacity.get(&key).copied().unwrap_or((0, 0));
            let all = reserved.get(&key).copied().unwrap_or(0);
            let own = cell
                .tenants
                .iter()
                .filter(|candidate| candidate.name == tenant)
                .flat_map(|candidate| &candidate.rows)
                .filter(|row| row.pool == pool.name && row.resource == GPU_RESOURCE)
                .map(|row| row.nominal)
                .sum::<i64>();
            let shortfall = |capacity: i64| all.saturating_sub(capacity).max(0);
            lost += own.min(shortfall(after)) - own.min(shortfall(before));
            let open = pool.owner.as_deref().is_none_or(|owner| owner == tenant);
            if open && after > 0 {
                spare += after.saturating_sub(all).max(0);
                destinations.extend(
                    cell.tenants
                        .iter()
                        .filter(|other| other.name != tenant)
                        .filter(|other| {
                            other.rows.iter().any(|row| {
                                row.pool == pool.name
                                    && row.resource == GPU_RESOURCE
                                    && row.nominal > 0
                            })
                        })
                        .map(|other| other.name.clone()),
                );
            }
        }
        parts.push(PartImpact {
            cell: cell_name.clone(),
            gpus: *gpus,
            lost: lost.max(0),
        });
    }
    let lost: i64 = parts.iter().map(|part| part.lost).sum();
    let short = lost.saturating_sub(spare).max(0);
    ContractImpact {
        gpu: contract.gpu.clone(),
        total: contract.total,
        parts,
        lost,
        spare,
        short,
        overcommits: if short > 0 {
            destinations.into_iter().collect()
        } else {
            Vec::new()
        },
    }
}

/// The query on a compiled fleet: the plan and the validated declarations it was resolved from.
pub fn query(
    plan: &crate::plan::Plan,
    fleet: &crate::model::Fleet,
    changes: &[Change],
) -> Result<WhatIf, SpecError> {
    what_if(
        &view::view(plan, fleet, crate::catalog::Catalog::builtin()),
        changes,
    )
}
