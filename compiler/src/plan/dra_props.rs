//! Generated cells compiled with each device mode: the capacity, pinning and trust checks run
//! unchanged with `devices "dra"`, and a DRA cell that compiles has the same effective capacity
//! (what `describe` shows) and a device-class quota that adds up to the device plugin's.
//!
//! Each round takes the fleet of one round of `volcano_props.rs` (exclusive H100 and A100 pools,
//! a MIG pool and a time-sliced L4 pool, up to four tenants of every trust class) and compiles it
//! twice: as declared (device plugin) and with `devices "dra"`. It then checks:
//! - every finding of the device-plugin compile is a finding of the DRA compile, at the same
//!   place, and the DRA compile adds only the DRA codes; when one of those stops validation, the
//!   device-plugin compile's findings of the stages before `resolve` are all there;
//! - where both compile, every tenant's effective capacity rows, reach and host access are equal,
//!   the DRA cell lists a DeviceClass for every offer of every pool, and in each namespace the
//!   device-class quotas of the classes that stand for a resource add up to the device plugin's
//!   `requests.<resource>`.

use std::collections::{BTreeMap, BTreeSet};

use super::volcano_props::{KUBERNETES_LINE, compile, findings, gen_fleet};
use crate::diag::Code;
use crate::testing::Rng;

/// The codes only a DRA cell reports.
const DRA_CODES: [Code; 3] = [
    Code::DraSharingUnsupported,
    Code::DraProductNameUnknown,
    Code::KueueLimitExceeded,
];

/// The line the DRA twin adds after the cell's `kubernetes`.
const DEVICES_LINE: &str = "    devices \"dra\"\n";

/// The same fleet with `devices "dra"` in its cell.
fn as_dra(files: &[(String, String)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(path, text)| {
            let text = if path.starts_with("cells/") {
                text.replacen(
                    KUBERNETES_LINE,
                    &format!("{KUBERNETES_LINE}{DEVICES_LINE}"),
                    1,
                )
            } else {
                text.clone()
            };
            (path.clone(), text)
        })
        .collect()
}

fn check_round(seed: u64, rng: &mut Rng, stats: &mut BTreeMap<&'static str, usize>) {
    let files = gen_fleet(rng);
    let dra_files = as_dra(&files);
    let plugin = compile(&files);
    let dra = compile(&dra_files);
    let context = || format!("seed {seed}\n{files:#?}");
    assert!(
        plugin.internal_error.is_none() && dra.internal_error.is_none(),
        "an internal error: {:?} {:?}\n{}",
        plugin.internal_error,
        dra.internal_error,
        context()
    );
    let plugin_findings = findings(&plugin);
    // Where the DRA cell file has its extra line, positions after it move back by its length.
    let inserted_at = files
        .first()
        .and_then(|(_, text)| text.find(KUBERNETES_LINE))
        .map_or(0, |at| at + KUBERNETES_LINE.len());
    let dra_findings: BTreeSet<(Code, String, u32)> = findings(&dra)
        .into_iter()
        .map(|(code, file, start)| {
            let moved =
                file.starts_with("cells/") && start as usize >= inserted_at + DEVICES_LINE.len();
            let start = if moved {
                start - DEVICES_LINE.len() as u32
            } else {
                start
            };
            (code, file, start)
        })
        .collect();
    let added: BTreeSet<Code> = dra_findings
        .difference(&plugin_findings)
        .map(|(code, _, _)| *code)
        .collect();
    assert!(
        added.iter().all(|code| DRA_CODES.contains(code)),
        "the DRA compile adds {added:?}\n{}",
        context()
    );
    let stopped = dra_findings
        .iter()
        .any(|(code, _, _)| DRA_CODES.contains(code));
    for finding in &plugin_findings {
        let before_resolve = matches!(finding.0.stage(), "load" | "parse" | "schema" | "validate");
        if stopped && !before_resolve {
            continue;
        }
        assert!(
            dra_findings.contains(finding),
            "the DRA compile lacks {finding:?}\n{}",
            context()
        );
    }
    if stopped {
        *stats.entry("stopped by a DRA code").or_default() += 1;
        return;
    }
    let (Some(plugin_plan), Some(dra_plan)) = (&plugin.plan, &dra.plan) else {
        *stats.entry("not planned").or_default() += 1;
        return;
    };
    *stats.entry("compiled with both").or_default() += 1;
    for (plugin_cell, dra_cell) in plugin_plan.cells.iter().zip(&dra_plan.cells) {
        let classes = dra_cell.dra.as_ref().map(|plan| plan.classes.clone());
        let classes = classes.unwrap_or_default();
        for pool in &dra_cell.pools {
            for offer in &pool.offers {
                let name = super::dra::class_name(&pool.gpu, offer.profile.as_deref());
                assert!(
                    classes
                        .iter()
                        .any(|class| class.name == name && class.resource == offer.resource),
                    "no class {name} for {} of {}\n{}",
                    offer.resource,
                    pool.name,
                    context()
                );
            }
        }
        for (plugin_tenant, dra_tenant) in plugin_cell.tenants.iter().zip(&dra_cell.tenants) {
            assert_eq!(plugin_tenant.capacity, dra_tenant.capacity, "{}", context());
            let flags = |tenant: &crate::plan::TenantPlan| -> Vec<(String, bool)> {
                tenant
                    .reach
                    .iter()
                    .map(|reach| (reach.pool.clone(), reach.reachable))
                    .collect()
            };
            assert_eq!(flags(plugin_tenant), flags(dra_tenant), "{}", context());
            assert_eq!(
                plugin_tenant.cell_host_access.granted,
                dra_tenant.cell_host_access.granted
            );
            for (plugin_ns, dra_ns) in plugin_tenant.namespaces.iter().zip(&dra_tenant.namespaces) {
                let mut by_resource: BTreeMap<&str, i64> = BTreeMap::new();
                for class in &classes {
                    let count = dra_ns.dra_devices.get(&class.name).copied();
                    assert!(count.is_some(), "{} unlisted\n{}", class.name, context());
                    *by_resource.entry(class.resource.as_str()).or_default() += count.unwrap_or(0);
                }
                for (resource, count) in &plugin_ns.gpu {
                    assert_eq!(
                        by_resource.get(resource.as_str()).copied().unwrap_or(0),
                        *count,
                        "device classes of {resource} in {}\n{}",
                        dra_ns.name,
                        context()
                    );
                }
            }
        }
    }
}

#[test]
fn the_checks_and_the_effective_capacity_are_the_same_with_either_device_mode() {
    let mut stats: BTreeMap<&'static str, usize> = BTreeMap::new();
    for seed in 0..300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd7a);
        check_round(seed, &mut rng, &mut stats);
    }
    // The generator reaches both outcomes, so neither branch of the property is vacuous.
    for outcome in ["compiled with both", "stopped by a DRA code"] {
        assert!(
            stats.get(outcome).copied().unwrap_or(0) > 0,
            "no round {outcome}: {stats:?}"
        );
    }
}
