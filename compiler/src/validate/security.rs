//! Pod Security exception checks: only a `hard` tenant whose workload runs on whole, exclusive
//! GPUs may relax `restricted`.
//!
//! Consumes: the [`Fleet`]. Produces: `pod-security-exception-not-allowed` diagnostics.
//!
//! An exception (`exception` under a tenant's `workload`) lets the containers of that workload's
//! namespace add the Linux capabilities it names (`IPC_LOCK` for RDMA), in every cell the tenant
//! has a quota in. Capabilities act on the node's kernel, so they are allowed only where the
//! tenant shares no node with another tenant: the tenant is `hard` (which keeps it off shared
//! and sliced pools), and the workload reserves an `exclusive` pool in every cell of the tenant
//! (a namespace without such a reservation runs no multi-node GPU job that needs the exception).
//!
//! Invariant: pure; one finding per exception and reason (the trust class once, each cell without
//! an exclusive reservation once), at the exception's name. Which capabilities an exception may
//! name is checked in `schema`.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::model::{Cell, Fleet, Sharing, Trust};

/// Checks every Pod Security exception of every tenant.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    let cells: BTreeMap<&str, &Cell> = fleet
        .cells
        .iter()
        .map(|cell| (cell.name.value.as_str(), cell))
        .collect();
    for tenant in &fleet.tenants {
        for workload in &tenant.workloads {
            let kind = workload.kind.value;
            for exception in &workload.exceptions {
                // A trust class that could not be read is not judged: its error is the finding.
                let Some(trust) = &tenant.trust else {
                    continue;
                };
                if trust.value != Trust::Hard {
                    diagnostics.push(
                        Diagnostic::error(
                            Code::PodSecurityExceptionNotAllowed,
                            exception.name.span,
                            format!(
                                "Pod Security exception `{}` of tenant `{}` needs trust `hard`",
                                exception.name.value, tenant.name.value
                            ),
                        )
                        .with_label("capabilities act on the node's kernel")
                        .with_secondary(
                            trust.span,
                            format!(
                                "trust `{}` shares nodes with other tenants",
                                trust.value.as_str()
                            ),
                        )
                        .with_help(
                            "remove the exception, or make the tenant `hard` on an exclusive pool",
                        ),
                    );
                    continue;
                }
                for quota in &tenant.quotas {
                    let Some(cell) = cells.get(quota.cell.value.as_str()) else {
                        continue;
                    };
                    if !cell.complete || !quota.complete {
                        continue;
                    }
                    let exclusive = quota.pools.iter().any(|reservation| {
                        reservation
                            .workload
                            .as_ref()
                            .is_none_or(|only| only.value == kind)
                            && cell.pools.iter().any(|pool| {
                                pool.name.value == reservation.pool.value
                                    && pool.sharing.value == Sharing::Exclusive
                            })
                    });
                    if exclusive {
                        continue;
                    }
                    diagnostics.push(
                        Diagnostic::error(
                            Code::PodSecurityExceptionNotAllowed,
                            exception.name.span,
                            format!(
                                "Pod Security exception `{}` of workload `{}` has no exclusive pool in cell `{}`",
                                exception.name.value,
                                kind.as_str(),
                                cell.name.value
                            ),
                        )
                        .with_label("allowed only for a workload that reserves whole GPUs")
                        .with_secondary(
                            quota.cell.span,
                            format!(
                                "no reservation of workload `{}` in an exclusive pool here",
                                kind.as_str()
                            ),
                        )
                        .with_help(format!(
                            "reserve an exclusive pool for workload `{}` in cell `{}`, or run the tenant without the exception",
                            kind.as_str(),
                            cell.name.value
                        )),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::validate::test_support::{CELL, codes, tenant};

    const EXCEPTION: &str = "workload \"train\" service-account=\"trainer\" priority=\"batch\" {\n        exception \"rdma\" capabilities=\"IPC_LOCK\" reason=\"RDMA\" approved-by=\"sec\"\n    }";

    fn with_exception(trust: &str, pools: &str) -> String {
        tenant("a", trust, pools).replace(
            "workload \"train\" service-account=\"trainer\" priority=\"batch\"",
            EXCEPTION,
        )
    }

    fn found(text: &str) -> Vec<Code> {
        // The platform reserves `train` for `a`: an exception is granted only on owned pools.
        let cell = CELL.replace(
            "        sharing \"exclusive\"\n",
            "        sharing \"exclusive\"\n        owner \"a\"\n",
        );
        assert_ne!(cell, CELL);
        codes(&[("cells/c1.kdl", &cell), ("tenants/a.kdl", text)])
            .into_iter()
            .filter(|code| *code == Code::PodSecurityExceptionNotAllowed)
            .collect()
    }

    #[test]
    fn a_hard_tenant_on_an_exclusive_pool_may_declare_an_exception() {
        let text = with_exception("hard", "pool \"train\" reserved=1");
        assert!(text.contains("exception \"rdma\""), "{text}");
        assert_eq!(found(&text), []);
    }

    #[test]
    fn soft_and_mig_tenants_may_not() {
        for trust in ["soft", "mig"] {
            let text = with_exception(trust, "pool \"train\" reserved=1");
            assert_eq!(
                found(&text),
                [Code::PodSecurityExceptionNotAllowed],
                "{trust}"
            );
        }
    }

    #[test]
    fn a_workload_without_an_exclusive_reservation_may_not() {
        // The only reservation is for the other workload's namespace.
        let text = with_exception("hard", "pool \"train\" reserved=1 workload=\"infer\"").replace(
            "    quota",
            "    workload \"infer\" service-account=\"server\"\n    quota",
        );
        assert_eq!(
            found(&text),
            [Code::PodSecurityExceptionNotAllowed],
            "{text}"
        );
    }
}
