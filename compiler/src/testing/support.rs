//! Compiles inline declarations for the unit tests of the check families.

use crate::diag::Code;
use crate::{Compilation, InputFile, compile};

/// Compiles `(path, text)` files and returns the codes found, in sorted order.
pub fn codes(files: &[(&str, &str)]) -> Vec<Code> {
    compile_files(files)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

/// The validated fleet of `(path, text)` files, as `lower` would get it.
pub fn fleet(files: &[(&str, &str)]) -> crate::model::Fleet {
    let mut sources = crate::source::SourceMap::new();
    let mut declarations = Vec::new();
    for (path, text) in files {
        let file = sources.add(path.to_string(), text.to_string());
        let Some((kind, Some(format))) = crate::classify(path) else {
            continue;
        };
        let (document, _) = crate::parse::parse(file, text, format);
        let (declaration, _) = crate::schema::read(&document, kind, &sources);
        declarations.extend(declaration);
    }
    crate::validate::validate(
        declarations,
        &crate::validate::Unreadable::default(),
        crate::catalog::Catalog::builtin(),
    )
    .0
}

/// The declaration files of the frozen fixture fleet (`tests/fixtures/fleet/`, a copy of
/// the example fleet), as `(path, text)`.
pub fn example_files() -> Vec<(String, String)> {
    crate::testing::declaration_files(crate::testing::FLEET)
}

/// Compiles the frozen fixture fleet of [`example_files`].
pub fn compile_example() -> Compilation {
    let files = example_files();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    compile_files(&borrowed)
}

/// Compiles `(path, text)` files.
pub fn compile_files(files: &[(&str, &str)]) -> Compilation {
    let inputs: Vec<InputFile> = files
        .iter()
        .map(|(path, text)| InputFile {
            path: path.to_string(),
            contents: text.as_bytes().to_vec(),
        })
        .collect();
    compile(&inputs)
}

/// A valid cell with an exclusive pool `train` (4 x 8 GPUs) and a MIG pool `infer`.
pub const CELL: &str = r#"cell "c1" {
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000
    pool "train" {
        gpu "H100-80GB-SXM"
        nodes 4 gpus-per-node=8
        sharing "exclusive"
    }
    pool "infer" {
        gpu "H100-80GB-SXM"
        nodes 2 gpus-per-node=8
        sharing "mig"
        taint "tenantc.io/pool" "infer" effect="NoSchedule"
        mig-layout "balanced" {
            profile "3g.40gb" 1
            profile "2g.20gb" 1
            profile "1g.10gb" 2
        }
    }
}
"#;

/// `cell` with an `org` node that lists `tenants` as the members of `org`, as a cell must
/// where two of its tenants declare one org (`org-membership-undeclared`).
pub fn listing(cell: &str, org: &str, tenants: &[&str]) -> String {
    let names: Vec<String> = tenants.iter().map(|name| format!("\"{name}\"")).collect();
    cell.replacen(
        "    driver \"570\"\n",
        &format!(
            "    driver \"570\"\n    org \"{org}\" {{ tenants {}; }}\n",
            names.join(" ")
        ),
        1,
    )
}

/// A tenant with a quota in `c1` given as the body of the `quota` node.
pub fn tenant(name: &str, trust: &str, quota_body: &str) -> String {
    format!(
        r#"tenant "{name}" {{
    org "acme"
    team "research"
    trust "{trust}"
    groups admin="{name}-admins"
    workload "train" service-account="trainer" priority="batch"
    quota cell="c1" cpu="64" memory="256Gi" pods=100 {{
        {quota_body}
    }}
}}
"#
    )
}
