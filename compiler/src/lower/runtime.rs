//! RuntimeClasses of a cell.
//!
//! Consumes: the cell's resolved runtime classes (`plan::runtime`). Produces: one
//! `node.k8s.io/v1` RuntimeClass per class as `(file in <cell>/cluster/, object)`.
//!
//! Invariants: a plain mapping of the plan; `scheduling` carries the node selector of the
//! class's pools and never a toleration (the RuntimeClass admission plugin would merge it into
//! every pod naming the class, letting a tenant reach a pool beyond its pinning); a class that
//! runs on every node has no `scheduling` at all.

use k8s_openapi::api::node::v1::{RuntimeClass, Scheduling};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{body, cluster_meta};
use crate::emit::Body;
use crate::emit::InternalError;
use crate::plan::CellPlan;

/// The RuntimeClasses of a cell.
pub(super) fn objects(cell: &CellPlan) -> Result<Vec<(String, Body)>, InternalError> {
    cell.runtime_classes
        .iter()
        .map(|class| {
            let object = RuntimeClass {
                // Its handler is immutable.
                metadata: ObjectMeta {
                    annotations: Some(super::gitops::replace_annotations()),
                    ..cluster_meta(&class.name)
                },
                handler: class.handler.clone(),
                overhead: None,
                scheduling: (!class.node_selector.is_empty()).then(|| Scheduling {
                    node_selector: Some(class.node_selector.clone()),
                    tolerations: None,
                }),
            };
            Ok((format!("runtimeclass-{}.yaml", class.name), body(&object)?))
        })
        .collect()
}
