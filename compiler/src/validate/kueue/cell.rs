//! Checks of a cell's pools as Kueue sees them: flavor limits, NVLink domains and topologies
//! that form a strict tree.

use super::{
    MAX_CELL_GPU_RESOURCES, MAX_CELL_POOLS, MAX_FLAVOR_LABELS, MAX_GROUP_PAIRS, MAX_POOL_TAINTS,
    MAX_PRIORITY_NAME, MAX_TOPOLOGY_LEVELS, duplicates,
};
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, list_names};
use crate::facts::gpu::flavor_node_labels;
use crate::facts::topology::nvlink_domain_fits;
use crate::hardware;
use crate::model::{Cell, HOSTNAME_LABEL, Pool, Spanned};
use crate::source::Span;
use std::collections::{BTreeMap, BTreeSet};

/// The checks of one cell; `cell_catalog` is the catalog as the cell sees it.
pub(super) fn check_cell(cell: &Cell, cell_catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    duplicates(cell.orgs.iter().map(|org| &org.name), "org", diagnostics);
    for priority in &cell.priorities {
        let length = priority.name.value.len();
        if length > MAX_PRIORITY_NAME {
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    priority.name.span,
                    format!("priority name is {length} characters long"),
                )
                .with_label(format!("at most {MAX_PRIORITY_NAME} characters"))
                .with_note("each priority becomes a Kueue WorkloadPriorityClass, which jobs name in the `kueue.x-k8s.io/priority-class` label")
                .with_help(format!(
                    "shorten the name to at most {MAX_PRIORITY_NAME} characters, and the workloads' `priority` with it"
                )),
            );
        }
    }
    let flavor_labels = flavor_node_labels(cell, cell_catalog);
    // Every tenant's GPU resource group and the root Cohort's cover `nvidia.com/gpu` and every
    // resource a pool offers.
    let mut resources = BTreeSet::from([hardware::GPU_RESOURCE.to_string()]);
    let mut over = false;
    for (idx, pool) in cell.pools.iter().enumerate() {
        if idx == MAX_CELL_POOLS {
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    pool.name.span,
                    format!(
                        "cell `{}` has {} pools, more than the {MAX_CELL_POOLS} flavors a Kueue resource group holds",
                        cell.name.value,
                        cell.pools.len()
                    ),
                )
                .with_label(format!("pool number {}", MAX_CELL_POOLS + 1))
                .with_note("each pool is a Kueue ResourceFlavor, and the cell's root Cohort lists every flavor in one resource group")
                .with_help(format!(
                    "declare at most {MAX_CELL_POOLS} pools in cell `{}`: merge pools of the same hardware, or move some to a cell of their own",
                    cell.name.value
                )),
            );
        }
        let labels = flavor_labels.get(&pool.name.value);
        check_flavor_limits(pool, labels, diagnostics);
        check_topology(pool, diagnostics);
        check_nvlink_domain(pool, diagnostics);
        for offer in hardware::offers(pool, cell_catalog) {
            resources.insert(offer.resource);
        }
        if !over && resources.len() > MAX_CELL_GPU_RESOURCES {
            over = true;
            diagnostics.push(
                Diagnostic::error(
                    Code::KueueLimitExceeded,
                    pool.name.span,
                    format!(
                        "cell `{}` offers more than {MAX_CELL_GPU_RESOURCES} GPU resources with this pool",
                        cell.name.value
                    ),
                )
                .with_label(format!("{} distinct resources up to here, `{}` included", resources.len(), hardware::GPU_RESOURCE))
                .with_note("every tenant's ClusterQueue covers each GPU resource of the cell and `nvidia.com/gpu`, and a resource group covers at most 64")
                .with_help("use fewer distinct MIG profiles across the cell's pools"),
            );
        }
    }
    let pools = cell.pools.len();
    let pairs = pools.saturating_mul(resources.len());
    if !over && pools <= MAX_CELL_POOLS && pairs > MAX_GROUP_PAIRS {
        let most_pools = MAX_GROUP_PAIRS / resources.len().max(1);
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                cell.name.span,
                format!(
                    "cell `{}` has {pools} pools and {} GPU resources: {pairs} (flavor, resource) pairs in one Kueue resource group, more than {MAX_GROUP_PAIRS}",
                    cell.name.value,
                    resources.len()
                ),
            )
            .with_label(format!("{pools} pools x {} resources = {pairs}", resources.len()))
            .with_note("the cell's root Cohort lists every pool's flavor with every GPU resource of the cell, `nvidia.com/gpu` included, and a tenant's ClusterQueue each pool it reserves in; Kueue allows at most 512 pairs in a resource group")
            .with_help(format!(
                "keep pools x GPU resources at most {MAX_GROUP_PAIRS}: with {} resources, at most {most_pools} pools; or use fewer distinct MIG profiles",
                resources.len()
            )),
        );
    }
}

/// A pool's ResourceFlavor carries its node labels (the pool's own and those tenantc adds) and
/// its taints, at most 8 of each, and no two taints with the same key and effect.
fn check_flavor_limits(
    pool: &Pool,
    flavor_labels: Option<&BTreeMap<String, String>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // In source order, so the finding points at the label written past the limit.
    let mut labels: Vec<&Spanned<String>> = pool.labels.iter().map(|(key, _)| key).collect();
    labels.sort_by_key(|key| key.span.start);
    let total = flavor_labels.map_or(labels.len(), BTreeMap::len);
    let added: Vec<&str> = flavor_labels
        .into_iter()
        .flat_map(BTreeMap::keys)
        .filter(|key| !labels.iter().any(|label| &label.value == *key))
        .map(String::as_str)
        .collect();
    let allowed = MAX_FLAVOR_LABELS.saturating_sub(added.len());
    if total > MAX_FLAVOR_LABELS
        && let Some(extra) = labels.get(allowed)
    {
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                extra.span,
                format!(
                    "pool `{}` gives its Kueue ResourceFlavor {total} node labels, more than {MAX_FLAVOR_LABELS}",
                    pool.name.value
                ),
            )
            .with_label(format!("label number {}", allowed + 1))
            .with_note(format!(
                "every node of the pool carries these {} labels, the flavor's nodeLabels: the pool's {} plus {}; a ResourceFlavor holds at most {MAX_FLAVOR_LABELS}",
                total,
                labels.len(),
                list_names(added.iter().copied())
            ))
            .with_help(format!(
                "keep at most {allowed} labels that tell the pool's nodes apart"
            )),
        );
    }
    if let Some(extra) = pool.taints.get(MAX_POOL_TAINTS) {
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                extra.key.span,
                format!(
                    "pool `{}` has {} taints; its Kueue ResourceFlavor takes at most {MAX_POOL_TAINTS}",
                    pool.name.value,
                    pool.taints.len()
                ),
            )
            .with_label(format!("taint number {}", MAX_POOL_TAINTS + 1))
            .with_note("a ResourceFlavor holds at most 8 node taints")
            .with_help(format!("keep at most {MAX_POOL_TAINTS} taints on the pool's nodes")),
        );
    }
    let mut seen: BTreeMap<(&str, &str), Span> = BTreeMap::new();
    for taint in &pool.taints {
        let key = (taint.key.value.as_str(), taint.effect.value.as_str());
        let Some(first) = seen.get(&key) else {
            seen.insert(key, taint.key.span);
            continue;
        };
        diagnostics.push(
            Diagnostic::error(
                Code::KueueLimitExceeded,
                taint.key.span,
                format!(
                    "pool `{}` repeats the taint key `{}` with effect `{}`",
                    pool.name.value, taint.key.value, taint.effect.value
                ),
            )
            .with_label("same key and effect as an earlier taint")
            .with_secondary(*first, "first taint with this key and effect")
            .with_note("a node holds one taint per key and effect, and Kueue's webhook refuses a ResourceFlavor whose nodeTaints repeat one")
            .with_help(format!(
                "keep one `{}` taint with effect `{}`, or give the other a different key or effect",
                taint.key.value, taint.effect.value
            )),
        );
    }
}

/// An NVLink domain fits the pool's GPUs: see [`nvlink_domain_fits`].
fn check_nvlink_domain(pool: &Pool, diagnostics: &mut Vec<Diagnostic>) {
    let Some(domain) = &pool.nvlink_domain else {
        return;
    };
    if nvlink_domain_fits(pool) {
        return;
    }
    let name = &pool.name.value;
    let per_node = pool.gpus_per_node.value;
    let gpus = pool.nodes.value.saturating_mul(per_node);
    let (message, help) = if domain.value > gpus {
        (
            format!(
                "an NVLink domain of {} GPUs is larger than pool `{name}` ({} nodes x {per_node} GPUs = {gpus})",
                domain.value, pool.nodes.value
            ),
            format!(
                "check `nvlink-domain gpus=` against the hardware: a domain holds at most the pool's {gpus} GPUs; declare the pool's full node count, or the domain's real size"
            ),
        )
    } else if domain.value > per_node && domain.value % per_node != 0 {
        (
            format!(
                "an NVLink domain of {} GPUs is not a whole number of pool `{name}`'s nodes of {per_node} GPUs",
                domain.value
            ),
            "check `nvlink-domain gpus=` against the hardware: a multi-node NVLink domain is made of whole nodes".to_string(),
        )
    } else if domain.value < per_node && per_node % domain.value.max(1) != 0 {
        (
            format!(
                "an NVLink domain of {} GPUs does not divide pool `{name}`'s nodes of {per_node} GPUs",
                domain.value
            ),
            format!(
                "check `nvlink-domain gpus=` against the hardware: a domain inside a node is a divisor of its {per_node} GPUs"
            ),
        )
    } else {
        (
            format!(
                "pool `{name}` ({gpus} GPUs) is not a whole number of its NVLink domains of {} GPUs",
                domain.value
            ),
            format!(
                "make the pool's node count a whole number of NVLink domains ({} nodes each)",
                domain.value / per_node.max(1)
            ),
        )
    };
    diagnostics.push(
        topology_error(domain.span, message)
            .with_label(format!("{} GPUs per NVLink domain", domain.value))
            .with_secondary(pool.nodes.span, format!("{} nodes x {per_node} GPUs", pool.nodes.value))
            .with_note("gangs, whole-domain reservations and topology levels are counted in NVLink domains, so a domain the pool cannot hold makes every one of them wrong")
            .with_help(help),
    );
}

fn topology_error(span: Span, message: String) -> Diagnostic {
    Diagnostic::error(Code::TopologyNotTree, span, message)
}

/// Levels go from coarse to fine, each domain a whole number of the next finer level's, over a
/// whole number of the coarsest domains, with hostname last and at most 16 levels; a pool whose
/// NVLink domain spans nodes has a level for it.
fn check_topology(pool: &Pool, diagnostics: &mut Vec<Diagnostic>) {
    let Some(topology) = &pool.topology else {
        return;
    };
    let name = &pool.name.value;
    let last = topology.levels.len().saturating_sub(1);
    // The levels that take part in the order checks: each label once, hostname only last.
    let mut chain: Vec<(&str, &Spanned<i64>)> = Vec::new();
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for (idx, level) in topology.levels.iter().enumerate() {
        let label = level.label.value.as_str();
        if let Some(first) = seen.get(label) {
            diagnostics.push(
                topology_error(
                    level.label.span,
                    format!("pool `{name}` repeats topology level `{label}`"),
                )
                .with_label("repeated here")
                .with_secondary(*first, "first given here")
                .with_help("give each node label once; Kueue requires unique levels"),
            );
            continue;
        }
        seen.insert(label, level.label.span);
        if label == HOSTNAME_LABEL {
            if idx != last {
                diagnostics.push(
                    topology_error(
                        level.label.span,
                        format!("`{HOSTNAME_LABEL}` is not the last topology level of pool `{name}`"),
                    )
                    .with_label("the finest level, one node per domain")
                    .with_help(format!(
                        "move it to the end, or leave it out: `{HOSTNAME_LABEL}` is the implied last level"
                    )),
                );
                continue;
            }
            if level.nodes.value != 1 {
                diagnostics.push(
                    topology_error(
                        level.nodes.span,
                        format!(
                            "a `{HOSTNAME_LABEL}` domain of pool `{name}` holds one node, not {}",
                            level.nodes.value
                        ),
                    )
                    .with_label("each node is its own hostname domain")
                    .with_help("write `nodes=1`, or leave the level out: it is implied"),
                );
                continue;
            }
        }
        chain.push((label, &level.nodes));
    }
    let implied = Spanned::new(1, topology.span);
    let explicit_hostname = chain
        .last()
        .is_some_and(|(label, _)| *label == HOSTNAME_LABEL);
    let total_levels = topology.levels.len()
        + usize::from(
            topology
                .levels
                .last()
                .is_none_or(|level| level.label.value != HOSTNAME_LABEL),
        );
    if total_levels > MAX_TOPOLOGY_LEVELS {
        let first_extra = MAX_TOPOLOGY_LEVELS - usize::from(!explicit_hostname);
        if let Some(level) = topology.levels.get(first_extra) {
            diagnostics.push(
                topology_error(
                    level.label.span,
                    format!(
                        "pool `{name}` has {total_levels} topology levels with `{HOSTNAME_LABEL}`, more than Kueue's {MAX_TOPOLOGY_LEVELS}"
                    ),
                )
                .with_label("past the limit")
                .with_help(format!(
                    "keep at most {} levels above `{HOSTNAME_LABEL}`",
                    MAX_TOPOLOGY_LEVELS - 1
                )),
            );
        }
    }
    if !explicit_hostname {
        chain.push((HOSTNAME_LABEL, &implied));
    }
    for pair in chain.windows(2) {
        let [(coarse_label, coarse), (fine_label, fine)] = pair else {
            continue;
        };
        if fine.value >= coarse.value {
            let diagnostic = if *fine_label == HOSTNAME_LABEL && !explicit_hostname {
                topology_error(
                    coarse.span,
                    format!(
                        "topology level `{coarse_label}` of pool `{name}` holds one node per domain, as `{HOSTNAME_LABEL}` does"
                    ),
                )
                .with_label("not coarser than the implied hostname level")
                .with_help(format!(
                    "remove the level, or give it more than one node; `{HOSTNAME_LABEL}` is the implied last level"
                ))
            } else {
                topology_error(
                    fine.span,
                    format!(
                        "topology level `{fine_label}` of pool `{name}` holds {} nodes per domain, not fewer than `{coarse_label}` ({})",
                        fine.value, coarse.value
                    ),
                )
                .with_label("levels go from coarse to fine")
                .with_secondary(coarse.span, format!("`{coarse_label}` holds {}", coarse.value))
                .with_help("order the levels from the largest domain to the smallest, each smaller than the one before")
            };
            diagnostics.push(diagnostic);
        } else if coarse.value % fine.value != 0 {
            diagnostics.push(
                topology_error(
                    fine.span,
                    format!(
                        "one `{coarse_label}` domain of pool `{name}` ({} nodes) is not a whole number of `{fine_label}` domains ({} nodes)",
                        coarse.value, fine.value
                    ),
                )
                .with_label(format!("{} does not divide {}", fine.value, coarse.value))
                .with_secondary(coarse.span, format!("`{coarse_label}` holds {}", coarse.value))
                .with_help(format!(
                    "make `{fine_label}` a divisor of {}, so each `{coarse_label}` domain is made of whole `{fine_label}` domains",
                    coarse.value
                )),
            );
        }
    }
    if let Some((coarse_label, coarse)) = chain.first()
        && coarse.value > 0
        && pool.nodes.value % coarse.value != 0
    {
        diagnostics.push(
            topology_error(
                coarse.span,
                format!(
                    "pool `{name}` has {} nodes, not a whole number of `{coarse_label}` domains of {}",
                    pool.nodes.value, coarse.value
                ),
            )
            .with_label(format!("{} does not divide {}", coarse.value, pool.nodes.value))
            .with_secondary(pool.nodes.span, "the pool's nodes")
            .with_help(format!(
                "make the pool's node count a multiple of {}, or `{coarse_label}` a divisor of {}",
                coarse.value, pool.nodes.value
            )),
        );
    }
    check_nvlink_level(pool, &chain, diagnostics);
}

/// A pool whose NVLink domain spans nodes needs a level that is exactly that domain, or Kueue
/// cannot keep a gang inside it.
fn check_nvlink_level(
    pool: &Pool,
    chain: &[(&str, &Spanned<i64>)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let (Some(domain), Some(topology)) = (&pool.nvlink_domain, &pool.topology) else {
        return;
    };
    let per_node = pool.gpus_per_node.value.max(1);
    if domain.value <= per_node {
        return;
    }
    if !nvlink_domain_fits(pool) {
        // Reported by `check_nvlink_domain`.
        return;
    }
    let name = &pool.name.value;
    let domain_nodes = domain.value / per_node;
    if chain.iter().any(|(_, nodes)| nodes.value == domain_nodes) {
        return;
    }
    let position = chain
        .iter()
        .position(|(_, nodes)| nodes.value < domain_nodes);
    let place = match position {
        Some(0) | None => chain
            .first()
            .map(|(label, _)| format!("before `{label}`, as the coarsest level"))
            .unwrap_or_default(),
        Some(idx) => {
            let coarser = chain
                .get(idx - 1)
                .map(|(label, _)| *label)
                .unwrap_or_default();
            let finer = chain.get(idx).map(|(label, _)| *label).unwrap_or_default();
            format!("between `{coarser}` and `{finer}`")
        }
    };
    diagnostics.push(
        topology_error(
            domain.span,
            format!(
                "no topology level of pool `{name}` holds exactly one NVLink domain ({domain_nodes} nodes)"
            ),
        )
        .with_label(format!("{} GPUs = {domain_nodes} nodes of {per_node}", domain.value))
        .with_secondary(topology.span, "levels declared here")
        .with_help(format!(
            "add `level \"<the node label naming the NVLink domain>\" nodes={domain_nodes}` {place}"
        )),
    );
}
