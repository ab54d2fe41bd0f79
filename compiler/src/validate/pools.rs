//! Pool ownership: a pool the platform reserves for one tenant (`owner "<tenant>"` in the cell)
//! is named by no other tenant's quota, and every owner is a declared tenant.
//!
//! Consumes: the [`Fleet`] and the names of unreadable tenant files. Produces:
//! `pool-owned-by-another-tenant` at every reservation line of a tenant that names a pool owned
//! by another tenant (whatever its `reserved`, including 0, and its `burst`), and
//! `pool-owner-unknown` at every `owner` that names no declared tenant, and
//! `owned-pool-not-closed` at every `owner` of a pool whose repelling taints another pool's
//! flavor toleration all tolerates.
//!
//! A tenant reaches a pool only through the reservations of its quotas (`quota … { pool … }`):
//! each becomes a Kueue flavor of the tenant's ClusterQueue, and the admission floor lets the
//! tenant's pods tolerate the taints of every pool it has a flavor for. Fleet reservations
//! name GPU models, not pools, and are checked against those reservations; runtime classes
//! and orgs are declared by the trusted cells. So checking every reservation line covers every
//! place a tenant names a pool.
//!
//! Invariant: pure; a fleet without findings here gives no tenant a reservation (and so no
//! flavor or toleration) in a pool owned by another tenant, and every owner resolves.

use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::model::{Cell, Fleet, Pool, Taint, Tenant};

/// Checks the owners of every cell's pools and every tenant's reservations against them.
pub(super) fn check(
    fleet: &Fleet,
    unreadable: &super::Unreadable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let tenant_names = || {
        fleet
            .tenants
            .iter()
            .map(|tenant| tenant.name.value.as_str())
    };
    let known = |owner: &str| {
        tenant_names().any(|name| name == owner) || unreadable.tenants.contains(owner)
    };
    for cell in &fleet.cells {
        for pool in &cell.pools {
            let Some(owner) = &pool.owner else {
                continue;
            };
            if known(&owner.value) {
                continue;
            }
            let diagnostic = Diagnostic::error(
                Code::PoolOwnerUnknown,
                owner.span,
                format!(
                    "owner `{}` of pool `{}` is not a declared tenant",
                    owner.value, pool.name.value
                ),
            )
            .with_note("an owned pool is closed to every other tenant, and its owner alone can get host access on it");
            let declared = if fleet.tenants.is_empty() {
                "no tenant is declared".to_string()
            } else {
                format!("declared tenants are {}", list_names(tenant_names()))
            };
            diagnostics.push(match did_you_mean(&owner.value, tenant_names()) {
                Some(close) => diagnostic
                    .with_label(format!("did you mean `{close}`?"))
                    .with_help(format!("write the owning tenant's name; {declared}")),
                None => diagnostic.with_label("unknown tenant").with_help(format!(
                    "write the owning tenant's name, or remove `owner` to leave the pool open to every tenant; {declared}"
                )),
            });
        }
    }
    for cell in &fleet.cells {
        for pool in cell.pools.iter().filter(|pool| pool.owner.is_some()) {
            if let Some(diagnostic) = not_closed(cell, pool) {
                diagnostics.push(diagnostic);
            }
        }
    }
    for tenant in &fleet.tenants {
        for quota in &tenant.quotas {
            let Some(cell) = fleet.cell(&quota.cell.value) else {
                continue;
            };
            for reservation in &quota.pools {
                let Some(pool) = cell
                    .pools
                    .iter()
                    .find(|pool| pool.name.value == reservation.pool.value)
                else {
                    continue;
                };
                let Some(owner) = &pool.owner else {
                    continue;
                };
                // An owner that is not a declared tenant is reported at the owner (or its file
                // is unreadable or renamed): it is more likely a typo of the reserving tenant
                // than a reason to refuse every reservation of the pool.
                if owner.value == tenant.name.value
                    || !tenant_names().any(|name| name == owner.value)
                {
                    continue;
                }
                diagnostics.push(
                    Diagnostic::error(
                        Code::PoolOwnedByAnotherTenant,
                        reservation.pool.span,
                        format!(
                            "pool `{}` of cell `{}` is owned by tenant `{}`",
                            pool.name.value, cell.name.value, owner.value
                        ),
                    )
                    .with_label(format!(
                        "tenant `{}` may not name this pool, with any `reserved` or `burst`",
                        tenant.name.value
                    ))
                    .with_secondary(
                        owner.span,
                        format!("the platform reserves the pool for `{}`", owner.value),
                    )
                    .with_note("a reservation gives the tenant a flavor of the pool, so its pods could tolerate the pool's taints and share the owner's nodes")
                    .with_help(other_pools_help(cell, pool, tenant)),
                );
            }
        }
    }
}

/// Whether the toleration that a flavor of a pool with taint `other` gives its tenants (Kueue's
/// `Equal` with the value, `Exists` without one) tolerates `taint`.
fn tolerates(other: &Taint, taint: &Taint) -> bool {
    other.key.value == taint.key.value
        && other.effect.value == taint.effect.value
        && other
            .value
            .as_ref()
            .is_none_or(|value| Some(&value.value) == taint.value.as_ref().map(|v| &v.value))
}

/// `owned-pool-not-closed` for an owned pool none of whose repelling taints is its own: every
/// one of them is tolerated by the flavor of another pool of the cell, whose tenants' pods
/// the floor then lets tolerate it (it forbids only taints that no pool of the tenant's
/// flavors carries), so they could land on the owner's nodes.
fn not_closed(cell: &Cell, pool: &Pool) -> Option<Diagnostic> {
    let owner = pool.owner.as_ref()?;
    let repelling: Vec<&Taint> = pool
        .taints
        .iter()
        .filter(|taint| matches!(taint.effect.value.as_str(), "NoSchedule" | "NoExecute"))
        .collect();
    let shared_by = |taint: &Taint| {
        cell.pools
            .iter()
            .filter(|other| other.name.value != pool.name.value)
            .find_map(|other| {
                other
                    .taints
                    .iter()
                    .find(|theirs| tolerates(theirs, taint))
                    .map(|theirs| (other, theirs))
            })
    };
    if repelling.iter().any(|taint| shared_by(taint).is_none()) {
        return None;
    }
    let mut diagnostic = Diagnostic::error(
        Code::OwnedPoolNotClosed,
        owner.span,
        format!(
            "pool `{}` of cell `{}` is owned by `{}`, but no taint keeps other tenants' pods off it",
            pool.name.value, cell.name.value, owner.value
        ),
    )
    .with_label("the pool is reserved for this tenant");
    diagnostic = match repelling.first().and_then(|taint| shared_by(taint)) {
        Some((other, theirs)) => diagnostic.with_secondary(
            theirs.span,
            format!(
                "pool `{}` has this taint too, so the tenants of its flavor may tolerate the owned pool's",
                other.name.value
            ),
        ),
        None => diagnostic.with_secondary(
            pool.name.span,
            "the pool has no `NoSchedule` or `NoExecute` taint",
        ),
    };
    Some(
        diagnostic
            .with_note("the admission floor lets a tenant's pods tolerate the taints of every pool it has a flavor for, so an owned pool is closed only by a taint no other pool shares")
            .with_help(format!(
                "give the pool a taint of its own, for example `taint \"tenantc.io/pool\" \"{}\" effect=\"NoSchedule\"` in pool `{}`",
                pool.name.value, pool.name.value
            )),
    )
}

/// The help of `pool-owned-by-another-tenant`: the pool's owner and the pools of the cell the
/// tenant may name instead (owned by nobody or by it, and with a sharing mode its trust class
/// allows, as `trust-sharing-mismatch` judges it).
fn other_pools_help(cell: &Cell, pool: &Pool, tenant: &Tenant) -> String {
    let owner = pool.owner.as_ref().map_or("", |owner| owner.value.as_str());
    let trust = tenant.trust.as_ref().map(|trust| trust.value);
    let tenant = tenant.name.value.as_str();
    let open: Vec<&str> = cell
        .pools
        .iter()
        .filter(|other| {
            other
                .owner
                .as_ref()
                .is_none_or(|owner| owner.value == tenant)
                && trust
                    .is_none_or(|trust| super::tenants::trust_allows(trust, other.sharing.value))
        })
        .map(|other| other.name.value.as_str())
        .collect();
    let reserved = format!(
        "pool `{}` is reserved for tenant `{owner}` by the platform",
        pool.name.value
    );
    if open.is_empty() {
        format!(
            "{reserved}; cell `{}` has no other pool `{tenant}` may use, so ask the platform team for one",
            cell.name.value
        )
    } else {
        format!(
            "{reserved}; reserve in another pool of cell `{}`: {}",
            cell.name.value,
            list_names(open.into_iter())
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::validate::test_support::codes;

    /// A cell whose pool `a` is owned as given and whose pool `b` is open.
    fn cell(owner: &str) -> String {
        format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    runtime-class "nvidia" handler="nvidia" {{ trust "hard"; }}
    pool "a" {{ gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; label "pool" "a"; taint "pool-a" "true" effect="NoSchedule"; {owner} }}
    pool "b" {{ gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; label "pool" "b"; }}
}}
"#
        )
    }

    fn tenant(name: &str, pools: &str) -> String {
        format!(
            "tenant \"{name}\" {{\n    org \"o-{name}\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"{name}-admins\"\n    quota cell=\"c1\" cpu=\"8\" memory=\"8Gi\" pods=10 {{ {pools} }}\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n}}\n"
        )
    }

    fn check(owner: &str, x: &str, y: &str) -> Vec<Code> {
        codes(&[
            ("cells/c1.kdl", &cell(owner)),
            ("tenants/x.kdl", &tenant("x", x)),
            ("tenants/y.kdl", &tenant("y", y)),
        ])
    }

    /// A cell whose pool `a` is owned by `x` with `a_taints`, beside an open pool `b` with
    /// `b_taints`; `x` reserves in `a` and `y` in `b`.
    fn closure(a_taints: &str, b_taints: &str) -> Vec<Code> {
        let cell = cell("owner \"x\";")
            .replace(r#"taint "pool-a" "true" effect="NoSchedule";"#, a_taints)
            .replace(
                r#"label "pool" "b"; }"#,
                &format!(r#"label "pool" "b"; {b_taints} }}"#),
            );
        codes(&[
            ("cells/c1.kdl", &cell),
            ("tenants/x.kdl", &tenant("x", "pool \"a\" reserved=8")),
            ("tenants/y.kdl", &tenant("y", "pool \"b\" reserved=8")),
        ])
    }

    #[test]
    fn an_owned_pool_needs_a_repelling_taint_no_other_pool_shares() {
        let own = r#"taint "tenantc.io/pool" "a" effect="NoSchedule";"#;
        let shared = r#"taint "dedicated" "gpu" effect="NoSchedule";"#;
        assert_eq!(closure(own, shared), []);
        // The open pool's flavor tolerates `dedicated=gpu`, so its tenants' pods may too.
        assert_eq!(closure(shared, shared), [Code::OwnedPoolNotClosed]);
        // A taint without a value is tolerated by `Exists`, whatever the owned pool's value.
        assert_eq!(
            closure(own, r#"taint "tenantc.io/pool" effect="NoSchedule";"#),
            [Code::OwnedPoolNotClosed]
        );
        // Another effect, or a taint that does not repel, is not the same taint.
        assert_eq!(
            closure(shared, r#"taint "dedicated" "gpu" effect="NoExecute";"#),
            []
        );
        assert_eq!(
            closure(r#"taint "pool-a" "true" effect="PreferNoSchedule";"#, ""),
            [Code::OwnedPoolNotClosed]
        );
        assert_eq!(closure("", ""), [Code::OwnedPoolNotClosed]);
        // One taint of its own is enough beside a shared one.
        assert_eq!(closure(&format!("{shared} {own}"), shared), []);
    }

    #[test]
    fn the_owner_may_reserve_in_its_pool() {
        assert_eq!(
            check(
                "owner \"x\";",
                "pool \"a\" reserved=8",
                "pool \"b\" reserved=8"
            ),
            []
        );
    }

    #[test]
    fn rejects_any_reservation_of_another_tenant_in_an_owned_pool() {
        for line in [
            "pool \"a\" reserved=0",
            "pool \"a\" reserved=0 burst=8",
            "pool \"a\" reserved=8",
        ] {
            assert_eq!(
                check("owner \"x\";", "pool \"a\" reserved=8", line),
                [Code::PoolOwnedByAnotherTenant],
                "{line}"
            );
        }
    }

    #[test]
    fn the_help_offers_only_open_pools_the_trust_class_allows() {
        let cell = cell("owner \"x\";").replace(
            "\n}\n",
            "\n    pool \"s\" { gpu \"L4\"; nodes 1 gpus-per-node=1; sharing \"time-slice\"; replicas 4; }\n}\n",
        );
        let compilation = crate::validate::test_support::compile_files(&[
            ("cells/c1.kdl", &cell),
            ("tenants/x.kdl", &tenant("x", "pool \"a\" reserved=8")),
            ("tenants/y.kdl", &tenant("y", "pool \"a\" reserved=0")),
        ]);
        let helps: Vec<&str> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::PoolOwnedByAnotherTenant)
            .map(|d| d.help.as_str())
            .collect();
        assert_eq!(
            helps,
            [
                "pool `a` is reserved for tenant `x` by the platform; reserve in another pool of cell `c1`: `b`"
            ]
        );
    }

    #[test]
    fn an_open_pool_may_be_reserved_by_every_tenant() {
        assert_eq!(
            check("", "pool \"a\" reserved=8", "pool \"a\" reserved=0 burst=8"),
            []
        );
    }

    #[test]
    fn rejects_an_owner_that_is_not_a_tenant() {
        assert_eq!(
            check(
                "owner \"z\";",
                "pool \"b\" reserved=8",
                "pool \"b\" reserved=0"
            ),
            [Code::PoolOwnerUnknown]
        );
    }

    /// One generated fleet: a cell of three exclusive pools (each tainted or not, owned by one of
    /// the tenants, by an undeclared name or by nobody) and three tenants that reserve in a
    /// random subset of them, with `reserved` 0 or 8 and sometimes a `burst`.
    fn generated_fleet(rng: &mut crate::testing::Rng) -> Vec<(String, String)> {
        let tenants = ["t0", "t1", "t2"];
        let mut cell = String::from(
            "cell \"c1\" {\n    cloud \"aws\" region=\"us-east-1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n",
        );
        let mut owners = Vec::new();
        for pool in 0..3 {
            let taint = if rng.below(4) == 0 {
                String::new()
            } else {
                format!("taint \"pool-{pool}\" \"true\" effect=\"NoSchedule\"; ")
            };
            let picked = rng.pick(&["t0", "t1", "t2", "t0", "t1", "t2", "none", "ghost"]);
            owners.push(picked);
            let owner = match picked {
                "none" => String::new(),
                owner => format!("owner \"{owner}\"; "),
            };
            cell.push_str(&format!(
                "    pool \"p{pool}\" {{ gpu \"H100-80GB-SXM\"; nodes 4 gpus-per-node=8; sharing \"exclusive\"; {taint}{owner}}}\n"
            ));
        }
        cell.push_str("}\n");
        let mut files = vec![("cells/c1.kdl".to_string(), cell)];
        for name in tenants {
            let trust = rng.pick(&["hard", "hard", "soft"]);
            let mut pools = String::new();
            for (pool, owner) in owners.iter().enumerate() {
                // Trespassing is generated, but rarely enough that most fleets build.
                let trespass = tenants.contains(owner) && *owner != name;
                if rng.below(if trespass { 10 } else { 2 }) != 0 {
                    continue;
                }
                let reserved = rng.pick(&["0", "8"]);
                let burst = rng.pick(&["", " burst=8"]);
                pools.push_str(&format!("pool \"p{pool}\" reserved={reserved}{burst}; "));
            }
            let workload = if trust == "hard" && rng.below(2) == 0 {
                "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"RDMA\" approved-by=\"sec\"\n    }"
            } else {
                "workload \"train\" service-account=\"trainer\" priority=\"batch\""
            };
            files.push((
                format!("tenants/{name}.kdl"),
                format!(
                    "tenant \"{name}\" {{\n    org \"o-{name}\"\n    team \"t\"\n    trust \"{trust}\"\n    groups admin=\"{name}-admins\"\n    quota cell=\"c1\" cpu=\"8\" memory=\"8Gi\" pods=10 {{ {pools}}}\n    {workload}\n}}\n"
                ),
            ));
        }
        files
    }

    #[test]
    fn no_build_gives_a_tenant_another_tenants_pool_and_host_access_needs_owned_pools() {
        let mut rng = crate::testing::Rng(0x5eed_0016);
        let (mut built, mut granted, mut refused) = (0, 0, 0);
        for round in 0..400 {
            let files = generated_fleet(&mut rng);
            let borrowed: Vec<(&str, &str)> = files
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_str()))
                .collect();
            let compilation = crate::validate::test_support::compile_files(&borrowed);
            let found: Vec<Code> = compilation.diagnostics.iter().map(|d| d.code).collect();
            let fleet = crate::validate::test_support::fleet(&borrowed);
            let cell = fleet.cells.first().expect("the generated cell");
            let owner_of = |pool: &str| {
                cell.pools
                    .iter()
                    .find(|declared| declared.name.value == pool)
                    .and_then(|declared| declared.owner.as_ref())
                    .map(|owner| owner.value.clone())
            };
            // Every reservation in a pool another declared tenant owns is refused.
            let trespass = fleet.tenants.iter().any(|tenant| {
                tenant
                    .quotas
                    .iter()
                    .flat_map(|quota| &quota.pools)
                    .any(|reservation| {
                        owner_of(&reservation.pool.value).is_some_and(|owner| {
                            owner != tenant.name.value
                                && fleet.tenants.iter().any(|t| t.name.value == owner)
                        })
                    })
            });
            assert_eq!(
                trespass,
                found.contains(&Code::PoolOwnedByAnotherTenant),
                "round {round}: {files:?}\n{found:?}"
            );
            if found.contains(&Code::PoolOwnedByAnotherTenant) {
                refused += 1;
            }
            if compilation.has_errors() {
                continue;
            }
            let Some(plan) = compilation.plan else {
                continue;
            };
            built += 1;
            for tenant in plan.cells.iter().flat_map(|cell| &cell.tenants) {
                let pools: Vec<&str> = tenant
                    .queue
                    .flavors
                    .iter()
                    .map(|flavor| flavor.pool.as_str())
                    .filter(|pool| {
                        cell.pools
                            .iter()
                            .any(|declared| declared.name.value == *pool)
                    })
                    .collect();
                for pool in &pools {
                    let owner = owner_of(pool);
                    assert!(
                        owner.as_deref().is_none_or(|owner| owner == tenant.name),
                        "round {round}: `{}` has a flavor of `{pool}`, owned by {owner:?}\n{files:?}",
                        tenant.name
                    );
                }
                let owns_all = !pools.is_empty()
                    && pools
                        .iter()
                        .all(|pool| owner_of(pool).as_deref() == Some(tenant.name.as_str()));
                if tenant.cell_host_access.granted {
                    granted += 1;
                    assert!(
                        owns_all && tenant.trust.as_str() == "hard",
                        "round {round}: `{}` got host access on pools it does not own: {pools:?}\n{files:?}",
                        tenant.name
                    );
                }
                // An owner alone on tainted pools keeps its grant whatever the others declare.
                let all_tainted = pools.iter().all(|pool| {
                    cell.pools
                        .iter()
                        .any(|declared| declared.name.value == *pool && !declared.taints.is_empty())
                });
                if tenant.trust.as_str() == "hard" && owns_all && all_tainted {
                    assert!(
                        tenant.cell_host_access.granted,
                        "round {round}: owner `{}` lost host access: {}\n{files:?}",
                        tenant.name, tenant.cell_host_access.why
                    );
                }
            }
        }
        // The generator reaches every branch: builds with and without grants, and refusals.
        assert!(
            built > 30 && granted > 10 && refused > 30,
            "built {built}, granted {granted}, refused {refused}"
        );
    }

    #[test]
    fn rejects_an_owner_that_is_not_a_name() {
        assert_eq!(
            check(
                "owner \"X_1\";",
                "pool \"b\" reserved=8",
                "pool \"b\" reserved=0"
            ),
            [Code::NameInvalid]
        );
    }
}
