//! Network declaration checks: the address blocks and namespaces that a cell's NetworkPolicies
//! are made from.
//!
//! Consumes: the cells of the [`Fleet`] (their `dns`, `metrics` and `endpoint` declarations) and,
//! at the `schema` boundary, the text of each address block ([`parse_cidr`]).
//! Produces: `network-cidr-invalid` (from `schema`, through [`parse_cidr`]) and
//! `network-egress-too-broad` diagnostics.
//!
//! Invariants:
//! - Pure; every finding points at the declaration that caused it.
//! - An address block that reaches `lower` is canonical (no host bits below its prefix), so the
//!   emitted `ipBlock.cidr` is exactly what the API server stores.
//! - No endpoint block is shorter than [`MIN_ENDPOINT_PREFIX`] bits: egress on 443 to a large part
//!   of the address space (`0.0.0.0/0` above all) would reach any host outside the cluster, and on
//!   CNIs that match pod addresses by `ipBlock`, other tenants' pods too.

use std::net::IpAddr;

use crate::diag::{Code, Diagnostic};
use crate::model::{Cidr, Fleet};

/// The shortest prefix an endpoint's block may have: a `/8` is already 16.7 million IPv4
/// addresses, and anything shorter covers a sizeable part of the whole address space.
pub const MIN_ENDPOINT_PREFIX: u8 = 8;

/// Parses `a.b.c.d/n`, an IPv6 block, or a bare address (a block of one address).
///
/// The error says what is wrong, for the label of `network-cidr-invalid`.
pub fn parse_cidr(text: &str) -> Result<Cidr, String> {
    let (address_text, prefix_text) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let address: IpAddr = address_text
        .parse()
        .map_err(|_| format!("`{address_text}` is not an IPv4 or IPv6 address"))?;
    let bits: u8 = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix_text {
        None => bits,
        Some(prefix) => {
            let digits_only = !prefix.is_empty()
                && prefix.chars().all(|ch| ch.is_ascii_digit())
                && (prefix.len() == 1 || !prefix.starts_with('0'));
            match prefix.parse::<u8>() {
                Ok(value) if digits_only && value <= bits => value,
                _ => return Err(format!("the prefix length must be 0 to {bits}")),
            }
        }
    };
    let network = mask(address, prefix);
    if network != address {
        return Err(format!(
            "host bits are set below the prefix; the block is `{network}/{prefix}`"
        ));
    }
    Ok(Cidr { address, prefix })
}

/// The address with every bit below `prefix` cleared.
fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & kept).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & kept).into())
        }
    }
}

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

    use super::parse_cidr;
    use crate::diag::Code;
    use crate::validate::test_support::codes;

    #[test]
    fn parses_canonical_blocks_and_bare_addresses() {
        assert_eq!(
            parse_cidr("10.40.0.0/16").unwrap().to_string(),
            "10.40.0.0/16"
        );
        assert_eq!(
            parse_cidr("169.254.20.10").unwrap().to_string(),
            "169.254.20.10/32"
        );
        assert_eq!(parse_cidr("0.0.0.0/0").unwrap().to_string(), "0.0.0.0/0");
        assert_eq!(
            parse_cidr("fd00:10::/32").unwrap().to_string(),
            "fd00:10::/32"
        );
        assert_eq!(parse_cidr("fd00::1").unwrap().to_string(), "fd00::1/128");
    }

    #[test]
    fn rejects_blocks_that_are_not_canonical_cidrs() {
        for text in [
            "10.40.0.1/16",
            "10.40.0.0/33",
            "10.40.0.0/",
            "10.40.0.0/016",
            "10.40.0.0/+8",
            "10.40.0/16",
            "010.40.0.0/16",
            "s3.amazonaws.com",
            "fd00::1/64",
            "fd00::/129",
            "",
        ] {
            assert!(parse_cidr(text).is_err(), "{text} was accepted");
        }
        assert_eq!(
            parse_cidr("10.40.0.1/16").unwrap_err(),
            "host bits are set below the prefix; the block is `10.40.0.0/16`"
        );
    }

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
