//! Reads a cell's GitOps controller settings and checks each value's shape.

use super::reader::{Ctx, Obj, choice, string};
use super::tenant::check_group_name;
use crate::diag::{Code, Diagnostic};
use crate::model::{GitOps, GitOpsController, Spanned};
use crate::parse::Node;

pub(super) fn gitops(ctx: &Ctx, node: &Node) -> Option<GitOps> {
    let mut obj = Obj::new(ctx, node, "gitops")?;
    let controller_node = obj.arg(0, "controller");
    let user_node = obj.field("user");
    let break_glass_node = obj.field("break-glass");
    let text_fields = GITOPS_FIELDS.map(|(key, _)| (key, obj.field(key)));
    let span = obj.span;
    obj.finish();
    let controller = controller_node.and_then(|node| {
        choice(
            ctx,
            node,
            "controller",
            &[
                ("argocd", GitOpsController::ArgoCd),
                ("flux", GitOpsController::Flux),
            ],
        )
    });
    let user = user_node.and_then(|node| string(ctx, node, "user"));
    let break_glass = break_glass_node.and_then(|node| string(ctx, node, "break-glass"));
    let user_ok = match &user {
        Some(user) => check_group_name(ctx, user),
        None => user_node.is_none(),
    };
    let break_glass_ok = match &break_glass {
        Some(group) => check_group_name(ctx, group),
        None => break_glass_node.is_none(),
    };
    let mut texts_ok = controller_node.is_none() || controller.is_some();
    let mut read = |key: &'static str| -> Option<Spanned<String>> {
        let node = text_fields
            .iter()
            .find(|(name, _)| *name == key)
            .and_then(|(_, node)| *node)?;
        let text = string(ctx, node, key);
        let checked = text.filter(|text| {
            check_gitops_field(
                ctx,
                key,
                text,
                controller.as_ref(),
                controller_node.is_some(),
            )
        });
        texts_ok &= checked.is_some();
        checked
    };
    let repo = read("repo");
    let revision = read("revision");
    let path = read("path");
    let destination = read("destination");
    let cluster = read("cluster");
    let project = read("project");
    let namespace = read("namespace");
    let source = read("source");
    let gitops = GitOps {
        span,
        user,
        break_glass,
        controller,
        repo,
        revision,
        path,
        destination,
        cluster,
        project,
        namespace,
        source,
    };
    if let Some(controller) = &gitops.controller
        && controller.value == GitOpsController::ArgoCd
    {
        if gitops.repo.is_none() && texts_ok {
            ctx.push(
                Diagnostic::error(
                    Code::FieldMissing,
                    controller.span,
                    "gitops has no `repo`".to_string(),
                )
                .with_label("Argo CD needs the repository that holds the rendered tree")
                .with_help("add `repo=\"https://git.example.com/platform/fleet.git\"` to gitops"),
            );
            texts_ok = false;
        }
        if let (Some(_), Some(cluster)) = (&gitops.destination, &gitops.cluster) {
            ctx.push(
                Diagnostic::error(
                    Code::GitopsSourceInvalid,
                    cluster.span,
                    "gitops names both a `destination` and a `cluster`".to_string(),
                )
                .with_label("an Application has one destination")
                .with_help("keep `destination` (the API server URL) or `cluster` (the name registered in Argo CD), not both"),
            );
            texts_ok = false;
        }
    }
    (user_ok && break_glass_ok && texts_ok).then_some(gitops)
}

/// The fleet-wide folders of `out/` that `lower/gitops.rs` writes, which no cell may be named.
pub const GITOPS_FOLDERS: [&str; 2] = ["argocd", "flux"];

/// The text fields of `gitops` after `user` and `break-glass`, with the controller they apply
/// to (`None`: both).
const GITOPS_FIELDS: [(&str, Option<GitOpsController>); 8] = [
    ("repo", Some(GitOpsController::ArgoCd)),
    ("revision", Some(GitOpsController::ArgoCd)),
    ("path", None),
    ("destination", Some(GitOpsController::ArgoCd)),
    ("cluster", Some(GitOpsController::ArgoCd)),
    ("project", Some(GitOpsController::ArgoCd)),
    ("namespace", None),
    ("source", Some(GitOpsController::Flux)),
];

/// Checks one text field of `gitops`: that it applies to the declared controller and that the
/// controller can use the value. Reports and returns false otherwise.
fn check_gitops_field(
    ctx: &Ctx,
    key: &str,
    text: &Spanned<String>,
    controller: Option<&Spanned<GitOpsController>>,
    controller_written: bool,
) -> bool {
    let applies_to = GITOPS_FIELDS
        .iter()
        .find(|(name, _)| *name == key)
        .and_then(|(_, applies)| *applies);
    let declared = controller.map(|controller| controller.value);
    let problem: Option<(String, String)> = match (declared, applies_to) {
        // An unknown controller is reported on its own; the value is still checked.
        (None, _) if controller_written => gitops_value_problem(key, &text.value),
        (None, _) => Some((
            "no controller is declared".to_string(),
            format!(
                "name the controller first: `gitops \"argocd\" {key}=…` or `gitops \"flux\" …`"
            ),
        )),
        (Some(declared), Some(applies)) if declared != applies => Some((
            format!("`{key}` is a field of {}", controller_name(applies)),
            format!(
                "remove `{key}`; {} reads {}",
                controller_name(declared),
                match declared {
                    GitOpsController::ArgoCd =>
                        "`repo`, `revision`, `path`, `destination` or `cluster`, `project` and `namespace`",
                    GitOpsController::Flux =>
                        "`source` (its GitRepository), `path` and `namespace`",
                }
            ),
        )),
        _ => gitops_value_problem(key, &text.value),
    };
    let Some((label, help)) = problem else {
        return true;
    };
    ctx.push(
        Diagnostic::error(
            Code::GitopsSourceInvalid,
            text.span,
            format!("gitops `{key}` cannot be used"),
        )
        .with_label(label)
        .with_help(help),
    );
    false
}

fn controller_name(controller: GitOpsController) -> &'static str {
    match controller {
        GitOpsController::ArgoCd => "Argo CD",
        GitOpsController::Flux => "Flux",
    }
}

/// What is wrong with the value of a `gitops` text field, as (label, help).
fn gitops_value_problem(key: &str, value: &str) -> Option<(String, String)> {
    match key {
        "repo" => url_problem(value, &["https://", "ssh://"]).map(|label| {
            (
                label,
                "write the repository as Argo CD clones it: `https://host/org/repo.git` or `ssh://git@host/org/repo.git`".to_string(),
            )
        }),
        "destination" => url_problem(value, &["https://"]).map(|label| {
            (
                label,
                "write the API server URL, such as `https://kubernetes.default.svc`".to_string(),
            )
        }),
        "path" => path_problem(value).map(|label| {
            (
                label,
                "write the folder of `out/` relative to the repository root, such as `out` or `fleet/out`".to_string(),
            )
        }),
        "revision" => (value.is_empty()
            || value.len() > 255
            || value
                .chars()
                .any(|ch| ch.is_whitespace() || ch.is_control() || matches!(ch, '~' | '^' | ':' | '?' | '*' | '[' | '\\')))
        .then(|| {
            (
                "not a Git branch, tag or commit".to_string(),
                "write a branch, tag or commit such as `main` or `v1.4.0`".to_string(),
            )
        }),
        _ => crate::names::dns_label(value).err().map(|problem| {
            (
                problem,
                format!("write `{key}` as a Kubernetes name: lowercase letters, digits and `-`"),
            )
        }),
    }
}

/// Why `value` is not a URL with one of `schemes` and a host, if it is not.
fn url_problem(value: &str, schemes: &[&str]) -> Option<String> {
    let Some(rest) = schemes.iter().find_map(|scheme| value.strip_prefix(scheme)) else {
        return Some(format!(
            "expected a URL starting with {}",
            schemes
                .iter()
                .map(|scheme| format!("`{scheme}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    };
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or_default();
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | ':' | '[' | ']'));
    if !host_ok {
        return Some("the URL has no valid host".to_string());
    }
    if value.chars().any(|ch| {
        ch.is_whitespace() || ch.is_control() || matches!(ch, '"' | '\'' | '`' | '\\' | '<' | '>')
    }) {
        return Some("the URL holds a space, quote or control character".to_string());
    }
    None
}

/// Why `value` is not a plain relative folder inside the repository, if it is not.
fn path_problem(value: &str) -> Option<String> {
    if value.starts_with('/') {
        return Some("an absolute path".to_string());
    }
    let parts: Vec<&str> = value.split('/').collect();
    if parts.contains(&"..") {
        return Some("the path leaves the repository".to_string());
    }
    let part_ok = |part: &&str| {
        !part.is_empty()
            && *part != "."
            && part
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-'))
    };
    if !parts.iter().all(part_ok) {
        return Some(
            "expected folder names of letters, digits, `.`, `_` and `-` joined by `/`".to_string(),
        );
    }
    None
}
