//! Network declaration checks: the address blocks and namespaces that a cell's NetworkPolicies
//! are made from.
//!
//! Consumes: the cells of the [`Fleet`] (their `dns`, `metrics` and `endpoint` declarations, whose
//! address blocks `schema` read with [`crate::model::parse_cidr`], reporting
//! `network-cidr-invalid`). Produces: `network-egress-too-broad` diagnostics.
//!
//! Invariants:
//! - Pure; every finding points at the declaration that caused it.
//! - An address block that reaches `lower` is canonical (no host bits below its prefix), so the
//!   emitted `ipBlock.cidr` is exactly what the API server stores.
//! - No endpoint block is shorter than [`MIN_ENDPOINT_PREFIX`] bits: egress on 443 to a large part
//!   of the address space (`0.0.0.0/0` above all) would reach any host outside the cluster, and on
//!   CNIs that match pod addresses by `ipBlock`, other tenants' pods too.

use crate::diag::{Code, Diagnostic};
use crate::model::Fleet;

/// The shortest prefix an endpoint's block may have: a `/8` is already 16.7 million IPv4
/// addresses, and anything shorter covers a sizeable part of the whole address space.
pub const MIN_ENDPOINT_PREFIX: u8 = 8;

/// Checks every cell's endpoints.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        for endpoint in &cell.endpoints {
            let cidr = &endpoint.cidr;
            if cidr.value.prefix < MIN_ENDPOINT_PREFIX {
                let all = if cidr.value.prefix == 0 {
                    "every address".to_string()
                } else {
                    format!("1/{} of all addresses", 1_u64 << cidr.value.prefix)
                };
                diagnostics.push(
                    Diagnostic::error(
                        Code::NetworkEgressTooBroad,
                        cidr.span,
                        format!(
                            "endpoint `{}` opens egress to `{}`",
                            endpoint.name.value, cidr.value
                        ),
                    )
                    .with_label(format!(
                        "{all}: a prefix shorter than /{MIN_ENDPOINT_PREFIX} is refused"
                    ))
                    .with_help(
                        "write the address blocks of the weight store or object store only, one `endpoint` each",
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::diag::Code;
    use crate::validate::test_support::codes;

    const TENANT: &str = r#"tenant "t1" {
    org "o"
    team "a"
    trust "soft"
    groups admin="t1-admins"
    quota cell="c1" cpu="8" memory="32Gi" pods=20
    workload "train" service-account="trainer"
}
"#;

    fn cell(endpoints: &str) -> String {
        format!(
            "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n{endpoints}}}\n"
        )
    }

    #[test]
    fn refuses_endpoint_blocks_shorter_than_a_slash_eight() {
        for (block, expected) in [
            ("0.0.0.0/0", vec![Code::NetworkEgressTooBroad]),
            ("128.0.0.0/1", vec![Code::NetworkEgressTooBroad]),
            ("::/0", vec![Code::NetworkEgressTooBroad]),
            ("10.0.0.0/8", vec![]),
            ("52.216.0.0/15", vec![]),
        ] {
            let cell = cell(&format!("    endpoint \"store\" cidr=\"{block}\"\n"));
            assert_eq!(
                codes(&[("cells/c1.kdl", &cell), ("tenants/t1.kdl", TENANT)]),
                expected,
                "{block}"
            );
        }
    }

    #[test]
    fn reports_invalid_blocks_at_the_schema_stage() {
        let cell = cell(
            "    dns node-local=\"169.254.20.300\"\n    endpoint \"store\" cidr=\"10.1.2.3/16\"\n",
        );
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell), ("tenants/t1.kdl", TENANT)]),
            vec![Code::NetworkCidrInvalid, Code::NetworkCidrInvalid]
        );
    }

    #[test]
    fn a_metrics_namespace_may_not_be_a_tenant_namespace() {
        let cell = cell("    metrics namespace=\"t1-train\"\n");
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell), ("tenants/t1.kdl", TENANT)]),
            vec![Code::NamespaceCollision, Code::NamespaceCollision]
        );
    }
}
