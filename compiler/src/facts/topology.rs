//! The topology of a pool as Kueue and the capacity figures see it: its levels, coarse to fine,
//! with the implied hostname level, and its NVLink domain.
//!
//! Consumes: a validated pool. Produces: [`Level`]s and GPU counts.
//!
//! Invariant: `validate/kueue/` checks, `plan` emits and the effective capacity counts the
//! same levels, so a gang the checks accept fits the Topology Kueue is given.

use crate::model::{HOSTNAME_LABEL, Pool};

/// A topology level as Kueue sees it: a node label and the nodes one domain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    /// The node label.
    pub label: String,
    /// Nodes per domain.
    pub nodes: i64,
}

/// A pool's topology levels from coarse to fine, with `kubernetes.io/hostname` (one node per
/// domain) as the last level; empty when the pool declares no topology.
pub fn topology_levels(pool: &Pool) -> Vec<Level> {
    let Some(topology) = &pool.topology else {
        return Vec::new();
    };
    let mut levels: Vec<Level> = topology
        .levels
        .iter()
        .map(|level| Level {
            label: level.label.value.clone(),
            nodes: level.nodes.value,
        })
        .collect();
    if levels
        .last()
        .is_none_or(|last| last.label != HOSTNAME_LABEL)
    {
        levels.push(Level {
            label: HOSTNAME_LABEL.to_string(),
            nodes: 1,
        });
    }
    levels
}

/// The GPUs of one NVLink domain of a pool: its `nvlink-domain`, or one node's GPUs.
pub fn nvlink_domain_gpus(pool: &Pool) -> i64 {
    pool.nvlink_domain
        .as_ref()
        .map_or(pool.gpus_per_node.value, |domain| domain.value)
}

/// Whether a pool's NVLink domain fits its hardware: the pool's GPUs are a whole number of
/// domains, and a domain is either a divisor of one node's GPUs or a whole number of nodes.
pub fn nvlink_domain_fits(pool: &Pool) -> bool {
    let domain = nvlink_domain_gpus(pool);
    let per_node = pool.gpus_per_node.value;
    let gpus = pool.nodes.value.saturating_mul(per_node);
    domain > 0
        && per_node > 0
        && gpus % domain == 0
        && (per_node % domain == 0 || domain % per_node == 0)
}
