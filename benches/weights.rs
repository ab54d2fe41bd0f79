//! Weight hashing benchmark: the model-signing root digest of a synthetic multi-file model.
//!
//! Consumes: nothing but a scratch folder; it writes a synthetic model of
//! `TENANTC_WEIGHTS_BENCH_MIB` MiB (default 1024) in `TENANTC_WEIGHTS_BENCH_FILES` files
//! (default 4) of pseudo-random bytes, then reads it once so every tool starts from a warm page
//! cache.
//! Produces a report on stdout: the best of three wall times of `tenantc`'s parallel hashing
//! (`weights::digest::hash_dir` on every available core) and, measured in the same run on the
//! same files, `sha256sum`, `openssl dgst -sha256` (both one core) and `model_signing` (when
//! `python3 -c 'import model_signing'` works; the report says when it does not), with the
//! throughput ratios of tenantc against each.
//!
//! Invariant: the targets are a ratio of at least 1 against `model_signing` and at
//! least 1.6 against one-core `openssl` on two cores; the report prints both.
//! Run with `cargo bench --bench weights`.

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A bench prints its results and may panic on a broken setup.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tenantc::weights::digest;

const MIB: usize = 1024 * 1024;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Writes `files` files of `size` bytes of xorshift bytes under `dir`.
fn make_model(dir: &Path, files: usize, size: usize) -> Vec<PathBuf> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut paths = Vec::new();
    let mut chunk = vec![0u8; 4 * MIB];
    for idx in 0..files {
        let path = dir.join(format!("model-{idx:05}-of-{files:05}.safetensors"));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut left = size;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                word.copy_from_slice(&state.to_le_bytes());
            }
            let take = left.min(chunk.len());
            file.write_all(&chunk[..take]).unwrap();
            left -= take;
        }
        file.flush().unwrap();
        paths.push(path);
    }
    std::fs::write(dir.join("config.json"), b"{}\n").unwrap();
    paths
}

/// The best of `runs` wall times of `work`.
fn best_of(runs: usize, mut work: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .min()
        .unwrap()
}

/// The best of three runs of a command, or why it could not run.
fn time_command(program: &str, args: &[&str]) -> Result<Duration, String> {
    let mut failure = None;
    let time = best_of(3, || {
        match Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        {
            Ok(status) if status.success() => {}
            Ok(status) => failure = Some(format!("{program} exited with {status}")),
            Err(error) => failure = Some(format!("{program} not runnable: {error}")),
        }
    });
    failure.map_or(Ok(time), Err)
}

fn main() {
    let total_mib = env_number("TENANTC_WEIGHTS_BENCH_MIB", 1024);
    let files = env_number("TENANTC_WEIGHTS_BENCH_FILES", 4).max(1);
    let size = total_mib * MIB / files;
    let bytes = (size * files) as f64;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("model");
    std::fs::create_dir_all(&dir).unwrap();
    let paths = make_model(&dir, files, size);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    // Warm the page cache once, so no tool pays for the first read.
    let root = digest::root_digest(&digest::hash_dir(&dir, cores, &|_, _| {}).unwrap());

    let ours = best_of(3, || {
        let manifest = digest::hash_dir(&dir, cores, &|_, _| {}).unwrap();
        assert_eq!(digest::root_digest(&manifest), root);
    });
    let one_thread = best_of(3, || {
        digest::hash_dir(&dir, 1, &|_, _| {}).unwrap();
    });
    let path_args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let path_refs: Vec<&str> = path_args.iter().map(String::as_str).collect();
    let sha256sum = time_command("sha256sum", &path_refs);
    let mut openssl_args = vec!["dgst", "-sha256"];
    openssl_args.extend(&path_refs);
    let openssl = time_command("openssl", &openssl_args);
    let has_model_signing = Command::new("python3")
        .args(["-c", "import model_signing"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let model_signing = if has_model_signing {
        // `model_signing sign key` hashes in its thread pool, then signs once (negligible).
        let key = scratch.path().join("bench-key.pem");
        let signature = scratch.path().join("bench.sig.json");
        let made = Command::new("openssl")
            .args([
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
            ])
            .arg(&key)
            .status()
            .is_ok_and(|status| status.success());
        if made {
            let key = key.display().to_string();
            let signature = signature.display().to_string();
            let dir = dir.display().to_string();
            time_command(
                "python3",
                &[
                    "-m",
                    "model_signing",
                    "sign",
                    "key",
                    "--private_key",
                    &key,
                    "--signature",
                    &signature,
                    &dir,
                ],
            )
        } else {
            Err("openssl could not make a signing key for model_signing".into())
        }
    } else {
        Err("absent: `python3 -c 'import model_signing'` fails (pip install model-signing)".into())
    };

    let rate = |time: Duration| bytes / time.as_secs_f64() / 1e6;
    println!(
        "weights hashing: {total_mib} MiB in {files} files, {cores} cores, root sha256:{}",
        digest::hex(&root)
    );
    println!(
        "  tenantc ({cores} threads)  {:>8.3} s  {:>7.0} MB/s",
        ours.as_secs_f64(),
        rate(ours)
    );
    println!(
        "  tenantc (1 thread)   {:>8.3} s  {:>7.0} MB/s  ratio {:.2}x",
        one_thread.as_secs_f64(),
        rate(one_thread),
        one_thread.as_secs_f64() / ours.as_secs_f64()
    );
    for (name, result, target) in [
        ("sha256sum", &sha256sum, None),
        ("openssl dgst -sha256", &openssl, Some(1.6)),
        ("model_signing", &model_signing, Some(1.0)),
    ] {
        match result {
            Ok(time) => {
                let ratio = time.as_secs_f64() / ours.as_secs_f64();
                let verdict = target.map_or(String::new(), |target: f64| {
                    format!(
                        "  (target >= {target:.1}x: {})",
                        if ratio >= target { "met" } else { "NOT met" }
                    )
                });
                println!(
                    "  {name:<20} {:>8.3} s  {:>7.0} MB/s  tenantc is {ratio:.2}x{verdict}",
                    time.as_secs_f64(),
                    rate(*time)
                );
            }
            Err(reason) => println!("  {name:<20} {reason}"),
        }
    }
}
