//! MIG placement benchmark: the adversarial family of issue 6 item 2 against the catalog's H100.
//!
//! Consumes nothing from disk: it builds the adversarial tables in memory (k size-2 profiles whose
//! starts are the even units, plus one size-1 profile whose only start is 1, each used once, on an
//! axis of 2k + 1 units) and takes the H100-80GB table from the compiled-in catalog.
//! Produces a report on stdout: for k = 5, 10, 15, ... 30, the search steps and the time per
//! layout as a ratio against placing every H100 layout of up to seven instances, measured in the
//! same process, so the ratios compare across machines.
//!
//! Invariant: the search before issue 6 took 3.3 s at k = 10 and did not finish k = 15 in 30 s;
//! every ratio printed here must stay small and the steps must not grow exponentially.
//! Run with `cargo bench --bench placement`.

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A bench prints its results and may panic on a broken setup.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tenantc::catalog::placement::{PlacementError, place_within};
use tenantc::catalog::{Catalog, MigProfile, MigTable};
use tenantc::limits::MAX_PLACEMENT_STEPS;

/// A profile of one compute and memory slice with the given placement.
fn profile(template: &MigProfile, name: String, size: u32, starts: Vec<u32>) -> MigProfile {
    let mut profile = template.clone();
    profile.name = name;
    profile.compute_slices = 1;
    profile.memory_slices = 1;
    profile.max_count = 1;
    profile.placement_size = size;
    profile.placement_starts = starts;
    profile.attributes = Vec::new();
    profile
}

/// The adversarial table and layout for `k`.
fn adversarial(h100: &MigTable, k: u32) -> (MigTable, Vec<(String, u32)>) {
    let template = &h100.profiles[0];
    let evens: Vec<u32> = (0..k).map(|idx| 2 * idx).collect();
    let mut profiles: Vec<MigProfile> = (0..k)
        .map(|idx| profile(template, format!("1g.{}gb", idx + 10), 2, evens.clone()))
        .collect();
    profiles.push(profile(template, "1g.5gb".to_owned(), 1, vec![1]));
    let layout = profiles.iter().map(|p| (p.name.clone(), 1)).collect();
    let mut table = h100.clone();
    table.key = format!("adversarial-{k}");
    table.compute_slices = 64;
    table.memory_slices = 64;
    table.max_gpu_instances = 64;
    table.placement_units = 2 * k + 1;
    table.profiles = profiles;
    (table, layout)
}

/// Every multiset of H100 profiles with one to seven instances: the baseline workload.
fn h100_layouts(h100: &MigTable) -> Vec<Vec<(String, u32)>> {
    fn extend(
        profiles: &[MigProfile],
        left: u32,
        current: &mut Vec<(String, u32)>,
        out: &mut Vec<Vec<(String, u32)>>,
    ) {
        let Some((first, rest)) = profiles.split_first() else {
            if !current.is_empty() {
                out.push(current.clone());
            }
            return;
        };
        for count in 0..=left {
            if count > 0 {
                current.push((first.name.clone(), count));
            }
            extend(rest, left - count, current, out);
            if count > 0 {
                current.pop();
            }
        }
    }
    let mut out = Vec::new();
    extend(&h100.profiles, 7, &mut Vec::new(), &mut out);
    out
}

/// The median time of `runs` runs of `work`.
fn median(runs: usize, mut work: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let h100 = Catalog::builtin()
        .table("H100-80GB")
        .expect("H100-80GB table");
    let layouts = h100_layouts(h100);
    let baseline = median(11, || {
        for layout in &layouts {
            black_box(
                place_within(h100, layout, MAX_PLACEMENT_STEPS)
                    .result
                    .is_ok(),
            );
        }
    }) / u32::try_from(layouts.len()).unwrap();
    println!(
        "baseline: {} H100-80GB layouts, {:.2?} per layout",
        layouts.len(),
        baseline
    );
    println!(
        "{:>3} {:>8} {:>12} {:>10}",
        "k", "steps", "per layout", "ratio"
    );
    for k in (5..=30).step_by(5) {
        let (table, layout) = adversarial(h100, k);
        let searched = place_within(&table, &layout, MAX_PLACEMENT_STEPS);
        assert_eq!(
            searched.result,
            Err(vec![PlacementError::NoPlacement]),
            "k={k}"
        );
        let time = median(11, || {
            black_box(place_within(&table, &layout, MAX_PLACEMENT_STEPS).steps);
        });
        println!(
            "{k:>3} {:>8} {:>12.2?} {:>9.1}x",
            searched.steps,
            time,
            time.as_secs_f64() / baseline.as_secs_f64()
        );
    }
}
