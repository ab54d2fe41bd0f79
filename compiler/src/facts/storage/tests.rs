//! Tests of the per-bucket shared-base grants, on small fleets of inline declarations.

use super::*;
use crate::diag::{Code, Severity};
use crate::validate::test_support::{compile_files, fleet};

/// A cell `name` on `cloud` with `buckets` and the shared-base `grants` lines of its storage.
fn cell(name: &str, cloud: &str, buckets: &[&str], grants: &str) -> String {
    let identity = match cloud {
        "aws" => "aws account=\"123456789012\" identity=\"pod-identity\"",
        _ => "gcp project=\"fleet-prod\"",
    };
    let region = if cloud == "aws" {
        "us-east-1"
    } else {
        "europe-west4"
    };
    let buckets: String = buckets
        .iter()
        .map(|bucket| format!("        bucket \"{bucket}\"\n"))
        .collect();
    format!(
        "cell \"{name}\" {{\n    cloud \"{cloud}\" region=\"{region}\"\n    kubernetes \"1.33\"\n    driver \"570\"\n    storage {{\n{buckets}        {identity}\n{grants}    }}\n    priority \"batch\" value=1000\n    pool \"train\" {{ gpu \"H100-80GB-SXM\"; nodes 2 gpus-per-node=8; sharing \"exclusive\"; }}\n}}\n"
    )
}

fn grant(prefix: &str, tenant: &str) -> String {
    format!("        shared-base \"{prefix}\" {{ tenants \"{tenant}\"; }}\n")
}

/// The buckets of cell `of` on which tenant `tenant` reads `base`, in a fleet of `cells`.
fn granted(cells: &[(&str, String)], of: &str, tenant: &str, base: &str) -> Vec<String> {
    let files: Vec<(String, String)> = cells
        .iter()
        .map(|(name, text)| (format!("cells/{name}.kdl"), text.clone()))
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    // The cells themselves are sound: only the undeclared readers of their grants are refused.
    let problems: Vec<String> = compile_files(&files)
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && d.code != Code::SharedBaseNotGranted)
        .map(|d| format!("{:?}: {}", d.code, d.message))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    let fleet = fleet(&files);
    let cell = fleet
        .cells
        .iter()
        .find(|cell| cell.name.value == of)
        .expect("the cell");
    granted_buckets(&fleet, cell, tenant, base)
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_grant_on_one_bucket_does_not_open_another_bucket_of_the_cell() {
    // Hole 2 of issue 18: c1 declares two buckets; c2 grants the base on `bucket-a` to t1, c3
    // grants it on `bucket-b` to t2. t1 reads the base on `bucket-a` only.
    let cells = [
        ("c1", cell("c1", "aws", &["bucket-a", "bucket-b"], "")),
        (
            "c2",
            cell("c2", "aws", &["bucket-a"], &grant("shared/llama/", "t1")),
        ),
        (
            "c3",
            cell("c3", "aws", &["bucket-b"], &grant("shared/llama/", "t2")),
        ),
    ];
    assert_eq!(
        granted(&cells, "c1", "t1", "shared/llama/v1/"),
        ["bucket-a"]
    );
    assert_eq!(
        granted(&cells, "c1", "t2", "shared/llama/v1/"),
        ["bucket-b"]
    );
    assert!(granted(&cells, "c1", "t3", "shared/llama/v1/").is_empty());
    // A base outside every grant is granted nowhere, once every bucket has grants.
    assert!(granted(&cells, "c1", "t1", "shared/mistral/").is_empty());
}

#[test]
fn a_bucket_of_the_same_name_in_another_cloud_is_another_bucket() {
    // c1 on AWS and c2 on GCP both name a bucket `models`; c2 grants the base to t2 only.
    let cells = [
        (
            "c1",
            cell("c1", "aws", &["models"], &grant("shared/llama/", "t1")),
        ),
        (
            "c2",
            cell("c2", "gcp", &["models"], &grant("shared/llama/", "t2")),
        ),
    ];
    assert_eq!(granted(&cells, "c1", "t1", "shared/llama/"), ["models"]);
    assert!(granted(&cells, "c2", "t1", "shared/llama/").is_empty());
    assert!(granted(&cells, "c1", "t2", "shared/llama/").is_empty());
    assert_eq!(granted(&cells, "c2", "t2", "shared/llama/"), ["models"]);
    // Without grants of its own cloud, a bucket is open, whatever another cloud grants.
    let cells = [
        ("c1", cell("c1", "aws", &["models"], "")),
        (
            "c2",
            cell("c2", "gcp", &["models"], &grant("shared/llama/", "t2")),
        ),
    ];
    assert_eq!(granted(&cells, "c1", "t1", "shared/llama/"), ["models"]);
}

#[test]
fn a_grant_licenses_its_base_on_every_bucket_of_its_cell_and_in_every_cell_on_that_bucket() {
    let cells = [
        (
            "c1",
            cell(
                "c1",
                "aws",
                &["bucket-a", "bucket-b"],
                &grant("shared/llama/", "t1"),
            ),
        ),
        ("c2", cell("c2", "aws", &["bucket-b", "bucket-c"], "")),
    ];
    assert_eq!(
        granted(&cells, "c1", "t1", "shared/llama/70b/"),
        ["bucket-a", "bucket-b"]
    );
    // c2's `bucket-b` has c1's grant; its `bucket-c` has none and stays open.
    assert_eq!(
        granted(&cells, "c2", "t1", "shared/llama/70b/"),
        ["bucket-b", "bucket-c"]
    );
    assert_eq!(
        granted(&cells, "c2", "t2", "shared/llama/70b/"),
        ["bucket-c"]
    );
    // A grant is a prefix of whole path segments only through the base's own spelling.
    assert!(granted(&cells, "c1", "t1", "shared/llama-2/").is_empty());
}
