//! Runtime classes, resolved: the node selector that keeps a runtime class's pods on the pools
//! whose nodes run its handler.
//!
//! Consumes: a cell and its resolved pools. Produces: one [`RuntimeClassPlan`] per declared
//! runtime class, sorted by name, and a `runtime-class-pools-unselectable` error for a class
//! whose pools share no node label.
//!
//! Invariants:
//! - The node selector is exactly the labels that every node of every listed pool carries
//!   (`PoolPlan::node_labels`), so it selects all of them; it may select other nodes too when
//!   other pools carry the same labels, which the admission policy's toleration rule and Kueue's
//!   flavors bound.
//! - No toleration is ever put on a RuntimeClass: the RuntimeClass admission plugin merges them
//!   into every pod that names the class, which would let a tenant reach pools beyond its
//!   pinning; pool tolerations come only from Kueue's flavors.

use std::collections::BTreeMap;

use super::PoolPlan;
use crate::diag::{Code, Diagnostic};
use crate::model::{Cell, Trust};

/// A runtime class of a cell, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeClassPlan {
    /// The RuntimeClass name.
    pub name: String,
    /// The CRI handler.
    pub handler: String,
    /// The trust classes allowed to use it, sorted by their declaration spelling.
    pub trust: Vec<Trust>,
    /// The node selector of its pools; empty when it runs on every node of the cell.
    pub node_selector: BTreeMap<String, String>,
}

/// Resolves the runtime classes of a cell over its resolved pools.
pub(super) fn resolve(cell: &Cell, pools: &[PoolPlan]) -> (Vec<RuntimeClassPlan>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut classes = Vec::new();
    for class in &cell.runtime_classes {
        let mut common: Option<BTreeMap<String, String>> = None;
        for name in &class.pools {
            let Some(pool) = pools.iter().find(|pool| pool.name == name.value) else {
                continue;
            };
            common = Some(match common {
                None => pool.node_labels.clone(),
                Some(common) => common
                    .into_iter()
                    .filter(|(key, value)| pool.node_labels.get(key) == Some(value))
                    .collect(),
            });
        }
        let node_selector = common.unwrap_or_default();
        if !class.pools.is_empty() && node_selector.is_empty() {
            diagnostics.push(
                Diagnostic::error(
                    Code::RuntimeClassPoolsUnselectable,
                    class.name.span,
                    format!(
                        "the pools of runtime class `{}` share no node label",
                        class.name.value
                    ),
                )
                .with_label("no node selector can keep its pods on these pools")
                .with_note("a RuntimeClass's `scheduling.nodeSelector` is one set of labels that every node it selects must carry")
                .with_help("give the pools a common `label`, such as `label \"runtime.tenantc.io/kata\" \"true\"`, or split the runtime class"),
            );
        }
        let mut trust: Vec<Trust> = class.trust.iter().map(|t| t.value).collect();
        trust.sort_unstable_by_key(|trust| trust.as_str());
        trust.dedup();
        classes.push(RuntimeClassPlan {
            name: class.name.value.clone(),
            handler: class.handler.value.clone(),
            trust,
            node_selector,
        });
    }
    classes.sort_by(|left, right| left.name.cmp(&right.name));
    classes.dedup_by(|later, earlier| later.name == earlier.name);
    (classes, diagnostics)
}
