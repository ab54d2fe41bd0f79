//! Storage IAM end to end: two real policy linters on the emitted AWS policies (Parliament on
//! the identity policies, cfn-lint on the identity and the role trust policies, which Parliament
//! does not read), the security audit against tampered documents, and a property over generated
//! fleets.
//!
//! Consumes: the frozen fixture fleet (`tests/fixtures/fleet/`), the ok cases and generated
//! fleets. Produces: test results only.
//!
//! Invariant: the linter tests skip with a message when `parliament` or `cfn-lint` is not
//! installed, but fail under `CI=true`, where `.ci/run` installs both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

mod support;

use support::Rng;

use std::process::{Command, Stdio};

use tenantc::diag::Code;
use tenantc::{Compilation, InputFile, compile};

fn fleet() -> Compilation {
    let compilation = support::compile_root(&support::fleet());
    assert!(
        compilation.output.is_some(),
        "the fixture fleet must build: {:?}",
        compilation.diagnostics
    );
    compilation
}

fn iam_files(compilation: &Compilation, ending: &str) -> Vec<(String, String)> {
    let tree = compilation.output.as_ref().unwrap();
    tree.iter()
        .filter(|(path, _)| path.split('/').nth(1) == Some("iam") && path.ends_with(ending))
        .map(|(path, bytes)| (path.clone(), String::from_utf8(bytes.clone()).unwrap()))
        .collect()
}

/// Parliament's command line, run through the interpreter so that it is found whether or not
/// pip put its script on `PATH`.
fn parliament() -> Command {
    let mut command = Command::new("python3");
    command.args(["-m", "parliament.cli"]);
    command
}

#[test]
fn parliament_finds_nothing_in_any_emitted_aws_policy() {
    let probe = parliament().arg("--version").stdin(Stdio::null()).output();
    if !probe.is_ok_and(|output| output.status.success()) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "parliament is not installed, and CI must lint the emitted IAM policies (see .ci/run)"
        );
        eprintln!(
            "SKIPPED: parliament is not installed (`python3 -m pip install parliament`); the emitted AWS policies were not linted"
        );
        return;
    }
    let compilation = fleet();
    let mut policies = iam_files(&compilation, "-permissions.json");
    // The ok fixture cases cover the identity kinds the fixture fleet does not (Pod Identity,
    // several buckets).
    for case in support::subdirs(&support::repo().join("tests/cases/ok")) {
        let compilation = support::compile_root(&support::case_root(&case, "input"));
        if compilation.output.is_some() {
            policies.extend(iam_files(&compilation, "-permissions.json"));
        }
    }
    assert!(
        policies.len() >= 8,
        "the fixture fleet and the ok cases emit AWS policies: {}",
        policies.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (idx, (path, text)) in policies.iter().enumerate() {
        let file = dir.path().join(format!("{idx}.json"));
        std::fs::write(&file, text).unwrap();
        paths.push((file, path));
    }
    // `--file` refuses to run when stdin is not a terminal, so every file goes through
    // `--files`, with an empty stdin; each finding names its file.
    let list: Vec<String> = paths
        .iter()
        .map(|(file, _)| file.display().to_string())
        .collect();
    let output = parliament()
        .arg("--files")
        .arg(list.join(","))
        .arg("--json")
        .arg("--include-community-auditors")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut findings = String::from_utf8_lossy(&output.stdout).into_owned();
    for (file, path) in &paths {
        findings = findings.replace(&file.display().to_string(), path);
    }
    assert!(
        output.status.success() && findings.trim().is_empty(),
        "parliament reports on the emitted policies:\n{findings}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The linter is live: the same run flags a policy that is known to be bad.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::fleet-us-east-1a-models"}]}"#,
    )
    .unwrap();
    let output = parliament()
        .arg("--files")
        .arg(&bad)
        .arg("--json")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("RESOURCE_MISMATCH"),
        "parliament must flag an object action on a bucket ARN"
    );
}

/// cfn-lint's command line, run through the interpreter like Parliament's; the package has no
/// `__main__`, so its console entry point is called directly.
fn cfn_lint() -> Command {
    let mut command = Command::new("python3");
    command.args([
        "-c",
        "import sys; from cfnlint.runner import main; sys.exit(main())",
    ]);
    command
}

/// A CloudFormation template holding each policy: a trust policy as a role's
/// `AssumeRolePolicyDocument` (which cfn-lint checks against the trust-policy schema: principal,
/// effect, `sts:` action names) and an identity policy as a managed policy's `PolicyDocument`.
fn cloudformation(policies: &[(String, String)]) -> String {
    let mut resources = serde_json::Map::new();
    for (idx, (path, text)) in policies.iter().enumerate() {
        let document: serde_json::Value = serde_json::from_str(text).unwrap();
        let resource = if path.ends_with("-trust.json") {
            serde_json::json!({"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": document}})
        } else {
            serde_json::json!({"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": document}})
        };
        resources.insert(format!("Policy{idx}"), resource);
    }
    serde_json::to_string_pretty(&serde_json::json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": resources,
    }))
    .unwrap()
}

/// Runs cfn-lint on `template`; returns its findings as text, empty when there are none.
fn cfn_lint_findings(template: &str, policies: &[(String, String)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policies.json");
    std::fs::write(&file, template).unwrap();
    let output = cfn_lint()
        .arg("--format")
        .arg("parseable")
        .arg("--")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut findings = String::from_utf8_lossy(&output.stdout).into_owned();
    // Name each resource by the emitted file it holds, longest index first so that `Policy1`
    // does not rewrite the start of `Policy12`.
    for (idx, (path, _)) in policies.iter().enumerate().rev() {
        findings = findings.replace(&format!("Policy{idx}"), path);
    }
    findings = findings.replace(&file.display().to_string(), "policies.json");
    assert_eq!(
        output.status.success(),
        findings.trim().is_empty(),
        "cfn-lint's exit code and output disagree:\n{findings}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    findings
}

#[test]
fn cfn_lint_finds_nothing_in_any_emitted_aws_trust_or_identity_policy() {
    let probe = cfn_lint().arg("--version").stdin(Stdio::null()).output();
    if !probe.is_ok_and(|output| output.status.success()) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "cfn-lint is not installed, and CI must lint the emitted IAM trust policies (see .ci/run)"
        );
        eprintln!(
            "SKIPPED: cfn-lint is not installed (`python3 -m pip install cfn-lint`); the emitted AWS trust policies were not linted"
        );
        return;
    }
    let mut compilations = vec![fleet()];
    for case in support::subdirs(&support::repo().join("tests/cases/ok")) {
        let compilation = support::compile_root(&support::case_root(&case, "input"));
        if compilation.output.is_some() {
            compilations.push(compilation);
        }
    }
    let mut policies = Vec::new();
    for compilation in &compilations {
        policies.extend(iam_files(compilation, "-trust.json"));
        policies.extend(iam_files(compilation, "-permissions.json"));
    }
    let trusts = policies
        .iter()
        .filter(|(path, _)| path.ends_with("-trust.json"))
        .count();
    // Both AWS identity kinds are covered: IRSA in the fixture fleet, Pod Identity in case 144.
    let pod_identity = policies
        .iter()
        .any(|(_, text)| text.contains("pods.eks.amazonaws.com"));
    assert!(
        trusts >= 4 && pod_identity,
        "the fixture fleet and the ok cases emit IRSA and Pod Identity trust policies: {trusts}"
    );
    let findings = cfn_lint_findings(&cloudformation(&policies), &policies);
    assert!(
        findings.trim().is_empty(),
        "cfn-lint reports on the emitted policies:\n{findings}"
    );
    // The linter is live: it flags a trust policy without a principal and one with a misspelt
    // action, each made from an emitted one.
    let (path, text) = policies
        .iter()
        .find(|(path, _)| path.ends_with("-trust.json"))
        .unwrap();
    let mut no_principal: serde_json::Value = serde_json::from_str(text).unwrap();
    no_principal["Statement"][0]
        .as_object_mut()
        .unwrap()
        .remove("Principal");
    let misspelt = text.replace("sts:AssumeRole", "sts:AssumeRoel");
    assert_ne!(&misspelt, text, "{path} names an sts:AssumeRole action");
    let bad = vec![
        (path.clone(), no_principal.to_string()),
        (path.clone(), misspelt),
    ];
    let findings = cfn_lint_findings(&cloudformation(&bad), &bad);
    assert!(
        findings.contains("Principal") && findings.to_lowercase().contains("assumeroel"),
        "cfn-lint must flag a trust policy without a principal and a misspelt action:\n{findings}"
    );
}

/// Replaces `from` by `to` in one emitted file and audits the tampered tree.
fn audit_tampered(path: &str, from: &str, to: &str) -> Vec<tenantc::diag::Diagnostic> {
    let compilation = fleet();
    let mut tree = compilation.output.clone().unwrap();
    let text = String::from_utf8(tree[path].clone()).unwrap();
    assert!(text.contains(from), "{path} holds {from}");
    tree.insert(path.to_string(), text.replace(from, to).into_bytes());
    tenantc::validate::audit::audit(
        &tree,
        compilation.plan.as_ref().unwrap(),
        &compilation.fleet,
    )
}

#[test]
fn the_audit_passes_the_emitted_tree() {
    let compilation = fleet();
    let findings = tenantc::validate::audit::audit(
        compilation.output.as_ref().unwrap(),
        compilation.plan.as_ref().unwrap(),
        &compilation.fleet,
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn the_audit_catches_a_hand_made_cross_tenant_grant() {
    let findings = audit_tampered(
        "us-east-1a/iam/acme-serving/infer-permissions.json",
        "models/acme-serving/*\",\n",
        "models/acme-serving/*\",\n        \"arn:aws:s3:::fleet-us-east-1a-models/models/acme-research/*\",\n",
    );
    let rendered: Vec<String> = findings
        .iter()
        .map(|finding| format!("{} {:?}", finding.message, finding.labels))
        .collect();
    assert!(
        findings
            .iter()
            .all(|finding| finding.code == Code::IamGrantTooBroad),
        "{rendered:?}"
    );
    assert!(
        rendered
            .iter()
            .any(|text| text.contains("tenant `acme-serving`")
                && text.contains("`models/acme-research/` of another tenant")),
        "{rendered:?}"
    );
}

#[test]
fn the_audit_catches_every_family_of_tampering() {
    let cases = [
        (
            "us-east-1a/iam/acme-serving/infer-permissions.json",
            "\"s3:GetObject\"",
            "\"s3:*\"",
            "wildcard action",
        ),
        (
            "us-east-1a/iam/acme-serving/infer-permissions.json",
            "models/acme-serving/*\"",
            "*\"",
            "identity may not read",
        ),
        (
            "us-east-1a/iam/acme-serving/train-permissions.json",
            "fleet-us-east-1a-models/checkpoints/acme-serving/*\"\n      ],\n      \"Sid\": \"WriteCheckpoints\"",
            "fleet-us-east-1a-models/models/acme-serving/*\"\n      ],\n      \"Sid\": \"WriteCheckpoints\"",
            "writes to models",
        ),
        (
            "us-east-1a/iam/acme-serving/infer-permissions.json",
            "\"checkpoints/acme-serving/*\",\n",
            "",
            "",
        ),
        (
            "us-east-1a/iam/acme-serving/infer-permissions.json",
            "\"models/acme-serving/*\",",
            "\"checkpoints/acme-research/*\",",
            "`checkpoints/acme-research/` of another tenant",
        ),
        (
            "us-east-1a/iam/acme-serving/infer-trust.json",
            "\"StringEquals\"",
            "\"StringLike\"",
            "uses `StringLike`",
        ),
        (
            "us-east-1a/iam/acme-serving/infer-trust.json",
            "system:serviceaccount:acme-serving-infer:server",
            "system:serviceaccount:acme-research-train:trainer",
            "is not bound to exactly",
        ),
        (
            "eu-west-4b/iam/globex-vision/infer-bucket-fleet-eu-west-4b-models.json",
            "objects/models/globex-vision/",
            "objects/models/",
            "identity may not read",
        ),
        (
            "eu-west-4b/iam/globex-vision/infer-workload-identity.json",
            "[globex-vision-infer/",
            "[acme-research-train/",
            "to a member other than",
        ),
    ];
    for (path, from, to, expected) in cases {
        let compilation = fleet();
        let text = String::from_utf8(compilation.output.as_ref().unwrap()[path].clone()).unwrap();
        if !text.contains(from) {
            // The infer identity reads no checkpoints: this case checks the premise only.
            assert!(expected.is_empty(), "{path} lacks {from:?}:\n{text}");
            continue;
        }
        let findings = audit_tampered(path, from, to);
        let labels: Vec<String> = findings
            .iter()
            .flat_map(|finding| finding.labels.iter().map(|label| label.message.clone()))
            .collect();
        assert!(
            labels.iter().any(|label| label.contains(expected)),
            "{path}: {from:?} -> {to:?} gave {labels:?}"
        );
    }
}

fn generated_fleet(rng: &mut Rng) -> Vec<InputFile> {
    let aws = rng.below(3);
    let identity = match aws {
        0 => r#"aws account="111122223333" identity="pod-identity""#.to_string(),
        1 => r#"aws account="111122223333" identity="irsa" oidc-provider="oidc.eks.eu-west-1.amazonaws.com/id/ABC""#.to_string(),
        _ => r#"gcp project="fleet-gen-project""#.to_string(),
    };
    let cloud = if aws < 2 { "aws" } else { "gcp" };
    let buckets: String = (0..=rng.below(2))
        .map(|idx| format!("        bucket \"bucket-{idx}\"\n"))
        .collect();
    let cell = format!(
        "cell \"c1\" {{\n    cloud \"{cloud}\" region=\"r1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    storage {{\n{buckets}        {identity}\n    }}\n    priority \"batch\" value=1000\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 64 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n}}\n"
    );
    let mut inputs = vec![InputFile {
        path: "cells/c1.kdl".into(),
        contents: cell.into_bytes(),
    }];
    // Names that are prefixes of one another, so `models/a/` must not cover `models/a-b/`.
    let stems = [
        "a",
        "a-b",
        "ab",
        "models",
        "checkpoints",
        "shared",
        "t1",
        "t1-train",
    ];
    let count = 2 + rng.below(5) as usize;
    let mut names: Vec<&str> = Vec::new();
    while names.len() < count {
        let name = stems[rng.below(stems.len() as u64) as usize];
        if !names.contains(&name) {
            names.push(name);
        }
    }
    for name in names {
        let workloads = match rng.below(3) {
            0 => "    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n",
            1 => "    workload \"infer\" service-account=\"server\" priority=\"batch\"\n",
            _ => {
                "    workload \"train\" service-account=\"trainer\" priority=\"batch\"\n    workload \"infer\" service-account=\"server\" priority=\"batch\"\n"
            }
        };
        let first = if workloads.contains("train") {
            "train"
        } else {
            "infer"
        };
        let shared = if rng.below(2) == 0 {
            format!(
                "    shared-base \"shared/{}/\"\n",
                stems[rng.below(stems.len() as u64) as usize]
            )
        } else {
            String::new()
        };
        let tenant = format!(
            "tenant \"{name}\" {{\n    org \"o-{name}\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"{name}-admins\"\n    quota cell=\"c1\" cpu=\"1\" memory=\"1Gi\" pods=10 {{ pool \"p\" reserved=8 workload=\"{first}\"; }}\n{workloads}{shared}}}\n"
        );
        inputs.push(InputFile {
            path: format!("tenants/{name}.kdl"),
            contents: tenant.into_bytes(),
        });
    }
    inputs
}

#[test]
fn no_tenant_policy_names_another_tenants_prefix_in_generated_fleets() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for round in 0..40 {
        let inputs = generated_fleet(&mut rng);
        let compilation = compile(&inputs);
        assert!(
            compilation.output.is_some(),
            "round {round}: the generated fleet must build: {:#?} {:?} {}",
            compilation.diagnostics,
            compilation.internal_error,
            inputs
                .iter()
                .map(|input| String::from_utf8_lossy(&input.contents).into_owned())
                .collect::<String>()
        );
        let tree = compilation.output.as_ref().unwrap();
        let tenants: Vec<String> = compilation
            .fleet
            .tenants
            .iter()
            .map(|t| t.name.value.clone())
            .collect();
        for (path, bytes) in tree {
            let parts: Vec<&str> = path.split('/').collect();
            let [_, "iam", owner, _] = parts.as_slice() else {
                continue;
            };
            let text = String::from_utf8(bytes.clone()).unwrap();
            for other in tenants.iter().filter(|other| other != owner) {
                for root in ["models", "checkpoints"] {
                    let prefix = format!("{root}/{other}/");
                    assert!(
                        !text.contains(&prefix),
                        "round {round}: {path} names {prefix}:\n{text}"
                    );
                }
                for kind in ["train", "infer"] {
                    assert!(
                        !text.contains(&format!("system:serviceaccount:{other}-{kind}:"))
                            && !text.contains(&format!("[{other}-{kind}/"))
                            && !text.contains(&format!("\"{other}-{kind}\"")),
                        "round {round}: {path} trusts a ServiceAccount of {other}:\n{text}"
                    );
                }
            }
            assert!(
                !text.contains("\"s3:*\"") && !text.contains("\"*\""),
                "{path}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} IAM files checked");
}

// Shared bases per bucket (issue 18, hole 2) ---------------------------------------------------

/// A cell `name` on `cloud` with `buckets` and the `grants` (`(prefix, readers)`) of its storage.
fn storage_cell(
    name: &str,
    cloud: &str,
    buckets: &[&str],
    grants: &[(&str, &[&str])],
) -> InputFile {
    let identity = if cloud == "aws" {
        r#"aws account="111122223333" identity="pod-identity""#
    } else {
        r#"gcp project="fleet-gen-project""#
    };
    let buckets: String = buckets
        .iter()
        .map(|bucket| format!("        bucket \"{bucket}\"\n"))
        .collect();
    let grants: String = grants
        .iter()
        .map(|(prefix, readers)| {
            let readers: Vec<String> = readers.iter().map(|r| format!("\"{r}\"")).collect();
            format!(
                "        shared-base \"{prefix}\" {{ tenants {}; }}\n",
                readers.join(" ")
            )
        })
        .collect();
    InputFile {
        path: format!("cells/{name}.kdl"),
        contents: format!(
            "cell \"{name}\" {{\n    cloud \"{cloud}\" region=\"r1\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    storage {{\n{buckets}        {identity}\n{grants}    }}\n    priority \"batch\" value=1000\n    pool \"p\" {{\n        gpu \"H100-80GB-SXM\"\n        nodes 64 gpus-per-node=8\n        sharing \"exclusive\"\n    }}\n}}\n"
        )
        .into_bytes(),
    }
}

/// A tenant `name` with an `infer` workload, a quota in each of `cells` and the shared `bases`.
fn storage_tenant(name: &str, cells: &[&str], bases: &[&str]) -> InputFile {
    let quotas: String = cells
        .iter()
        .map(|cell| {
            format!("    quota cell=\"{cell}\" cpu=\"1\" memory=\"1Gi\" pods=10 {{ pool \"p\" reserved=8; }}\n")
        })
        .collect();
    let bases: String = bases
        .iter()
        .map(|base| format!("    shared-base \"{base}\"\n"))
        .collect();
    InputFile {
        path: format!("tenants/{name}.kdl"),
        contents: format!(
            "tenant \"{name}\" {{\n    org \"o-{name}\"\n    team \"t\"\n    trust \"hard\"\n    groups admin=\"{name}-admins\"\n{quotas}    workload \"infer\" service-account=\"server\" priority=\"batch\"\n{bases}}}\n"
        )
        .into_bytes(),
    }
}

/// Whether an IAM resource pattern (`*` matches any run, `?` one character) covers `value`.
fn glob_matches(pattern: &str, value: &str) -> bool {
    match pattern.chars().next() {
        None => value.is_empty(),
        Some('*') => (0..=value.len())
            .filter(|idx| value.is_char_boundary(*idx))
            .any(|idx| glob_matches(&pattern[1..], &value[idx..])),
        Some(first) => value.chars().next().is_some_and(|next| {
            (first == '?' || first == next)
                && glob_matches(&pattern[first.len_utf8()..], &value[next.len_utf8()..])
        }),
    }
}

/// What the emitted IAM of `tenant` in `cell` lets its `infer` identity do with the object
/// `key` of `bucket`, read by this test's own evaluator (not the audit's, not `lower/iam.rs`):
/// `(get the object, list keys under it)`.
fn may_read(
    tree: &tenantc::emit::OutputTree,
    cell: &str,
    tenant: &str,
    bucket: &str,
    key: &str,
) -> (bool, bool) {
    let folder = format!("{cell}/iam/{tenant}");
    if let Some(bytes) = tree.get(&format!("{folder}/infer-permissions.json")) {
        let document: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        let statements = document["Statement"].as_array().unwrap();
        let allows = |action: &'static str| {
            statements.iter().filter(move |s| {
                s["Effect"] == "Allow"
                    && s["Action"].as_array().unwrap().iter().any(|a| a == action)
            })
        };
        let get =
            allows("s3:GetObject").any(|s| {
                s["Resource"].as_array().unwrap().iter().any(|r| {
                    glob_matches(r.as_str().unwrap(), &format!("arn:aws:s3:::{bucket}/{key}"))
                })
            });
        let list = allows("s3:ListBucket").any(|s| {
            s["Resource"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == &serde_json::json!(format!("arn:aws:s3:::{bucket}")))
                && s["Condition"]["StringLike"]["s3:prefix"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| glob_matches(p.as_str().unwrap(), key))
        });
        return (get, list);
    }
    let Some(bytes) = tree.get(&format!("{folder}/infer-bucket-{bucket}.json")) else {
        return (false, false);
    };
    let document: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    let object = format!("projects/_/buckets/{bucket}/objects/{key}");
    let get = document["bindings"].as_array().unwrap().iter().any(|b| {
        ["roles/storage.objectViewer", "roles/storage.objectUser"]
            .contains(&b["role"].as_str().unwrap())
            && b["condition"]["expression"]
                .as_str()
                .and_then(|e| e.strip_prefix("resource.name.startsWith(\""))
                .and_then(|e| e.strip_suffix("\")"))
                .is_some_and(|prefix| object.starts_with(prefix))
    });
    // Google's objectViewer lists what it reads.
    (get, get)
}

/// c1 declares two buckets and grants nothing; c2 grants the base on `models-a` to t1 and c3
/// grants it on `models-b` to t2; t1 has a quota in c1.
fn two_bucket_fleet() -> Vec<InputFile> {
    vec![
        storage_cell("c1", "aws", &["models-a", "models-b"], &[]),
        storage_cell("c2", "aws", &["models-a"], &[("shared/llama/", &["t1"])]),
        storage_cell("c3", "aws", &["models-b"], &[("shared/llama/", &["t2"])]),
        storage_tenant("t1", &["c1", "c2"], &["shared/llama/v1/"]),
        storage_tenant("t2", &["c3"], &["shared/llama/v1/"]),
    ]
}

#[test]
fn a_grant_on_one_bucket_of_a_two_bucket_cell_opens_the_base_on_that_bucket_only() {
    // Before the fix, t1's quota in c1 gave it the base on both buckets.
    let compilation = compile(&two_bucket_fleet());
    let tree = compilation
        .output
        .as_ref()
        .unwrap_or_else(|| panic!("{:#?}", compilation.diagnostics));
    let key = "shared/llama/v1/config.json";
    assert_eq!(may_read(tree, "c1", "t1", "models-a", key), (true, true));
    assert_eq!(may_read(tree, "c1", "t1", "models-b", key), (false, false));
    assert_eq!(may_read(tree, "c3", "t2", "models-b", key), (true, true));
    // Its own models stay readable in both buckets.
    for bucket in ["models-a", "models-b"] {
        assert_eq!(
            may_read(tree, "c1", "t1", bucket, "models/t1/m/v1/w"),
            (true, true)
        );
    }
    // The reviewer view says where.
    let review = tenantc::review::review(compilation.plan.as_ref().unwrap());
    let text = tenantc::review::render(review.tenants.iter().find(|t| t.tenant == "t1").unwrap());
    assert!(text.contains("shared/llama/v1/ in models-a"), "{text}");
}

#[test]
fn a_bucket_of_the_same_name_in_another_cloud_does_not_lend_its_grants() {
    // c1 (AWS) grants the base on its bucket `models` to t1; c2 (GCP) has a bucket of the same
    // name whose grant names t2 only. Before the fix, t1's quota in c2 gave it
    // roles/storage.objectViewer there.
    let inputs = vec![
        storage_cell("c1", "aws", &["models"], &[("shared/llama/", &["t1"])]),
        storage_cell("c2", "gcp", &["models"], &[("shared/llama/", &["t2"])]),
        storage_tenant("t1", &["c1", "c2"], &["shared/llama/"]),
        storage_tenant("t2", &["c2"], &["shared/llama/"]),
    ];
    let compilation = compile(&inputs);
    assert!(compilation.output.is_none());
    let refused: Vec<String> = compilation
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::SharedBaseNotGranted)
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(
        refused,
        ["shared base `shared/llama/` of tenant `t1` is not granted to it in cell `c2`"],
        "{:#?}",
        compilation.diagnostics
    );
    // Without t1's quota in c2 the fleet builds, and t2 reads the base on GCP's `models`.
    let inputs = vec![
        storage_cell("c1", "aws", &["models"], &[("shared/llama/", &["t1"])]),
        storage_cell("c2", "gcp", &["models"], &[("shared/llama/", &["t2"])]),
        storage_tenant("t1", &["c1"], &["shared/llama/"]),
        storage_tenant("t2", &["c2"], &["shared/llama/"]),
    ];
    let compilation = compile(&inputs);
    let tree = compilation
        .output
        .as_ref()
        .unwrap_or_else(|| panic!("{:#?}", compilation.diagnostics));
    assert_eq!(
        may_read(tree, "c2", "t2", "models", "shared/llama/w"),
        (true, true)
    );
    assert_eq!(
        may_read(tree, "c1", "t1", "models", "shared/llama/w"),
        (true, true)
    );
    assert_eq!(
        may_read(tree, "c2", "t1", "models", "shared/llama/w"),
        (false, false)
    );
}

#[test]
fn the_audit_catches_a_shared_base_granted_on_a_bucket_whose_grants_name_another_tenant() {
    let compilation = compile(&two_bucket_fleet());
    let mut tree = compilation.output.clone().unwrap();
    let path = "c1/iam/t1/infer-permissions.json";
    let text = String::from_utf8(tree[path].clone()).unwrap();
    // By hand, the base on the second bucket too, as the build did before the fix.
    let from = "\"arn:aws:s3:::models-a/shared/llama/v1/*\"";
    assert!(text.contains(from), "{text}");
    let tampered = text.replace(
        from,
        &format!("{from},\n        \"arn:aws:s3:::models-b/shared/llama/v1/*\""),
    );
    tree.insert(path.to_string(), tampered.into_bytes());
    let findings = tenantc::validate::audit::audit(
        &tree,
        compilation.plan.as_ref().unwrap(),
        &compilation.fleet,
    );
    let labels: Vec<String> = findings
        .iter()
        .flat_map(|finding| finding.labels.iter().map(|label| label.message.clone()))
        .collect();
    assert!(
        labels.iter().any(|label| label
            .contains("reads the shared base `shared/llama/v1/` in bucket `models-b`, where no grant names the tenant")),
        "{labels:?}"
    );
}

/// A generated cell: its name, cloud, buckets and `(prefix, readers)` grants.
struct GenCell<'a> {
    name: String,
    cloud: &'a str,
    buckets: Vec<&'a str>,
    grants: Vec<(&'a str, Vec<&'a str>)>,
}

/// The reference model of the grants, written here from the rule in docs/iam.md: whether
/// `tenant` may read `base` on `bucket` of `cloud`, given every cell's `(cloud, buckets,
/// grants)`.
fn reference_granted(
    cells: &[GenCell<'_>],
    cloud: &str,
    bucket: &str,
    tenant: &str,
    base: &str,
) -> bool {
    let grants: Vec<&(&str, Vec<&str>)> = cells
        .iter()
        .filter(|cell| cell.cloud == cloud && cell.buckets.contains(&bucket))
        .flat_map(|cell| &cell.grants)
        .collect();
    grants.is_empty()
        || grants
            .iter()
            .any(|(prefix, readers)| base.starts_with(prefix) && readers.contains(&tenant))
}

#[test]
fn shared_bases_are_read_exactly_where_a_grant_on_the_bucket_names_the_tenant_in_generated_fleets()
{
    let mut rng = Rng(0x5eed_b0c4_e7a1_2026);
    let (mut built, mut refused, mut checked) = (0, 0, 0);
    let bucket_names = ["models", "models-2", "models-3"];
    let prefixes = ["shared/llama/", "shared/mistral/"];
    let bases = ["shared/llama/v1/", "shared/mistral/", "shared/llama-2/"];
    let tenants = ["t1", "t2", "t3"];
    for round in 0..120 {
        let mut cells = Vec::new();
        for idx in 0..(2 + rng.below(2)) {
            let cloud = if rng.below(2) == 0 { "aws" } else { "gcp" };
            let mut buckets: Vec<&str> = Vec::new();
            for _ in 0..=rng.below(2) {
                let bucket = bucket_names[rng.below(3) as usize];
                if !buckets.contains(&bucket) {
                    buckets.push(bucket);
                }
            }
            let mut grants: Vec<(&str, Vec<&str>)> = Vec::new();
            for _ in 0..rng.below(3) {
                let prefix = prefixes[rng.below(2) as usize];
                let readers: Vec<&str> = tenants
                    .iter()
                    .copied()
                    .filter(|_| rng.below(2) == 0)
                    .collect();
                if !readers.is_empty() && !grants.iter().any(|(p, _)| *p == prefix) {
                    grants.push((prefix, readers));
                }
            }
            cells.push(GenCell {
                name: format!("c{idx}"),
                cloud,
                buckets,
                grants,
            });
        }
        let mut declared: Vec<(&str, Vec<String>, &str)> = Vec::new();
        for tenant in tenants {
            let quota_cells: Vec<String> = cells
                .iter()
                .filter(|_| rng.below(2) == 0)
                .map(|cell| cell.name.clone())
                .collect();
            declared.push((tenant, quota_cells, bases[rng.below(3) as usize]));
        }
        let mut inputs: Vec<InputFile> = cells
            .iter()
            .map(|cell| {
                let grants: Vec<(&str, &[&str])> = cell
                    .grants
                    .iter()
                    .map(|(p, r)| (*p, r.as_slice()))
                    .collect();
                storage_cell(&cell.name, cell.cloud, &cell.buckets, &grants)
            })
            .collect();
        for (tenant, quota_cells, base) in &declared {
            let quota_cells: Vec<&str> = quota_cells.iter().map(String::as_str).collect();
            inputs.push(storage_tenant(tenant, &quota_cells, &[base]));
        }
        let compilation = compile(&inputs);
        // Where the reference says a tenant reads its base on none of a cell's buckets, the
        // build must refuse it, and only then.
        let mut expected_refusals = Vec::new();
        for (tenant, quota_cells, base) in &declared {
            for cell_name in quota_cells {
                let cell = cells.iter().find(|cell| &cell.name == cell_name).unwrap();
                if !cell
                    .buckets
                    .iter()
                    .any(|bucket| reference_granted(&cells, cell.cloud, bucket, tenant, base))
                {
                    expected_refusals.push(format!("{tenant} in {cell_name}"));
                }
            }
        }
        let refusals: Vec<&tenantc::diag::Diagnostic> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::SharedBaseNotGranted)
            .collect();
        assert_eq!(
            refusals.len(),
            expected_refusals.len(),
            "round {round}: expected {expected_refusals:?}, got {:#?}",
            compilation.diagnostics
        );
        let Some(tree) = compilation.output.as_ref() else {
            assert!(
                !expected_refusals.is_empty(),
                "round {round}: {:#?}",
                compilation.diagnostics
            );
            refused += 1;
            continue;
        };
        built += 1;
        for (tenant, quota_cells, base) in &declared {
            for cell_name in quota_cells {
                let cell = cells.iter().find(|cell| &cell.name == cell_name).unwrap();
                let cloud = cell.cloud;
                for bucket in &cell.buckets {
                    let wanted = reference_granted(&cells, cloud, bucket, tenant, base);
                    let key = format!("{base}weights.bin");
                    assert_eq!(
                        may_read(tree, cell_name, tenant, bucket, &key),
                        (wanted, wanted),
                        "round {round}: {tenant} in {cell_name} ({cloud}) on {bucket}, base {base}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(
        built > 20 && refused > 5 && checked > 100,
        "{built} built, {refused} refused, {checked} checked"
    );
}
