//! `tenantc diff --base <revision>` on prepared git repositories.
//!
//! Consumes: the frozen fixture fleet (`tests/fixtures/fleet/`), copied into a temporary git
//! repository whose first commit is the base; each test then edits the work tree (the head) and
//! runs the real binary.
//! Produces: insta snapshots of the Markdown and JSON summaries (commit ids redacted) and checks
//! of the file diff, the marks of security-relevant and replaced-on-sync changes, and the errors.
//!
//! Invariant: `tenantc diff` never touches the work tree or the index: every test compares
//! `git status` and the index file before and after.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use support::{copy_dir, git};

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A git repository holding the fixture fleet under `fleet/` (a root below the repository's
/// top, as in a monorepo), committed on `main`.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fleet");
    support::copy_fleet(&root);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    (dir, root)
}

fn edit(root: &Path, path: &str, from: &str, to: &str) {
    let file = root.join(path);
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{path} has no `{from}`");
    fs::write(&file, text.replacen(from, to, 1)).unwrap();
}

fn tenantc(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .arg("diff")
        .args(args)
        .arg("--root")
        .arg(root)
        .args(["--color", "never"])
        .output()
        .unwrap()
}

/// `git status` and the index's bytes, to prove a run changed neither.
fn state(dir: &Path) -> (String, Vec<u8>) {
    (
        git(dir, &["status", "--porcelain", "--untracked-files=all"]),
        fs::read(dir.join(".git/index")).unwrap(),
    )
}

/// Stdout with every commit id of the repository replaced by `<commit>`.
fn redacted(dir: &Path, output: &Output) -> String {
    let head = git(dir, &["rev-parse", "main"]);
    let head = head.trim();
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .replace(head, "<commit>")
        .replace(&head[..12], "<commit>")
}

/// The three changes of the "done when": a quota bump, a new registry, a removed tenant.
fn prepared_head(root: &Path) {
    edit(
        root,
        "tenants/acme-research.kdl",
        "pool \"h100-train\" reserved=64",
        "pool \"h100-train\" reserved=72",
    );
    edit(
        root,
        "tenants/acme-research.kdl",
        "fleet gpu=\"H100-80GB-SXM\" gpus=64",
        "fleet gpu=\"H100-80GB-SXM\" gpus=72",
    );
    edit(
        root,
        "tenants/acme-serving.kdl",
        "registry \"registry.acme.internal/serving\"",
        "registry \"registry.acme.internal/serving\"\n    registry \"ghcr.io/acme/serving\"",
    );
    fs::remove_file(root.join("tenants/initech-notebooks.yaml")).unwrap();
    // The platform takes the removed tenant off its org's member list in the same change: a
    // listed name that no tenant has is an error.
    edit(
        root,
        "cells/eu-west-4b.kdl",
        "    org \"initech\" {\n        tenants \"initech-notebooks\"\n    }\n",
        "",
    );
}

#[test]
fn a_quota_bump_a_new_registry_and_a_removed_tenant_in_markdown_and_json() {
    let (dir, root) = repository();
    prepared_head(&root);
    let before = state(dir.path());
    let markdown = tenantc(&root, &["--base", "main"]);
    assert_eq!(markdown.status.code(), Some(0), "{markdown:?}");
    let json = tenantc(&root, &["--base", "main", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    assert_eq!(state(dir.path()), before, "the work tree or index changed");

    let markdown = redacted(dir.path(), &markdown);
    for expected in [
        "**security: higher quota** | us-east-1a | entitlement | reserved on pool h100-train nvidia.com/gpu | 64 | 72 |",
        "**security: new registry** | all | access | image registry ghcr.io/acme/serving | — | allowed |",
        "### Tenant initech-notebooks (removed)",
    ] {
        assert!(
            markdown.contains(expected),
            "no `{expected}` in:\n{markdown}"
        );
    }
    insta::assert_snapshot!("prepared_markdown", markdown);

    let json = redacted(dir.path(), &json);
    let document: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The document carries the envelope every JSON output has (docs/json.md).
    let schema: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(support::repo().join("schema/output.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    assert!(validator.is_valid(&document), "{json}");
    assert_eq!(document["kind"], "diff");
    let statuses: Vec<(&str, &str)> = document["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tenant| {
            (
                tenant["tenant"].as_str().unwrap(),
                tenant["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("acme-research", "changed"),
            ("acme-serving", "changed"),
            ("initech-notebooks", "removed")
        ]
    );
    insta::assert_snapshot!("prepared_json", json);
}

#[test]
fn lowering_a_quota_is_not_marked_and_raising_one_is() {
    let (_dir, root) = repository();
    edit(
        &root,
        "tenants/acme-research.kdl",
        "burst=32 gang=32",
        "burst=16 gang=16",
    );
    let output = tenantc(&root, &["--base", "main", "--format", "json"]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let changes = document["tenants"][0]["changes"].as_array().unwrap();
    let burst = changes
        .iter()
        .find(|change| change["item"] == "burst on pool h100-train nvidia.com/gpu")
        .unwrap();
    assert_eq!(
        (&burst["before"], &burst["after"]),
        (&"32".into(), &"16".into())
    );
    assert!(burst["security"].is_null(), "{burst}");
    assert_eq!(document["security_changes"], 0, "{document:#}");
}

#[test]
fn immutable_fields_are_marked_replaced_on_sync() {
    let (_dir, root) = repository();
    edit(
        &root,
        "cells/us-east-1a.kdl",
        "priority \"batch\" value=1000",
        "priority \"batch\" value=2000",
    );
    edit(
        &root,
        "cells/us-east-1a.kdl",
        "handler=\"nvidia\"",
        "handler=\"kata-nvidia\"",
    );
    edit(
        &root,
        "cells/us-east-1a.kdl",
        "label \"pool\" \"train-exclusive\"",
        "label \"pool\" \"train-dedicated\"",
    );
    edit(
        &root,
        "cells/us-east-1a.kdl",
        "label \"pool\" \"infer-mig\"",
        "label \"pool\" \"infer-sliced\"",
    );
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let markdown = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "| **replaced on sync** | us-east-1a | policy | resource flavor pool-h100-train node labels | ",
        "|  | us-east-1a | policy | resource flavor pool-h100-infer node labels | ",
        "| **replaced on sync** | us-east-1a | policy | priority class batch value | 1000 | 2000 |",
        "| **replaced on sync** | us-east-1a | policy | runtime class nvidia handler | nvidia | kata-nvidia |",
        "### Cell us-east-1a (changed)",
    ] {
        assert!(
            markdown.contains(expected),
            "no `{expected}` in:\n{markdown}"
        );
    }
}

#[test]
fn the_file_diff_is_a_unified_diff_of_the_output_trees() {
    let (_dir, root) = repository();
    prepared_head(&root);
    let output = tenantc(&root, &["--base", "main", "--format", "files"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(
            "--- a/us-east-1a/tenants/acme-research/clusterqueue.yaml\n+++ b/us-east-1a/tenants/acme-research/clusterqueue.yaml\n@@ "
        ),
        "{text}"
    );
    assert!(
        text.contains("+++ /dev/null\n"),
        "the removed tenant's files are deleted: {text}"
    );
    assert!(
        text.contains("+      nominalQuota: 72\n") || text.contains("nominalQuota: \"72\""),
        "{text}"
    );
}

#[test]
fn no_change_says_so() {
    let (_dir, root) = repository();
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        String::from_utf8(output.stdout)
            .unwrap()
            .contains("No tenant or cell changes what it reserves, may access or runs under.\n")
    );
}

/// Issue 18 item 2: the base is compiled from everything the build reads (templates, keys and
/// weights too), so a clean work tree differs from its own commit in no format.
#[test]
fn a_clean_tree_gives_an_empty_diff_in_every_format() {
    let (dir, root) = repository();
    for folder in support::FLEET_FOLDERS {
        assert!(
            root.join(folder).is_dir(),
            "the fixture fleet has no {folder}/"
        );
    }
    let files = tenantc(&root, &["--base", "main", "--format", "files"]);
    assert_eq!(files.status.code(), Some(0), "{files:?}");
    assert_eq!(String::from_utf8(files.stdout).unwrap(), "");
    let markdown = tenantc(&root, &["--base", "main"]);
    assert_eq!(markdown.status.code(), Some(0), "{markdown:?}");
    let markdown = redacted(dir.path(), &markdown);
    assert!(
        markdown
            .contains("No tenant or cell changes what it reserves, may access or runs under.\n")
            && !markdown.contains("| **security"),
        "{markdown}"
    );
    let json = tenantc(&root, &["--base", "main", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    let document: serde_json::Value = serde_json::from_str(&redacted(dir.path(), &json)).unwrap();
    assert_eq!(document["tenants"], serde_json::json!([]), "{document:#}");
    assert_eq!(document["cells"], serde_json::json!([]), "{document:#}");
}

/// Issue 18 item 7: a pool `owner` that turns the owner's `hostAccess` param to true names the
/// host access, and the nodes it may be used on, as security-relevant, not only "owns pool".
#[test]
fn a_pool_owner_that_grants_host_access_names_the_host_access() {
    let (dir, root) = repository();
    edit(
        &root,
        "cells/eu-west-4b.kdl",
        "        owner \"acme-research\"\n",
        "",
    );
    git(
        dir.path(),
        &["commit", "-q", "-am", "the pool has no owner"],
    );
    git(
        dir.path(),
        &[
            "checkout",
            "-q",
            "HEAD~1",
            "--",
            "fleet/cells/eu-west-4b.kdl",
        ],
    );
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let markdown = redacted(dir.path(), &output);
    for expected in [
        "| **security: host access** | eu-west-4b | access | host access (RDMA devices, Pod Security exceptions) | denied | granted |",
        "| **security: host access** | eu-west-4b | access | host use on nodes nvidia.com/device-plugin.config=a100-research&amp;nvidia.com/mig.config=all-disabled | — | allowed |",
        "| **security: widened access** | eu-west-4b | access | owns pool a100-research | — | yes |",
    ] {
        assert!(
            markdown.contains(expected),
            "no `{expected}` in:\n{markdown}"
        );
    }
}

#[test]
fn an_unknown_revision_and_an_option_as_revision_are_usage_errors() {
    let (dir, root) = repository();
    let before = state(dir.path());
    for revision in ["no-such-branch", "--output=/tmp/x"] {
        let output = tenantc(&root, &[&format!("--base={revision}")]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains("names no commit of the repository") && stderr.contains("= help:"),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
    let output = tenantc(&root, &["--base", "no-such-branch", "--format", "json"]);
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["fatal"],
        "`no-such-branch` names no commit of the repository"
    );
    assert_eq!(state(dir.path()), before);
}

#[test]
fn a_root_outside_git_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &support::fleet().join("tenants"),
        &dir.path().join("tenants"),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_tenantc"))
        .args(["diff", "--base", "main", "--root"])
        .arg(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("error: the project root is not inside a git repository"),
        "{stderr}"
    );
}

#[test]
fn a_base_that_does_not_compile_shows_its_diagnostics_as_the_bases() {
    let (dir, root) = repository();
    edit(
        &root,
        "tenants/acme-research.kdl",
        "trust \"hard\"",
        "trust \"hadr\"",
    );
    git(dir.path(), &["commit", "-q", "-am", "broken"]);
    edit(
        &root,
        "tenants/acme-research.kdl",
        "trust \"hadr\"",
        "trust \"hard\"",
    );
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = redacted(
        dir.path(),
        &Output {
            stdout: output.stderr.clone(),
            ..output.clone()
        },
    );
    assert!(
        stderr
            .starts_with("error: base main (<commit>) does not compile; its diagnostics follow\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error[value-unknown]: `hadr` is not a valid `trust`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tenants/acme-research.kdl:5:11"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(" warnings in base main (<commit>)\n"),
        "the summary names the base: {stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_work_tree_that_does_not_compile_is_named_as_such() {
    let (_dir, root) = repository();
    edit(
        &root,
        "tenants/acme-research.kdl",
        "trust \"hard\"",
        "trust \"hadr\"",
    );
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("error: the work tree does not compile; its diagnostics follow\n"),
        "{stderr}"
    );
}

#[test]
fn the_base_is_read_with_the_same_refusals_as_the_disk() {
    let (dir, root) = repository();
    // A symbolic link in the base could point anywhere once checked out: it is refused.
    std::os::unix::fs::symlink("/etc/passwd", root.join("tenants/evil.kdl")).unwrap();
    // A name that may not reach generated output is refused as on disk.
    fs::write(
        root.join("tenants/bad\u{1b}[31mname.kdl"),
        "tenant \"x\" {}\n",
    )
    .unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "link"]);
    fs::remove_file(root.join("tenants/evil.kdl")).unwrap();
    fs::remove_file(root.join("tenants/bad\u{1b}[31mname.kdl")).unwrap();
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "error[file-not-regular]: `tenants/evil.kdl` is named like a declaration but is a symbolic link in git"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("root:"),
        "the link's target was read: {stderr}"
    );
}

#[test]
fn a_base_declaration_over_the_size_limit_is_refused_unread() {
    let (dir, root) = repository();
    let big = format!(
        "// {}\n",
        "x".repeat(usize::try_from(tenantc::limits::MAX_FILE_BYTES).unwrap())
    );
    fs::write(root.join("tenants/huge.kdl"), big).unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "huge"]);
    fs::remove_file(root.join("tenants/huge.kdl")).unwrap();
    let output = tenantc(&root, &["--base", "main"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("error[file-too-large]"), "{stderr}");
    assert!(stderr.contains("tenants/huge.kdl"), "{stderr}");
}
