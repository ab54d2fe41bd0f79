//! Validation: rules that span fields, objects and files.
//!
//! Consumes: the [`Declaration`]s read by `schema`. Produces: a [`Fleet`] (tenants and cells
//! sorted by name, duplicates dropped) and diagnostics. Each check family lives in its own file
//! with its own tests: `cells` (pools against the hardware catalog), `tenants` (references from
//! tenants to cells, pools, profiles and priorities, and reserved capacity), `namespaces` (tenant
//! namespaces against platform namespaces and each other), `groups` (reserved RBAC groups against
//! the cells that allow them), `kueue` (what the cells' Kueue objects are made from: lending,
//! bursts, topologies, gangs, NVLink domains, ceiling splits, fleet reservations and Kueue's
//! limits), `network` (the address blocks of the cells' network policies), `runtime` (runtime
//! classes: their pools, and one for every trust class that reserves GPUs in a cell),
//! `registries` (no tenant declares another tenant's image registry or a parent of it), `orgs`
//! (a tenant is in an org only where the cell lists it, when the org is listed or shared there),
//! `pools` (no tenant names a pool the cell reserves for another tenant, and every owner is a
//! tenant), `labels` (a tenant's declared chargeback labels: no reserved, repeated or forbidden
//! key), `backends` (a cell's scheduler, admission engine and device mode against what tenantc
//! emits and the cell's Kubernetes version), `volcano` (what Volcano cannot hold as planned: a
//! topology, a resource reserved in two pools, a guarantee on a resource two pools offer).
//!
//! Invariants: validation never stops at the first finding; `lower` runs only on a fleet that
//! produced no error, so it may rely on every reference resolving. The check families only read
//! the fleet: they run in parallel, and their findings are joined in the order `validate` lists
//! them, so they are the same on any number of threads.

pub mod audit;
mod backends;
mod cells;
mod cells_placement;
mod dra;
pub mod groups;
pub mod iam;
pub mod kueue;
mod labels;
pub mod namespaces;
pub mod network;
mod orgs;
mod pools;
mod registries;
mod runtime;
mod security;
mod serving;
mod tenants;
mod volcano;

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic};
use crate::model::{Fleet, Spanned};
use crate::schema::Declaration;

/// Names of declarations whose files yielded nothing (their errors are reported already), taken
/// from the file names; references to them are not reported again as unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unreadable {
    /// Stems of unreadable files under `cells/`.
    pub cells: BTreeSet<String>,
    /// Stems of unreadable files under `tenants/`.
    pub tenants: BTreeSet<String>,
}

impl Unreadable {
    /// Marks the declaration of an unreadable file under `cells/` or `tenants/`.
    pub fn insert(&mut self, kind: crate::layout::DeclKind, stem: String) {
        match kind {
            crate::layout::DeclKind::Cell => self.cells.insert(stem),
            crate::layout::DeclKind::Tenant => self.tenants.insert(stem),
        };
    }
}

/// Assembles the fleet and runs every check.
pub fn validate(
    declarations: Vec<Declaration>,
    unreadable: &Unreadable,
    catalog: &Catalog,
) -> (Fleet, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut fleet = Fleet::default();
    for declaration in declarations {
        match declaration {
            Declaration::Tenant(tenant) => fleet.tenants.push(*tenant),
            Declaration::Cell(cell) => fleet.cells.push(*cell),
        }
    }
    fleet
        .tenants
        .sort_by(|a, b| a.name.value.cmp(&b.name.value));
    fleet.cells.sort_by(|a, b| a.name.value.cmp(&b.name.value));
    duplicates(
        fleet.tenants.iter().map(|t| &t.name),
        "tenant",
        &mut diagnostics,
    );
    duplicates(
        fleet.cells.iter().map(|c| &c.name),
        "cell",
        &mut diagnostics,
    );
    fleet
        .tenants
        .dedup_by(|later, earlier| later.name.value == earlier.name.value);
    fleet
        .cells
        .dedup_by(|later, earlier| later.name.value == earlier.name.value);

    diagnostics.extend(run_checks(&fleet, unreadable, catalog));
    (fleet, diagnostics)
}

/// One check family over the whole fleet, pushing its findings.
type Check<'a> = Box<dyn Fn(&mut Vec<Diagnostic>) + Sync + 'a>;

/// Runs every check family over the assembled fleet and returns their findings in the order of
/// the families, as if they ran one after the other.
///
/// The families only read the fleet, so they run in parallel on the current rayon pool, each
/// into its own list; the lists are joined in the families' order, so the findings are the
/// same on any number of threads.
fn run_checks(fleet: &Fleet, unreadable: &Unreadable, catalog: &Catalog) -> Vec<Diagnostic> {
    use rayon::prelude::*;
    let mut checks: Vec<Check<'_>> = Vec::new();
    for cell in &fleet.cells {
        checks.push(Box::new(move |found| cells::check(cell, catalog, found)));
    }
    checks.extend([
        Box::new(|found: &mut Vec<Diagnostic>| backends::check(fleet, found)) as Check<'_>,
        Box::new(|found| volcano::check(fleet, catalog, found)),
        Box::new(|found| dra::check(fleet, catalog, found)),
        Box::new(|found| tenants::check(fleet, unreadable, catalog, found)),
        Box::new(|found| kueue::check(fleet, catalog, found)),
        Box::new(|found| namespaces::check(fleet, found)),
        Box::new(|found| groups::check(fleet, found)),
        Box::new(|found| security::check(fleet, found)),
        Box::new(|found| network::check(fleet, found)),
        Box::new(|found| runtime::check(fleet, found)),
        Box::new(|found| iam::check(fleet, found)),
        Box::new(|found| registries::check(fleet, found)),
        Box::new(|found| labels::check(fleet, found)),
        Box::new(|found| orgs::check(fleet, unreadable, found)),
        Box::new(|found| pools::check(fleet, unreadable, found)),
        Box::new(|found| serving::check(fleet, unreadable, found)),
    ]);
    let found: Vec<Vec<Diagnostic>> = checks
        .par_iter()
        .map(|check| {
            let mut found = Vec::new();
            check(&mut found);
            found
        })
        .collect();
    found.into_iter().flatten().collect()
}

/// Reports every name that repeats an earlier one, pointing at both.
pub(crate) fn duplicates<'a>(
    names: impl IntoIterator<Item = &'a Spanned<String>>,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut seen: BTreeMap<&str, &Spanned<String>> = BTreeMap::new();
    for name in names {
        match seen.get(name.value.as_str()) {
            Some(first) => diagnostics.push(
                Diagnostic::error(
                    Code::NameDuplicate,
                    name.span,
                    format!("{what} `{}` is declared twice", name.value),
                )
                .with_label("declared again here")
                .with_secondary(first.span, "first declared here")
                .with_help("rename or remove one of the two"),
            ),
            None => {
                seen.insert(&name.value, name);
            }
        }
    }
}

#[cfg(test)]
pub(crate) use crate::testing::support as test_support;
