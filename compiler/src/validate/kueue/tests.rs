//! Tests of the Kueue checks, on fleets built in the test.
//!
//! The shared arithmetic lives in `facts/split.rs` and `facts/topology.rs`; its tests stay here
//! with the fleets they are built on.

use super::burst::ratio_text;
use crate::diag::Code;
use crate::facts::split::{
    FleetPart, FleetSplitError, fleet_cell_parts, fleet_split, pool_ceilings,
    reserved_gpus_of_model, split_by_shares, split_ceilings,
};
use crate::facts::topology::{nvlink_domain_gpus, topology_levels};
use crate::model::{HOSTNAME_LABEL, WorkloadKind};
use crate::validate::test_support::{codes, compile_files, example_files, fleet};

/// A deterministic generator for the seeded property loops.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound.max(1)
    }
}

/// A cell with an exclusive pool `train` of 8 nodes x 8 GPUs (64), one node per NVLink
/// domain, blocks of 4 nodes and racks of 2, and a MIG pool `infer`; `extra` goes into the
/// cell body.
fn cell(extra: &str) -> String {
    format!(
        r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    {extra}
    pool "train" {{
        gpu "H100-80GB-SXM"
        nodes 8 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        topology {{
            level "example.com/block" nodes=4
            level "example.com/rack" nodes=2
        }}
    }}
    pool "infer" {{
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        mig-layout "small" {{ profile "1g.10gb" 7; }}
    }}
}}
"#
    )
}

/// A tenant with `train` and `infer` workloads (the given shares) and a quota in `c1`; each
/// reservation in the topology pool `train` gets a small part of the ceilings, which such a
/// pool requires (see [`raw_tenant`] for a tenant without them).
fn tenant(name: &str, quota_props: &str, quota_body: &str, extra: &str) -> String {
    let body = quota_body.replace(
        "pool \"train\" ",
        "pool \"train\" cpu=\"1m\" memory=\"1\" pods=1 ",
    );
    raw_tenant(name, quota_props, &body, extra)
}

/// A tenant with `train` and `infer` workloads and a quota in `c1`, written as given.
fn raw_tenant(name: &str, quota_props: &str, quota_body: &str, extra: &str) -> String {
    format!(
        r#"tenant "{name}" {{
    org "acme"
    team "research"
    trust "mig"
    groups admin="{name}-admins"
    workload "train" service-account="trainer" priority="batch"
    workload "infer" service-account="server" priority="batch"
    quota cell="c1" cpu="64" memory="256Gi" pods=100 {quota_props} {{
        {quota_body}
    }}
    {extra}
}}
"#
    )
}

fn check_codes(cell_extra: &str, tenants: &[String]) -> Vec<Code> {
    let cell = cell(cell_extra);
    let mut files = vec![("cells/c1.kdl".to_string(), cell)];
    for text in tenants {
        let name = text.split('"').nth(1).unwrap_or_default().to_string();
        files.push((format!("tenants/{name}.kdl"), text.clone()));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    codes(&files)
}

fn one(body: &str) -> Vec<Code> {
    check_codes("", &[tenant("t0", "", body, "")])
}

/// The codes for one raw tenant (no parts added to `train` reservations).
fn raw(body: &str) -> Vec<Code> {
    check_codes("", &[raw_tenant("t0", "", body, "")])
}

#[test]
fn topology_pools_need_a_part_of_each_ceiling() {
    // The topology pool `train` without parts, with some of them, and with all.
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train""#),
        [Code::PoolCeilingMissing]
    );
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train" cpu="8""#),
        [Code::PoolCeilingMissing]
    );
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train" cpu="8" memory="64Gi" pods=10"#),
        []
    );
    // Parts on two reservations of the pool count together.
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train" cpu="8"
                   pool "train" reserved=8 workload="infer" memory="64Gi" pods=10"#),
        []
    );
    // Once the queue counts per pool, the MIG pool needs its parts as well.
    assert_eq!(
        raw(
            r#"pool "train" reserved=8 workload="train" cpu="8" memory="64Gi" pods=10
                   pool "infer" profile="1g.10gb" reserved=7 workload="infer""#
        ),
        [Code::PoolCeilingMissing]
    );
    // A declared part alone turns per-pool counting on, without a topology pool.
    assert_eq!(
        raw(r#"pool "infer" profile="1g.10gb" reserved=7 workload="infer" cpu="2""#),
        [Code::PoolCeilingMissing]
    );
    // Without topology and without parts the ceiling flavor holds it all.
    assert_eq!(
        raw(r#"pool "infer" profile="1g.10gb" reserved=7 workload="infer""#),
        []
    );
}

#[test]
fn pool_parts_may_not_exceed_the_ceilings() {
    // The ceilings are cpu 64, memory 256Gi, pods 100.
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train" cpu="64" memory="256Gi" pods=100"#),
        []
    );
    assert_eq!(
        raw(r#"pool "train" reserved=8 workload="train" cpu="64001m" memory="256Gi" pods=100"#),
        [Code::PoolCeilingsExceedCeiling]
    );
    assert_eq!(
        raw(
            r#"pool "train" reserved=8 workload="train" cpu="40" memory="200Gi" pods=60
                   pool "infer" profile="1g.10gb" reserved=7 workload="infer" cpu="40" memory="57Gi" pods=41"#
        ),
        [Code::PoolCeilingsExceedCeiling; 3]
    );
}

#[test]
fn a_one_group_queue_stays_within_kueues_flavor_limit() {
    // 64 pools, the first with a topology: with the ceiling flavor, 65 flavors in the one
    // resource group; 63 pools fit.
    let codes_for = |pools: usize| {
        let mut cell_text = String::from(
            "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1000\n",
        );
        let mut body = String::new();
        for idx in 0..pools {
            let (nodes, topology) = if idx == 0 {
                (4, "topology { level \"example.com/rack\" nodes=2; }")
            } else {
                (1, "")
            };
            cell_text.push_str(&format!(
                    "    pool \"p{idx}\" {{ gpu \"H100-80GB-SXM\"; nodes {nodes} gpus-per-node=8; sharing \"exclusive\"; {topology} }}\n"
                ));
            body.push_str(&format!(
                "pool \"p{idx}\" reserved=1 cpu=\"1m\" memory=\"1\" pods=1\n"
            ));
        }
        cell_text.push_str("}\n");
        let tenant_text = format!(
            "tenant \"t0\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"t0-admins\"\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"64\" memory=\"64Gi\" pods=100 {{\n{body}    }}\n}}\n"
        );
        codes(&[
            ("cells/c1.kdl", &cell_text),
            ("tenants/t0.kdl", &tenant_text),
        ])
    };
    assert_eq!(codes_for(63), []);
    assert_eq!(codes_for(64), [Code::KueueLimitExceeded]);
}

#[test]
fn pool_ceilings_sum_each_pools_reservations() {
    let fleet = crate::validate::test_support::fleet(&[
        ("cells/c1.kdl", &cell("")),
        (
            "tenants/t0.kdl",
            &raw_tenant(
                "t0",
                "",
                r#"pool "train" reserved=8 workload="train" cpu="1500m" memory="1Gi" pods=3
                       pool "infer" profile="1g.10gb" reserved=7 cpu="2" memory="2Gi" pods=4
                       pool "train" reserved=8 workload="infer" cpu="500m" memory="1Gi" pods=2"#,
                "",
            ),
        ),
    ]);
    let quota = &fleet.tenants[0].quotas[0];
    let parts = pool_ceilings(quota, &fleet.cells[0]).unwrap();
    let shown: Vec<(String, String, String, i64)> = parts
        .iter()
        .map(|part| {
            (
                part.pool.clone(),
                part.cpu.to_string(),
                part.memory.to_string(),
                part.pods,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("train".to_string(), "2".to_string(), "2Gi".to_string(), 5),
            ("infer".to_string(), "2".to_string(), "2Gi".to_string(), 4),
        ]
    );
    // Without topology pools or parts there are none.
    let fleet = crate::validate::test_support::fleet(&[
        ("cells/c1.kdl", &cell("")),
        (
            "tenants/t0.kdl",
            &raw_tenant("t0", "", r#"pool "infer" profile="1g.10gb" reserved=7"#, ""),
        ),
    ]);
    assert_eq!(
        pool_ceilings(&fleet.tenants[0].quotas[0], &fleet.cells[0]),
        None
    );
}

#[test]
fn accepts_kueue_fields_that_hold() {
    let body = r#"pool "train" reserved=32 burst=16 lend=16 gang=32 within="example.com/block" workload="train""#;
    assert_eq!(one(body), []);
    let with_weights = tenant("t0", "weight=3", body, "");
    assert_eq!(
        check_codes(r#"oversubscribe 1.5; org "acme" weight=2"#, &[with_weights]),
        []
    );
}

#[test]
fn rejects_lending_more_than_reserved() {
    assert_eq!(
        one(r#"pool "train" reserved=32 lend=33 workload="train""#),
        [Code::LendAboveReserved]
    );
    assert_eq!(
        one(r#"pool "train" reserved=32 lend=32 workload="train""#),
        []
    );
}

#[test]
fn warns_when_bursts_exceed_capacity_times_the_ratio() {
    let a = tenant(
        "a",
        "",
        r#"pool "train" reserved=32 burst=32 workload="train""#,
        "",
    );
    let b = tenant(
        "b",
        "",
        r#"pool "train" reserved=16 burst=16 workload="train""#,
        "",
    );
    let both = [a, b];
    // Both are Acme's, so the cell lists them (`org-membership-undeclared` otherwise).
    let acme = r#"org "acme" { tenants "a" "b"; }"#;
    // 96 against 64.
    assert_eq!(check_codes(acme, &both), [Code::BurstOversubscribed]);
    assert_eq!(
        check_codes(&format!("oversubscribe 1.49; {acme}"), &both),
        [Code::BurstOversubscribed]
    );
    assert_eq!(
        check_codes(&format!("oversubscribe 1.5; {acme}"), &both),
        []
    );
    // Reserved alone above capacity is the capacity error only.
    let big = tenant(
        "c",
        "",
        r#"pool "train" reserved=40 burst=8 workload="train""#,
        "",
    );
    assert_eq!(
        check_codes(
            r#"oversubscribe 4; org "acme" { tenants "a" "c"; }"#,
            &[big.clone(), both[0].clone()]
        ),
        [Code::QuotaOverCapacity]
    );
    // MIG slices are counted per profile: 2 nodes x 8 GPUs x 7 slices of `1g.10gb`.
    let slices = tenant(
        "d",
        "",
        r#"pool "infer" profile="1g.10gb" reserved=100 burst=13 workload="infer""#,
        "",
    );
    assert_eq!(check_codes("", &[slices]), [Code::BurstOversubscribed]);
}

#[test]
fn rejects_gangs_that_fit_no_domain() {
    let gang = |props: &str| {
        one(&format!(
            r#"pool "train" reserved=64 {props} workload="train""#
        ))
    };
    assert_eq!(gang("gang=8"), []);
    assert_eq!(gang("gang=16"), [Code::GangExceedsDomain]);
    assert_eq!(gang(r#"gang=16 within="example.com/rack""#), []);
    assert_eq!(
        gang(r#"gang=16 within="example.com/rak""#),
        [Code::GangExceedsDomain]
    );
    assert_eq!(
        gang(r#"gang=24 within="example.com/rack""#),
        [Code::GangExceedsDomain]
    );
    assert_eq!(
        gang(r#"gang=64 within="example.com/block""#),
        [Code::GangExceedsDomain]
    );
    assert_eq!(gang(r#"gang=8 within="kubernetes.io/hostname""#), []);
    assert_eq!(
        gang(r#"gang=9 within="kubernetes.io/hostname""#),
        [Code::GangExceedsDomain]
    );
}

#[test]
fn rejects_gangs_larger_than_reserved_plus_burst() {
    let gang = |props: &str| one(&format!(r#"pool "train" {props} workload="train""#));
    assert_eq!(gang("reserved=8 burst=8 gang=8"), []);
    assert_eq!(
        gang(r#"reserved=8 burst=7 gang=16 within="example.com/rack""#),
        [Code::GangExceedsQuota]
    );
    assert_eq!(
        gang(r#"reserved=8 burst=8 gang=16 within="example.com/rack""#),
        []
    );
    // Without a pool to compare with, the quota is still checked.
    assert_eq!(
        one(r#"pool "trian" reserved=8 gang=9 workload="train""#),
        [Code::PoolUnknown, Code::GangExceedsQuota]
    );
}

#[test]
fn gangs_apply_to_exclusive_pools_only() {
    assert_eq!(
        one(r#"pool "infer" profile="1g.10gb" reserved=4 gang=2 workload="infer""#),
        [Code::FieldNotApplicable]
    );
}

#[test]
fn warns_on_reservations_that_split_an_nvlink_domain() {
    assert_eq!(
        one(r#"pool "train" reserved=12 workload="train""#),
        [Code::ReservationSplitsNvlinkDomain]
    );
    assert_eq!(
        one(r#"pool "train" reserved=4 workload="train""#),
        [Code::ReservationSplitsNvlinkDomain]
    );
    assert_eq!(one(r#"pool "train" reserved=16 workload="train""#), []);
    assert_eq!(one(r#"pool "train" reserved=0 workload="train""#), []);
}

/// The codes of a cell whose pool has the given nodes, NVLink domain and levels.
fn topology_codes(nodes: i64, nvlink: i64, levels: &str) -> Vec<Code> {
    let cell = format!(
        r#"cell "c1" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    pool "p" {{
        gpu "H100-80GB-SXM"
        nodes {nodes} gpus-per-node=4
        sharing "exclusive"
        nvlink-domain gpus={nvlink}
        topology {{ {levels} }}
    }}
}}
"#
    );
    codes(&[("cells/c1.kdl", &cell)])
}

#[test]
fn accepts_topologies_that_form_a_strict_tree() {
    assert_eq!(
        topology_codes(32, 4, r#"level "b" nodes=16; level "r" nodes=4"#),
        []
    );
    assert_eq!(
        topology_codes(
            32,
            4,
            r#"level "b" nodes=16; level "r" nodes=4; level "kubernetes.io/hostname" nodes=1"#
        ),
        []
    );
    assert_eq!(
        topology_codes(32, 8, r#"level "b" nodes=16; level "nvl" nodes=2"#),
        []
    );
    assert_eq!(
        topology_codes(3, 4, r#"level "kubernetes.io/hostname" nodes=1"#),
        []
    );
}

#[test]
fn rejects_topologies_that_are_not_a_strict_tree() {
    let not_tree = [Code::TopologyNotTree];
    for levels in [
        // Finer levels must hold fewer nodes.
        r#"level "b" nodes=4; level "r" nodes=8"#,
        r#"level "b" nodes=4; level "r" nodes=4"#,
        // Each domain a whole number of the next finer one.
        r#"level "b" nodes=16; level "r" nodes=3"#,
        // One node per domain is the hostname level's.
        r#"level "b" nodes=16; level "r" nodes=1"#,
        // Hostname last, with one node.
        r#"level "kubernetes.io/hostname" nodes=1; level "b" nodes=16"#,
        r#"level "b" nodes=16; level "kubernetes.io/hostname" nodes=2"#,
        // Each label once.
        r#"level "b" nodes=16; level "b" nodes=4"#,
        // The pool's 32 nodes are a whole number of the coarsest domains.
        r#"level "b" nodes=12; level "r" nodes=4"#,
        r#"level "b" nodes=64"#,
    ] {
        assert_eq!(topology_codes(32, 4, levels), not_tree, "{levels}");
    }
    // An NVLink domain of 2 nodes needs a level of exactly 2 nodes.
    assert_eq!(
        topology_codes(32, 8, r#"level "b" nodes=16; level "r" nodes=4"#),
        not_tree
    );
    // An NVLink domain of a node and a half has no level at all.
    assert_eq!(topology_codes(32, 6, r#"level "b" nodes=16"#), not_tree);
    // Kueue takes 16 levels with hostname.
    let levels = |count: u32| {
        (0..count)
            .map(|idx| format!("level \"l{idx}\" nodes={}", 1_u64 << (count - idx)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert_eq!(topology_codes(1 << 15, 4, &levels(15)), []);
    assert_eq!(topology_codes(1 << 16, 4, &levels(16)), not_tree);
}

/// The codes of a cell whose exclusive pool has the given nodes of 8 GPUs and NVLink domain,
/// without topology, and a tenant reserving `reserved` in it.
fn nvlink_codes(nodes: i64, nvlink: i64, reserved: i64) -> Vec<Code> {
    let cell = format!(
        "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"exclusive\"\n        nvlink-domain gpus={nvlink}\n    }}\n}}\n"
    );
    let tenant = format!(
        "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"p\" reserved={reserved}\n    }}\n}}\n"
    );
    codes(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)])
}

#[test]
fn rejects_nvlink_domains_the_pool_cannot_hold() {
    // Whole nodes, or a divisor of a node, over a whole number of domains.
    assert_eq!(nvlink_codes(2, 16, 16), []);
    assert_eq!(nvlink_codes(2, 4, 16), []);
    assert_eq!(nvlink_codes(9, 72, 72), []);
    // Larger than the pool: no `reserve 72` warning beside the error.
    assert_eq!(nvlink_codes(2, 72, 16), [Code::TopologyNotTree]);
    // A node and a half, a domain that does not divide a node, 3 nodes of 2-node domains.
    assert_eq!(nvlink_codes(4, 12, 16), [Code::TopologyNotTree]);
    assert_eq!(nvlink_codes(2, 3, 16), [Code::TopologyNotTree]);
    assert_eq!(nvlink_codes(3, 16, 16), [Code::TopologyNotTree]);
}

#[test]
fn warns_when_a_share_split_leaves_a_namespace_nothing() {
    let with = |props: &str| {
        check_codes(
            "",
            &[
                tenant("t0", "", r#"pool "train" reserved=8 workload="train""#, "")
                    .replace(r#"cpu="64" memory="256Gi" pods=100"#, props),
            ],
        )
    };
    assert_eq!(with(r#"cpu="2m" memory="2" pods=2"#), []);
    // Two workloads of share 1: `infer` gets nothing of 1m, of 1 byte, of 1 pod.
    assert_eq!(
        with(r#"cpu="1m" memory="1Gi" pods=2"#),
        [Code::CeilingSplitMismatch]
    );
    assert_eq!(
        with(r#"cpu="1" memory="1" pods=1"#),
        [Code::CeilingSplitMismatch; 2]
    );
    let found = compile_files(&[
        ("cells/c1.kdl", &cell("")),
        (
            "tenants/t0.kdl",
            &tenant("t0", "", r#"pool "train" reserved=8 workload="train""#, "").replace(
                r#"cpu="64" memory="256Gi" pods=100"#,
                r#"cpu="1m" memory="1Gi" pods=2"#,
            ),
        ),
    ]);
    let warning = found.diagnostics.first().unwrap();
    assert!(!warning.is_error());
    assert_eq!(
        warning.help,
        "raise the `cpu` ceiling to at least 2m, give `infer` a larger `share`, or split the ceilings explicitly with `split`"
    );
    // Explicit splits are the user's own: only their sums are checked.
    let explicit = r#"pool "train" reserved=8 workload="train"
        split "train" cpu="1m" memory="1Gi" pods=2
        split "infer" cpu="0" memory="0" pods=0"#;
    assert_eq!(
        check_codes(
            "",
            &[tenant("t0", "", explicit, "").replace(
                r#"cpu="64" memory="256Gi" pods=100"#,
                r#"cpu="1m" memory="1Gi" pods=2"#
            )]
        ),
        []
    );
}

#[test]
fn a_topology_with_several_faults_reports_each_once() {
    let found = topology_codes(
        30,
        4,
        r#"level "kubernetes.io/hostname" nodes=1; level "b" nodes=16; level "b" nodes=4"#,
    );
    // Hostname not last, the repeated label, and 30 nodes over blocks of 16.
    assert_eq!(found, [Code::TopologyNotTree; 3]);
}

#[test]
fn rejects_ceiling_splits_that_do_not_add_up() {
    let split = |body: &str| {
        one(&format!(
            "pool \"train\" reserved=8 workload=\"train\"\n{body}"
        ))
    };
    let train = r#"split "train" cpu="48" memory="192Gi" pods=75"#;
    let infer = r#"split "infer" cpu="16" memory="64Gi" pods=25"#;
    assert_eq!(split(&format!("{train}\n{infer}")), []);
    assert_eq!(
        split(&format!(
            "{train}\n{}",
            infer.replace("\"16\"", "\"15500m\"")
        )),
        [Code::CeilingSplitMismatch]
    );
    assert_eq!(
        split(&format!("{train}\n{}", infer.replace("64Gi", "65Gi"))),
        [Code::CeilingSplitMismatch]
    );
    assert_eq!(
        split(&format!("{train}\n{}", infer.replace("25", "24"))),
        [Code::CeilingSplitMismatch]
    );
    // A missing workload, a repeated one: each reported, without the sums.
    assert_eq!(split(train), [Code::CeilingSplitMismatch]);
    assert_eq!(
        split(&format!("{train}\n{infer}\n{infer}")),
        [Code::CeilingSplitMismatch]
    );
    // A workload the tenant does not declare.
    let single = "tenant \"s\" {\n    org \"acme\"\n    team \"t\"\n    trust \"mig\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"64\" memory=\"256Gi\" pods=100 {\n        split \"train\" cpu=\"64\" memory=\"256Gi\" pods=100\n        split \"infer\" cpu=\"0\" memory=\"0\" pods=0\n    }\n}\n";
    assert_eq!(
        check_codes("", &[single.to_string()]),
        [Code::CeilingSplitMismatch]
    );
}

/// Two cells with one exclusive H100 pool each, and a tenant reserving 64 in `c1` and 32
/// in `c2` with the given fleet reservation.
fn fleet_codes(fleet_decl: &str) -> Vec<Code> {
    fleet_codes_with(fleet_decl, |tenant| tenant.to_string())
}

/// As [`fleet_codes`], with the tenant's text changed by `edit`.
fn fleet_codes_with(fleet_decl: &str, edit: impl Fn(&str) -> String) -> Vec<Code> {
    let cell = |name: &str| {
        format!(
            "cell \"{name}\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    pool \"h100\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 16 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n    pool \"a100\" {{\n        gpu \"A100-80GB-SXM\"\n        nodes 4 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n}}\n"
        )
    };
    let tenant = format!(
        "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"h100\" reserved=64\n        pool \"a100\" reserved=8\n    }}\n    quota cell=\"c2\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n        pool \"h100\" reserved=32\n    }}\n    {fleet_decl}\n}}\n"
    );
    codes(&[
        ("cells/c1.kdl", &cell("c1")),
        ("cells/c2.kdl", &cell("c2")),
        ("tenants/t.kdl", &edit(&tenant)),
    ])
}

#[test]
fn accepts_fleet_reservations_that_match_the_cells() {
    for fleet in [
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#,
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" weight=2; cell "c2" weight=1; }"#,
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" weight=5; }"#,
        r#"fleet gpu="A100-80GB-SXM" gpus=8 { cell "c1" weight=1; cell "c2" gpus=0; }"#,
    ] {
        assert_eq!(fleet_codes(fleet), [], "{fleet}");
    }
}

#[test]
fn rejects_fleet_reservations_that_do_not_match_the_cells() {
    for fleet in [
        // Fixed parts above the total, a rest no cell takes.
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=40; }"#,
        r#"fleet gpu="H100-80GB-SXM" gpus=128 { cell "c1" gpus=64; cell "c2" gpus=32; }"#,
        // A cell twice, a cell without quota, both a part and a weight.
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; cell "c1" gpus=0; }"#,
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; cell "c3" gpus=0; }"#,
        r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64 weight=1; cell "c2" weight=1; }"#,
        // A cell the contract does not list, where the tenant reserves the model.
        r#"fleet gpu="H100-80GB-SXM" gpus=64 { cell "c1" weight=1; }"#,
    ] {
        assert_eq!(
            fleet_codes(fleet),
            [Code::FleetReservationMismatch],
            "{fleet}"
        );
    }
    // Listing the cell, or reserving no GPU of the model there, is fine.
    assert_eq!(
        fleet_codes_with(
            r#"fleet gpu="H100-80GB-SXM" gpus=64 { cell "c1" weight=1; }"#,
            |tenant| tenant.replace(r#"pool "h100" reserved=32"#, r#"pool "h100" reserved=0"#)
        ),
        []
    );
    assert_eq!(
        fleet_codes(r#"fleet gpu="A100-80GB-SXM" gpus=8 { cell "c1" weight=1; }"#),
        []
    );
    // Per cell: 96 by equal weights is 48 and 48; the tenant reserves 64 and 32.
    assert_eq!(
        fleet_codes(
            r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" weight=1; cell "c2" weight=1; }"#
        ),
        [Code::FleetReservationMismatch; 2]
    );
    // A misspelt pool is `pool-unknown` only, not also a fleet mismatch.
    let fleet = r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#;
    assert_eq!(
        fleet_codes_with(fleet, |tenant| tenant
            .replace(r#"pool "h100" reserved=64"#, r#"pool "h1OO" reserved=64"#)),
        [Code::PoolUnknown]
    );
    // A model the tenant reserves nowhere.
    assert_eq!(
        fleet_codes(r#"fleet gpu="B200" gpus=8 { cell "c1" weight=1; }"#),
        [Code::FleetReservationMismatch]
    );
    // Two fleet reservations of one model.
    let twice = r#"fleet gpu="H100-80GB-SXM" gpus=96 { cell "c1" gpus=64; cell "c2" gpus=32; }"#;
    assert_eq!(
        fleet_codes(&format!("{twice}\n{twice}")),
        [Code::NameDuplicate]
    );
}

#[test]
fn rejects_what_exceeds_kueue_limits() {
    let labels: String = (0..8)
        .map(|idx| format!("label \"l{idx}\" \"v\"\n"))
        .collect();
    let cell_with = |pool_extra: &str, cell_extra: &str| {
        format!(
            "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    {cell_extra}\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n        {pool_extra}\n    }}\n}}\n"
        )
    };
    let first = |count: usize| labels.lines().take(count).collect::<Vec<_>>().join("\n");
    // An H100 pool's flavor also gets `nvidia.com/device-plugin.config` and
    // `nvidia.com/mig.config=all-disabled`: 6 labels fit, 7 do not.
    assert_eq!(codes(&[("cells/c1.kdl", &cell_with(&first(6), ""))]), []);
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell_with(&first(7), ""))]),
        [Code::KueueLimitExceeded]
    );
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell_with(&labels, ""))]),
        [Code::KueueLimitExceeded]
    );
    // An L40S has no MIG: 7 labels fit.
    let l40s = |labels: &str| cell_with(labels, "").replace("H100-80GB-SXM", "L40S");
    assert_eq!(codes(&[("cells/c1.kdl", &l40s(&first(7)))]), []);
    assert_eq!(
        codes(&[("cells/c1.kdl", &l40s(&first(8)))]),
        [Code::KueueLimitExceeded]
    );
    // A MIG pool with one layout carries its `nvidia.com/mig.config`; with two, no node
    // label is common to both, so one more label fits.
    let mig = |labels: &str, layouts: &str| {
        cell_with(labels, "")
            .replace("nodes 1", "nodes 2")
            .replace("\"exclusive\"", &format!("\"mig\"\n        {layouts}"))
    };
    let one = r#"mig-layout "a" { profile "1g.10gb" 7; }"#;
    let two = r#"mig-layout "a" nodes=1 { profile "1g.10gb" 7; }
        mig-layout "b" nodes=1 { profile "3g.40gb" 2; }"#;
    assert_eq!(codes(&[("cells/c1.kdl", &mig(&first(6), one))]), []);
    assert_eq!(
        codes(&[("cells/c1.kdl", &mig(&first(7), one))]),
        [Code::KueueLimitExceeded]
    );
    assert_eq!(codes(&[("cells/c1.kdl", &mig(&first(7), two))]), []);
    // Two taints with one key and effect.
    let repeated =
        "taint \"k\" \"a\" effect=\"NoSchedule\"\ntaint \"k\" \"b\" effect=\"NoSchedule\"";
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell_with(repeated, ""))]),
        [Code::KueueLimitExceeded]
    );
    let other_effect =
        "taint \"k\" \"a\" effect=\"NoSchedule\"\ntaint \"k\" \"b\" effect=\"NoExecute\"";
    assert_eq!(codes(&[("cells/c1.kdl", &cell_with(other_effect, ""))]), []);
    let taints: String = (0..9)
        .map(|idx| format!("taint \"t{idx}\" effect=\"NoSchedule\"\n"))
        .collect();
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell_with(&taints, ""))]),
        [Code::KueueLimitExceeded]
    );
    // A subdomain of 64 characters: a valid PriorityClass name, too long for a label.
    let long = format!("priority \"{}.{}\" value=1", "p".repeat(40), "q".repeat(23));
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell_with("", &long))]),
        [Code::KueueLimitExceeded]
    );
    let fits = format!("priority \"{}.{}\" value=1", "p".repeat(40), "q".repeat(22));
    assert_eq!(codes(&[("cells/c1.kdl", &cell_with("", &fits))]), []);
}

#[test]
fn rejects_a_cell_with_more_gpu_resources_than_a_resource_group_covers() {
    // Each declared model has one MIG profile of its own, so each pool offers a resource.
    let cell = |count: u32| {
        let mut text = String::from(
            "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n",
        );
        for idx in 1..=count {
            text.push_str(&format!(
                    "    gpu-model \"m{idx}\" {{\n        pci-ids \"0x{idx:04X}10DE\"\n        sharing \"mig\"\n        mig compute-slices=1 memory-slices=1 placement-units=1 {{\n            profile \"1g.{idx}gb\" compute=1 memory=1 max=1 size=1 {{ starts 0; }}\n        }}\n    }}\n    pool \"p{idx}\" {{\n        gpu \"m{idx}\"\n        nodes 1 gpus-per-node=1\n        sharing \"mig\"\n        mig-layout \"one\" {{ profile \"1g.{idx}gb\" 1; }}\n    }}\n"
                ));
        }
        text.push_str("}\n");
        text
    };
    // With `nvidia.com/gpu`, 64 pools cover 65 resources.
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell(64))]),
        [Code::KueueLimitExceeded]
    );
    // 22 pools x 23 resources = 506 (flavor, resource) pairs in the root Cohort; 23 x 24 =
    // 552 are more than Kueue's 512.
    assert_eq!(codes(&[("cells/c1.kdl", &cell(22))]), []);
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell(23))]),
        [Code::KueueLimitExceeded]
    );
}

#[test]
fn rejects_a_tenant_reserving_in_more_pools_than_a_resource_group_holds() {
    let cell = |count: u32| {
        let mut text = String::from(
            "cell \"c1\" {\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n",
        );
        for idx in 0..count {
            text.push_str(&format!(
                    "    pool \"p{idx}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 1 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n"
                ));
        }
        text.push_str("}\n");
        text
    };
    let tenant = |count: u32| {
        let pools: String = (0..count)
            .map(|idx| format!("        pool \"p{idx}\" reserved=1\n"))
            .collect();
        format!(
            "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=1 {{\n{pools}    }}\n}}\n"
        )
    };
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell(64)), ("tenants/t.kdl", &tenant(64))]),
        []
    );
    // The cell's 65th pool is past the root Cohort's 64 flavors, and the tenant's 65th
    // reservation past its ClusterQueue's.
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell(65)), ("tenants/t.kdl", &tenant(64))]),
        [Code::KueueLimitExceeded]
    );
    assert_eq!(
        codes(&[("cells/c1.kdl", &cell(65)), ("tenants/t.kdl", &tenant(65))]),
        [Code::KueueLimitExceeded; 2]
    );
}

#[test]
fn rejects_a_repeated_org() {
    assert_eq!(
        check_codes(r#"org "acme" weight=2; org "acme""#, &[]),
        [Code::NameDuplicate]
    );
}

#[test]
fn splits_by_shares_exactly_with_the_remainder_to_the_first_part() {
    assert_eq!(split_by_shares(10, 1, &[1, 1, 1]), [4, 3, 3]);
    assert_eq!(split_by_shares(1_536_000, 1, &[3, 1]), [1_152_000, 384_000]);
    // Memory in whole bytes: 1001 milli-bytes over two shares.
    assert_eq!(split_by_shares(3_001, 1000, &[1, 1]), [2_001, 1_000]);
    assert_eq!(split_by_shares(0, 1, &[1, 2]), [0, 0]);
    assert_eq!(split_by_shares(7, 1, &[]), Vec::<i128>::new());
    assert_eq!(split_by_shares(5, 1, &[0, -3]), [3, 2]);
}

#[test]
fn share_splits_always_add_up_and_stay_proportional() {
    let mut random = Lcg(7);
    for _ in 0..2_000 {
        let count = 1 + random.below(4) as usize;
        let shares: Vec<i64> = (0..count).map(|_| 1 + random.below(1_000) as i64).collect();
        let unit = [1_i128, 1000][random.below(2) as usize];
        let total =
            i128::from(random.below(1 << 40)) * [1, 1000, 1_048_576_000][random.below(3) as usize];
        let parts = split_by_shares(total, unit, &shares);
        assert_eq!(parts.iter().sum::<i128>(), total, "{total} {shares:?}");
        let share_sum: i128 = shares.iter().map(|&s| i128::from(s)).sum();
        for (idx, (part, share)) in parts.iter().zip(&shares).enumerate() {
            // Within two units of the exact share: one for the floor, one for what is
            // below a unit of the total.
            let ideal = total * i128::from(*share) / share_sum;
            assert!(*part >= 0);
            assert_eq!(part % unit, if idx == 0 { total % unit } else { 0 });
            if idx > 0 {
                assert!(ideal - part < 2 * unit, "{total} {shares:?} {parts:?}");
                assert!(*part <= ideal, "{total} {shares:?} {parts:?}");
            }
        }
    }
}

#[test]
fn splits_ceilings_by_declared_splits_or_by_shares() {
    let text = tenant("t0", "", "", "").replace(
            "priority=\"batch\"\n    workload \"infer\" service-account=\"server\" priority=\"batch\"",
            "priority=\"batch\" share=3\n    workload \"infer\" service-account=\"server\" priority=\"batch\"",
        );
    let cell = cell("");
    let shared = fleet(&[("cells/c1.kdl", &cell), ("tenants/t0.kdl", &text)]);
    let sharing = shared.tenants.first().unwrap();
    let parts = split_ceilings(sharing.quotas.first().unwrap(), &sharing.workloads);
    let shown: Vec<(WorkloadKind, String, String, i64)> = parts
        .iter()
        .map(|p| (p.workload, p.cpu.to_string(), p.memory.to_string(), p.pods))
        .collect();
    assert_eq!(
        shown,
        [
            (WorkloadKind::Train, "48".into(), "192Gi".into(), 75),
            (WorkloadKind::Infer, "16".into(), "64Gi".into(), 25),
        ]
    );
    let declared = tenant(
        "t0",
        "",
        r#"split "infer" cpu="60" memory="250Gi" pods=99; split "train" cpu="4" memory="6Gi" pods=1"#,
        "",
    );
    let split = fleet(&[("cells/c1.kdl", &cell), ("tenants/t0.kdl", &declared)]);
    let splitting = split.tenants.first().unwrap();
    let parts = split_ceilings(splitting.quotas.first().unwrap(), &splitting.workloads);
    let shown: Vec<(WorkloadKind, String, i64)> = parts
        .iter()
        .map(|p| (p.workload, p.cpu.to_string(), p.pods))
        .collect();
    assert_eq!(
        shown,
        [
            (WorkloadKind::Train, "4".into(), 1),
            (WorkloadKind::Infer, "60".into(), 99),
        ]
    );
}

#[test]
fn splits_fleet_reservations_by_fixed_parts_and_weights() {
    use FleetPart::{Fixed, Weight};
    assert_eq!(fleet_split(128, &[Fixed(96), Weight(1)]), Ok(vec![96, 32]));
    assert_eq!(
        fleet_split(10, &[Weight(1), Weight(1), Weight(1)]),
        Ok(vec![4, 3, 3])
    );
    assert_eq!(
        fleet_split(11, &[Fixed(1), Weight(1), Weight(2), Weight(1)]),
        Ok(vec![1, 3, 5, 2])
    );
    assert_eq!(fleet_split(8, &[Fixed(8)]), Ok(vec![8]));
    assert_eq!(fleet_split(8, &[Fixed(8), Weight(3)]), Ok(vec![8, 0]));
    assert_eq!(
        fleet_split(8, &[Fixed(6), Fixed(3)]),
        Err(FleetSplitError::FixedAboveTotal { fixed: 9 })
    );
    assert_eq!(
        fleet_split(8, &[Fixed(6)]),
        Err(FleetSplitError::RestWithoutWeight { rest: 2 })
    );
}

#[test]
fn fleet_splits_always_add_up_and_keep_fixed_parts() {
    let mut random = Lcg(11);
    for _ in 0..2_000 {
        let count = 1 + random.below(6) as usize;
        let parts: Vec<FleetPart> = (0..count)
            .map(|_| match random.below(2) {
                0 => FleetPart::Fixed(random.below(100) as i64),
                _ => FleetPart::Weight(1 + random.below(10) as i64),
            })
            .collect();
        let total = random.below(600) as i64;
        match fleet_split(total, &parts) {
            Ok(split) => {
                assert_eq!(split.iter().sum::<i64>(), total, "{total} {parts:?}");
                let weights: i64 = parts
                    .iter()
                    .map(|p| if let FleetPart::Weight(w) = p { *w } else { 0 })
                    .sum();
                let fixed: i64 = parts
                    .iter()
                    .map(|p| if let FleetPart::Fixed(g) = p { *g } else { 0 })
                    .sum();
                for (part, gpus) in parts.iter().zip(&split) {
                    match part {
                        FleetPart::Fixed(fixed) => assert_eq!(gpus, fixed),
                        FleetPart::Weight(weight) => {
                            let ideal = (total - fixed) * weight / weights;
                            assert!(
                                *gpus == ideal || *gpus == ideal + 1,
                                "{total} {parts:?} {split:?}"
                            );
                        }
                    }
                }
            }
            Err(FleetSplitError::FixedAboveTotal { fixed }) => assert!(fixed > total),
            Err(FleetSplitError::RestWithoutWeight { rest }) => {
                assert!(rest > 0);
                assert!(parts.iter().all(|p| matches!(p, FleetPart::Fixed(_))));
            }
            Err(FleetSplitError::PartAmbiguous(_)) => unreachable!("no entry is ambiguous"),
        }
    }
}

#[test]
fn the_example_fleet_splits_every_ceiling_and_fleet_reservation_exactly() {
    let files = example_files();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    assert_eq!(codes(&files), []);
    let fleet = fleet(&files);
    let mut checked = 0;
    for tenant in &fleet.tenants {
        for quota in &tenant.quotas {
            let parts = split_ceilings(quota, &tenant.workloads);
            assert_eq!(parts.len(), tenant.workloads.len(), "{}", tenant.name.value);
            let cpu: i128 = parts.iter().map(|p| p.cpu.milli()).sum();
            let memory: i128 = parts.iter().map(|p| p.memory.milli()).sum();
            let pods: i64 = parts.iter().map(|p| p.pods).sum();
            assert_eq!(cpu, quota.cpu.value.milli(), "{}", tenant.name.value);
            assert_eq!(memory, quota.memory.value.milli(), "{}", tenant.name.value);
            assert_eq!(pods, quota.pods.value, "{}", tenant.name.value);
            checked += 1;
        }
        for reservation in &tenant.fleet {
            let parts = fleet_cell_parts(reservation).unwrap();
            assert_eq!(parts.iter().sum::<i64>(), reservation.gpus.value);
            for (share, part) in reservation.cells.iter().zip(parts) {
                let cell = fleet
                    .cells
                    .iter()
                    .find(|c| c.name.value == share.cell.value)
                    .unwrap();
                let quota = tenant.quota_in(&share.cell.value).unwrap();
                assert_eq!(
                    reserved_gpus_of_model(quota, cell, &reservation.gpu.value),
                    part
                );
            }
        }
    }
    assert!(checked >= 6, "{checked}");
    assert!(
        fleet.tenants.iter().any(|t| !t.fleet.is_empty()),
        "the example has no fleet reservation"
    );
    assert!(
        fleet
            .tenants
            .iter()
            .flat_map(|t| &t.quotas)
            .any(|q| !q.splits.is_empty()),
        "the example has no ceiling split"
    );
}

#[test]
fn topology_levels_end_with_the_hostname_level() {
    let fleet = fleet(&[("cells/c1.kdl", &cell(""))]);
    let pool = fleet.cells.first().unwrap().pools.first().unwrap();
    let levels: Vec<(String, i64)> = topology_levels(pool)
        .into_iter()
        .map(|level| (level.label, level.nodes))
        .collect();
    assert_eq!(
        levels,
        [
            ("example.com/block".to_string(), 4),
            ("example.com/rack".to_string(), 2),
            (HOSTNAME_LABEL.to_string(), 1),
        ]
    );
    assert_eq!(nvlink_domain_gpus(pool), 8);
    let infer = fleet.cells.first().unwrap().pools.get(1).unwrap();
    assert!(topology_levels(infer).is_empty());
    assert_eq!(nvlink_domain_gpus(infer), 8);
}

#[test]
fn ratios_print_without_trailing_zeros() {
    assert_eq!(ratio_text(1000), "1");
    assert_eq!(ratio_text(1500), "1.5");
    assert_eq!(ratio_text(1625), "1.625");
    assert_eq!(ratio_text(1050), "1.05");
    assert_eq!(ratio_text(100_000), "100");
}
