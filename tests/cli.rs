//! CLI cases as data. Each folder under `tests/cli/` holds:
//! - `cmd`: one `tenantc …` invocation per line, run in order in a scratch copy of the case;
//! - `root/` (optional): files copied into the scratch folder before the first command;
//! - `shared` (optional): files and folders of `tests/fixtures/` copied there first, one
//!   `<path in the scratch folder> = <fixture>` a line (`. = fleet` is the frozen fixture
//!   fleet), so that a case holds no copy of a shared fixture (`tests/fixtures/README.md`);
//! - `expected`: for every command, its exit status, stdout and stderr.
//!
//! `UPDATE_GOLDEN=1 cargo test --test cli` rewrites `expected`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use support::copy_dir;

use std::fs;
use std::path::Path;
use std::process::Command;

/// A scratch folder holding a copy of the fixture fleet (`tests/fixtures/fleet/`): its
/// `tenants/` and `cells/`, the `keys/` and `weights/` its models are verified with, and its
/// platform `templates/`.
fn fleet_copy() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    support::copy_fleet(scratch.path());
    scratch
}

fn run_case(case: &Path) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let root = support::case_root(case, "root");
    if root.exists() {
        copy_dir(&root, scratch.path());
    }
    let commands = fs::read_to_string(case.join("cmd")).unwrap();
    let mut transcript = String::new();
    for line in commands.lines().filter(|line| !line.trim().is_empty()) {
        let mut words = line.split_whitespace();
        assert_eq!(
            words.next(),
            Some("tenantc"),
            "{}: commands start with tenantc",
            case.display()
        );
        let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
            .args(words)
            .current_dir(scratch.path())
            .env_remove("NO_COLOR")
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        let scratch_path = scratch.path().display().to_string();
        let clean =
            |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&scratch_path, "<scratch>");
        transcript.push_str(&format!(
            "$ {line}\nstatus: {}\n--- stdout\n{}--- stderr\n{}\n",
            output
                .status
                .code()
                .map_or("signal".to_string(), |code| code.to_string()),
            clean(&output.stdout),
            clean(&output.stderr),
        ));
    }
    transcript
}

#[test]
fn cli_cases_match_their_transcripts() {
    let cases = support::subdirs(&support::repo().join("tests/cli"));
    assert!(!cases.is_empty(), "no CLI cases found");
    let mut failures = Vec::new();
    for case in cases {
        let actual = run_case(&case);
        let expected_path = case.join("expected");
        if support::update_golden() {
            fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- actual\n{actual}",
                case.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "CLI transcripts differ (UPDATE_GOLDEN=1 to accept):\n{}",
        failures.join("\n")
    );
}

/// Runs the built binary in `dir` with `args` and the given extra environment variable.
#[cfg(unix)]
fn run_in(dir: &Path, args: &[&str], env: (&str, &str)) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(args)
        .current_dir(dir)
        .env(env.0, env.1)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Issue 6 item 6: a link to `/proc/self/environ` (or any file outside the root) is refused
/// with a diagnostic naming the link, and no byte of the environment reaches stdout or stderr.
#[cfg(unix)]
#[test]
fn a_link_out_of_the_root_never_prints_the_environment() {
    const SECRET: &str = "tenantc-test-secret-7d41c0e2";
    let scratch = fleet_copy();
    std::os::unix::fs::symlink("/proc/self/environ", scratch.path().join("tenants/env.txt"))
        .unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", scratch.path().join("cells/env.kdl")).unwrap();
    for args in [
        ["check", "--color", "never"],
        ["build", "--color", "never"],
        ["check", "--format", "json"],
    ] {
        let output = run_in(scratch.path(), &args, ("TENANTC_TEST_SECRET", SECRET));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{args:?} printed the environment:\n{stdout}\n{stderr}"
        );
        assert_eq!(output.status.code(), Some(1), "{args:?}:\n{stderr}");
        let shown = format!("{stdout}{stderr}");
        assert!(shown.contains("symlink-outside-root"), "{args:?}:\n{shown}");
        assert!(shown.contains("tenants/env.txt"), "{args:?}:\n{shown}");
        assert!(shown.contains("cells/env.kdl"), "{args:?}:\n{shown}");
    }
    assert!(!scratch.path().join("out").exists(), "nothing is written");
}

/// Issue 6 item 5: a folder name with a newline cannot inject YAML into generated files; it is
/// refused with its name escaped, and no raw control character reaches the terminal.
#[cfg(unix)]
#[test]
fn a_folder_name_with_a_newline_is_refused_and_printed_escaped() {
    let scratch = fleet_copy();
    let hostile = scratch.path().join("tenants/x\nnamespace: kube-system\n#");
    fs::create_dir(&hostile).unwrap();
    fs::write(hostile.join("y.kdl"), "tenant \"y\" {}\n").unwrap();
    let output = run_in(scratch.path(), &["build"], ("UNUSED", ""));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[path-unsafe]"), "{stderr}");
    assert!(
        stderr.contains(r"tenants/x\nnamespace: kube-system\n#"),
        "the name is shown escaped:\n{stderr}"
    );
    assert!(!stderr.contains("\nnamespace: kube-system"), "{stderr}");
    assert!(!scratch.path().join("out").exists(), "nothing is written");
}

/// Issue 6 items 14 and 15: a dangling link, a link loop and a FIFO no longer stop (or hang)
/// the run with an OS error and no path; each is a located diagnostic and the rest is checked.
#[cfg(unix)]
#[test]
fn broken_links_and_fifos_are_located_diagnostics_and_the_run_goes_on() {
    let scratch = fleet_copy();
    let tenants = scratch.path().join("tenants");
    std::os::unix::fs::symlink("gone.kdl", tenants.join("dangling.kdl")).unwrap();
    std::os::unix::fs::symlink("loop-b.kdl", tenants.join("loop-a.kdl")).unwrap();
    std::os::unix::fs::symlink("loop-a.kdl", tenants.join("loop-b.kdl")).unwrap();
    let status = Command::new("mkfifo")
        .arg(tenants.join("pipe.kdl"))
        .status()
        .unwrap();
    assert!(status.success());
    fs::write(
        tenants.join("typo.kdl"),
        "tenant \"typo\" { trsut \"hard\" }\n",
    )
    .unwrap();
    let output = run_in(
        scratch.path(),
        &["check", "--color", "never"],
        ("UNUSED", ""),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for expected in [
        "error[symlink-broken]: `tenants/dangling.kdl` is a symbolic link that cannot be followed: its target does not exist",
        "┌─ tenants/dangling.kdl:1:1",
        "error[symlink-broken]: `tenants/loop-a.kdl` is a symbolic link that cannot be followed: too many levels of symbolic links",
        "error[file-not-regular]: `tenants/pipe.kdl` is named like a declaration but is a FIFO, not a regular file",
        "┌─ tenants/typo.kdl:1:17",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
    assert!(!stderr.contains("os error 2"), "{stderr}");
}

/// Issue 10 item 6: a reader that closes the pipe early (`tenantc check --format json | head -1`)
/// ends the run quietly, with the exit code of the run, on every command that prints to stdout.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_crash_on_any_output_path() {
    use std::process::Stdio;
    let scratch = fleet_copy();
    let cases: &[(&[&str], i32)] = &[
        (&["check", "--format", "json"], 1),
        (&["check", "--format", "sarif"], 1),
        (&["build", "--format", "json"], 0),
        (&["check", "--format", "json", "--root", "nowhere"], 2),
        (&["describe", "acme-research"], 0),
        (&["describe", "acme-research", "--format", "json"], 0),
        (&["describe", "nobody", "--format", "json"], 2),
        (&["explain"], 0),
        (&["explain", "quota-over-capacity"], 0),
        (&["explain", "--format", "json"], 0),
        (&["catalog"], 0),
        (&["catalog", "--format", "json"], 0),
        (&["weights", "hash", "weights"], 0),
        (&["what-if", "--drain", "us-east-1a/h100-train@rack"], 0),
        (
            &["what-if", "--lose-cell", "eu-west-4b", "--format", "json"],
            1,
        ),
        (&["--help"], 0),
    ];
    for (args, expected) in cases {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tenantc"))
            .args(*args)
            .current_dir(scratch.path())
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end before the program writes anything, as `head` does once it has
        // its lines.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}:\n{stderr}"
        );
        assert_eq!(output.status.code(), Some(*expected), "{args:?}:\n{stderr}");
    }
}

// ---------------------------------------------------------------------------------------------
// `tenantc what-if` (issue 21 item 3): the figures of the three drains the issue names (a rack of
// the training pool, half the MIG pool, a whole cell), on the frozen fixture fleet
// (`tests/fixtures/fleet/`, named by `tests/cli/what-if-example/shared`) and on the fixture fleet of `tests/cli/what-if-fixture/root`,
// each worked out by hand from the declarations; the transcripts of those cases show the text.

/// `tenantc what-if <args> --format json` on a case's root: the exit code and the document.
fn what_if(case: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let root = support::case_root(&support::repo().join("tests/cli").join(case), "root");
    let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .arg("what-if")
        .args(args)
        .arg("--root")
        .arg(&*root)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let document = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{args:?}: not JSON ({error}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap(), document)
}

/// The reservation of `tenant` on `pool` and `resource`, as `(reserved, unbacked, burst backed
/// before, burst backed after, effective before, effective after)`.
fn reservation(
    document: &serde_json::Value,
    tenant: &str,
    pool: &str,
    resource: &str,
) -> (i64, i64, i64, i64, i64, i64) {
    let impact = document["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|impact| impact["tenant"] == tenant)
        .unwrap_or_else(|| panic!("{tenant} is not listed: {document:#}"));
    let row = impact["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["pool"] == pool && row["resource"] == resource)
        .unwrap_or_else(|| panic!("{tenant} has no {pool} {resource}: {impact:#}"));
    let field = |name: &str| row[name].as_i64().unwrap();
    (
        field("reserved"),
        field("unbacked"),
        field("burst_backed_before"),
        field("burst_backed_after"),
        field("effective_before"),
        field("effective_after"),
    )
}

/// The gangs of `tenant`, as `(gangs before, after, reserved gangs, worst case)`.
fn gangs(document: &serde_json::Value, tenant: &str) -> Vec<(i64, i64, i64, bool)> {
    document["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|impact| impact["tenant"] == tenant)
        .flat_map(|impact| impact["gangs"].as_array().unwrap().clone())
        .map(|gang| {
            (
                gang["gangs_before"].as_i64().unwrap(),
                gang["gangs_after"].as_i64().unwrap(),
                gang["reserved_gangs"].as_i64().unwrap(),
                gang["worst_case"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn unbacked_tenants(document: &serde_json::Value) -> Vec<String> {
    document["unbacked_tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_string())
        .collect()
}

const GPU: &str = "nvidia.com/gpu";
const MIG_1G: &str = "nvidia.com/mig-1g.10gb";
const MIG_2G: &str = "nvidia.com/mig-2g.20gb";
const MIG_3G: &str = "nvidia.com/mig-3g.40gb";

/// The example fleet: us-east-1a's h100-train is 32 nodes × 8 GPUs = 256 GPUs in racks of 4
/// nodes (32 GPUs); only acme-research reserves there, 64 with a burst of 32, in gangs of 32
/// within a rack. h100-infer has 2 `balanced` nodes (per GPU one 3g.40gb, one 2g.20gb, two
/// 1g.10gb) and 2 `small` nodes (seven 1g.10gb per GPU): 3g.40gb 2 × 8 = 16, 2g.20gb 16, 1g.10gb
/// 2 × 8 × 2 + 2 × 8 × 7 = 144; reserved: 1g.10gb acme-serving 16 (burst 4) and globex-vision 24,
/// 3g.40gb acme-serving 2, 2g.20gb acme-serving 1 and globex-vision 1.
#[test]
fn what_if_on_the_example_fleet_gives_the_hand_worked_figures() {
    // A rack: 256 → 224 GPUs, 64 reserved, nothing short; the burst of 32 was backed by
    // 256 − 64 = 192 spare and still is by 160; effective stays the quota, 64 + 32 = 96; gangs
    // of 32 fit one per rack, 8 racks → 7, 64 / 32 = 2 reserved. Exit 0.
    let (code, rack) = what_if(
        "what-if-example",
        &["--drain", "us-east-1a/h100-train@rack"],
    );
    assert_eq!(code, 0, "{rack:#}");
    assert_eq!(rack["changes"][0]["nodes"], 4);
    assert_eq!(
        reservation(&rack, "acme-research", "h100-train", GPU),
        (64, 0, 32, 32, 96, 96)
    );
    assert_eq!(gangs(&rack, "acme-research"), [(8, 7, 2, false)]);

    // Eight nodes wherever they sit: one in each rack leaves 24 GPUs per rack, no gang of 32
    // fits anywhere, fewer than the 2 reserved; the 192 GPUs left still hold the 64 reserved.
    let (code, eight) = what_if("what-if-example", &["--drain", "us-east-1a/h100-train=8"]);
    assert_eq!(code, 1);
    assert_eq!(gangs(&eight, "acme-research"), [(8, 0, 2, true)]);
    assert_eq!(reservation(&eight, "acme-research", "h100-train", GPU).1, 0);
    assert_eq!(unbacked_tenants(&eight), ["acme-research"]);

    // Half the MIG pool, its two `small` nodes: 1g.10gb 144 → 32 for 40 reserved, 8 short, so
    // each of its two tenants may find 8 of its reservation without hardware; acme-serving's
    // burst of 4 was backed by 144 − 40 = 104 and has nothing after. Its effective capacity
    // (the others idle) stays 16 + 4 = 20, within the 32 left.
    let (code, small) = what_if(
        "what-if-example",
        &["--drain", "us-east-1a/h100-infer/small=2"],
    );
    assert_eq!(code, 1);
    assert_eq!(
        reservation(&small, "acme-serving", "h100-infer", MIG_1G),
        (16, 8, 4, 0, 20, 20)
    );
    assert_eq!(
        reservation(&small, "globex-vision", "h100-infer", MIG_1G),
        (24, 8, 0, 0, 24, 24)
    );
    assert_eq!(unbacked_tenants(&small), ["acme-serving", "globex-vision"]);

    // The other half, one node of each layout: 3g.40gb and 2g.20gb 16 → 8 (2 reserved each),
    // 1g.10gb 144 − 16 − 56 = 72 for 40 reserved, 32 spare for acme-serving's burst of 4. Exit 0.
    let (code, mixed) = what_if(
        "what-if-example",
        &[
            "--drain",
            "us-east-1a/h100-infer/balanced=1",
            "--drain",
            "us-east-1a/h100-infer/small=1",
        ],
    );
    assert_eq!(code, 0, "{mixed:#}");
    assert_eq!(
        reservation(&mixed, "acme-serving", "h100-infer", MIG_1G),
        (16, 0, 4, 4, 20, 20)
    );
    assert_eq!(
        reservation(&mixed, "acme-serving", "h100-infer", MIG_3G).1,
        0
    );
    assert_eq!(
        reservation(&mixed, "globex-vision", "h100-infer", MIG_2G).1,
        0
    );

    // The whole cell us-east-1a: every reservation there is unbacked; acme-research's fleet
    // contract of 64 H100s lies wholly in it, so nothing is spare anywhere to re-home it.
    let (code, cell) = what_if("what-if-example", &["--lose-cell", "us-east-1a"]);
    assert_eq!(code, 1);
    assert_eq!(cell["changes"][0]["nodes"], 36);
    assert_eq!(
        reservation(&cell, "acme-research", "h100-train", GPU),
        (64, 64, 32, 0, 96, 0)
    );
    assert_eq!(
        reservation(&cell, "globex-vision", "h100-infer", MIG_1G).1,
        24
    );
    let contract = &cell["tenants"][0]["fleet"][0];
    assert_eq!(
        (&contract["lost"], &contract["spare"], &contract["short"]),
        (
            &serde_json::json!(64),
            &serde_json::json!(0),
            &serde_json::json!(64)
        )
    );
    assert_eq!(
        unbacked_tenants(&cell),
        ["acme-research", "acme-serving", "globex-vision"]
    );
}

/// The fixture fleet: north's train pool is 12 nodes × 8 GPUs = 96 GPUs in racks of 3 nodes (24
/// GPUs); alpha reserves 48 (burst 16) in gangs of 24 within a rack, beta 24 in gangs of 8 (one
/// NVLink domain, one node): 72 reserved. north's infer pool: `wide` 2 nodes × 8 × two 3g.40gb =
/// 32, `fine` 2 × 8 × seven 1g.10gb = 112; gamma reserves 3g.40gb 20 (burst 4) and 1g.10gb 60,
/// delta 1g.10gb 40 (burst 10). south's pool: 4 × 8 = 32 GPUs, alpha 16 and epsilon 8 reserved.
/// alpha's fleet contract: 64 H100s, 48 in north and the rest, 16, in south.
#[test]
fn what_if_on_the_fixture_fleet_gives_the_hand_worked_figures() {
    // A rack: 96 → 72 for 72 reserved, nothing short but nothing spare: alpha's burst of 16 was
    // backed by 96 − 72 = 24 and is not after; its effective capacity stays 48 + 16 = 64, since
    // the cell admits 72 and 3 racks hold 3 gangs of 24 = 72. Gangs: alpha 4 racks → 3 (2
    // reserved), beta 12 nodes → 9 (24 / 8 = 3 reserved). Exit 0.
    let (code, rack) = what_if("what-if-fixture", &["--drain", "north/train@rack"]);
    assert_eq!(code, 0, "{rack:#}");
    assert_eq!(
        reservation(&rack, "alpha", "train", GPU),
        (48, 0, 16, 0, 64, 64)
    );
    assert_eq!(gangs(&rack, "alpha"), [(4, 3, 2, false)]);
    assert_eq!(gangs(&rack, "beta"), [(12, 9, 3, false)]);

    // Four nodes wherever they sit: 96 → 64 for 72 reserved, 8 short for alpha and for beta.
    // One node in each of the 4 racks leaves 16 GPUs in each, no gang of 24 anywhere. alpha's
    // contract loses 8 in north; south has 32 − 16 − 8 = 8 spare, which takes them.
    let (code, four) = what_if("what-if-fixture", &["--drain", "north/train=4"]);
    assert_eq!(code, 1);
    assert_eq!(reservation(&four, "alpha", "train", GPU).1, 8);
    assert_eq!(reservation(&four, "beta", "train", GPU).1, 8);
    assert_eq!(gangs(&four, "alpha"), [(4, 0, 2, true)]);
    assert_eq!(gangs(&four, "beta"), [(12, 8, 3, false)]);
    let contract = &four["tenants"][0]["fleet"][0];
    assert_eq!(
        (&contract["lost"], &contract["spare"], &contract["short"]),
        (
            &serde_json::json!(8),
            &serde_json::json!(8),
            &serde_json::json!(0)
        )
    );

    // Half the MIG pool, one node of each layout: 3g.40gb 32 → 16 for 20 reserved (4 short),
    // 1g.10gb 112 → 56 for 100 reserved (44 short): gamma min(20, 4) + min(60, 44) = 48
    // unbacked, delta min(40, 44) = 40; gamma's burst of 4 had 32 − 20 = 12 spare, delta's of 10
    // had 112 − 100 = 12; none is left.
    let (code, half) = what_if(
        "what-if-fixture",
        &[
            "--drain",
            "north/infer/wide=1",
            "--drain",
            "north/infer/fine=1",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        reservation(&half, "gamma", "infer", MIG_3G),
        (20, 4, 4, 0, 24, 16)
    );
    assert_eq!(reservation(&half, "gamma", "infer", MIG_1G).1, 44);
    assert_eq!(
        reservation(&half, "delta", "infer", MIG_1G),
        (40, 40, 10, 0, 50, 50)
    );

    // The whole cell north: alpha's 48 there are lost; south's 8 spare take 8, and the other 40
    // would overcommit epsilon, the other tenant of south's pool.
    let (code, north) = what_if("what-if-fixture", &["--lose-cell", "north"]);
    assert_eq!(code, 1);
    let contract = &north["tenants"][0]["fleet"][0];
    assert_eq!(
        (&contract["lost"], &contract["spare"], &contract["short"]),
        (
            &serde_json::json!(48),
            &serde_json::json!(8),
            &serde_json::json!(40)
        )
    );
    assert_eq!(contract["overcommits"], serde_json::json!(["epsilon"]));
    assert_eq!(
        unbacked_tenants(&north),
        ["alpha", "beta", "delta", "gamma"]
    );

    // The whole cell south: alpha's 16 there are lost, and north's train pool has 96 − 72 = 24
    // spare, which takes them; epsilon loses its 8.
    let (code, south) = what_if("what-if-fixture", &["--lose-cell", "south"]);
    assert_eq!(code, 1);
    let contract = &south["tenants"][0]["fleet"][0];
    assert_eq!(
        (&contract["lost"], &contract["spare"], &contract["short"]),
        (
            &serde_json::json!(16),
            &serde_json::json!(24),
            &serde_json::json!(0)
        )
    );
    assert_eq!(unbacked_tenants(&south), ["alpha", "epsilon"]);

    // Removing the `wide` layout takes every 3g.40gb device: gamma's 20 are unbacked.
    let (code, wide) = what_if("what-if-fixture", &["--remove-layout", "north/infer/wide"]);
    assert_eq!(code, 1);
    assert_eq!(reservation(&wide, "gamma", "infer", MIG_3G).1, 20);
    assert_eq!(reservation(&wide, "gamma", "infer", MIG_1G).1, 0);
    assert_eq!(unbacked_tenants(&wide), ["gamma"]);
}
