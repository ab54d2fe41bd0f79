//! Host access: whether a tenant's pods may reach the node itself in a cell.
//!
//! Consumes: a cell's declaration, the fleet, the cell's pools and every tenant's ClusterQueue
//! flavors and namespaces. Produces: each tenant's [`HostAccessPlan`] (which the admission
//! params' `hostAccess` and describe read; the plan keeps a namespace's Pod Security exceptions
//! only where it is granted), and a `pod-security-exception-not-allowed` warning for every
//! exception withheld in the cell.
//!
//! RDMA devices and the capabilities of a Pod Security exception act on the node's kernel and
//! devices, so they are granted only where the tenant shares no node with another tenant (the
//! host's network, PID and IPC namespaces are never granted: no NetworkPolicy applies on the
//! node's network, and multi-node RDMA with the RDMA device plugin needs none of them): the tenant is `hard`, and every pool it has a flavor for is its alone. A
//! pool is a tenant's alone when it is `exclusive`, the cell declares this tenant its `owner`
//! (which `validate/pools.rs` makes binding: no other tenant may name an owned pool, so another
//! tenant's declaration can never withdraw the grant), no other tenant of the cell has a flavor
//! for it (an `exclusive` pool gives each pod whole GPUs, not whole nodes, so two tenants' pods
//! can share a node), and it has a repelling taint that no other tenant of the cell tolerates
//! through its own flavors (the admission floor denies any other pool toleration), so no other
//! tenant's pod can land there, with or without GPUs. The last two are defence in depth: with
//! the owner rule, an owned pool is reserved by no other tenant already.
//!
//! Invariant: pure; a tenant's grant depends on the other tenants of the cell (it is a
//! `cell_*` field of [`super::TenantPlan`]); a namespace keeps its exceptions only where its
//! tenant is granted host access, so lowering, the reports and describe never grant more than
//! this decides.

use serde::Serialize;

use crate::diag::{Code, Diagnostic};
use crate::model::{Cell, Fleet, Sharing, Trust};
use crate::source::{SourceMap, Span};

use super::PoolPlan;

/// Whether a tenant's pods may use RDMA devices and its Pod Security exceptions in one cell,
/// and why (never the host's network, PID or IPC namespaces).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct HostAccessPlan {
    /// Whether it is granted.
    pub granted: bool,
    /// Why, in words.
    pub why: String,
}

/// Why a pool is not a tenant's alone, with where to point and what to do.
struct Shared {
    why: String,
    span: Option<Span>,
    label: String,
    /// The help of the withheld-exception warning, where the reason calls for a specific one.
    help: Option<String>,
}

/// What host access reads of one tenant of the cell: its name and trust class, the flavors of
/// its ClusterQueue and its namespaces with the exceptions their workloads declare.
pub(super) struct Seat<'a> {
    /// The tenant.
    pub name: &'a str,
    /// Its trust class.
    pub trust: Trust,
    /// The flavors of its ClusterQueue.
    pub flavors: &'a [super::FlavorQuota],
    /// Its namespaces, before any exception is withheld.
    pub namespaces: &'a [super::NamespacePlan],
}

/// Decides host access for every tenant of the cell (`seats`, in name order), and returns a
/// warning per exception withheld from a tenant without it; the plan then keeps a namespace's
/// exceptions only where its tenant is granted.
pub(super) fn decide(
    cell: &Cell,
    cell_name: &str,
    fleet: &Fleet,
    sources: &SourceMap,
    pools: &[PoolPlan],
    seats: &[Seat],
) -> (Vec<HostAccessPlan>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut decisions = Vec::new();
    for seat in seats {
        let (access, shared) = decide_one(seat, seats, pools, cell, fleet, sources);
        if !access.granted {
            for namespace in seat.namespaces {
                if namespace.exceptions.is_empty() {
                    continue;
                }
                let Some(declared) = fleet
                    .tenants
                    .iter()
                    .find(|declared| declared.name.value == seat.name)
                else {
                    continue;
                };
                let exceptions = declared
                    .workloads
                    .iter()
                    .filter(|workload| workload.kind.value == namespace.workload)
                    .flat_map(|workload| &workload.exceptions);
                for exception in exceptions {
                    let mut diagnostic = Diagnostic::warning(
                        Code::PodSecurityExceptionNotAllowed,
                        exception.name.span,
                        format!(
                            "Pod Security exception `{}` of workload `{}` is not granted in cell `{}`",
                            exception.name.value, namespace.workload, cell_name
                        ),
                    )
                    .with_label(format!(
                        "`{}` stays `restricted` in cell `{}`: {}",
                        namespace.name, cell_name, access.why
                    ));
                    if let Some(Shared {
                        span: Some(span),
                        label,
                        ..
                    }) = &shared
                    {
                        diagnostic = diagnostic.with_secondary(*span, label.clone());
                    }
                    let help = shared.as_ref().and_then(|shared| shared.help.clone());
                    diagnostics.push(diagnostic.with_help(help.unwrap_or_else(|| format!(
                        "reserve in cell `{}` only pools no other tenant reserves, each with a taint only this tenant's flavor tolerates, or run the workload there without the exception",
                        cell_name
                    ))));
                }
            }
        }
        decisions.push(access);
    }
    (decisions, diagnostics)
}

/// Host access of one tenant, and the first reason a pool of it is shared.
fn decide_one(
    tenant: &Seat,
    seats: &[Seat],
    pools: &[PoolPlan],
    cell: &Cell,
    fleet: &Fleet,
    sources: &SourceMap,
) -> (HostAccessPlan, Option<Shared>) {
    let denied = |why: String| {
        (
            HostAccessPlan {
                granted: false,
                why,
            },
            None,
        )
    };
    if tenant.trust != Trust::Hard {
        return denied(format!("trust `{}` is not `hard`", tenant.trust));
    }
    let own = flavor_pools(tenant, pools);
    if own.is_empty() {
        return denied("it reserves no pool in the cell".to_string());
    }
    for pool in &own {
        if let Some(shared) = not_owned(tenant, pool, cell, sources)
            .or_else(|| shared_with(tenant, pool, seats, pools, cell, fleet))
        {
            return (
                HostAccessPlan {
                    granted: false,
                    why: shared.why.clone(),
                },
                Some(shared),
            );
        }
    }
    let names: Vec<String> = own.iter().map(|pool| format!("`{}`", pool.name)).collect();
    (
        HostAccessPlan {
            granted: true,
            why: format!(
                "every pool it reaches ({}) is its alone: exclusive, owned by it, reserved by no other tenant and tainted against every other tenant",
                names.join(", ")
            ),
        },
        None,
    )
}

/// The pools a tenant's ClusterQueue has flavors for.
fn flavor_pools<'a>(tenant: &Seat, pools: &'a [PoolPlan]) -> Vec<&'a PoolPlan> {
    pools
        .iter()
        .filter(|pool| tenant.flavors.iter().any(|flavor| flavor.pool == pool.name))
        .collect()
}

/// Why `pool` is not reserved for `tenant` by the platform, if it is not: an `exclusive` pool
/// whose cell names no `owner`, or another one.
fn not_owned(tenant: &Seat, pool: &PoolPlan, cell: &Cell, sources: &SourceMap) -> Option<Shared> {
    if pool.sharing != Sharing::Exclusive || pool.owner.as_deref() == Some(tenant.name) {
        // A pool that is not `exclusive` is reported by `shared_with`.
        return None;
    }
    let declared = cell
        .pools
        .iter()
        .find(|declared| declared.name.value == pool.name);
    let span = declared.map(|declared| declared.name.span);
    match &pool.owner {
        None => {
            let path = sources.path(cell.file);
            let line = if path.ends_with(".kdl") {
                format!("owner \"{}\"", tenant.name)
            } else {
                format!("owner: {}", tenant.name)
            };
            Some(Shared {
                why: format!(
                    "pool `{}` has no `owner`, so the platform has not reserved it for `{}`",
                    pool.name, tenant.name
                ),
                span,
                label: "this pool declares no `owner`".to_string(),
                help: Some(format!(
                    "host access needs pools reserved for the tenant: the platform team adds `{line}` to pool `{}` in `{path}`, or run the workload without the exception",
                    pool.name
                )),
            })
        }
        Some(owner) => Some(Shared {
            why: format!("pool `{}` is owned by tenant `{owner}`", pool.name),
            span: declared
                .and_then(|declared| declared.owner.as_ref())
                .map(|owner| owner.span),
            label: format!("the platform reserves this pool for `{owner}`"),
            help: None,
        }),
    }
}

/// Why another tenant's pods could land on `pool`, if they could.
fn shared_with(
    tenant: &Seat,
    pool: &PoolPlan,
    seats: &[Seat],
    pools: &[PoolPlan],
    cell: &Cell,
    fleet: &Fleet,
) -> Option<Shared> {
    if pool.sharing != Sharing::Exclusive {
        return Some(Shared {
            why: format!(
                "pool `{}` is `{}`, not `exclusive`",
                pool.name, pool.sharing
            ),
            span: None,
            label: String::new(),
            help: None,
        });
    }
    for other in seats.iter().filter(|other| other.name != tenant.name) {
        let other_pools = flavor_pools(other, pools);
        if other_pools
            .iter()
            .any(|candidate| candidate.name == pool.name)
        {
            let span = fleet
                .tenants
                .iter()
                .find(|declared| declared.name.value == other.name)
                .and_then(|declared| declared.quota_in(&cell.name.value))
                .and_then(|quota| {
                    quota
                        .pools
                        .iter()
                        .find(|reservation| reservation.pool.value == pool.name)
                })
                .map(|reservation| reservation.pool.span);
            return Some(Shared {
                why: format!(
                    "tenant `{}` reserves pool `{}` too, so their pods can share its nodes",
                    other.name, pool.name
                ),
                span,
                label: format!("tenant `{}` reserves pool `{}` too", other.name, pool.name),
                help: None,
            });
        }
        if pool.untolerated_taint(&other_pools).is_none() {
            let span = cell
                .pools
                .iter()
                .find(|declared| declared.name.value == pool.name)
                .map(|declared| declared.name.span);
            return Some(Shared {
                why: format!(
                    "pool `{}` has no taint that keeps the pods of tenant `{}` off its nodes",
                    pool.name, other.name
                ),
                span,
                label: format!(
                    "no taint of this pool repels the pods of tenant `{}`",
                    other.name
                ),
                help: None,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::diag::{Code, Severity};
    use crate::testing::support::compile_files;

    const EXCEPTION: &str = "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"RDMA\" approved-by=\"sec\"\n    }";

    /// A cell with two exclusive pools, `a` tainted and owned by `x`, and `b` as given.
    fn cell(b_taint: &str) -> String {
        cell_owning_a(b_taint, "owner \"x\";")
    }

    /// A cell with two exclusive pools, `a` tainted with `a_owner` as its owner line, and `b`
    /// as given.
    fn cell_owning_a(b_taint: &str, a_owner: &str) -> String {
        format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "a" {{ gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; taint "pool-a" "true" effect="NoSchedule"; {a_owner} }}
    pool "b" {{ gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; {b_taint} }}
}}
"#
        )
    }

    fn tenant(name: &str, trust: &str, pools: &str, exception: bool) -> String {
        let workload = if exception {
            EXCEPTION.to_string()
        } else {
            "workload \"train\" service-account=\"trainer\" priority=\"batch\"".to_string()
        };
        format!(
            "tenant \"{name}\" {{\n    org \"o-{name}\"\n    team \"t\"\n    trust \"{trust}\"\n    groups admin=\"{name}-admins\"\n    quota cell=\"c1\" cpu=\"8\" memory=\"8Gi\" pods=10 {{ {pools} }}\n    {workload}\n}}\n"
        )
    }

    /// `(host access granted to tenant `x`, enforce levels of its namespaces, warnings)`.
    fn outcome(cell: &str, tenants: &[(&str, String)]) -> (bool, Vec<String>, usize) {
        let (granted, levels, warnings) = outcome_with_helps(cell, tenants);
        (granted, levels, warnings.len())
    }

    /// Like [`outcome`], with the help of every withheld-exception warning.
    fn outcome_with_helps(
        cell: &str,
        tenants: &[(&str, String)],
    ) -> (bool, Vec<String>, Vec<String>) {
        let mut files = vec![("cells/c1.kdl".to_string(), cell.to_string())];
        for (name, text) in tenants {
            files.push((format!("tenants/{name}.kdl"), text.clone()));
        }
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let compilation = compile_files(&borrowed);
        let errors: Vec<_> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        let warnings = compilation
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::PodSecurityExceptionNotAllowed)
            .map(|d| d.help.clone())
            .collect();
        let plan = compilation.plan.expect("a plan");
        let tenant = plan
            .cells
            .iter()
            .flat_map(|cell| &cell.tenants)
            .find(|tenant| tenant.name == "x")
            .expect("tenant x");
        let levels = tenant
            .namespaces
            .iter()
            .map(|namespace| namespace.enforce_level().to_string())
            .collect();
        (tenant.cell_host_access.granted, levels, warnings)
    }

    #[test]
    fn a_hard_tenant_alone_on_a_tainted_exclusive_pool_gets_host_access_and_its_exception() {
        let (granted, levels, warnings) = outcome(
            &cell("taint \"pool-b\" \"true\" effect=\"NoSchedule\";"),
            &[
                ("x", tenant("x", "hard", "pool \"a\" reserved=8", true)),
                ("y", tenant("y", "hard", "pool \"b\" reserved=8", false)),
            ],
        );
        assert!(granted);
        assert_eq!(levels, ["privileged"]);
        assert_eq!(warnings, 0);
    }

    #[test]
    fn a_pool_without_an_owner_grants_no_host_access_and_the_warning_names_the_owner_line() {
        // Tainted, exclusive and reserved by `x` alone, yet the platform has not reserved it for
        // `x`: another tenant's quota could name it at any time.
        let (granted, levels, helps) = outcome_with_helps(
            &cell_owning_a("taint \"pool-b\" \"true\" effect=\"NoSchedule\";", ""),
            &[
                ("x", tenant("x", "hard", "pool \"a\" reserved=8", true)),
                ("y", tenant("y", "hard", "pool \"b\" reserved=8", false)),
            ],
        );
        assert!(!granted);
        assert_eq!(levels, ["restricted"]);
        assert_eq!(helps.len(), 1);
        assert!(
            helps
                .iter()
                .all(|help| help.contains("`owner \"x\"` to pool `a` in `cells/c1.kdl`")),
            "{helps:?}"
        );
    }

    #[test]
    fn a_pool_another_tenant_reserves_grants_neither_host_access_nor_the_exception() {
        // Pool `a` has no owner here: with one, `y`'s reservation would be an error.
        let (granted, levels, warnings) = outcome(
            &cell_owning_a("taint \"pool-b\" \"true\" effect=\"NoSchedule\";", ""),
            &[
                ("x", tenant("x", "hard", "pool \"a\" reserved=8", true)),
                ("y", tenant("y", "mig", "pool \"a\" reserved=8", false)),
            ],
        );
        assert!(!granted);
        assert_eq!(levels, ["restricted"]);
        assert_eq!(warnings, 1);
    }

    #[test]
    fn an_untainted_owned_pool_is_refused_before_host_access_is_decided() {
        // `x` reserves and owns both pools; `b` has no taint, so the pods of `y` (which reserves
        // `a` nowhere, and tolerates nothing) could land on its nodes without GPUs. Validation
        // refuses the owner of an untainted pool, so no plan grants host access there.
        let cell = cell("owner \"x\";");
        let x = tenant(
            "x",
            "hard",
            "pool \"a\" reserved=8; pool \"b\" reserved=8",
            true,
        );
        let y = tenant("y", "soft", "", false);
        let compilation = compile_files(&[
            ("cells/c1.kdl", cell.as_str()),
            ("tenants/x.kdl", x.as_str()),
            ("tenants/y.kdl", y.as_str()),
        ]);
        let errors: Vec<Code> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.code)
            .collect();
        assert_eq!(errors, [Code::OwnedPoolNotClosed]);
        assert!(compilation.plan.is_none_or(|plan| {
            plan.cells
                .iter()
                .all(|cell| cell.tenants.iter().all(|t| !t.cell_host_access.granted))
        }));
    }

    #[test]
    fn a_tenant_that_is_not_hard_never_gets_host_access() {
        let (granted, _, _) = outcome(
            &cell("taint \"pool-b\" \"true\" effect=\"NoSchedule\";"),
            &[("x", tenant("x", "mig", "pool \"a\" reserved=8", false))],
        );
        assert!(!granted);
    }
}
