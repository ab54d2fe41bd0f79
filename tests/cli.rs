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
