//! Unit tests of the query on a small fleet written here: a cell `lab` with a training pool of
//! two racks and a MIG pool of two layouts, a cell `two` that a fleet contract also names.
//! Every expected figure is worked out from the declarations in the comment beside it.

use super::*;

const LAB: &str = r#"cell "lab" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "train" {
        gpu "H100-80GB-SXM"
        nodes 8 gpus-per-node=8
        sharing "exclusive"
        nvlink-domain gpus=8
        topology {
            level "example.com/rack" nodes=4
        }
        taint "train" "true" effect="NoSchedule"
    }
    pool "mig" {
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        taint "mig" "true" effect="NoSchedule"
        mig-layout "a" nodes=1 {
            profile "1g.10gb" 7
        }
        mig-layout "b" nodes=1 {
            profile "3g.40gb" 2
        }
    }
}
"#;

const TWO: &str = r#"cell "two" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "p" {
        gpu "H100-80GB-SXM"
        nodes 4 gpus-per-node=8
        sharing "exclusive"
    }
}
"#;

const BIG: &str = r#"tenant "big" {
    org "o"
    team "t"
    trust "hard"
    groups admin="a" member="m"
    quota cell="lab" cpu="64" memory="256Gi" pods=100 {
        pool "train" reserved=32 burst=16 gang=16 within="example.com/rack" cpu="32" memory="128Gi" pods=50
    }
    quota cell="two" cpu="64" memory="256Gi" pods=100 {
        pool "p" reserved=16
    }
    fleet gpu="H100-80GB-SXM" gpus=48 {
        cell "lab" gpus=32
        cell "two" weight=1
    }
    workload "train" service-account="sa" priority="batch"
}
"#;

const SMALL: &str = r#"tenant "small" {
    org "s"
    team "t"
    trust "mig"
    groups admin="a" member="m"
    quota cell="lab" cpu="64" memory="256Gi" pods=100 {
        pool "mig" profile="1g.10gb" reserved=40 burst=8
        pool "mig" profile="3g.40gb" reserved=2
    }
    workload "infer" service-account="sa" priority="batch"
}
"#;

const OTHER: &str = r#"tenant "other" {
    org "x"
    team "t"
    trust "hard"
    groups admin="a" member="m"
    quota cell="two" cpu="64" memory="256Gi" pods=100 {
        pool "p" reserved=8
    }
    workload "train" service-account="sa" priority="batch"
}
"#;

fn fleet() -> FleetView {
    let files: Vec<crate::InputFile> = [
        ("cells/lab.kdl", LAB),
        ("cells/two.kdl", TWO),
        ("tenants/big.kdl", BIG),
        ("tenants/small.kdl", SMALL),
        ("tenants/other.kdl", OTHER),
    ]
    .into_iter()
    .map(|(path, text)| crate::InputFile {
        path: path.to_string(),
        contents: text.as_bytes().to_vec(),
    })
    .collect();
    let compilation = crate::compile(&files);
    let errors: Vec<String> = compilation
        .diagnostics
        .iter()
        .map(|diagnostic| format!("{}: {}", diagnostic.code.as_str(), diagnostic.message))
        .collect();
    assert!(!compilation.has_errors(), "{errors:#?}");
    let plan = compilation.plan.as_ref().expect("planned");
    view::view(plan, &compilation.fleet, crate::catalog::Catalog::builtin())
}

fn drain(text: &str) -> Change {
    Change::Drain(parse_drain(text).unwrap())
}

fn run(changes: &[Change]) -> WhatIf {
    what_if(&fleet(), changes).unwrap()
}

fn tenant<'a>(result: &'a WhatIf, name: &str) -> &'a TenantImpact {
    result
        .tenants
        .iter()
        .find(|impact| impact.tenant == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {result:#?}"))
}

#[test]
fn the_view_splits_each_pool_into_its_node_groups() {
    let view = fleet();
    let lab = &view.cells[0];
    let mig = lab.pools.iter().find(|pool| pool.name == "mig").unwrap();
    // Layout a: 7 × 1g.10gb on each of 8 GPUs of its one node; layout b: 2 × 3g.40gb.
    assert_eq!(
        mig.groups
            .iter()
            .map(|group| (
                group.layout.clone().unwrap(),
                group.nodes,
                group.per_node.clone()
            ))
            .collect::<Vec<_>>(),
        [
            (
                "a".to_string(),
                1,
                vec![(
                    "nvidia.com/mig-1g.10gb".to_string(),
                    Some("1g.10gb".to_string()),
                    56
                )]
            ),
            (
                "b".to_string(),
                1,
                vec![(
                    "nvidia.com/mig-3g.40gb".to_string(),
                    Some("3g.40gb".to_string()),
                    16
                )]
            ),
        ]
    );
    let train = lab.pools.iter().find(|pool| pool.name == "train").unwrap();
    assert_eq!(
        train
            .levels
            .iter()
            .map(|level| (level.label.as_str(), level.nodes))
            .collect::<Vec<_>>(),
        [("example.com/rack", 4), ("kubernetes.io/hostname", 1)]
    );
}

#[test]
fn draining_a_rack_keeps_the_reservation_but_takes_the_burst() {
    let result = run(&[drain("lab/train@rack")]);
    assert_eq!(result.changes[0].level.as_deref(), Some("example.com/rack"));
    assert_eq!(result.changes[0].nodes, 4);
    let big = tenant(&result, "big");
    let row = &big.reservations[0];
    // 64 GPUs → 32; big reserves 32 of them, so nothing is short. The burst of 16 was backed by
    // 64 − 32 = 32 spare GPUs, and none are spare after.
    assert_eq!(
        (
            row.unbacked,
            row.burst_backed_before,
            row.burst_backed_after
        ),
        (0, 16, 0)
    );
    // Effective: quota 48 before; after, the cell admits 64 − 32 = 32.
    assert_eq!((row.effective_before, row.effective_after), (48, 32));
    // Gangs of 16 within a rack of 32 GPUs: 2 per rack, 4 before, 2 after; 32 / 16 = 2 reserved.
    let gang = &big.gangs[0];
    assert_eq!(
        (
            gang.gangs_before,
            gang.gangs_after,
            gang.reserved_gangs,
            gang.worst_case
        ),
        (4, 2, 2, false)
    );
    assert!(big.backed && result.backed, "{result:#?}");
}

#[test]
fn a_count_of_nodes_is_counted_where_it_hurts_gangs_most() {
    // Two nodes in different racks leave 24 GPUs in each: one gang of 16 each, 2 in all (in one
    // rack they would leave 3).
    let result = run(&[drain("lab/train=2")]);
    let gang = &tenant(&result, "big").gangs[0];
    assert_eq!((gang.gangs_after, gang.worst_case), (2, true));
    assert_eq!(gang.drained_per_domain, [1, 1]);
    assert!(result.backed);
    // Five nodes: 4 + 1 (or 3 + 2) leave one rack at most 24 GPUs and the other nothing (or 8):
    // one gang, fewer than the 2 reserved; and 24 GPUs for 32 reserved.
    let result = run(&[drain("lab/train=5")]);
    let big = tenant(&result, "big");
    assert_eq!(big.gangs[0].gangs_after, 1);
    assert_eq!(big.unbacked, 8);
    assert_eq!(result.unbacked_tenants, ["big"]);
}

#[test]
fn removing_a_layout_unbacks_its_profiles_and_its_burst() {
    let result = run(&[Change::RemoveLayout {
        cell: "lab".into(),
        pool: "mig".into(),
        layout: "a".into(),
    }]);
    let small = tenant(&result, "small");
    let one_g = small
        .reservations
        .iter()
        .find(|row| row.profile.as_deref() == Some("1g.10gb"))
        .unwrap();
    // 56 devices of 1g.10gb, all on layout a's node: none left for 40 reserved and 8 burst.
    assert_eq!(
        (one_g.unbacked, one_g.burst_backed_before, one_g.burst_lost),
        (40, 8, 8)
    );
    let three_g = small
        .reservations
        .iter()
        .find(|row| row.profile.as_deref() == Some("3g.40gb"))
        .unwrap();
    assert_eq!(three_g.unbacked, 0);
    assert!(!result.backed);
    assert_eq!(result.pools[0].layouts[0].nodes_after, 0);
}

#[test]
fn losing_a_cell_names_whom_re_homing_its_contract_part_would_overcommit() {
    let result = run(&[Change::LoseCell("lab".into())]);
    let big = tenant(&result, "big");
    let contract = &big.fleet[0];
    // The contract: 48 = 32 in lab + 16 in two. lab's 32 are lost; two has 32 GPUs, 16 + 8
    // reserved, 8 spare; the other 24 would overcommit `other`.
    assert_eq!((contract.lost, contract.spare, contract.short), (32, 8, 24));
    assert_eq!(contract.overcommits, ["other"]);
    assert_eq!(result.unbacked_tenants, ["big", "small"]);
}

#[test]
fn bad_changes_are_refused_with_the_names_that_exist() {
    let view = fleet();
    let error = |change: Change| what_if(&view, &[change]).unwrap_err();
    let found = error(drain("lab/trian=1"));
    assert_eq!(
        found.message,
        "pool `trian` is not declared in cell `lab`; did you mean `train`?"
    );
    assert_eq!(found.help, "pools of `lab` are `train` and `mig`");
    let found = error(drain("lab/mig=1"));
    assert!(found.message.contains("2 MIG layouts"), "{found:?}");
    assert!(found.help.contains("`--drain lab/mig/a=1`"), "{found:?}");
    let found = error(drain("lab/train@rak"));
    assert!(found.message.ends_with("did you mean `rack`?"), "{found:?}");
    let found = error(drain("lab/train@rack=3"));
    assert!(
        found.message.contains("2 domains of `example.com/rack`"),
        "{found:?}"
    );
    let found = error(Change::LoseCell("lap".into()));
    assert_eq!(
        found.message,
        "cell `lap` is not declared; did you mean `lab`?"
    );
    let twice = what_if(&view, &[drain("lab/train=1"), drain("lab/train=2")]).unwrap_err();
    assert_eq!(twice.message, "pool `lab/train` is changed twice");
    assert!(parse_drain("lab/train").is_err());
    assert!(parse_drain("lab/train=0").is_err());
    assert!(parse_remove_layout("lab/mig").is_err());
}

#[test]
fn the_worst_loss_equals_a_search_of_every_placement() {
    // Domains of 4 slots, losses of a domain by units taken, as gangs of 12 GPUs on 8-GPU nodes
    // give them: 4 nodes hold 2 gangs, 3 hold 2, 2 hold 1, 1 holds 0.
    let loss = |taken: i64| 2 - (4 - taken) * 8 / 12;
    for domains in 1..=4_i64 {
        for units in 0..=domains * 4 {
            let mut best = 0;
            let mut taken = vec![0_i64; domains as usize];
            loop {
                if taken.iter().sum::<i64>() == units {
                    best = best.max(taken.iter().map(|t| loss(*t)).sum());
                }
                let mut idx = 0;
                while idx < taken.len() && taken[idx] == 4 {
                    taken[idx] = 0;
                    idx += 1;
                }
                if idx == taken.len() {
                    break;
                }
                taken[idx] += 1;
            }
            let (lost, placed) = worst_loss(domains, 4, units, loss);
            assert_eq!(lost, best, "{domains} {units}");
            // The placement it returns is one that loses that much.
            assert_eq!(placed.iter().sum::<i64>(), units, "{domains} {units}");
            assert_eq!(placed.iter().map(|t| loss(*t)).sum::<i64>(), best);
        }
    }
}
