//! Render work of a GitOps sync on a generated fleet of N and 2N tenants, as the controllers do
//! it: `kubectl kustomize` on every folder an Argo CD Application or a Flux Kustomization of
//! `out/flux/` syncs, against the one-folder-per-cell layout (`kubectl kustomize out/<cell>`),
//! measured in the same run.
//!
//! Consumes: the generated fleet of `benches/fleet/`, one cell synced by Flux, and `kubectl`
//! (`$KUBECTL` or `kubectl` on the `PATH`).
//! Produces: the seconds of each layout at N and 2N tenants and the ratio 2N / N; about 2.0
//! means linear.
//!
//! Run with `cargo bench --bench sync_render` (optionally `-- <tenants>`, default 50).

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A bench prints its results and may panic on a broken setup.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tenantc::{InputFile, compile};

mod fleet;

/// Compiles a one-cell fleet of `tenants` tenants synced by Flux and writes it below `root`.
fn write_fleet(root: &Path, tenants: usize) {
    let shape = fleet::Fleet {
        cells: 1,
        tenants,
        cells_per_tenant: 1,
    };
    let mut inputs: Vec<InputFile> = shape.inputs();
    for input in &mut inputs {
        if input.path.starts_with("cells/") {
            let text = String::from_utf8(input.contents.clone()).unwrap();
            input.contents = text
                .replace(
                    "    driver \"570\"\n",
                    "    driver \"570\"\n    gitops \"flux\"\n",
                )
                .into_bytes();
        }
    }
    let compilation = compile(&inputs);
    assert!(
        !compilation.has_errors(),
        "the generated fleet must compile"
    );
    for (path, bytes) in compilation.output.expect("an output tree") {
        let path = root.join("out").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// The folders (relative to the repository root) that the Flux Kustomizations sync.
fn synced_folders(root: &Path) -> Vec<String> {
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(root.join("out/flux")).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == "kustomization.yaml" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            if let Some(value) = line.trim().strip_prefix("path: ") {
                folders.push(value.trim_matches('"').trim_start_matches("./").to_string());
            }
        }
    }
    folders.sort();
    folders
}

/// Runs `kubectl kustomize` on each folder; returns the time and the objects rendered.
fn render(kubectl: &str, root: &Path, folders: &[String]) -> (Duration, usize) {
    let started = Instant::now();
    let mut objects = 0;
    for folder in folders {
        let output = Command::new(kubectl)
            .arg("kustomize")
            .arg(root.join(folder))
            .output()
            .unwrap_or_else(|error| panic!("cannot run {kubectl}: {error}"));
        assert!(
            output.status.success(),
            "kubectl kustomize {folder}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        objects += String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| line.starts_with("kind: "))
            .count();
    }
    (started.elapsed(), objects)
}

fn main() {
    let tenants: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(50);
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    let mut sharded = Vec::new();
    let mut per_cell = Vec::new();
    for count in [tenants, 2 * tenants] {
        let dir = tempfile::tempdir().unwrap();
        write_fleet(dir.path(), count);
        let folders = synced_folders(dir.path());
        let (sharded_time, sharded_objects) = render(&kubectl, dir.path(), &folders);
        let (cell_time, cell_objects) = render(&kubectl, dir.path(), &["out/cell-0".to_string()]);
        assert_eq!(
            sharded_objects, cell_objects,
            "both layouts render the same objects"
        );
        println!(
            "{count:>5} tenants, {cell_objects} objects: sharded {} folders {:.2} s, one folder per cell {:.2} s",
            folders.len(),
            sharded_time.as_secs_f64(),
            cell_time.as_secs_f64()
        );
        sharded.push(sharded_time.as_secs_f64());
        per_cell.push(cell_time.as_secs_f64());
    }
    println!(
        "ratio 2N/N: sharded {:.2}, one folder per cell {:.2} (2.0 is linear)",
        sharded[1] / sharded[0],
        per_cell[1] / per_cell[0]
    );
}
