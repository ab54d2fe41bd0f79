//! Checks that a tenant's ceiling splits over its namespaces add up.

use super::ShareField;
use crate::diag::{Code, Diagnostic, list_names};
use crate::facts::split::split_ceilings;
use crate::model::{Quota, Tenant, Workload, WorkloadKind};
use crate::quantity::Quantity;
use crate::source::Span;
use std::collections::BTreeMap;

/// Explicit splits name each workload once and add up to the ceilings.
pub(super) fn check_splits(tenant: &Tenant, quota: &Quota, diagnostics: &mut Vec<Diagnostic>) {
    if quota.splits.is_empty() || !quota.complete || !tenant.complete {
        return;
    }
    let declared: BTreeMap<WorkloadKind, &Workload> = tenant
        .workloads
        .iter()
        .map(|workload| (workload.kind.value, workload))
        .collect();
    let where_ = format!(
        "tenant `{}` in cell `{}`",
        tenant.name.value, quota.cell.value
    );
    let mut seen: BTreeMap<WorkloadKind, Span> = BTreeMap::new();
    let mut listed_well = true;
    for split in &quota.splits {
        let kind = split.workload.value;
        if !declared.contains_key(&kind) {
            listed_well = false;
            diagnostics.push(
                Diagnostic::error(
                    Code::CeilingSplitMismatch,
                    split.workload.span,
                    format!(
                        "{where_} splits its ceilings to workload `{}`, which it does not declare",
                        kind.as_str()
                    ),
                )
                .with_label("no such workload")
                .with_help(format!(
                    "remove this split, or declare `workload \"{}\" …`",
                    kind.as_str()
                )),
            );
        } else if let Some(first) = seen.get(&kind) {
            listed_well = false;
            diagnostics.push(
                Diagnostic::error(
                    Code::CeilingSplitMismatch,
                    split.workload.span,
                    format!(
                        "{where_} splits its ceilings to workload `{}` twice",
                        kind.as_str()
                    ),
                )
                .with_label("split again here")
                .with_secondary(*first, "first split here")
                .with_help("merge the two splits into one"),
            );
        } else {
            seen.insert(kind, split.workload.span);
        }
    }
    for (kind, workload) in &declared {
        if seen.contains_key(kind) {
            continue;
        }
        listed_well = false;
        diagnostics.push(
            Diagnostic::error(
                Code::CeilingSplitMismatch,
                quota.cell.span,
                format!(
                    "the ceiling splits of {where_} leave out workload `{}`",
                    kind.as_str()
                ),
            )
            .with_label(format!("no split for `{}`", kind.as_str()))
            .with_secondary(workload.kind.span, "workload declared here")
            .with_note("with explicit splits, each workload namespace gets exactly its split; one without a split could run nothing")
            .with_help(format!(
                "add `split \"{}\" cpu=… memory=… pods=…` and make the splits add up to the ceilings",
                kind.as_str()
            )),
        );
    }
    if !listed_well {
        return;
    }
    let quantities = [
        (
            "cpu",
            &quota.cpu,
            quota.splits.iter().map(|s| &s.cpu).collect::<Vec<_>>(),
        ),
        (
            "memory",
            &quota.memory,
            quota.splits.iter().map(|s| &s.memory).collect(),
        ),
    ];
    for (field, ceiling, parts) in quantities {
        let sum: i128 = parts.iter().map(|part| part.value.milli()).sum();
        let format = ceiling.value.format();
        let show = |milli: i128| {
            Quantity::from_milli(milli, format)
                .map_or_else(|| format!("{milli}m"), |q| q.to_string())
        };
        if sum == ceiling.value.milli() {
            continue;
        }
        let difference = (ceiling.value.milli() - sum).abs();
        let mut diagnostic = Diagnostic::error(
            Code::CeilingSplitMismatch,
            ceiling.span,
            format!(
                "the `{field}` splits of {where_} add up to {}, not to its ceiling {}",
                show(sum),
                ceiling.value
            ),
        )
        .with_label(format!("ceiling {}", ceiling.value));
        for (split, part) in quota.splits.iter().zip(&parts) {
            diagnostic = diagnostic.with_secondary(
                part.span,
                format!("`{}` gets {}", split.workload.value.as_str(), part.value),
            );
        }
        diagnostics.push(diagnostic.with_help(split_help(
            field,
            sum < ceiling.value.milli(),
            &show(difference),
        )));
    }
    let pods_sum: i64 = quota
        .splits
        .iter()
        .map(|split| split.pods.value)
        .fold(0, i64::saturating_add);
    if pods_sum != quota.pods.value {
        let mut diagnostic = Diagnostic::error(
            Code::CeilingSplitMismatch,
            quota.pods.span,
            format!(
                "the `pods` splits of {where_} add up to {pods_sum}, not to its ceiling {}",
                quota.pods.value
            ),
        )
        .with_label(format!("ceiling {}", quota.pods.value));
        for split in &quota.splits {
            diagnostic = diagnostic.with_secondary(
                split.pods.span,
                format!(
                    "`{}` gets {}",
                    split.workload.value.as_str(),
                    split.pods.value
                ),
            );
        }
        diagnostics.push(diagnostic.with_help(split_help(
            "pods",
            pods_sum < quota.pods.value,
            &(quota.pods.value - pods_sum).abs().to_string(),
        )));
    }
}

/// A ceiling split by shares gives every workload namespace some cpu, memory and pods: a
/// namespace with none of one can run no pod at all (a warning, since the split itself adds
/// up).
pub(super) fn check_empty_shares(
    tenant: &Tenant,
    quota: &Quota,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if !quota.splits.is_empty() || !quota.complete || !tenant.complete {
        return;
    }
    let mut kinds: Vec<&Workload> = tenant.workloads.iter().collect();
    kinds.sort_by_key(|workload| workload.kind.value);
    kinds.dedup_by_key(|workload| workload.kind.value);
    let shares: Vec<i64> = kinds
        .iter()
        .map(|workload| {
            workload
                .share
                .as_ref()
                .map_or(1, |share| share.value)
                .max(1)
        })
        .collect();
    let share_sum: i128 = shares.iter().map(|share| i128::from(*share)).sum();
    let parts = split_ceilings(quota, &tenant.workloads);
    let cpu_format = quota.cpu.value.format();
    let memory_format = quota.memory.value.format();
    let fields: [ShareField<'_>; 3] = [
        (
            "cpu",
            quota.cpu.span,
            quota.cpu.value.to_string(),
            parts.iter().map(|part| part.cpu.milli()).collect(),
            1,
            &|milli| {
                Quantity::from_milli(milli, cpu_format)
                    .map_or_else(|| format!("{milli}m"), |q| q.to_string())
            },
        ),
        (
            "memory",
            quota.memory.span,
            quota.memory.value.to_string(),
            parts
                .iter()
                .map(|part| part.memory.milli() / 1000)
                .collect(),
            1000,
            &|milli| {
                Quantity::from_milli(milli, memory_format)
                    .map_or_else(|| format!("{}", milli / 1000), |q| q.to_string())
            },
        ),
        (
            "pods",
            quota.pods.span,
            quota.pods.value.to_string(),
            parts.iter().map(|part| i128::from(part.pods)).collect(),
            1000,
            &|milli| (milli / 1000).to_string(),
        ),
    ];
    for (field, span, ceiling, units, unit, show) in fields {
        let empty: Vec<(usize, &Workload)> = units
            .iter()
            .zip(&kinds)
            .enumerate()
            .filter(|(_, (part, _))| **part <= 0)
            .map(|(idx, (_, workload))| (idx, *workload))
            .collect();
        let Some((_, first)) = empty.first() else {
            continue;
        };
        // The smallest ceiling (in units) whose split by shares gives each of these at least
        // one unit: `units * share >= share_sum` for a part after the first, and one unit for
        // the first, which gets the remainder.
        let needed: i128 = empty
            .iter()
            .map(|(idx, _)| {
                let share = i128::from(shares.get(*idx).copied().unwrap_or(1));
                if *idx == 0 {
                    1
                } else {
                    (share_sum + share - 1) / share
                }
            })
            .max()
            .unwrap_or(1);
        let names: Vec<&str> = empty.iter().map(|(_, w)| w.kind.value.as_str()).collect();
        let mut diagnostic = Diagnostic::warning(
            Code::CeilingSplitMismatch,
            span,
            format!(
                "the `{field}` ceiling {ceiling} of tenant `{}` in cell `{}`, split by shares, gives workload {} none",
                tenant.name.value,
                quota.cell.value,
                list_names(names.iter().copied())
            ),
        )
        .with_label(format!("split over {} workload namespaces", kinds.len()));
        for (_, workload) in &empty {
            diagnostic = diagnostic.with_secondary(
                workload
                    .share
                    .as_ref()
                    .map_or(workload.kind.span, |share| share.span),
                format!("`{}` gets 0 {field}", workload.kind.value.as_str()),
            );
        }
        diagnostics.push(
            diagnostic
                .with_note("a namespace's ResourceQuota holds its part of the ceiling, so a namespace with no cpu, memory or pods can run no pod")
                .with_help(format!(
                    "raise the `{field}` ceiling to at least {}, give `{}` a larger `share`, or split the ceilings explicitly with `split`",
                    show(needed * unit),
                    first.kind.value.as_str()
                )),
        );
    }
}

fn split_help(field: &str, short: bool, difference: &str) -> String {
    if short {
        format!(
            "give the splits {difference} more `{field}` in total, or lower the ceiling by {difference}; the splits must add up to it exactly"
        )
    } else {
        format!(
            "take {difference} `{field}` from the splits, or raise the ceiling by {difference}; the splits must add up to it exactly"
        )
    }
}
