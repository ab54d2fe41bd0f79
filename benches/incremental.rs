//! Incremental-write benchmark: how long `tenantc build` takes on disk when one tenant changed,
//! against a build that changes nothing, on a generated fleet of 2,000 tenants over 20 cells.
//!
//! Consumes: the built `tenantc` binary and a scratch folder under Cargo's target folder.
//! Produces: timings on stdout and the ratio one-tenant edit / no-op build (target: at most
//! 1.5). Both builds run the real binary, so the figures include loading, compiling, comparing
//! with `out/` and writing.
//!
//! Run with `cargo bench --bench incremental` (optionally `-- <tenants> <rounds>`, default
//! 2000 tenants and 3 rounds).

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A bench prints its results and may panic on a broken setup.

mod fleet;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CELLS: usize = 20;

fn build(root: &Path) -> Duration {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(["build", "--color", "never", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "tenantc build failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let mut numbers = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse::<usize>().ok());
    let tenants = numbers.next().unwrap_or(2000);
    let rounds = numbers.next().unwrap_or(3).max(1);
    let fleet = fleet::Fleet {
        cells: CELLS,
        tenants,
        cells_per_tenant: 2,
    };
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = scratch.path();
    for dir in ["tenants", "cells"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    for input in fleet.inputs() {
        fs::write(root.join(&input.path), &input.contents).unwrap();
    }

    let first = build(root);
    let files = count_files(&root.join("out"));
    let mut noop = Vec::new();
    let mut edit = Vec::new();
    for round in 0..rounds {
        noop.push(build(root));
        // Alternate the edited value so every round changes the same few files.
        let edited = fleet.tenant(0, if round % 2 == 0 { 9 } else { 8 });
        fs::write(root.join(&edited.path), &edited.contents).unwrap();
        edit.push(build(root));
    }
    let (noop, edit) = (median(noop), median(edit));
    println!(
        "fleet: {CELLS} cells, {tenants} tenants in {} cells each, {files} files in out/, {rounds} rounds",
        fleet.cells_per_tenant
    );
    println!("first build:        {:>9.1} ms", first.as_secs_f64() * 1e3);
    println!(
        "no-op build:        {:>9.1} ms (median)",
        noop.as_secs_f64() * 1e3
    );
    println!(
        "one-tenant edit:    {:>9.1} ms (median)",
        edit.as_secs_f64() * 1e3
    );
    println!(
        "ratio edit / no-op: {:>9.2} (target <= 1.5)",
        edit.as_secs_f64() / noop.as_secs_f64()
    );
}

fn count_files(dir: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in fs::read_dir(&path).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                count += 1;
            }
        }
    }
    count
}
