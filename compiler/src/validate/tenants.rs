//! Tenant checks: references to cells, pools, profiles, workloads and priorities, and the
//! capacity that all tenants reserve together.
//!
//! Consumes: the [`Fleet`]. Produces: diagnostics.
//!
//! Invariant: pure; a reservation is counted against exactly the pool resource
//! [`hardware::resolve`] maps it to, the same mapping `lower` uses for quotas.

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::hardware;
use crate::model::{Cell, Fleet, PoolQuota, Sharing, Spanned, Tenant, Trust};
use crate::source::Span;

use super::duplicates;

/// The reservations that draw on one pool resource.
type Reservations<'a> = Vec<(&'a Tenant, &'a PoolQuota)>;

/// Checks every tenant against the cells.
pub(super) fn check(
    fleet: &Fleet,
    unreadable: &super::Unreadable,
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let cells: BTreeMap<&str, &Cell> = fleet
        .cells
        .iter()
        .map(|cell| (cell.name.value.as_str(), cell))
        .collect();
    // (cell, pool, resource) -> reservations, for the capacity check.
    let mut reserved: BTreeMap<(&str, &str, String), Reservations<'_>> = BTreeMap::new();
    for tenant in &fleet.tenants {
        check_tenant_shape(tenant, diagnostics);
        if tenant.quotas.is_empty() && tenant.complete {
            diagnostics.push(
                Diagnostic::warning(
                    Code::TenantWithoutQuota,
                    tenant.name.span,
                    format!("tenant `{}` has no quota in any cell", tenant.name.value),
                )
                .with_label("nothing is generated for this tenant")
                .with_help("add `quota cell=\"<cell>\" … { … }`"),
            );
        }
        let mut seen_cells = std::collections::BTreeSet::new();
        for quota in &tenant.quotas {
            // A repeated quota is reported as a duplicate; counting it again would only repeat
            // that finding as over-capacity.
            if !seen_cells.insert(quota.cell.value.as_str()) {
                continue;
            }
            let Some(cell) = cells.get(quota.cell.value.as_str()) else {
                if unreadable.cells.contains(&quota.cell.value) {
                    continue;
                }
                diagnostics.push(unknown_reference(
                    Referent::Cell,
                    &quota.cell,
                    cells.keys().copied(),
                    "declare the cell in cells/, or fix the name",
                ));
                continue;
            };
            if !cell.complete {
                // References into a cell that could not be read completely are not checked.
                continue;
            }
            check_priorities(tenant, cell, quota.cell.span, diagnostics);
            let catalog = crate::hardware::cell_catalog(cell, catalog);
            let catalog = catalog.as_ref();
            let mut seen_reservations = std::collections::BTreeSet::new();
            for reservation in &quota.pools {
                // A repeated reservation is reported as a duplicate and counted once.
                let profile = reservation.profile.as_ref().map(|p| p.value.as_str());
                let workload = reservation.workload.as_ref().map(|w| w.value);
                if !seen_reservations.insert((reservation.pool.value.as_str(), profile, workload)) {
                    continue;
                }
                if tenant.workloads.len() > 1
                    && reservation.workload.is_none()
                    && cell
                        .pools
                        .iter()
                        .any(|p| p.name.value == reservation.pool.value)
                {
                    diagnostics.push(ambiguous_workload(tenant, reservation));
                }
                if let Some(key) =
                    check_reservation(tenant, cell, reservation, catalog, diagnostics)
                {
                    reserved
                        .entry((
                            cell.name.value.as_str(),
                            reservation.pool.value.as_str(),
                            key,
                        ))
                        .or_default()
                        .push((tenant, reservation));
                }
            }
        }
    }
    for ((cell_name, pool_name, resource), reservations) in &reserved {
        if resource == hardware::SHARED_GPU_RESOURCE {
            check_shared_orgs(cell_name, pool_name, reservations, diagnostics);
        }
    }
    for ((cell_name, pool_name, resource), reservations) in reserved {
        check_capacity(
            &cells,
            cell_name,
            pool_name,
            &resource,
            &reservations,
            catalog,
            diagnostics,
        );
    }
}

fn check_tenant_shape(tenant: &Tenant, diagnostics: &mut Vec<Diagnostic>) {
    let kinds: Vec<Spanned<String>> = tenant
        .workloads
        .iter()
        .map(|w| Spanned::new(w.kind.value.as_str().to_string(), w.kind.span))
        .collect();
    duplicates(&kinds, "workload", diagnostics);
    duplicates(
        tenant.quotas.iter().map(|q| &q.cell),
        "quota for cell",
        diagnostics,
    );
    duplicates(tenant.models.iter().map(|m| &m.name), "model", diagnostics);
    duplicates(&tenant.registries, "registry", diagnostics);
    for quota in &tenant.quotas {
        let keys: Vec<Spanned<String>> = quota
            .pools
            .iter()
            .map(|r| {
                let mut key = r.pool.value.clone();
                if let Some(profile) = &r.profile {
                    key = format!("{key} profile={}", profile.value);
                }
                if let Some(workload) = &r.workload {
                    key = format!("{key} workload={}", workload.value.as_str());
                }
                Spanned::new(key, r.pool.span)
            })
            .collect();
        duplicates(&keys, "reservation of pool", diagnostics);
        for reservation in &quota.pools {
            if let Some(workload) = &reservation.workload
                && tenant.complete
                && !tenant
                    .workloads
                    .iter()
                    .any(|w| w.kind.value == workload.value)
            {
                diagnostics.push(
                    Diagnostic::error(
                        Code::WorkloadUnknown,
                        workload.span,
                        format!(
                            "tenant `{}` has no `{}` workload",
                            tenant.name.value,
                            workload.value.as_str()
                        ),
                    )
                    .with_help(format!(
                        "declare `workload \"{}\" …`, or remove `workload=`",
                        workload.value.as_str()
                    )),
                );
            }
        }
    }
    for workload in &tenant.workloads {
        let namespace = format!("{}-{}", tenant.name.value, workload.kind.value.as_str());
        if namespace.len() > 63 {
            diagnostics.push(
                Diagnostic::error(
                    Code::NameInvalid,
                    tenant.name.span,
                    format!(
                        "namespace `{namespace}` would be {} characters long",
                        namespace.len()
                    ),
                )
                .with_label("namespace names are at most 63 characters")
                .with_secondary(workload.kind.span, "workload that needs the namespace")
                .with_help(format!(
                    "shorten the tenant name to at most {} characters",
                    63 - 1 - workload.kind.value.as_str().len()
                )),
            );
        }
    }
}

fn ambiguous_workload(tenant: &Tenant, reservation: &PoolQuota) -> Diagnostic {
    Diagnostic::error(
        Code::ReservationWorkloadAmbiguous,
        reservation.pool.span,
        format!(
            "tenant `{}` has {} workloads; this reservation names none",
            tenant.name.value,
            tenant.workloads.len()
        ),
    )
    .with_label("each workload namespace would get all of it")
    .with_note("a ResourceQuota is per namespace: without `workload=`, every namespace of the tenant could use the whole reservation")
    .with_help(format!(
        "add `workload=` with one of {}; give each workload its own reservation to split a pool",
        list_names(tenant.workloads.iter().map(|w| w.kind.value.as_str()))
    ))
}

/// What a reference that names nothing declared was meant to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Referent {
    /// A cell, from a tenant's quota.
    Cell,
    /// A pool of a cell, from a reservation or a runtime class.
    Pool,
}

/// The finding of a reference to a cell or pool that is not declared, with a did-you-mean
/// among `candidates`.
pub(super) fn unknown_reference<'a>(
    referent: Referent,
    name: &Spanned<String>,
    candidates: impl Iterator<Item = &'a str> + Clone,
    fallback_help: &str,
) -> Diagnostic {
    let (what, code) = match referent {
        Referent::Cell => ("cell", Code::CellUnknown),
        Referent::Pool => ("pool", Code::PoolUnknown),
    };
    let diagnostic = Diagnostic::error(
        code,
        name.span,
        format!("{what} `{}` is not declared", name.value),
    );
    match did_you_mean(&name.value, candidates.clone()) {
        Some(close) => diagnostic
            .with_label(format!("did you mean `{close}`?"))
            .with_help(format!("declared {what}s are {}", list_names(candidates))),
        None => diagnostic
            .with_label(format!("unknown {what}"))
            .with_help(format!(
                "{fallback_help}; declared {what}s are {}",
                list_names(candidates)
            )),
    }
}

/// `pool-unknown` for a reservation: a pool that offers the profile asked for is suggested
/// before one that is only spelled closer (`a100-inf` with `profile="3g.40gb"` means the MIG
/// pool, not the exclusive `a100-train`), and the only pool that offers it is suggested even
/// when no name is close.
fn unknown_pool(cell: &Cell, reservation: &PoolQuota, catalog: &Catalog) -> Diagnostic {
    let names = cell.pools.iter().map(|p| p.name.value.as_str());
    let fallback = format!("declare the pool in cell `{}`", cell.name.value);
    let Some(profile) = &reservation.profile else {
        return unknown_reference(Referent::Pool, &reservation.pool, names, &fallback);
    };
    let offering: Vec<&str> = cell
        .pools
        .iter()
        .filter(|pool| {
            pool.sharing.value == Sharing::Mig
                && crate::hardware::offers(pool, catalog)
                    .iter()
                    .any(|offer| offer.profile.as_deref() == Some(profile.value.as_str()))
        })
        .map(|pool| pool.name.value.as_str())
        .collect();
    let label = match (
        did_you_mean(&reservation.pool.value, offering.iter().copied()),
        offering.as_slice(),
    ) {
        (Some(close), _) => format!("did you mean `{close}`?"),
        (None, [only]) => format!("did you mean `{only}`, which offers `{}`?", profile.value),
        (None, _) => return unknown_reference(Referent::Pool, &reservation.pool, names, &fallback),
    };
    let offer_names = list_names(offering.iter().copied());
    Diagnostic::error(
        Code::PoolUnknown,
        reservation.pool.span,
        format!("pool `{}` is not declared", reservation.pool.value),
    )
    .with_label(label)
    .with_help(format!(
        "declared pools are {}; {offer_names} {} `{}`",
        list_names(names),
        if offering.len() == 1 {
            "offers"
        } else {
            "offer"
        },
        profile.value
    ))
}

fn check_priorities(
    tenant: &Tenant,
    cell: &Cell,
    quota_span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for workload in &tenant.workloads {
        let Some(priority) = &workload.priority else {
            continue;
        };
        if cell
            .priorities
            .iter()
            .any(|p| p.name.value == priority.value)
        {
            continue;
        }
        let names = cell.priorities.iter().map(|p| p.name.value.as_str());
        let diagnostic = Diagnostic::error(
            Code::PriorityUnknown,
            priority.span,
            format!(
                "priority `{}` is not declared in cell `{}`",
                priority.value, cell.name.value
            ),
        )
        .with_secondary(quota_span, "the tenant runs in this cell");
        diagnostics.push(match did_you_mean(&priority.value, names.clone()) {
            Some(close) => diagnostic
                .with_label(format!("did you mean `{close}`?"))
                .with_help(format!(
                    "cell `{}` declares {}",
                    cell.name.value,
                    list_names(names)
                )),
            None => diagnostic.with_label("unknown priority").with_help(format!(
                "use one of {} or declare `priority \"{}\" value=…` in cell `{}`",
                list_names(names),
                priority.value,
                cell.name.value
            )),
        });
    }
}

/// Whether a tenant of trust class `trust` may reserve in a pool shared as `sharing`: `hard`
/// tenants in `exclusive` pools only, `mig` tenants in pools that do not share one GPU
/// between pods, `soft` tenants anywhere.
pub(super) fn trust_allows(trust: Trust, sharing: Sharing) -> bool {
    match trust {
        Trust::Hard => sharing == Sharing::Exclusive,
        Trust::Mig => !sharing.is_shared(),
        Trust::Soft => true,
    }
}

/// Checks one reservation; returns the resource it draws on when it resolves.
fn check_reservation(
    tenant: &Tenant,
    cell: &Cell,
    reservation: &PoolQuota,
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<String> {
    let Some(pool) = cell
        .pools
        .iter()
        .find(|p| p.name.value == reservation.pool.value)
    else {
        diagnostics.push(unknown_pool(cell, reservation, catalog));
        return None;
    };
    let sharing = pool.sharing.value;
    // A trust class that could not be read is not checked against the pool.
    if let Some(trust) = &tenant.trust
        && !trust_allows(trust.value, sharing)
    {
        diagnostics.push(
            Diagnostic::error(
                Code::TrustSharingMismatch,
                reservation.pool.span,
                format!(
                    "`{}` tenant `{}` reserves in `{}` pool `{}`",
                    trust.value.as_str(),
                    tenant.name.value,
                    sharing.as_str(),
                    pool.name.value
                ),
            )
            .with_label(match trust.value {
                Trust::Hard => "hard tenants get whole GPUs only",
                // `soft` allows every sharing mode, so only `mig` is refused a shared pool.
                Trust::Mig | Trust::Soft => {
                    "time-slicing and MPS share memory and faults between pods"
                }
            })
            .with_secondary(trust.span, "trust class set here")
            .with_help(match trust.value {
                Trust::Hard => "reserve in an `exclusive` pool, or lower the trust class",
                Trust::Mig | Trust::Soft => {
                    "reserve in a `mig` or `exclusive` pool, or set `trust \"soft\"`"
                }
            }),
        );
    }
    let offers = hardware::offers(pool, catalog);
    match (&reservation.profile, sharing) {
        (None, Sharing::Mig) => {
            diagnostics.push(
                Diagnostic::error(
                    Code::QuotaResourceUnknown,
                    reservation.pool.span,
                    format!(
                        "pool `{}` offers MIG slices; the reservation names no profile",
                        pool.name.value
                    ),
                )
                .with_help(format!(
                    "add `profile=\"…\"`; pool `{}` offers {}",
                    pool.name.value,
                    list_names(offers.iter().filter_map(|o| o.profile.as_deref()))
                )),
            );
            None
        }
        (Some(profile), Sharing::Mig) => {
            if let Some(offer) = offers
                .iter()
                .find(|o| o.profile.as_deref() == Some(profile.value.as_str()))
            {
                return Some(offer.resource.clone());
            }
            let table = catalog
                .sku(&pool.gpu.value)
                .and_then(|sku| sku.mig_table.as_deref())
                .and_then(|key| catalog.table(key));
            let diagnostic = match table {
                Some(table) if table.profile(&profile.value).is_none() => {
                    super::cells::unknown_profile(
                        &profile.value,
                        profile.span,
                        &pool.gpu.value,
                        table,
                        catalog,
                    )
                }
                _ => Diagnostic::error(
                    Code::QuotaResourceUnknown,
                    profile.span,
                    format!(
                        "pool `{}` of cell `{}` does not offer `{}`",
                        pool.name.value, cell.name.value, profile.value
                    ),
                )
                .with_label("no layout of the pool has this profile")
                .with_help(format!(
                    "pool `{}` offers {}",
                    pool.name.value,
                    list_names(offers.iter().filter_map(|o| o.profile.as_deref()))
                )),
            };
            diagnostics.push(diagnostic);
            None
        }
        (Some(profile), Sharing::MigSingle) => {
            diagnostics.push(
                Diagnostic::error(
                    Code::QuotaResourceUnknown,
                    profile.span,
                    format!(
                        "`mig-single` pool `{}` counts every MIG device as `{}`",
                        pool.name.value,
                        hardware::GPU_RESOURCE
                    ),
                )
                .with_label("reservations in this pool name no profile")
                .with_help("remove `profile=`; the pool's layouts decide which slice a device is"),
            );
            None
        }
        (Some(profile), _) => {
            diagnostics.push(
                Diagnostic::error(
                    Code::QuotaResourceUnknown,
                    profile.span,
                    format!(
                        "`{}` pool `{}` has no MIG profiles",
                        sharing.as_str(),
                        pool.name.value
                    ),
                )
                .with_label(format!(
                    "the pool offers `{}`",
                    offers
                        .first()
                        .map_or(hardware::GPU_RESOURCE, |offer| offer.resource.as_str())
                ))
                .with_help("remove `profile=`"),
            );
            None
        }
        (None, _) => offers.first().map(|offer| offer.resource.clone()),
    }
}

/// Time-slicing and MPS isolate nothing: one shared pool serves one org only.
fn check_shared_orgs(
    cell_name: &str,
    pool_name: &str,
    reservations: &[(&Tenant, &PoolQuota)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let orgs: std::collections::BTreeSet<&str> = reservations
        .iter()
        .map(|(tenant, _)| tenant.org.value.as_str())
        .collect();
    if orgs.len() < 2 {
        return;
    }
    let Some((first_tenant, first)) = reservations.first() else {
        return;
    };
    let mut diagnostic = Diagnostic::error(
        Code::SharedPoolCrossesOrgs,
        first.pool.span,
        format!(
            "orgs {} share pool `{pool_name}` of cell `{cell_name}`, which time-slices or MPS-shares its GPUs",
            list_names(orgs.iter().copied())
        ),
    )
    .with_label(format!("`{}` of org `{}` reserves here", first_tenant.name.value, first_tenant.org.value));
    for (tenant, reservation) in reservations.iter().skip(1) {
        diagnostic = diagnostic.with_secondary(
            reservation.pool.span,
            format!("`{}` of org `{}`", tenant.name.value, tenant.org.value),
        );
    }
    diagnostics.push(
        diagnostic
            .with_note("time-slicing and MPS share GPU memory and faults between pods: utilisation, not isolation")
            .with_help("give each org its own shared pool, or move the other orgs to `mig` or `exclusive` pools"),
    );
}

fn check_capacity(
    cells: &BTreeMap<&str, &Cell>,
    cell_name: &str,
    pool_name: &str,
    resource: &str,
    reservations: &[(&Tenant, &PoolQuota)],
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(cell) = cells.get(cell_name).copied() else {
        return;
    };
    let Some(pool) = cell.pools.iter().find(|p| p.name.value == pool_name) else {
        return;
    };
    let catalog = hardware::cell_catalog(cell, catalog);
    let Some(offer) = hardware::offers(pool, &catalog)
        .into_iter()
        .find(|offer| offer.resource == resource)
    else {
        return;
    };
    let total: i64 = reservations
        .iter()
        .map(|(_, reservation)| reservation.reserved.value)
        .fold(0, i64::saturating_add);
    if total <= offer.capacity {
        return;
    }
    let what = match &offer.profile {
        Some(profile) => format!("`{profile}` slices"),
        None => format!("`{resource}`"),
    };
    let mut diagnostic = Diagnostic::error(
        Code::QuotaOverCapacity,
        pool.name.span,
        format!(
            "tenants reserve {total} {what} in pool `{pool_name}` of cell `{cell_name}`, which has {}",
            offer.capacity
        ),
    )
    .with_label(format!("capacity {}", offer.capacity));
    for (tenant, reservation) in reservations {
        diagnostic = diagnostic
            .with_secondary(
                reservation.reserved.span,
                format!(
                    "`{}` reserves {}",
                    tenant.name.value, reservation.reserved.value
                ),
            )
            .with_note(format!(
                "tenant `{}` reserves {} {what}",
                tenant.name.value, reservation.reserved.value
            ));
    }
    diagnostics.push(diagnostic.with_help(format!(
        "lower the reservations by {} in total, or add capacity to the pool",
        total - offer.capacity
    )));
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::validate::test_support::{CELL, codes, listing, tenant};

    #[test]
    fn accepts_reservations_that_fit() {
        let a = tenant("a", "hard", "pool \"train\" reserved=16 burst=8");
        let b = tenant("b", "mig", "pool \"infer\" profile=\"1g.10gb\" reserved=8");
        assert_eq!(
            codes(&[
                ("cells/c1.kdl", &listing(CELL, "acme", &["a", "b"])),
                ("tenants/a.kdl", &a),
                ("tenants/b.kdl", &b)
            ]),
            []
        );
    }

    #[test]
    fn rejects_reservations_beyond_pool_capacity() {
        let a = tenant("a", "hard", "pool \"train\" reserved=24");
        let b = tenant("b", "hard", "pool \"train\" reserved=16");
        assert_eq!(
            codes(&[
                ("cells/c1.kdl", &listing(CELL, "acme", &["a", "b"])),
                ("tenants/a.kdl", &a),
                ("tenants/b.kdl", &b)
            ]),
            [Code::QuotaOverCapacity]
        );
    }

    #[test]
    fn rejects_mig_reservations_beyond_profile_capacity() {
        // 2 nodes x 8 GPUs x one 3g.40gb each = 16.
        let a = tenant("a", "mig", "pool \"infer\" profile=\"3g.40gb\" reserved=17");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &a)]),
            [Code::QuotaOverCapacity]
        );
    }

    #[test]
    fn rejects_unknown_cells_pools_and_profiles() {
        let unknown_pool = tenant("a", "hard", "pool \"trian\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &unknown_pool)]),
            [Code::PoolUnknown]
        );
        let not_offered = tenant("a", "mig", "pool \"infer\" profile=\"7g.80gb\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &not_offered)]),
            [Code::QuotaResourceUnknown]
        );
        let other_model = tenant("a", "mig", "pool \"infer\" profile=\"1g.5gb\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &other_model)]),
            [Code::MigProfileUnknown]
        );
        let no_profile = tenant("a", "mig", "pool \"infer\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &no_profile)]),
            [Code::QuotaResourceUnknown]
        );
        let unknown_cell =
            tenant("a", "hard", "pool \"train\" reserved=1").replace("cell=\"c1\"", "cell=\"c2\"");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &unknown_cell)]),
            [Code::CellUnknown]
        );
    }

    /// Issue 18 item 4: an unknown pool asked for with a profile is answered with a pool that
    /// offers the profile, before a pool that is only spelled closer.
    #[test]
    fn an_unknown_pool_suggests_the_pool_that_offers_the_profile_asked_for() {
        let cell = CELL
            .replace("pool \"train\"", "pool \"a100-train\"")
            .replace("pool \"infer\"", "pool \"a100-mig\"")
            .replace(
                "\"tenantc.io/pool\" \"infer\"",
                "\"tenantc.io/pool\" \"a100-mig\"",
            );
        let suggestion = |reservation: &str| {
            let a = tenant("a", "mig", reservation);
            let compilation = crate::validate::test_support::compile_files(&[
                ("cells/c1.kdl", &cell),
                ("tenants/a.kdl", &a),
            ]);
            let found: Vec<_> = compilation
                .diagnostics
                .iter()
                .filter(|diagnostic| diagnostic.code == Code::PoolUnknown)
                .collect();
            assert_eq!(found.len(), 1, "{:?}", compilation.diagnostics);
            (found[0].labels[0].message.clone(), found[0].help.clone())
        };
        let (label, help) = suggestion("pool \"a100-inf\" profile=\"3g.40gb\" reserved=1");
        assert_eq!(label, "did you mean `a100-mig`?");
        assert_eq!(
            help,
            "declared pools are `a100-train` and `a100-mig`; `a100-mig` offers `3g.40gb`"
        );
        // A name close to no pool still gets the one pool that offers the profile.
        let (label, _) = suggestion("pool \"inference\" profile=\"3g.40gb\" reserved=1");
        assert_eq!(label, "did you mean `a100-mig`, which offers `3g.40gb`?");
        // Without a profile, spelling decides.
        let (label, help) = suggestion("pool \"a100-trian\" reserved=1");
        assert_eq!(label, "did you mean `a100-train`?");
        assert_eq!(help, "declared pools are `a100-train` and `a100-mig`");
    }

    #[test]
    fn rejects_hard_tenants_on_shared_or_sliced_pools() {
        let a = tenant("a", "hard", "pool \"infer\" profile=\"1g.10gb\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &a)]),
            [Code::TrustSharingMismatch]
        );
    }

    #[test]
    fn rejects_priorities_the_cell_does_not_declare() {
        let a = tenant("a", "hard", "pool \"train\" reserved=1")
            .replace("priority=\"batch\"", "priority=\"bach\"");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", &a)]),
            [Code::PriorityUnknown]
        );
    }

    #[test]
    fn warns_on_tenants_without_quota() {
        let a = "tenant \"a\" {\n  org \"o\"\n  team \"t\"\n  trust \"soft\"\n  groups admin=\"g\"\n  workload \"infer\" service-account=\"s\"\n}\n";
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/a.kdl", a)]),
            [Code::TenantWithoutQuota]
        );
    }
}
