//! Checks a cell's shared serving: the tenants a served model names, the trust classes that
//! share its prefix cache, and its tenants' limits against its declared capacity.
//!
//! Consumes: the validated fleet. Produces: `serving-tenant-unknown`,
//! `serving-tenant-not-in-cell`, `serving-prefix-cache-across-trust` (errors) and
//! `serving-limits-over-capacity` (a warning), each located at the declaration it is about;
//! duplicate model names are `name-duplicate`.
//!
//! Invariants: pure; every finding is reported, never only the first; a tenant whose file could
//! not be read is not reported as unknown, and one whose trust class could not be read is left
//! out of the trust check rather than guessed.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::model::{
    Cell, Fleet, PrefixCache, ServedModel, ServedTenant, Tenant, Trust, WorkloadKind,
};

/// Runs the serving checks of every cell.
pub fn check(fleet: &Fleet, unreadable: &super::Unreadable, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        let Some(serving) = &cell.serving else {
            continue;
        };
        super::duplicates(
            serving.models.iter().map(|model| &model.name),
            "served model",
            diagnostics,
        );
        for model in &serving.models {
            check_model(fleet, cell, model, unreadable, diagnostics);
        }
    }
}

fn check_model(
    fleet: &Fleet,
    cell: &Cell,
    model: &ServedModel,
    unreadable: &super::Unreadable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut seen: BTreeMap<&str, &ServedTenant> = BTreeMap::new();
    // The trust class of each served tenant that is declared and readable, by class.
    let mut classes: BTreeMap<Trust, Vec<(&Tenant, &ServedTenant)>> = BTreeMap::new();
    for served in &model.tenants {
        let name = served.tenant.value.as_str();
        if let Some(first) = seen.insert(name, served) {
            diagnostics.push(
                Diagnostic::error(
                    Code::ServingTenantUnknown,
                    served.tenant.span,
                    format!(
                        "served model `{}` names tenant `{name}` twice",
                        model.name.value
                    ),
                )
                .with_label("named again here")
                .with_secondary(first.tenant.span, "first named here")
                .with_help("give each tenant one `tenant` line with its limits"),
            );
            continue;
        }
        let Some(tenant) = fleet.tenants.iter().find(|t| t.name.value == name) else {
            if !unreadable.tenants.contains(name) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::ServingTenantUnknown,
                        served.tenant.span,
                        format!(
                            "served model `{}` names tenant `{name}`, but no tenant of that name is declared",
                            model.name.value
                        ),
                    )
                    .with_label("no such tenant")
                    .with_note("limits for a name no tenant has would go to whoever declares it first")
                    .with_help(format!("name a tenant declared under `tenants/`, or declare `tenants/{name}.kdl`")),
                );
            }
            continue;
        };
        let infers = tenant
            .workloads
            .iter()
            .any(|workload| workload.kind.value == WorkloadKind::Infer);
        if tenant.complete && !(infers && tenant.quota_in(&cell.name.value).is_some()) {
            let reason = if infers {
                format!("it has no quota in cell `{}`", cell.name.value)
            } else {
                "it declares no `infer` workload".to_string()
            };
            diagnostics.push(
                Diagnostic::error(
                    Code::ServingTenantNotInCell,
                    served.tenant.span,
                    format!(
                        "served model `{}` names tenant `{name}`, which has no `infer` workload in cell `{}`",
                        model.name.value, cell.name.value
                    ),
                )
                .with_label(reason)
                .with_note("a model serves only tenants that run inference in its cell, whose namespaces and chargeback exist there")
                .with_help(format!(
                    "remove `{name}` from the model, or give it an `infer` workload and a quota in cell `{}`",
                    cell.name.value
                )),
            );
        }
        if let Some(trust) = &tenant.trust {
            classes
                .entry(trust.value)
                .or_default()
                .push((tenant, served));
        }
    }
    if model.prefix_cache.value == PrefixCache::Shared {
        across_trust(model, &classes, diagnostics);
    }
    over_capacity(model, diagnostics);
}

/// Refuses a shared prefix cache over tenants of more than one trust class.
fn across_trust(
    model: &ServedModel,
    classes: &BTreeMap<Trust, Vec<(&Tenant, &ServedTenant)>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut firsts = classes
        .iter()
        .filter_map(|(trust, tenants)| Some((*trust, *tenants.first()?)));
    let (Some((first_trust, (first_tenant, _))), Some((other_trust, (other_tenant, other_served)))) =
        (firsts.next(), firsts.next())
    else {
        return;
    };
    let listed: Vec<String> = classes
        .iter()
        .map(|(trust, tenants)| {
            let names: Vec<&str> = tenants
                .iter()
                .map(|(tenant, _)| tenant.name.value.as_str())
                .collect();
            format!("`{}` ({})", trust.as_str(), names.join(", "))
        })
        .collect();
    diagnostics.push(
        Diagnostic::error(
            Code::ServingPrefixCacheAcrossTrust,
            model.prefix_cache.span,
            format!(
                "served model `{}` shares its prefix cache across trust classes {}",
                model.name.value,
                listed.join(" and ")
            ),
        )
        .with_label("one prefix cache for every tenant of the model")
        .with_secondary(
            other_served.tenant.span,
            format!(
                "`{}` is `{}`, `{}` is `{}`",
                other_tenant.name.value,
                other_trust.as_str(),
                first_tenant.name.value,
                first_trust.as_str()
            ),
        )
        .with_note("a shared prefix cache lets one tenant's requests hit, evict and time another's cached prompts; a cache salt keys the entries but not the memory or its eviction")
        .with_help("set `prefix-cache=\"off\"`, or serve the tenants of each trust class from a model of their own"),
    );
}

/// Warns where the tenants' limits add up to more than the model is sized for.
fn over_capacity(model: &ServedModel, diagnostics: &mut Vec<Diagnostic>) {
    let rate: i64 = model
        .tenants
        .iter()
        .map(|served| served.requests_per_second.value)
        .fold(0_i64, i64::saturating_add);
    let concurrency: i64 = model
        .tenants
        .iter()
        .map(|served| served.concurrency.value)
        .fold(0_i64, i64::saturating_add);
    let parts = |pick: fn(&ServedTenant) -> i64| -> String {
        model
            .tenants
            .iter()
            .map(|served| format!("{} {}", served.tenant.value, pick(served)))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    for (what, sum, capacity, span, detail) in [
        (
            "requests per second",
            rate,
            model.requests_per_second.value,
            model.requests_per_second.span,
            parts(|served| served.requests_per_second.value),
        ),
        (
            "concurrent requests",
            concurrency,
            model.concurrency.value,
            model.concurrency.span,
            parts(|served| served.concurrency.value),
        ),
    ] {
        if sum > capacity {
            diagnostics.push(
                Diagnostic::warning(
                    Code::ServingLimitsOverCapacity,
                    span,
                    format!(
                        "the tenants of served model `{}` may send {sum} {what}, more than the {capacity} it is sized for",
                        model.name.value
                    ),
                )
                .with_label(format!("sized for {capacity} {what}"))
                .with_note(format!("{detail} = {sum} > {capacity}"))
                .with_help("lower the tenants' limits, or raise the model's capacity once its replicas can take it; when every tenant is at its limit, requests queue in the engine instead of being refused at the gateway"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::diag::Code;
    use crate::testing::support::{codes, compile_files};

    /// A cell with an exclusive pool and a MIG pool, serving `llama` with `SERVING`'s tenants.
    const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "serving" value=100000
    pool "whole" { gpu "H100-80GB-SXM"; nodes 1 gpus-per-node=8; sharing "exclusive"; }
    pool "mig" {
        gpu "H100-80GB-SXM"
        nodes 1 gpus-per-node=8
        sharing "mig"
        mig-layout "small" nodes=1 { profile "1g.10gb" 7; }
    }
    serving {
        gateway "envoy-gateway" name="inference" namespace="gateways" tenant-header="x-tenant" claim="tenant"
        model "llama" stack="vllm" namespace="serving" service="llama" port=8000 requests-per-second=RPS concurrency=32 prefix-cache="CACHE" {
            tenant "a" requests-per-second=60 concurrency=16
            tenant "b" requests-per-second=40 concurrency=16
        }
    }
}
"#;

    /// An inference tenant of `c1` of the given trust class.
    fn tenant(name: &str, trust: &str) -> String {
        let pool = match trust {
            "hard" => r#"pool "whole" reserved=1 workload="infer""#,
            _ => r#"pool "mig" profile="1g.10gb" reserved=2 workload="infer""#,
        };
        format!(
            r#"tenant "{name}" {{
    org "{name}"
    team "t"
    trust "{trust}"
    groups admin="{name}-admins"
    workload "infer" service-account="server" priority="serving"
    quota cell="c1" cpu="8" memory="64Gi" pods=20 {{
        {pool}
    }}
}}
"#
        )
    }

    fn serving_codes(cache: &str, rps: i64, trusts: (&str, &str)) -> Vec<Code> {
        let cell = CELL
            .replace("CACHE", cache)
            .replace("RPS", &rps.to_string());
        let (a, b) = (tenant("a", trusts.0), tenant("b", trusts.1));
        codes(&[
            ("cells/c1.kdl", &cell),
            ("tenants/a.kdl", &a),
            ("tenants/b.kdl", &b),
        ])
        .into_iter()
        .filter(|code| code.as_str().starts_with("serving-"))
        .collect()
    }

    #[test]
    fn tenants_of_one_trust_class_may_share_a_prefix_cache() {
        assert_eq!(serving_codes("shared", 100, ("mig", "mig")), vec![]);
        let compilation = compile_files(&[
            (
                "cells/c1.kdl",
                &CELL.replace("CACHE", "shared").replace("RPS", "100"),
            ),
            ("tenants/a.kdl", &tenant("a", "mig")),
            ("tenants/b.kdl", &tenant("b", "mig")),
        ]);
        assert!(
            compilation.output.is_some(),
            "{:?}",
            compilation.diagnostics
        );
    }

    #[test]
    fn refuses_a_shared_prefix_cache_across_trust_classes_but_not_with_caching_off() {
        assert_eq!(
            serving_codes("shared", 100, ("hard", "mig")),
            vec![Code::ServingPrefixCacheAcrossTrust]
        );
        assert_eq!(serving_codes("off", 100, ("hard", "mig")), vec![]);
    }

    #[test]
    fn warns_only_when_the_tenants_limits_exceed_the_capacity() {
        // 60 + 40 requests per second: at 100 the model is exactly full, at 99 it is not.
        assert_eq!(serving_codes("shared", 100, ("mig", "mig")), vec![]);
        assert_eq!(
            serving_codes("shared", 99, ("mig", "mig")),
            vec![Code::ServingLimitsOverCapacity]
        );
    }
}
