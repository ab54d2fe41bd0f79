//! Compile-speed benchmark on a generated fleet, reported as ratios against baselines measured
//! in the same process: the whole compile against parsing alone, and the canonical YAML writer
//! against `serde_json` serialising the same objects.
//!
//! Run with `cargo bench --bench compile` (optionally `-- <tenants>`, default 2000).

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A bench prints its results and may panic on a broken setup.

use std::time::{Duration, Instant};

use tenantc::emit::yaml::{self, Yaml};
use tenantc::{InputFile, compile};

mod fleet;

const CELLS: usize = 8;

fn best_of<T>(runs: usize, mut work: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let value = work();
        best = best.min(started.elapsed());
        last = Some(value);
    }
    (best, last.expect("at least one run"))
}

fn to_json(value: &Yaml) -> serde_json::Value {
    match value {
        Yaml::Str(text) => serde_json::Value::String(text.clone()),
        Yaml::Int(number) => serde_json::Value::from(*number),
        Yaml::Bool(flag) => serde_json::Value::Bool(*flag),
        Yaml::Seq(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Yaml::Map(pairs) => serde_json::Value::Object(
            pairs
                .iter()
                .map(|(key, value)| (key.to_string(), to_json(value)))
                .collect(),
        ),
    }
}

fn main() {
    let tenants: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(2000);
    let inputs: Vec<InputFile> = fleet::Fleet {
        cells: CELLS,
        tenants,
        cells_per_tenant: 1,
    }
    .inputs();
    let input_bytes: usize = inputs.iter().map(|input| input.contents.len()).sum();

    // Baseline 1: parsing every file, the least any compile must do.
    let (parse_time, _) = best_of(3, || {
        for input in &inputs {
            let text = std::str::from_utf8(&input.contents).unwrap();
            let _ = tenantc::parse::parse(
                tenantc::source::FileId(0),
                text,
                tenantc::parse::Format::Kdl,
            );
        }
    });
    let (compile_time, compilation) = best_of(3, || compile(&inputs));
    assert!(!compilation.has_errors(), "generated fleet must compile");
    let tree = compilation.output.expect("output");
    let output_bytes: usize = tree.values().map(Vec::len).sum();

    // Baseline 2: serde_json on the same object trees as the YAML writer: one ResourceQuota per
    // tenant, as `lower` emits it: built as a YAML tree directly here,
    // and as a typed k8s-openapi struct below.
    const HARD: [(&str, &str); 5] = [
        ("pods", "200"),
        ("requests.cpu", "64"),
        ("requests.memory", "256Gi"),
        ("requests.nvidia.com/gpu", "16"),
        ("requests.nvidia.com/mig-1g.10gb", "4"),
    ];
    let direct = |idx: usize| {
        Yaml::map([
            ("apiVersion", Yaml::str("v1")),
            ("kind", Yaml::str("ResourceQuota")),
            (
                "metadata",
                Yaml::map([
                    (
                        "labels",
                        Yaml::string_map([("app.kubernetes.io/managed-by", "tenantc")]),
                    ),
                    ("name", Yaml::str("tenant-quota")),
                    ("namespace", Yaml::str(format!("tenant-{idx}-train"))),
                ]),
            ),
            ("spec", Yaml::map([("hard", Yaml::string_map(HARD))])),
        ])
    };
    let documents: Vec<Yaml> = (0..2000).map(direct).collect();
    let json_documents: Vec<serde_json::Value> = documents.iter().map(to_json).collect();
    let (yaml_time, yaml_bytes) = best_of(5, || {
        documents
            .iter()
            .map(|d| yaml::to_string(d).len())
            .sum::<usize>()
    });
    let (json_time, json_bytes) = best_of(5, || {
        json_documents
            .iter()
            .map(|d| serde_json::to_string(d).unwrap().len())
            .sum::<usize>()
    });

    // Baseline 3: the same ResourceQuotas as typed k8s-openapi structs streamed through serde
    // into YAML text (how `lower` writes every object), against building the tree directly and
    // writing it (how `lower` worked before typed objects), and against the typed structs
    // serialized into the tree first (the first typed version).
    let typed = |idx: usize| {
        use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaSpec};
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let hard = HARD
            .into_iter()
            .map(|(key, value)| (key.to_string(), Quantity(value.to_string())))
            .collect();
        ResourceQuota {
            metadata: ObjectMeta {
                name: Some("tenant-quota".to_string()),
                namespace: Some(format!("tenant-{idx}-train")),
                labels: Some(
                    [(
                        "app.kubernetes.io/managed-by".to_string(),
                        "tenantc".to_string(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(ResourceQuotaSpec {
                hard: Some(hard),
                ..ResourceQuotaSpec::default()
            }),
            ..ResourceQuota::default()
        }
    };
    let (typed_time, typed_bytes) = best_of(5, || {
        (0..2000)
            .map(|idx| tenantc::emit::stream::to_text(&typed(idx)).unwrap().len())
            .sum::<usize>()
    });
    let (typed_tree_time, typed_tree_bytes) = best_of(5, || {
        (0..2000)
            .map(|idx| {
                let tree = tenantc::emit::ser::to_yaml(&typed(idx)).unwrap();
                yaml::to_string(&tree).len()
            })
            .sum::<usize>()
    });
    let (direct_time, direct_bytes) = best_of(5, || {
        (0..2000)
            .map(|idx| yaml::to_string(&direct(idx)).len())
            .sum::<usize>()
    });
    assert_eq!(typed_bytes, direct_bytes, "both paths write the same YAML");
    assert_eq!(
        typed_tree_bytes, direct_bytes,
        "both paths write the same YAML"
    );

    let mb = |bytes: usize, time: Duration| bytes as f64 / 1e6 / time.as_secs_f64();
    println!(
        "fleet: {CELLS} cells, {tenants} tenants, {input_bytes} input bytes, {} output files, {output_bytes} output bytes",
        tree.len()
    );
    println!(
        "parse only (baseline): {:>8.1} ms",
        parse_time.as_secs_f64() * 1e3
    );
    println!(
        "full compile:          {:>8.1} ms  = {:.2}x parse, {:.1} us per tenant",
        compile_time.as_secs_f64() * 1e3,
        compile_time.as_secs_f64() / parse_time.as_secs_f64(),
        compile_time.as_secs_f64() * 1e6 / tenants as f64
    );
    println!(
        "per output MB:         {:>8.1} ms",
        compile_time.as_secs_f64() * 1e3 / (output_bytes as f64 / 1e6)
    );
    println!(
        "typed objects:         {:>8.1} us per object = {:.2}x building the YAML tree directly ({:.1} us)",
        typed_time.as_secs_f64() * 1e6 / 2000.0,
        typed_time.as_secs_f64() / direct_time.as_secs_f64(),
        direct_time.as_secs_f64() * 1e6 / 2000.0
    );
    println!(
        "typed through a tree:  {:>8.1} us per object = {:.2}x building the YAML tree directly",
        typed_tree_time.as_secs_f64() * 1e6 / 2000.0,
        typed_tree_time.as_secs_f64() / direct_time.as_secs_f64(),
    );
    println!(
        "YAML writer:           {:>8.1} MB/s = {:.2}x serde_json ({:.1} MB/s)",
        mb(yaml_bytes, yaml_time),
        mb(yaml_bytes, yaml_time) / mb(json_bytes, json_time),
        mb(json_bytes, json_time)
    );
}
