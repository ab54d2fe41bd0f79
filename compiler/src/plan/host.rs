//! Host access: whether a tenant's pods may reach the node itself in a cell.
//!
//! Consumes: a cell's declaration, the fleet and the cell's plan with every tenant's
//! ClusterQueue flavors. Produces: each tenant's [`HostAccessPlan`] (which the admission
//! params' `hostAccess` and describe read), the Pod Security exceptions that stay in each
//! namespace's plan, and a `pod-security-exception-not-allowed` warning for every exception
//! withheld in the cell.
//!
//! Host networking, RDMA devices and the capabilities of a Pod Security exception act on the
//! node's kernel and network, so they are granted only where the tenant shares no node with
//! another tenant: the tenant is `hard`, and every pool it has a flavor for is its alone. A
//! pool is a tenant's alone when it is `exclusive`, no other tenant of the cell has a flavor for
//! it (an `exclusive` pool gives each pod whole GPUs, not whole nodes, so two tenants' pods can
//! share a node), and it has a repelling taint that no other tenant of the cell tolerates
//! through its own flavors (the admission floor denies any other pool toleration), so no other
//! tenant's pod can land there, with or without GPUs.
//!
//! Invariant: pure; a tenant's grant depends on the other tenants of the cell (it is a
//! `cell_*` field of [`super::TenantPlan`]); a namespace keeps its exceptions only where its
//! tenant is granted host access, so lowering, the reports and describe never grant more than
//! this decides.

use serde::Serialize;

use crate::diag::{Code, Diagnostic};
use crate::model::{Cell, Fleet};
use crate::source::Span;

use super::{CellPlan, PoolPlan, TenantPlan};

/// Whether a tenant's pods may use the host network, RDMA devices and its Pod Security
/// exceptions in one cell, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct HostAccessPlan {
    /// Whether it is granted.
    pub granted: bool,
    /// Why, in words.
    pub why: String,
}

/// Why a pool is not a tenant's alone, with where to point.
struct Shared {
    why: String,
    span: Option<Span>,
    label: String,
}

/// Decides host access for every tenant of the cell, withholds the exceptions of tenants
/// without it, and returns a warning per withheld exception.
pub(super) fn grant(cell: &Cell, fleet: &Fleet, plan: &mut CellPlan) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let decisions: Vec<(HostAccessPlan, Option<Shared>)> = plan
        .tenants
        .iter()
        .map(|tenant| decide(tenant, plan, cell, fleet))
        .collect();
    for (tenant, (access, shared)) in plan.tenants.iter_mut().zip(decisions) {
        if !access.granted {
            for namespace in &mut tenant.namespaces {
                let withheld = std::mem::take(&mut namespace.exceptions);
                if withheld.is_empty() {
                    continue;
                }
                let Some(declared) = fleet
                    .tenants
                    .iter()
                    .find(|declared| declared.name.value == tenant.name)
                else {
                    continue;
                };
                let exceptions = declared
                    .workloads
                    .iter()
                    .filter(|workload| workload.kind.value.as_str() == namespace.workload)
                    .flat_map(|workload| &workload.exceptions);
                for exception in exceptions {
                    let mut diagnostic = Diagnostic::warning(
                        Code::PodSecurityExceptionNotAllowed,
                        exception.name.span,
                        format!(
                            "Pod Security exception `{}` of workload `{}` is not granted in cell `{}`",
                            exception.name.value, namespace.workload, plan.name
                        ),
                    )
                    .with_label(format!(
                        "`{}` stays `restricted` in cell `{}`: {}",
                        namespace.name, plan.name, access.why
                    ));
                    if let Some(Shared {
                        span: Some(span),
                        label,
                        ..
                    }) = &shared
                    {
                        diagnostic = diagnostic.with_secondary(*span, label.clone());
                    }
                    diagnostics.push(diagnostic.with_help(format!(
                        "reserve in cell `{}` only pools no other tenant reserves, each with a taint only this tenant's flavor tolerates, or run the workload there without the exception",
                        plan.name
                    )));
                }
            }
        }
        tenant.cell_host_access = access;
    }
    diagnostics
}

/// Host access of one tenant, and the first reason a pool of it is shared.
fn decide(
    tenant: &TenantPlan,
    plan: &CellPlan,
    cell: &Cell,
    fleet: &Fleet,
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
    if tenant.trust != "hard" {
        return denied(format!("trust `{}` is not `hard`", tenant.trust));
    }
    let own = flavor_pools(tenant, plan);
    if own.is_empty() {
        return denied("it reserves no pool in the cell".to_string());
    }
    for pool in &own {
        if let Some(shared) = shared_with(tenant, pool, plan, cell, fleet) {
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
                "every pool it reaches ({}) is its alone: exclusive, reserved by no other tenant and tainted against every other tenant",
                names.join(", ")
            ),
        },
        None,
    )
}

/// The pools a tenant's ClusterQueue has flavors for.
fn flavor_pools<'a>(tenant: &TenantPlan, plan: &'a CellPlan) -> Vec<&'a PoolPlan> {
    plan.pools
        .iter()
        .filter(|pool| {
            tenant
                .queue
                .flavors
                .iter()
                .any(|flavor| flavor.pool == pool.name)
        })
        .collect()
}

/// Why another tenant's pods could land on `pool`, if they could.
fn shared_with(
    tenant: &TenantPlan,
    pool: &PoolPlan,
    plan: &CellPlan,
    cell: &Cell,
    fleet: &Fleet,
) -> Option<Shared> {
    if pool.sharing != "exclusive" {
        return Some(Shared {
            why: format!(
                "pool `{}` is `{}`, not `exclusive`",
                pool.name, pool.sharing
            ),
            span: None,
            label: String::new(),
        });
    }
    for other in plan
        .tenants
        .iter()
        .filter(|other| other.name != tenant.name)
    {
        let other_pools = flavor_pools(other, plan);
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
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::diag::{Code, Severity};
    use crate::validate::test_support::compile_files;

    const EXCEPTION: &str = "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"RDMA\" approved-by=\"sec\"\n    }";

    /// A cell with two exclusive pools, `a` tainted and `b` as given.
    fn cell(b_taint: &str) -> String {
        format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "a" {{ gpu "H100-80GB-SXM"; nodes 2 gpus-per-node=8; sharing "exclusive"; taint "pool-a" "true" effect="NoSchedule"; }}
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
            .count();
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
    fn a_pool_another_tenant_reserves_grants_neither_host_access_nor_the_exception() {
        let (granted, levels, warnings) = outcome(
            &cell("taint \"pool-b\" \"true\" effect=\"NoSchedule\";"),
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
    fn an_untainted_pool_is_no_tenants_alone() {
        // `x` reserves both pools; `b` has no taint, so the pods of `y` (which reserves `a`
        // nowhere, and tolerates nothing) could land on its nodes without GPUs.
        let (granted, levels, warnings) = outcome(
            &cell(""),
            &[
                (
                    "x",
                    tenant(
                        "x",
                        "hard",
                        "pool \"a\" reserved=8; pool \"b\" reserved=8",
                        true,
                    ),
                ),
                ("y", tenant("y", "soft", "", false)),
            ],
        );
        assert!(!granted);
        assert_eq!(levels, ["restricted"]);
        assert_eq!(warnings, 1);
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
