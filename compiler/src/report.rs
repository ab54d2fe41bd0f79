//! Reports read from the plan: the quota report of a cell.
//!
//! Consumes: a cell plan. Produces: `reports/quota.{json,md}` bodies (without headers).
//!
//! Invariant: reads only the plan, in its sorted order.

use crate::plan::CellPlan;

/// The quota report of a cell as `(json, markdown)`.
pub fn quota(cell: &CellPlan) -> (serde_json::Value, String) {
    (
        serde_json::json!({ "cell": cell.name }),
        format!("# Quota of cell `{}`\n", cell.name),
    )
}
