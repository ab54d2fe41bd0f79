//! Writing `out/` when things go wrong: a real `tenantc build` killed at every filesystem
//! operation of an incremental write and at random moments, injected write failures, concurrent
//! builds, a held lock, and `--out` resolving into the declarations through a symbolic link.
//!
//! Consumes: the built `tenantc` binary and scratch folders. Produces: pass or fail.
//!
//! Invariant checked throughout: once the next run has recovered, `out/` holds exactly the old
//! tree or exactly the new one, and nothing but those files, their folders and the lock file.
//! Kill points come from the test-only `TENANTC_TEST_CRASH_AFTER=N` (abort after N filesystem
//! operations) and `TENANTC_TEST_FAIL_AFTER=N` (the next operation fails).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tenantc::emit::OutputTree;
use tenantc::emit::fs::{LOCK, read_tree, recover};

const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000 preempt=#false
    priority "serving" value=100000
    pool "train" { gpu "H100-80GB-SXM"; nodes 400 gpus-per-node=8; sharing "exclusive"; }
    pool "infer" {
        gpu "H100-80GB-SXM"
        nodes 200 gpus-per-node=8
        sharing "mig"
        mig-layout "small" { profile "1g.10gb" 7; }
    }
}
"#;

fn tenant(name: &str, reserved: u32, cpu: u32) -> String {
    format!(
        r#"tenant "{name}" {{
    org "corp"
    team "{name}"
    trust "mig"
    groups admin="{name}-admins" member="{name}-members"
    quota cell="c1" cpu="{cpu}" memory="128Gi" pods=100 {{
        pool "train" reserved={reserved} workload="train"
        pool "infer" profile="1g.10gb" reserved=1 workload="infer"
    }}
    workload "train" service-account="trainer" priority="batch"
    workload "infer" service-account="server" priority="serving"
}}
"#
    )
}

/// Replaces the declarations under `root` with the cell and `tenants` (name, reserved, cpu).
fn declare(root: &Path, tenants: &[(String, u32, u32)]) {
    for folder in ["tenants", "cells"] {
        let _ = fs::remove_dir_all(root.join(folder));
        fs::create_dir_all(root.join(folder)).unwrap();
    }
    // Every tenant is Corp's, so the cell lists them as the org's members.
    let members: Vec<String> = tenants
        .iter()
        .map(|(name, _, _)| format!("\"{name}\""))
        .collect();
    let cell = if members.is_empty() {
        CELL.to_string()
    } else {
        CELL.replacen(
            "    priority \"batch\"",
            &format!(
                "    org \"corp\" {{ tenants {}; }}\n    priority \"batch\"",
                members.join(" ")
            ),
            1,
        )
    };
    fs::write(root.join("cells/c1.kdl"), cell).unwrap();
    for (name, reserved, cpu) in tenants {
        fs::write(
            root.join(format!("tenants/{name}.kdl")),
            tenant(name, *reserved, *cpu),
        )
        .unwrap();
    }
}

fn named(list: &[(&str, u32, u32)]) -> Vec<(String, u32, u32)> {
    list.iter()
        .map(|(name, reserved, cpu)| (name.to_string(), *reserved, *cpu))
        .collect()
}

/// The small multi-file change: one tenant edited, one removed, one added.
fn old_fleet() -> Vec<(String, u32, u32)> {
    named(&[("alpha", 8, 32), ("beta", 4, 32), ("delta", 2, 16)])
}

fn new_fleet() -> Vec<(String, u32, u32)> {
    named(&[("alpha", 16, 32), ("delta", 2, 16), ("gamma", 4, 32)])
}

fn tenantc(root: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(args)
        .args(["--color", "never"])
        .current_dir(root)
        .envs(env.iter().map(|(key, value)| (*key, value.as_str())))
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn build_ok(root: &Path) {
    let output = tenantc(root, &["build"], &[]);
    assert!(output.status.success(), "build failed: {}", stderr(&output));
}

/// The tree a fleet compiles to, built by the binary in a scratch folder of its own.
fn tree_of(fleet: &[(String, u32, u32)]) -> OutputTree {
    let scratch = tempfile::tempdir().unwrap();
    declare(scratch.path(), fleet);
    build_ok(scratch.path());
    read_tree(&scratch.path().join("out")).unwrap()
}

/// Builds the old fleet under `root`, then declares the new one; returns the old tree.
fn old_built_new_declared(root: &Path) -> OutputTree {
    declare(root, &old_fleet());
    build_ok(root);
    let old = read_tree(&root.join("out")).unwrap();
    declare(root, &new_fleet());
    old
}

/// Asserts that `out` holds exactly `tree`: no other file, no empty folder, nothing of tenantc's
/// but the lock file.
fn assert_only(out: &Path, tree: &OutputTree, context: &str) {
    let mut folders = BTreeSet::new();
    for path in tree.keys() {
        let mut folder = path.as_str();
        while let Some((parent, _)) = folder.rsplit_once('/') {
            folders.insert(parent.to_string());
            folder = parent;
        }
    }
    let mut stack = vec![(out.to_path_buf(), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        for entry in fs::read_dir(&path).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if entry.file_type().unwrap().is_dir() {
                assert!(
                    folders.contains(&relative),
                    "{context}: folder {relative} is left in out/"
                );
                stack.push((entry.path(), relative));
            } else {
                assert!(
                    tree.contains_key(&relative) || relative == LOCK,
                    "{context}: {relative} is left in out/"
                );
            }
        }
    }
    assert_eq!(&read_tree(out).unwrap(), tree, "{context}");
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Old,
    New,
}

fn outcome(out: &Path, old: &OutputTree, new: &OutputTree, context: &str) -> Outcome {
    let actual = read_tree(out).unwrap();
    if &actual == old {
        assert_only(out, old, context);
        Outcome::Old
    } else {
        assert_eq!(
            &actual, new,
            "{context}: out/ is neither the old nor the new tree"
        );
        assert_only(out, new, context);
        Outcome::New
    }
}

#[test]
fn a_build_killed_after_any_operation_leaves_the_old_or_the_new_tree() {
    let (old, new) = (tree_of(&old_fleet()), tree_of(&new_fleet()));
    assert_ne!(old, new);
    let mut outcomes = Vec::new();
    let mut check_saw_interrupted = false;
    for crash_after in 0.. {
        let context = format!("killed after {crash_after} operations");
        let scratch = tempfile::tempdir().unwrap();
        let (root, out) = (scratch.path(), scratch.path().join("out"));
        declare(root, &old_fleet());
        build_ok(root);
        declare(root, &new_fleet());
        let crash = [("TENANTC_TEST_CRASH_AFTER", crash_after.to_string())];
        let output = tenantc(root, &["build"], &crash);
        if output.status.success() {
            assert_only(&out, &new, &context);
            assert!(
                crash_after > 20,
                "the change took only {crash_after} operations"
            );
            break;
        }
        assert_eq!(
            output.status.signal(),
            Some(6),
            "{context}: {}",
            stderr(&output)
        );

        // `check` never passes on a half-written tree: it passes on the new tree, calls the old
        // one stale, or reports the interrupted write.
        let check = tenantc(root, &["check"], &[]);
        match check.status.code() {
            Some(0) => assert_eq!(read_tree(&out).unwrap(), new, "{context}"),
            Some(1) => assert!(stderr(&check).contains("out-stale"), "{context}"),
            _ => {
                let message = stderr(&check);
                assert!(
                    message.contains("interrupted write") && message.contains("`tenantc build`"),
                    "{context}: {message}"
                );
                check_saw_interrupted = true;
            }
        }

        // Every third kill point is killed again while recovering or writing.
        if crash_after % 3 == 0 {
            let again = [("TENANTC_TEST_CRASH_AFTER", (crash_after / 3).to_string())];
            let _ = tenantc(root, &["build"], &again);
        }
        recover(&out).unwrap();
        outcomes.push(outcome(&out, &old, &new, &context));

        // The next real build finishes the job.
        build_ok(root);
        assert_only(&out, &new, &context);
    }
    // The commit point splits the kill points: old before it, new after it.
    let first_new = outcomes.iter().position(|outcome| *outcome == Outcome::New);
    let first_new = first_new.expect("some kill point after the commit");
    assert!(first_new > 0, "no kill point before the commit");
    assert!(
        outcomes[first_new..]
            .iter()
            .all(|outcome| *outcome == Outcome::New),
        "{outcomes:?}"
    );
    assert!(
        check_saw_interrupted,
        "no kill point left an interrupted write"
    );
}

#[test]
fn injected_write_failures_exit_2_and_leave_the_old_tree_or_a_journal_the_next_build_finishes() {
    let (old, new) = (tree_of(&old_fleet()), tree_of(&new_fleet()));
    let mut untouched = 0;
    for fail_after in 0.. {
        let context = format!("failure after {fail_after} operations");
        let scratch = tempfile::tempdir().unwrap();
        let (root, out) = (scratch.path(), scratch.path().join("out"));
        declare(root, &old_fleet());
        build_ok(root);
        declare(root, &new_fleet());
        let fail = [("TENANTC_TEST_FAIL_AFTER", fail_after.to_string())];
        let output = tenantc(root, &["build"], &fail);
        if output.status.success() {
            assert_only(&out, &new, &context);
            break;
        }
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{context}: {message}");
        assert!(
            message.starts_with("error: cannot write ./out: ")
                && message.contains("injected failure"),
            "{context}: {message}"
        );
        if message.contains("nothing was changed") {
            assert_only(&out, &old, &context);
            untouched += 1;
        } else {
            assert!(
                message.contains("the next `tenantc build` finishes it"),
                "{context}: {message}"
            );
            recover(&out).unwrap();
            assert_only(&out, &new, &context);
        }
    }
    assert!(
        untouched > 10,
        "only {untouched} failures left the old tree"
    );
}

/// Whether this process can write into a folder without write permission (it is root).
fn ignores_permissions() -> bool {
    let scratch = tempfile::tempdir().unwrap();
    let locked = scratch.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let writable = fs::write(locked.join("probe"), "").is_ok();
    fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    writable
}

#[test]
fn a_read_only_out_exits_2_and_keeps_the_old_tree() {
    let scratch = tempfile::tempdir().unwrap();
    let (root, out) = (scratch.path(), scratch.path().join("out"));
    let old = old_built_new_declared(root);
    if ignores_permissions() {
        // Root writes through `chmod 555`; a file where out/ must be a folder stops it instead.
        let output = tenantc(root, &["build", "--out", "out/.tenantc/out"], &[]);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            stderr(&output).contains("out/.tenantc/out cannot be a folder"),
            "{}",
            stderr(&output)
        );
    } else {
        let read_only: fs::Permissions = std::os::unix::fs::PermissionsExt::from_mode(0o555);
        for folder in ["out", "out/c1/tenants/alpha/train"] {
            fs::set_permissions(root.join(folder), read_only.clone()).unwrap();
            let output = tenantc(root, &["build"], &[]);
            let message = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{message}");
            assert!(
                message.contains("Permission denied") && message.contains("nothing was changed"),
                "{message}"
            );
            fs::set_permissions(
                root.join(folder),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
        }
    }
    assert_only(&out, &old, "read-only out/");
}

#[test]
fn a_one_tenant_edit_rewrites_only_the_files_whose_bytes_change() {
    let scratch = tempfile::tempdir().unwrap();
    let (root, out) = (scratch.path(), scratch.path().join("out"));
    let mut fleet = old_fleet();
    declare(root, &fleet);
    build_ok(root);
    let identity = |path: &str| {
        let meta = fs::metadata(out.join(path)).unwrap();
        (meta.ino(), meta.mtime(), meta.mtime_nsec())
    };
    let before = read_tree(&out).unwrap();
    let stamps: Vec<_> = before.keys().map(|path| identity(path)).collect();

    // A build that changes nothing touches nothing.
    build_ok(root);
    let unchanged: Vec<_> = before.keys().map(|path| identity(path)).collect();
    assert_eq!(stamps, unchanged);

    fleet[0].1 += 1;
    declare(root, &fleet);
    std::thread::sleep(Duration::from_millis(20));
    build_ok(root);
    let after = read_tree(&out).unwrap();
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut rewritten = 0;
    for (path, stamp) in before.keys().zip(&stamps) {
        if before[path] == after[path] {
            assert_eq!(identity(path), *stamp, "{path} was rewritten");
        } else {
            assert_ne!(identity(path).0, stamp.0, "{path} was not replaced");
            rewritten += 1;
        }
    }
    assert!(rewritten > 0 && rewritten * 4 < before.len(), "{rewritten}");
}

#[test]
fn concurrent_builds_are_serialised_and_both_succeed() {
    let scratch = tempfile::tempdir().unwrap();
    let (root, out) = (scratch.path(), scratch.path().join("out"));
    for round in 0..4 {
        let fleet = if round % 2 == 0 {
            new_fleet()
        } else {
            old_fleet()
        };
        declare(root, &fleet);
        let builds: Vec<_> = (0..2)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_tenantc"))
                    .args(["build", "--color", "never"])
                    .current_dir(root)
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for build in builds {
            let output = build.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: {}",
                stderr(&output)
            );
        }
        assert_only(&out, &tree_of(&fleet), &format!("round {round}"));
    }
}

/// Starts `tenantc <args>` while this test holds the lock of out/, checks that it says who holds
/// the lock and waits, then releases the lock and returns its output.
fn run_while_locked(root: &Path, args: &[&str]) -> (String, Output) {
    let lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(root.join("out").join(LOCK))
        .unwrap();
    lock.lock().unwrap();
    fs::write(root.join("out").join(LOCK), "pid=4242 since=1796047691\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(args)
        .args(["--color", "never"])
        .current_dir(root)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "did not wait for the lock"
    );
    drop(lock);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    (format!("{first}{rest}"), output)
}

#[test]
fn builds_and_checks_wait_for_the_lock_and_say_who_holds_it() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    declare(root, &old_fleet());
    build_ok(root);
    declare(root, &new_fleet());
    let waiting = "note: another tenantc build holds ./out/.tenantc-lock since 2026-11-30 14:08:11 UTC (pid 4242); waiting\n";

    let (message, output) = run_while_locked(root, &["build"]);
    assert!(output.status.success(), "{message}");
    assert!(message.starts_with(waiting), "{message}");
    assert_only(&root.join("out"), &tree_of(&new_fleet()), "after waiting");

    let (message, output) = run_while_locked(root, &["check"]);
    assert!(output.status.success(), "{message}");
    assert!(message.starts_with(waiting), "{message}");
}

#[test]
fn random_kills_on_a_larger_tree_leave_the_old_or_the_new_tree() {
    // Two fleets of 120 tenants that differ in most files: every quota changes, and a quarter
    // of the tenants are replaced.
    let fleet = |version: u32| -> Vec<(String, u32, u32)> {
        (0..120)
            .map(|idx| {
                let name = if idx % 4 == 0 {
                    format!("t{idx}-v{version}")
                } else {
                    format!("t{idx}")
                };
                (name, 1 + version, 8 + version * 8)
            })
            .collect()
    };
    let trees = [tree_of(&fleet(0)), tree_of(&fleet(1))];
    let scratch = tempfile::tempdir().unwrap();
    let (root, out) = (scratch.path(), scratch.path().join("out"));
    declare(root, &fleet(0));
    let started = Instant::now();
    build_ok(root);
    let full = started.elapsed().as_micros() as u64;
    let mut current = 0;
    // A fixed linear congruential generator: the same kill times on every run of the test.
    let mut seed: u64 = 0x5eed;
    for round in 0..10 {
        let target = 1 - current;
        declare(root, &fleet(target as u32));
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let delay = (seed >> 33) % (full * 3 / 2).max(1);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tenantc"))
            .args(["build", "--color", "never"])
            .current_dir(root)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(delay));
        let _ = child.kill();
        child.wait().unwrap();
        recover(&out).unwrap();
        let context = format!("round {round}, killed after {delay} us");
        current = match outcome(&out, &trees[current], &trees[target], &context) {
            Outcome::Old => current,
            Outcome::New => target,
        };
    }
}

#[test]
fn out_resolving_into_the_declarations_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    declare(root, &old_fleet());
    std::os::unix::fs::symlink("tenants", root.join("t")).unwrap();
    std::os::unix::fs::symlink("cells", root.join("generated")).unwrap();
    std::os::unix::fs::symlink(root, root.join("again")).unwrap();
    let root_text = root.display().to_string();
    for (args, folder) in [
        (vec!["build", "--out", "t/gen"], "tenants/"),
        (vec!["build", "--out", "generated"], "cells/"),
        (vec!["build", "--out", "t/new/../gen"], "tenants/"),
        (vec!["check", "--out", "t"], "tenants/"),
        (
            vec![
                "build",
                "--root",
                "again",
                "--out",
                &format!("{root_text}/cells/x"),
            ],
            "cells/",
        ),
    ] {
        let output = tenantc(root, &args, &[]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.contains(&format!("is inside {folder}")),
            "{args:?}: {message}"
        );
    }
    let declared: Vec<_> = fs::read_dir(root.join("tenants")).unwrap().collect();
    assert_eq!(
        declared.len(),
        old_fleet().len(),
        "something was written into tenants/"
    );
    assert!(!root.join("cells/x").exists());
}

#[test]
fn a_build_that_fails_after_its_cells_were_staged_leaves_the_old_tree_and_nothing_else() {
    // Each cell's files are staged in out/ as soon as the cell is compiled; a platform template
    // is checked only after every cell, so its error comes when the new files are already
    // staged, and the build must take them back.
    let scratch = tempfile::tempdir().unwrap();
    let (root, out) = (scratch.path(), scratch.path().join("out"));
    let old = old_built_new_declared(root);
    fs::create_dir_all(root.join("templates/tenant")).unwrap();
    fs::write(
        root.join("templates/tenant/escape.yaml.j2"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n",
    )
    .unwrap();
    let output = tenantc(root, &["build"], &[]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("template-object-forbidden"), "{message}");
    assert_only(&out, &old, "a template error after the cells were staged");
}

#[test]
fn a_first_build_that_fails_after_its_cells_were_staged_creates_no_out() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    declare(root, &old_fleet());
    fs::create_dir_all(root.join("templates/tenant")).unwrap();
    fs::write(
        root.join("templates/tenant/escape.yaml.j2"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n",
    )
    .unwrap();
    let output = tenantc(root, &["build", "--out", "gen/out"], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!root.join("gen").exists(), "a failed build created gen/out");
}
