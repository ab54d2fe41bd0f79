//! `tenantc test-policy <cell> <object>`: judge one request as the cell's API server admits it,
//! offline.
//!
//! Consumes: [`TestPolicyArgs`], the declarations under the root and a YAML object file.
//! Produces: the verdict of `policy/judge.rs` on stdout: who makes the request, `admitted` (with
//! the API server's warnings) or `denied` with every refusal, and what is not judged; exit 1 when
//! denied.
//!
//! Invariant: a request that cannot be judged (declarations with errors, an unknown cell, a
//! namespace no tenant owns, a kind the floor does not match, an unreadable object) is a fatal
//! error, never an admission.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use tenantc::diag::render::{self, Color};
use tenantc::lower::admission::{self, Scheduler};
use tenantc::policy::judge::{CellAdmission, Judge, NOT_JUDGED, Verdict};
use tenantc::policy::pod_security::PodSecurityVerdict;

use super::disk;
use super::error::{Exit, Fatal};
use super::output::{escape, print_out};
use super::project::load_declarations;

/// The arguments of `tenantc test-policy`.
#[derive(Debug, Args)]
pub struct TestPolicyArgs {
    /// The cell whose admission judges the object.
    pub cell: String,
    /// The object, a YAML file holding one Kubernetes object: the new object of a CREATE or
    /// UPDATE, the object deleted by a DELETE.
    pub object: PathBuf,
    /// The object before the change: judge an UPDATE from it to OBJECT (`oldObject` and
    /// `object`), as when a running pod is edited. Implies --operation UPDATE.
    #[arg(long, value_name = "FILE")]
    pub old: Option<PathBuf>,
    /// The operation: CREATE (the default), UPDATE (needs --old) or DELETE (OBJECT is the
    /// object deleted: the policies see it as `oldObject`, with `object` null, and the
    /// `DeleteOptions` that `kubectl delete` sends).
    #[arg(long, value_enum, ignore_case = true, value_name = "OPERATION")]
    pub operation: Option<TestPolicyOperation>,
    /// With --operation DELETE, what happens to the object's dependents, as `kubectl delete
    /// --cascade` says it (`propagationPolicy` Background, Foreground or Orphan).
    #[arg(long, value_enum, value_name = "CASCADE")]
    pub cascade: Option<TestPolicyCascade>,
    /// The user who makes the request (`request.userInfo.username`), such as `alice` or
    /// `system:serviceaccount:acme-research-train:trainer`. A ServiceAccount without --group
    /// is in its namespace's ServiceAccount groups, as the API server puts it.
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// A group of the user (`request.userInfo.groups`); repeat for several, as in
    /// `--group acme-research-admins --group oncall`. Every user but system:anonymous is also
    /// in system:authenticated. Without --user and --group, the request is a member's of the
    /// tenant that owns the namespace (its member group).
    #[arg(long = "group", value_name = "NAME")]
    pub groups: Vec<String>,
    /// The namespace of the object, when it has no metadata.namespace.
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Project root holding tenants/ and cells/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
}

/// The admission operation `test-policy` judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestPolicyOperation {
    /// A new object.
    #[value(name = "CREATE")]
    Create,
    /// A change from --old to OBJECT.
    #[value(name = "UPDATE")]
    Update,
    /// OBJECT is deleted.
    #[value(name = "DELETE")]
    Delete,
}

/// `kubectl delete --cascade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestPolicyCascade {
    /// The dependents are deleted after the object (kubectl's default).
    Background,
    /// The dependents are deleted before the object.
    Foreground,
    /// The dependents are left behind, without an owner.
    Orphan,
}

impl TestPolicyOperation {
    fn name(self) -> &'static str {
        match self {
            TestPolicyOperation::Create => "CREATE",
            TestPolicyOperation::Update => "UPDATE",
            TestPolicyOperation::Delete => "DELETE",
        }
    }
}

/// Runs `tenantc test-policy`.
pub fn run(args: &TestPolicyArgs) -> Result<Exit, Fatal> {
    // An inconsistent request is a usage error, found before anything is compiled.
    let operation = operation(args)?;
    let loaded = load_declarations(&args.root)?;
    let compilation = tenantc::compile_loaded(&loaded);
    if compilation.has_errors() || compilation.internal_error.is_some() {
        eprint!(
            "{}",
            render::human(&compilation.diagnostics, &compilation.sources, Color::Never)
        );
        return Err(
            Fatal::new("the declarations have errors, so there are no policies to test")
                .with_help("run `tenantc check` and fix them first"),
        );
    }
    let (Some(plan), Some(output)) = (&compilation.plan, &compilation.output) else {
        return Err(Fatal::new(
            "the declarations were not resolved; this is a bug in tenantc",
        ));
    };
    let Some(cell) = plan.cells.iter().find(|cell| cell.name == args.cell) else {
        let names: Vec<String> = plan
            .cells
            .iter()
            .map(|cell| format!("`{}`", cell.name))
            .collect();
        return Err(
            Fatal::new(format!("cell `{}` is not declared", escape(&args.cell)))
                .with_help(format!("declared cells are {}", names.join(", "))),
        );
    };
    let object = read_object(&args.object)?;
    let old = args.old.as_deref().map(read_object).transpose()?;
    let namespace = args
        .namespace
        .clone()
        .or_else(|| text_at(&object, "/metadata/namespace"));
    let Some(namespace) = namespace else {
        return Err(Fatal::new("the object has no metadata.namespace")
            .with_help("add metadata.namespace, or pass --namespace"));
    };
    if let Some(old) = &old {
        let identity = |object: &serde_json::Value| {
            (
                text_at(object, "/kind"),
                text_at(object, "/metadata/name"),
                text_at(object, "/metadata/namespace").unwrap_or_else(|| namespace.clone()),
            )
        };
        if identity(old) != identity(&object) {
            return Err(Fatal::new(
                "the --old object is not the same object: an UPDATE keeps the kind, name and namespace",
            )
            .with_help("give the object as it is before the change with --old, and as it is after as OBJECT"));
        }
    }
    let what = format!(
        "{} `{}` in namespace `{}`",
        escape(text_at(&object, "/kind").as_deref().unwrap_or("object")),
        escape(text_at(&object, "/metadata/name").as_deref().unwrap_or("")),
        escape(&namespace),
    );
    let scheduler = cell.backends.scheduler;
    let judged = tenantc::policy::resource_of(&object).is_some_and(|(group, version, resource)| {
        judged_resources(scheduler)
            .iter()
            .any(|(g, v, r)| *g == group && *v == version && *r == resource)
    });
    if !judged {
        return Err(Fatal::new(format!(
            "the tenant floor does not judge {what} (cell `{}`): its resource rules do not name the kind",
            cell.name
        ))
        .with_help(format!(
            "it judges {}; the pods of other workloads are judged when they are created, so test their pod template as a Pod",
            judged_kinds(scheduler)
        )));
    }
    let admission = CellAdmission::read(cell, output).map_err(|error| {
        Fatal::new(format!(
            "the output of cell `{}` does not read back ({}); this is a bug in tenantc",
            cell.name,
            escape(&error)
        ))
    })?;
    if admission.tenant_of(&namespace).is_none() {
        let namespaces: Vec<String> = cell
            .tenants
            .iter()
            .flat_map(|tenant| tenant.namespaces.iter().map(|ns| format!("`{}`", ns.name)))
            .collect();
        return Err(Fatal::new(format!(
            "no tenant of cell `{}` owns namespace `{}`",
            cell.name,
            escape(&namespace)
        ))
        .with_help(format!(
            "the tenant floor binds the tenant namespaces {}",
            namespaces.join(", ")
        )));
    }
    let mut request = tenantc::policy::Request::create(&namespace, object.clone());
    request.operation = operation.name().to_string();
    match operation {
        TestPolicyOperation::Create => {}
        TestPolicyOperation::Update => request.old_object = old,
        TestPolicyOperation::Delete => {
            let propagation = match args.cascade.unwrap_or(TestPolicyCascade::Background) {
                TestPolicyCascade::Background => "Background",
                TestPolicyCascade::Foreground => "Foreground",
                TestPolicyCascade::Orphan => "Orphan",
            };
            request = tenantc::policy::Request::delete(
                &namespace,
                object.clone(),
                tenantc::policy::judge::kubectl_delete_options(propagation),
            );
        }
    }
    request.username = args.user.clone().unwrap_or_default();
    request.groups = args.groups.clone();
    let verdict = admission.judge(&request).map_err(|error| {
        Fatal::new(format!("cannot judge {what}: {}", escape(&error))).with_help(
            "tenantc judges only what the API server would admit or refuse; fix the object",
        )
    })?;
    let kind = escape(text_at(&object, "/kind").as_deref().unwrap_or("object"));
    let denied = !verdict.refusals().is_empty();
    print_out(&verdict_text(
        &verdict, operation, &what, &kind, &cell.name, scheduler,
    ));
    Ok(if denied { Exit::Errors } else { Exit::Success })
}

/// The operation the arguments ask for; a combination that contradicts itself is a usage error.
fn operation(args: &TestPolicyArgs) -> Result<TestPolicyOperation, Fatal> {
    let usage = |message: &str| Err(Fatal::usage("test-policy", message));
    let operation = match (args.operation, &args.old) {
        (None, None) => TestPolicyOperation::Create,
        (None, Some(_)) => TestPolicyOperation::Update,
        (Some(TestPolicyOperation::Create), Some(_)) => {
            return usage(
                "--old gives the object before an UPDATE, so it cannot be used with --operation CREATE",
            );
        }
        (Some(TestPolicyOperation::Update), None) => {
            return usage("--operation UPDATE needs --old <FILE>, the object before the update");
        }
        (Some(TestPolicyOperation::Delete), Some(_)) => {
            return usage(
                "--operation DELETE judges OBJECT as the object deleted, so it cannot be used with --old",
            );
        }
        (Some(operation), _) => operation,
    };
    if args.cascade.is_some() && operation != TestPolicyOperation::Delete {
        return usage(
            "--cascade says what a DELETE does to dependents, so it needs --operation DELETE",
        );
    }
    if args.user.as_deref() == Some("") || args.groups.iter().any(String::is_empty) {
        return usage("--user and --group need a non-empty name");
    }
    Ok(operation)
}

/// Reads one Kubernetes object from a YAML file named on the command line.
fn read_object(path: &Path) -> Result<serde_json::Value, Fatal> {
    let shown = escape(&path.display().to_string());
    let text = disk::read_text(path)
        .map_err(|error| Fatal::new(format!("cannot read `{shown}`: {error}")))?;
    tenantc::policy::object_from_yaml(&text).map_err(|error| {
        Fatal::new(format!(
            "`{shown}` is not one YAML object: {}",
            escape(&error)
        ))
        .with_help("give one Kubernetes object, without anchors, aliases or tags")
    })
}

/// The string at a JSON pointer of an object, if there is one.
fn text_at(object: &serde_json::Value, pointer: &str) -> Option<String> {
    object
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

/// The verdict as `test-policy` prints it: the decision, the principal, Pod Security, each
/// policy that applies, the floor when it does not, every refusal with the API server's
/// message, the warnings, and what is not judged.
fn verdict_text(
    verdict: &Verdict,
    operation: TestPolicyOperation,
    what: &str,
    kind: &str,
    cell_name: &str,
    scheduler: Scheduler,
) -> String {
    let refusals = verdict.refusals();
    let mut text = format!(
        "{}: {} of {what} (tenant `{}`, cell `{}`)\n",
        if refusals.is_empty() {
            "admitted"
        } else {
            "denied"
        },
        operation.name(),
        verdict.tenant,
        cell_name
    );
    let groups: Vec<String> = verdict
        .principal
        .groups
        .iter()
        .map(|group| format!("`{}`", escape(group)))
        .collect();
    let user = if verdict.principal.username.is_empty() {
        "no user name".to_string()
    } else {
        format!("user `{}`", escape(&verdict.principal.username))
    };
    if verdict.principal.default_member {
        text.push_str(&format!(
            "  principal: a member of tenant `{}`: {user}, groups {} (the default; --user and --group name another)\n",
            verdict.tenant,
            groups.join(", ")
        ));
    } else {
        text.push_str(&format!(
            "  principal: {user}, groups {}\n",
            groups.join(", ")
        ));
    }
    let pod_security = match &verdict.pod_security {
        PodSecurityVerdict::NotJudged(why) => format!("not judged: {why}"),
        PodSecurityVerdict::Pod {
            enforce,
            denial: None,
            ..
        } => format!("enforce `{enforce}` admits it"),
        PodSecurityVerdict::Pod { enforce, .. } => format!("enforce `{enforce}` denies it"),
        PodSecurityVerdict::Template { warn, .. } => format!(
            "the pod template of a {kind} is not enforced, only warned about at warn `{warn}`, as the API server does"
        ),
    };
    text.push_str(&format!("  Pod Security: {pod_security}\n"));
    for policy in &verdict.policies {
        let word = match policy.outcome {
            tenantc::policy::Outcome::Denied(_) => "denies it",
            _ => "every validation holds",
        };
        text.push_str(&format!(
            "  {}: {word} (binding `{}`)\n",
            policy.policy, policy.binding
        ));
    }
    // The floor is named even where it does not apply (an UPDATE that changes nothing it
    // checks, a DELETE), so that no one reads its silence as a verdict; the others are counted.
    let floor_binding = admission::binding_name(&verdict.tenant);
    let mut others = 0;
    for (policy, binding, why) in &verdict.not_applied {
        if policy == admission::POLICY_NAME && *binding == floor_binding {
            text.push_str(&format!(
                "  {policy}: does not apply (binding `{binding}`): {}\n",
                escape(why)
            ));
        } else {
            others += 1;
        }
    }
    if others > 0 {
        text.push_str(&format!(
            "  {others} other admission policy {} of the cell do not apply to this request\n",
            if others == 1 { "binding" } else { "bindings" }
        ));
    }
    for refusal in &refusals {
        let label = match &refusal.judge {
            Judge::PodSecurity => "Pod Security".to_string(),
            Judge::Policy {
                policy, validation, ..
            } => match validation {
                Some(idx) if policy == admission::POLICY_NAME => {
                    admission::rules(scheduler).get(*idx).map_or_else(
                        || format!("{policy} validation {idx}"),
                        |rule| rule.name.to_string(),
                    )
                }
                Some(idx) if policy == admission::PODGROUP_POLICY_NAME => {
                    admission::PODGROUP_RULES.get(*idx).map_or_else(
                        || format!("{policy} validation {idx}"),
                        |rule| rule.name.to_string(),
                    )
                }
                Some(idx) => format!("{policy} validation {idx}"),
                None => policy.clone(),
            },
        };
        text.push_str(&format!("  {label}: {}\n", escape(&refusal.message)));
    }
    let answers = verdict.answers();
    if refusals.len() > 1 {
        if let [answer] = answers.as_slice() {
            text.push_str(&format!(
                "  the API server answers with the first: {}\n",
                escape(answer)
            ));
        } else {
            text.push_str(&format!(
                "  the API server answers with the first refusal of one of the {} denying policies, in no fixed order\n",
                answers.len()
            ));
        }
    }
    for warning in verdict.warnings() {
        text.push_str(&format!("  warning: {}\n", escape(&warning)));
    }
    text.push_str(&format!("  not judged: {NOT_JUDGED}\n"));
    text
}

/// The resources the tenant floor of a cell of `scheduler` matches, as `(group, version,
/// resource)`: [`admission::MATCHED`], and PodGroups in a Volcano cell.
fn judged_resources(scheduler: Scheduler) -> Vec<(&'static str, &'static str, &'static str)> {
    let mut resources = admission::MATCHED.to_vec();
    match scheduler {
        Scheduler::Kueue => {}
        Scheduler::Volcano => resources.push(("scheduling.volcano.sh", "v1beta1", "podgroups")),
    }
    resources
}

/// The resources the tenant floor matches, for messages: `pods, deployments, …`.
fn judged_kinds(scheduler: Scheduler) -> String {
    let names: Vec<String> = judged_resources(scheduler)
        .iter()
        .filter(|(_, _, resource)| !resource.contains('/'))
        .map(|(group, _, resource)| {
            if group.is_empty() {
                format!("`{resource}`")
            } else {
                format!("`{resource}.{group}`")
            }
        })
        .collect();
    names.join(", ")
}
