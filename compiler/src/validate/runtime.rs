//! Runtime classes: every pool a `runtime-class` names exists, names are unique, and every
//! trust class that reserves GPUs in a cell has a runtime class it may use.
//!
//! Consumes: the fleet. Produces: `pool-unknown` and `name-duplicate` findings at a runtime
//! class, and `runtime-class-missing` at a tenant's quota for a cell.
//!
//! Invariant: a cell that declares no runtime class is not checked here; its admission policy
//! then requires GPU pods to leave `runtimeClassName` unset (the node's default runtime), so
//! declaring runtime classes is what turns the runtime rule on, and from then on no tenant that
//! reserves GPUs in the cell is left without one (its GPU pods could never be admitted).

use super::duplicates;
use super::tenants::{Referent, unknown_reference};
use crate::diag::{Code, Diagnostic};
use crate::model::Fleet;

/// Checks the runtime classes of every cell against its pools and tenants.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        duplicates(
            cell.runtime_classes.iter().map(|class| &class.name),
            "runtime class",
            diagnostics,
        );
        if !cell.complete {
            // A pool that could not be read is left out; a class naming it is not reported.
            continue;
        }
        let pool_names = cell.pools.iter().map(|pool| pool.name.value.as_str());
        for class in &cell.runtime_classes {
            for pool in &class.pools {
                if !cell
                    .pools
                    .iter()
                    .any(|known| known.name.value == pool.value)
                {
                    diagnostics.push(unknown_reference(
                        Referent::Pool,
                        pool,
                        pool_names.clone(),
                        "name a pool of this cell whose nodes run the handler",
                    ));
                }
            }
        }
    }
    for tenant in &fleet.tenants {
        for quota in &tenant.quotas {
            if quota.pools.is_empty() {
                continue;
            }
            let Some(cell) = fleet.cell(&quota.cell.value) else {
                continue;
            };
            if cell.runtime_classes.is_empty() || !cell.complete {
                continue;
            }
            // A trust class that could not be read needs no runtime class of its own.
            let Some(trust) = tenant.trust.as_ref().map(|trust| trust.value) else {
                continue;
            };
            let allowed = cell
                .runtime_classes
                .iter()
                .any(|class| class.trust.iter().any(|listed| listed.value == trust));
            if allowed {
                continue;
            }
            diagnostics.push(
                Diagnostic::error(
                    Code::RuntimeClassMissing,
                    quota.cell.span,
                    format!(
                        "no runtime class of cell `{}` allows trust class `{}`",
                        cell.name.value,
                        trust.as_str()
                    ),
                )
                .with_label(format!(
                    "tenant `{}` reserves GPUs here",
                    tenant.name.value
                ))
                .with_secondary(cell.name.span, "the cell declares its runtime classes here")
                .with_note("the admission policy denies every GPU pod whose `runtimeClassName` is not allowed for its tenant's trust class")
                .with_help(format!(
                    "add `trust \"{}\"` to a `runtime-class` of cell `{}`, or declare a runtime class for it",
                    trust.as_str(),
                    cell.name.value
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::validate::test_support::codes;

    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="r"
    kubernetes "1.33"
    driver "570"
    pool "train" { gpu "H100-80GB-SXM"; nodes 1 gpus-per-node=8; sharing "exclusive"; label "pool" "train"; }
    RUNTIME
}"#;

    fn tenant(trust: &str) -> String {
        format!(
            r#"tenant "a" {{
    org "o"
    team "t"
    trust "{trust}"
    groups admin="a-admins"
    quota cell="c1" cpu="1" memory="1Gi" pods=1 {{
        pool "train" reserved=1
    }}
    workload "train" service-account="trainer"
}}"#
        )
    }

    fn check(runtime: &str, trust: &str) -> Vec<Code> {
        let cell = CELL.replace("RUNTIME", runtime);
        codes(&[("cells/c1.kdl", &cell), ("tenants/a.kdl", &tenant(trust))])
    }

    #[test]
    fn a_cell_without_runtime_classes_is_not_checked() {
        assert_eq!(check("", "hard"), []);
    }

    #[test]
    fn reports_a_trust_class_that_no_runtime_class_allows() {
        let runtime = r#"runtime-class "nvidia" handler="nvidia" { trust "hard"; }"#;
        assert_eq!(check(runtime, "hard"), []);
        assert_eq!(check(runtime, "soft"), [Code::RuntimeClassMissing]);
    }

    #[test]
    fn reports_unknown_pools_and_duplicate_runtime_classes() {
        let unknown = r#"runtime-class "nvidia" handler="nvidia" { trust "hard"; pools "trian"; }"#;
        assert_eq!(check(unknown, "hard"), [Code::PoolUnknown]);
        let twice = r#"runtime-class "nvidia" handler="nvidia" { trust "hard"; }
    runtime-class "nvidia" handler="kata" { trust "hard"; }"#;
        assert_eq!(check(twice, "hard"), [Code::NameDuplicate]);
    }
}
