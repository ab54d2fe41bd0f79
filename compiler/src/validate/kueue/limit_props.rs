//! Generated cells around Kueue's limits: whatever a user declares, a compile either
//! reports a diagnostic or emits objects that pass Kueue's webhook rules, never an internal
//! error.

use crate::catalog::Catalog;
use crate::hardware;
use crate::validate::test_support::{compile_files, fleet};

/// A deterministic generator for the seeded property loop.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items
            .get(self.below(items.len() as u64) as usize)
            .copied()
            .unwrap_or_default()
    }
}

/// One generated pool: its declaration, and a reservation a tenant may make in it.
/// What one round may get wrong: each knob is mostly within Kueue's limits, so that most
/// rounds compile and lower, and sometimes past them.
struct Knobs<'a> {
    /// The most labels a pool declares.
    max_labels: u64,
    /// The most taints a pool declares.
    max_taints: u64,
    /// The keys taints draw from; empty for a distinct key per taint.
    taint_keys: &'a [&'a str],
    /// The NVLink domains a pool may declare.
    domains: &'a [&'a str],
    /// One pool in this many has a GPU model (and a resource) of its own.
    own_model_every: u64,
}

fn pool(random: &mut Lcg, idx: u64, knobs: &Knobs<'_>, models: &mut String) -> (String, String) {
    let mut body = String::new();
    let labels = random.below(knobs.max_labels + 1);
    for label in 0..labels {
        body.push_str(&format!("        label \"example.com/l{label}\" \"v\"\n"));
    }
    let taints = random.below(knobs.max_taints + 1);
    for taint in 0..taints {
        let key = match knobs.taint_keys {
            [] => format!("example.com/t{taint}"),
            keys => random.pick(keys).to_string(),
        };
        let value = random.pick(&["", " \"x\"", " \"y\""]);
        let effect = random.pick(&["NoSchedule", "NoExecute", "PreferNoSchedule"]);
        body.push_str(&format!(
            "        taint \"{key}\"{value} effect=\"{effect}\"\n"
        ));
    }
    let nodes = 1 + random.below(4);
    let reserved = 8 * (1 + random.below(nodes));
    let kind = if random.below(knobs.own_model_every) == 0 {
        7
    } else {
        random.below(7)
    };
    match kind {
        0..=4 => {
            let gpu = random.pick(&["H100-80GB-SXM", "L40S", "A100-80GB-SXM"]);
            if random.below(5) == 0 {
                let domain = random.pick(knobs.domains);
                body.push_str(&format!("        nvlink-domain gpus={domain}\n"));
            }
            let text = format!(
                "    pool \"p{idx}\" {{\n        gpu \"{gpu}\"\n        nodes {nodes} gpus-per-node=8\n        sharing \"exclusive\"\n{body}    }}\n"
            );
            (text, format!("pool \"p{idx}\" reserved={reserved}"))
        }
        5 | 6 => {
            let layouts = if random.below(2) == 0 {
                "mig-layout \"small\" { profile \"1g.10gb\" 7; }"
            } else {
                "mig-layout \"small\" nodes=1 { profile \"1g.10gb\" 7; }\n        mig-layout \"big\" nodes=1 { profile \"3g.40gb\" 2; }"
            };
            let text = format!(
                "    pool \"p{idx}\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 2 gpus-per-node=8\n        sharing \"mig\"\n        {layouts}\n{body}    }}\n"
            );
            (
                text,
                format!("pool \"p{idx}\" profile=\"1g.10gb\" reserved=7"),
            )
        }
        _ => {
            // A model of its own with a profile of its own: one more GPU resource.
            models.push_str(&format!(
                    "    gpu-model \"m{idx}\" {{\n        pci-ids \"0x{:04X}10DE\"\n        sharing \"mig\"\n        mig compute-slices=1 memory-slices=1 placement-units=1 {{\n            profile \"1g.{idx}gb\" compute=1 memory=1 max=1 size=1 {{ starts 0; }}\n        }}\n    }}\n",
                    idx + 1
                ));
            let text = format!(
                "    pool \"p{idx}\" {{\n        gpu \"m{idx}\"\n        nodes {nodes} gpus-per-node=1\n        sharing \"mig\"\n        mig-layout \"one\" {{ profile \"1g.{idx}gb\" 1; }}\n{body}    }}\n"
            );
            (
                text,
                format!("pool \"p{idx}\" profile=\"1g.{idx}gb\" reserved=1"),
            )
        }
    }
}

#[test]
fn generated_cells_around_kueue_limits_never_end_in_an_internal_error() {
    let mut random = Lcg(2024);
    let mut failures = Vec::new();
    let (mut emitted, mut planned) = (0, 0);
    for round in 0..120 {
        let count = match random.below(3) {
            0 => 1 + random.below(8),
            1 => 40 + random.below(40),
            _ => 60 + random.below(10),
        };
        let past = |random: &mut Lcg| random.below(5) == 0;
        let knobs = Knobs {
            max_labels: if past(&mut random) { 9 } else { 5 },
            max_taints: if past(&mut random) { 9 } else { 3 },
            taint_keys: if past(&mut random) {
                &["example.com/a", "example.com/b"]
            } else {
                &[]
            },
            domains: if past(&mut random) {
                &["8", "16", "24", "72"]
            } else {
                &["4", "8"]
            },
            own_model_every: if past(&mut random) { 2 } else { 64 },
        };
        let mut models = String::new();
        let mut pools = String::new();
        let mut reservations = String::new();
        for idx in 0..count {
            let (text, reservation) = pool(&mut random, idx, &knobs, &mut models);
            pools.push_str(&text);
            if random.below(2) == 0 {
                reservations.push_str(&format!("        {reservation}\n"));
            }
        }
        let cell = format!(
            "cell \"c1\" {{\n    cloud \"aws\" region=\"r\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    priority \"batch\" value=1\n{models}{pools}}}\n"
        );
        let (cpu, pods) = [("64", "100"), ("1m", "1"), ("2", "1")][random.below(3) as usize];
        let tenant = format!(
            "tenant \"t\" {{\n    org \"o\"\n    team \"t\"\n    trust \"mig\"\n    groups admin=\"a\"\n    workload \"train\" service-account=\"s\" priority=\"batch\"\n    workload \"infer\" service-account=\"s\" priority=\"batch\"\n    quota cell=\"c1\" cpu=\"{cpu}\" memory=\"1Gi\" pods={pods} {{\n{}    }}\n}}\n",
            reservations.replace("reserved=", "workload=\"train\" reserved=")
        );
        let compilation = compile_files(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)]);
        if let Some(error) = compilation.internal_error {
            failures.push(format!("round {round} ({count} pools): {error}"));
        }
        if compilation.output.is_some() {
            emitted += 1;
        }
        // The validation's count of flavor labels is the plan's.
        if let Some(plan) = &compilation.plan {
            let fleet = fleet(&[("cells/c1.kdl", &cell), ("tenants/t.kdl", &tenant)]);
            let declared = fleet.cells.first().unwrap();
            let counted = crate::facts::gpu::flavor_node_labels(
                declared,
                &hardware::cell_catalog(declared, Catalog::builtin()),
            );
            for pool in &plan.cells.first().unwrap().pools {
                assert_eq!(
                    counted.get(&pool.name),
                    Some(&pool.node_labels),
                    "round {round}"
                );
            }
            planned += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The loop must reach lowering often enough to mean something.
    assert!(emitted >= 30 && planned >= emitted, "{emitted} {planned}");
}
