//! The tenant admission floor for the policy engines a cell may run instead of the API server's
//! ValidatingAdmissionPolicy: Kyverno ValidatingPolicies and Gatekeeper ConstraintTemplates with
//! their Constraints ([docs/policy-engines.md](../../docs/policy-engines.md)).
//!
//! Consumes: the floor as `admission.rs` emits it for a cell's scheduler (its policies, each
//! tenant's bindings and the tenant's params), never the list of rules itself. Produces: for
//! Kyverno, one `policies.kyverno.io/v1` ValidatingPolicy per tenant and floor policy, in the
//! tenant's folder, with the tenant's params inlined as the variable `params`; for Gatekeeper, one
//! ConstraintTemplate per floor policy in `<cell>/cluster/` (the same in every cell of one
//! scheduler) and one Constraint per tenant, in the tenant's folder, whose `spec.parameters` are
//! the tenant's params.
//!
//! The translation is mechanical, so a validation, variable or match condition added to the floor
//! is carried by both engines without code here: every CEL expression is copied, with each read
//! of a param, `params.data.<key>`, rewritten to `variables.params.<key>` (where Kyverno's inlined
//! variable and Gatekeeper's bound parameters both sit); resource rules become Kyverno's match
//! constraints as they are, and Gatekeeper's kinds through [`KINDS`].
//!
//! Invariants:
//! - Fail closed as the floor does: `failurePolicy: Fail` in both engines, `Deny`/`deny` actions,
//!   and a missing parameter is a runtime error, so a denial.
//! - An expression that reads `params` other than as `params.data.<key>`, a resource without a
//!   kind in [`KINDS`], or a binding whose match is not the tenant's namespaces by exact name is an
//!   internal error, never a weaker translation.
//! - Tenants are kept apart as the bindings keep them: each tenant's Kyverno policy and
//!   Gatekeeper constraint select its namespaces by exact name.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::admissionregistration::v1::{
    MatchResources, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding, Variable,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::cel;
use crate::emit::InternalError;
use crate::kube::gatekeeper::{
    ADMISSION_TARGET, CEL_ENGINE, CelNamed, CelSource, CelValidation, Code, Constraint,
    ConstraintMatch, ConstraintSpec, ConstraintTemplate, ConstraintTemplateSpec, Crd, CrdSpec,
    MatchKinds, Names, ParameterValidation, Target, parameter_schema,
};
use crate::kube::kyverno::{Autogen, Enabled, Evaluation, ValidatingPolicy, ValidatingPolicySpec};
use crate::kube::labels::NAMESPACE_NAME_LABEL;

/// The name of the variable that holds a tenant's params in both engines (Gatekeeper binds a
/// constraint's `spec.parameters` to it, and reserves the name).
pub const PARAMS_VARIABLE: &str = "params";

/// The kind of each resource the floor matches, as `(api group, resource, kind)`: Gatekeeper
/// matches kinds, not resources. A subresource request is matched by its object's kind.
pub const KINDS: &[(&str, &str, &str)] = &[
    ("", "namespaces", "Namespace"),
    ("", "persistentvolumeclaims", "PersistentVolumeClaim"),
    ("", "pods", "Pod"),
    ("", "pods/ephemeralcontainers", "Pod"),
    ("apps", "daemonsets", "DaemonSet"),
    ("apps", "deployments", "Deployment"),
    ("apps", "replicasets", "ReplicaSet"),
    ("apps", "statefulsets", "StatefulSet"),
    ("batch", "cronjobs", "CronJob"),
    ("batch", "jobs", "Job"),
    ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    ("resource.k8s.io", "resourceclaims", "ResourceClaim"),
    (
        "resource.k8s.io",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
    ),
    ("scheduling.volcano.sh", "podgroups", "PodGroup"),
];

/// `expression` with every read of a param, `params.data.<key>`, made a read of the variable
/// [`PARAMS_VARIABLE`], `variables.params.<key>`; text inside string literals is left alone.
/// Any other use of the identifier `params` is an error: it would mean something else in the
/// engines.
pub fn translate(expression: &str) -> Result<String, InternalError> {
    const READ: &str = "params.data.";
    let mut out = String::with_capacity(expression.len() + 16);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut previous: Option<char> = None;
    let mut rest = expression;
    while let Some(ch) = rest.chars().next() {
        if let Some(open) = quote {
            out.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == open {
                quote = None;
            }
        } else if ch == '\'' || ch == '"' {
            quote = Some(ch);
            out.push(ch);
        } else if !previous.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_' || p == '.')
            && rest.starts_with("params")
            && !rest["params".len()..]
                .chars()
                .next()
                .is_some_and(|next| next.is_ascii_alphanumeric() || next == '_')
        {
            if !rest.starts_with(READ) {
                return Err(InternalError(format!(
                    "a floor expression reads `params` other than as `{READ}<key>`: {expression}"
                )));
            }
            out.push_str("variables.");
            out.push_str(PARAMS_VARIABLE);
            out.push('.');
            rest = &rest[READ.len()..];
            previous = Some('.');
            continue;
        } else {
            out.push(ch);
        }
        previous = Some(ch);
        rest = &rest[ch.len_utf8()..];
    }
    Ok(out)
}

/// The CEL map literal of a tenant's params, for Kyverno's [`PARAMS_VARIABLE`].
pub fn params_literal(params: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = params
        .iter()
        .map(|(key, value)| format!("{}: {}", cel::string(key), cel::string(value)))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

fn spec_of(
    policy: &ValidatingAdmissionPolicy,
) -> Result<
    &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicySpec,
    InternalError,
> {
    policy
        .spec
        .as_ref()
        .ok_or_else(|| InternalError("a floor policy has no spec".to_string()))
}

fn name_of(metadata: &ObjectMeta) -> Result<String, InternalError> {
    metadata
        .name
        .clone()
        .ok_or_else(|| InternalError("a floor object has no name".to_string()))
}

/// What a binding narrows its policy to: a namespace selector, or none (every namespace and
/// cluster-scoped objects). A binding that narrows otherwise (objects, resources) is refused.
fn binding_selector(
    binding: &ValidatingAdmissionPolicyBinding,
) -> Result<Option<LabelSelector>, InternalError> {
    let refuse = || {
        InternalError(format!(
            "binding {:?} narrows its policy by more than a namespace selector",
            binding.metadata.name
        ))
    };
    let spec = binding.spec.as_ref().ok_or_else(refuse)?;
    let Some(matched) = spec.match_resources.as_ref() else {
        return Ok(None);
    };
    if matched.object_selector.is_some()
        || matched.resource_rules.is_some()
        || matched.exclude_resource_rules.is_some()
    {
        return Err(refuse());
    }
    Ok(matched.namespace_selector.clone())
}

/// The namespaces a selector selects by exact name, when that is all it does
/// (`kubernetes.io/metadata.name In [...]`).
fn exact_namespaces(selector: &LabelSelector) -> Option<Vec<String>> {
    match (
        &selector.match_labels,
        selector.match_expressions.as_deref(),
    ) {
        (None, Some([only])) if only.key == NAMESPACE_NAME_LABEL && only.operator == "In" => {
            Some(only.values.clone().unwrap_or_default())
        }
        _ => None,
    }
}

/// The Kyverno ValidatingPolicy of one binding of a policy (a tenant's binding of a floor
/// policy, or a guard policy's binding): the policy's matches and CEL, the binding's namespace
/// selector, metadata and actions, and the params (where the policy has them) inlined as the
/// first variable. It is named as the binding is (`<policy>-<tenant>` for a tenant's).
pub fn kyverno_policy(
    policy: &ValidatingAdmissionPolicy,
    binding: &ValidatingAdmissionPolicyBinding,
    params: Option<&BTreeMap<String, String>>,
) -> Result<ValidatingPolicy, InternalError> {
    let spec = spec_of(policy)?;
    let mut match_constraints = spec.match_constraints.clone().unwrap_or_default();
    if let Some(selector) = binding_selector(binding)? {
        match_constraints.namespace_selector = Some(selector);
    }
    let mut variables: Vec<Variable> = params
        .map(|params| Variable {
            name: PARAMS_VARIABLE.to_string(),
            expression: params_literal(params),
        })
        .into_iter()
        .collect();
    for variable in spec.variables.iter().flatten() {
        variables.push(Variable {
            name: variable.name.clone(),
            expression: translate(&variable.expression)?,
        });
    }
    let mut match_conditions = Vec::new();
    for condition in spec.match_conditions.iter().flatten() {
        let mut condition = condition.clone();
        condition.expression = translate(&condition.expression)?;
        match_conditions.push(condition);
    }
    let mut validations = Vec::new();
    for validation in spec.validations.iter().flatten() {
        let mut validation = validation.clone();
        validation.expression = translate(&validation.expression)?;
        validation.message_expression = validation
            .message_expression
            .as_deref()
            .map(translate)
            .transpose()?;
        validations.push(validation);
    }
    let actions = binding
        .spec
        .as_ref()
        .and_then(|binding| binding.validation_actions.clone())
        .unwrap_or_else(|| vec!["Deny".to_string()]);
    Ok(ValidatingPolicy::new(
        ObjectMeta {
            name: Some(name_of(&binding.metadata)?),
            labels: binding.metadata.labels.clone(),
            annotations: binding.metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        ValidatingPolicySpec {
            match_constraints: MatchResources {
                namespace_selector: match_constraints.namespace_selector,
                resource_rules: match_constraints.resource_rules,
                ..MatchResources::default()
            },
            validations,
            failure_policy: spec
                .failure_policy
                .clone()
                .unwrap_or_else(|| "Fail".to_string()),
            match_conditions,
            variables,
            autogen: Autogen::default(),
            validation_actions: actions,
            evaluation: Evaluation {
                admission: Enabled { enabled: true },
                background: Enabled { enabled: false },
            },
        },
    ))
}

/// The objects of a policy and its bindings (none with params) in a cell whose admission engine
/// is `engine`, as `(file stem, body)`: the policy and bindings themselves for the API server,
/// a ValidatingPolicy per binding for Kyverno, the template and a constraint per binding for
/// Gatekeeper. The stems are `validatingadmissionpolicy`, `validatingadmissionpolicybinding`,
/// `validatingpolicy`, `constrainttemplate` and `constraint`, for the caller to name files by.
pub fn objects_for(
    engine: crate::model::AdmissionEngine,
    policy: &ValidatingAdmissionPolicy,
    bindings: &[ValidatingAdmissionPolicyBinding],
) -> Result<Vec<(&'static str, crate::emit::Body)>, InternalError> {
    use crate::model::AdmissionEngine;
    let mut objects = Vec::new();
    match engine {
        AdmissionEngine::Vap => {
            objects.push(("validatingadmissionpolicy", super::body(policy)?));
            for binding in bindings {
                objects.push(("validatingadmissionpolicybinding", super::body(binding)?));
            }
        }
        AdmissionEngine::Kyverno => {
            for binding in bindings {
                objects.push((
                    "validatingpolicy",
                    super::body(&kyverno_policy(policy, binding, None)?)?,
                ));
            }
        }
        AdmissionEngine::Gatekeeper => {
            let template = gatekeeper_template(policy, [])?;
            objects.push(("constrainttemplate", super::body(&template)?));
            for binding in bindings {
                objects.push((
                    "constraint",
                    super::body(&gatekeeper_constraint(policy, &template, binding, None)?)?,
                ));
            }
        }
    }
    Ok(objects)
}

/// The constraint kind of a floor policy: its name in upper camel case without `-`
/// (`tenantc-tenant-floor` is `TenantcTenantFloor`).
pub fn constraint_kind(policy_name: &str) -> String {
    policy_name
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The Gatekeeper ConstraintTemplate of a floor policy, whose parameters are `keys` (every
/// param a tenant's params hold): the policy's CEL, its operations and its failure policy.
pub fn gatekeeper_template<'a>(
    policy: &ValidatingAdmissionPolicy,
    keys: impl IntoIterator<Item = &'a str>,
) -> Result<ConstraintTemplate, InternalError> {
    let spec = spec_of(policy)?;
    let named = |name: &str, expression: &str| -> Result<CelNamed, InternalError> {
        Ok(CelNamed {
            name: name.to_string(),
            expression: translate(expression)?,
        })
    };
    let mut operations = BTreeSet::new();
    for rule in spec
        .match_constraints
        .iter()
        .flat_map(|matched| matched.resource_rules.iter().flatten())
    {
        operations.extend(rule.operations.iter().flatten().cloned());
    }
    let mut validations = Vec::new();
    for validation in spec.validations.iter().flatten() {
        validations.push(CelValidation {
            expression: translate(&validation.expression)?,
            message: validation.message.clone().unwrap_or_default(),
            message_expression: translate(validation.message_expression.as_deref().unwrap_or(""))?,
        });
    }
    Ok(ConstraintTemplate::new(
        policy.metadata.clone(),
        ConstraintTemplateSpec {
            crd: Crd {
                spec: CrdSpec {
                    names: Names {
                        kind: constraint_kind(&name_of(&policy.metadata)?),
                    },
                    validation: ParameterValidation {
                        open_api_v3_schema: parameter_schema(keys),
                    },
                },
            },
            targets: vec![Target {
                target: ADMISSION_TARGET.to_string(),
                operations: operations.into_iter().collect(),
                code: vec![Code {
                    engine: CEL_ENGINE.to_string(),
                    source: CelSource {
                        validations,
                        failure_policy: spec
                            .failure_policy
                            .clone()
                            .unwrap_or_else(|| "Fail".to_string()),
                        match_conditions: spec
                            .match_conditions
                            .iter()
                            .flatten()
                            .map(|condition| named(&condition.name, &condition.expression))
                            .collect::<Result<_, _>>()?,
                        variables: spec
                            .variables
                            .iter()
                            .flatten()
                            .map(|variable| named(&variable.name, &variable.expression))
                            .collect::<Result<_, _>>()?,
                        generate_vap: false,
                    },
                }],
            }],
        },
    ))
}

/// The Gatekeeper Constraint of one binding of a policy's template: the policy's kinds and
/// scope, the binding's namespaces (by name where it selects them by exact name, else its
/// selector), metadata and name, and the params (where the policy has them) as
/// `spec.parameters`.
pub fn gatekeeper_constraint(
    policy: &ValidatingAdmissionPolicy,
    template: &ConstraintTemplate,
    binding: &ValidatingAdmissionPolicyBinding,
    params: Option<&BTreeMap<String, String>>,
) -> Result<Constraint, InternalError> {
    let spec = spec_of(policy)?;
    let mut kinds: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut scopes = BTreeSet::new();
    for rule in spec
        .match_constraints
        .iter()
        .flat_map(|matched| matched.resource_rules.iter().flatten())
    {
        scopes.insert(rule.scope.clone().unwrap_or_else(|| "*".to_string()));
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                let kind = if resource == "*" {
                    "*"
                } else {
                    KINDS
                        .iter()
                        .find(|(g, r, _)| g == group && r == resource)
                        .map(|(_, _, kind)| *kind)
                        .ok_or_else(|| {
                            InternalError(format!(
                                "the floor matches {group}/{resource}, which has no kind in engines::KINDS"
                            ))
                        })?
                };
                kinds
                    .entry(group.clone())
                    .or_default()
                    .insert(kind.to_string());
            }
        }
    }
    let scope = match scopes.into_iter().collect::<Vec<_>>().as_slice() {
        [only] => only.clone(),
        _ => "*".to_string(),
    };
    let selector = binding_selector(binding)?;
    let (namespaces, namespace_selector) = match &selector {
        None => (Vec::new(), None),
        Some(selector) => match exact_namespaces(selector) {
            Some(names) => (names, None),
            None => (Vec::new(), Some(selector.clone())),
        },
    };
    let enforcement = match binding
        .spec
        .as_ref()
        .and_then(|binding| binding.validation_actions.as_deref())
    {
        Some([only]) if only == "Deny" => "deny",
        Some([only]) if only == "Warn" => "warn",
        other => {
            return Err(InternalError(format!(
                "binding actions {other:?} have no Gatekeeper enforcement action"
            )));
        }
    };
    Ok(Constraint::new(
        template,
        ObjectMeta {
            name: Some(name_of(&binding.metadata)?),
            labels: binding.metadata.labels.clone(),
            annotations: binding.metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        ConstraintSpec {
            enforcement_action: enforcement.to_string(),
            matches: ConstraintMatch {
                kinds: kinds
                    .into_iter()
                    .map(|(group, kinds)| MatchKinds {
                        api_groups: vec![group],
                        kinds: kinds.into_iter().collect(),
                    })
                    .collect(),
                scope,
                namespaces,
                namespace_selector,
            },
            parameters: params.cloned().unwrap_or_default(),
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn reads_of_params_become_reads_of_the_variable_and_strings_are_kept() {
        assert_eq!(
            translate("params.data.tenant == 'params.data.x' && (params.data.cell != \"params\")")
                .unwrap(),
            "variables.params.tenant == 'params.data.x' && (variables.params.cell != \"params\")"
        );
        assert_eq!(
            translate("variables.params2 + object.params.data.x + xparams.data.y").unwrap(),
            "variables.params2 + object.params.data.x + xparams.data.y"
        );
        assert_eq!(
            translate("'it\\'s params.data.a'").unwrap(),
            "'it\\'s params.data.a'"
        );
    }

    #[test]
    fn any_other_read_of_params_is_refused() {
        assert!(translate("params.metadata.name == 'x'").is_err());
        assert!(translate("has(params)").is_err());
    }

    #[test]
    fn constraint_kinds_are_upper_camel_case() {
        assert_eq!(
            constraint_kind("tenantc-tenant-floor"),
            "TenantcTenantFloor"
        );
        assert_eq!(
            constraint_kind("tenantc-tenant-podgroups"),
            "TenantcTenantPodgroups"
        );
    }

    #[test]
    fn every_resource_the_floors_match_has_a_kind() {
        use crate::model::{DeviceMode, Scheduler};
        for (scheduler, devices) in [Scheduler::Kueue, Scheduler::Volcano]
            .into_iter()
            .flat_map(|s| [DeviceMode::DevicePlugin, DeviceMode::Dra].map(|d| (s, d)))
        {
            for policy in super::super::admission::floor_policies(scheduler, devices) {
                let template = gatekeeper_template(&policy, ["tenant"]).unwrap();
                use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBindingSpec;
                use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
                    LabelSelector, LabelSelectorRequirement,
                };
                let binding = ValidatingAdmissionPolicyBinding {
                    metadata: ObjectMeta {
                        name: Some("b".to_string()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(ValidatingAdmissionPolicyBindingSpec {
                        validation_actions: Some(vec!["Deny".to_string()]),
                        match_resources: Some(MatchResources {
                            namespace_selector: Some(LabelSelector {
                                match_expressions: Some(vec![LabelSelectorRequirement {
                                    key: NAMESPACE_NAME_LABEL.to_string(),
                                    operator: "In".to_string(),
                                    values: Some(vec!["t-ns".to_string()]),
                                }]),
                                match_labels: None,
                            }),
                            ..MatchResources::default()
                        }),
                        ..ValidatingAdmissionPolicyBindingSpec::default()
                    }),
                };
                gatekeeper_constraint(&policy, &template, &binding, None).unwrap();
            }
        }
    }

    /// The output of the fixture fleet with every cell's `admission` set to `engine`, and, when
    /// `others`, the other backends: `scheduler "volcano"` in `eu-west-4b` and `devices "dra"`
    /// (on Kubernetes 1.34) in `us-east-1a`.
    fn fleet_output(engine: &str, others: bool) -> (crate::emit::OutputTree, usize) {
        let files = crate::testing::support::example_files();
        let edited: Vec<(String, String)> = files
            .into_iter()
            .map(|(path, text)| {
                if path.starts_with("cells/") {
                    let mut lines = format!("    admission \"{engine}\"\n    kubernetes \"");
                    if others && path.contains("eu-west-4b") {
                        lines = format!("    scheduler \"volcano\"\n{lines}");
                    }
                    let mut text = text.replacen("    kubernetes \"", &lines, 1);
                    if others && path.contains("us-east-1a") {
                        let edited = text.replacen(
                            "    kubernetes \"1.33\"",
                            "    devices \"dra\"\n    kubernetes \"1.34\"",
                            1,
                        );
                        assert_ne!(edited, text, "the DRA edit applies");
                        text = edited;
                    }
                    (path, text)
                } else {
                    (path, text)
                }
            })
            .collect();
        let borrowed: Vec<(&str, &str)> = edited
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let compilation = crate::testing::support::compile_files(&borrowed);
        let errors: Vec<_> = compilation
            .diagnostics
            .iter()
            .filter(|d| d.severity == crate::diag::Severity::Error)
            .map(|d| d.message.clone())
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        // Each tenant of each cell has one object per floor policy of the cell.
        let expected = compilation
            .plan
            .as_ref()
            .unwrap()
            .cells
            .iter()
            .map(|cell| {
                cell.tenants.len()
                    * super::super::admission::floor_policies(
                        cell.backends.scheduler,
                        cell.backends.devices,
                    )
                    .len()
            })
            .sum();
        (compilation.output.unwrap(), expected)
    }

    /// Every object of `output` of `kind`, as JSON, with its path.
    fn objects_of(
        output: &crate::emit::OutputTree,
        kind: &str,
    ) -> Vec<(String, serde_json::Value)> {
        output
            .iter()
            .filter(|(path, _)| path.ends_with(".yaml"))
            .filter_map(|(path, bytes)| {
                let text = std::str::from_utf8(bytes).ok()?;
                if !text.contains(&format!("\nkind: {kind}\n")) {
                    return None;
                }
                Some((path.clone(), crate::kube::crd_schema::load(text).unwrap()))
            })
            .collect()
    }

    #[test]
    fn every_emitted_kyverno_policy_passes_the_vendored_crd_and_no_floor_vap_is_left() {
        let crd = crate::kube::crd_schema::load(include_str!(
            "../../../schema/crds/kyverno/policies.kyverno.io_validatingpolicies.yaml"
        ))
        .unwrap();
        let schema = crate::kube::crd_schema::version_schema(&crd, "v1").unwrap();
        for volcano in [false, true] {
            let (output, expected) = fleet_output("kyverno", volcano);
            let policies = objects_of(&output, "ValidatingPolicy");
            for (path, policy) in &policies {
                let found = crate::kube::crd_schema::violations(schema, policy);
                assert!(found.is_empty(), "{path}: {found:#?}");
            }
            // The floor's policies carry the tenant's params; the guard's have none.
            let floor: Vec<_> = policies
                .iter()
                .filter(|(_, policy)| {
                    policy["metadata"]["name"]
                        .as_str()
                        .is_some_and(|name| name.starts_with("tenantc-tenant-"))
                })
                .collect();
            assert_eq!(floor.len(), expected);
            for (_, policy) in floor {
                assert_eq!(policy["spec"]["variables"][0]["name"], PARAMS_VARIABLE);
            }
            let floors: Vec<_> = objects_of(&output, "ValidatingAdmissionPolicy")
                .into_iter()
                .filter(|(_, policy)| {
                    policy["metadata"]["name"]
                        .as_str()
                        .is_some_and(|name| name.starts_with("tenantc-tenant-"))
                })
                .collect();
            assert!(floors.is_empty(), "{floors:#?}");
            assert!(
                objects_of(&output, "ConfigMap")
                    .iter()
                    .all(|(path, _)| !path.ends_with("admission-params.yaml"))
            );
        }
    }

    #[test]
    fn every_emitted_gatekeeper_object_passes_its_schema() {
        let crd = crate::kube::crd_schema::load(include_str!(
            "../../../schema/crds/gatekeeper/templates.gatekeeper.sh_constrainttemplates.yaml"
        ))
        .unwrap();
        let schema = crate::kube::crd_schema::version_schema(&crd, "v1").unwrap();
        for volcano in [false, true] {
            let (output, expected) = fleet_output("gatekeeper", volcano);
            let templates = objects_of(&output, "ConstraintTemplate");
            let floor_templates = templates
                .iter()
                .filter(|(_, template)| {
                    template["metadata"]["name"]
                        .as_str()
                        .is_some_and(|name| name.starts_with("tenantctenant"))
                })
                .count();
            // One floor per cell, a PodGroup policy in the Volcano cell, a device claims policy in
            // the DRA cell.
            assert_eq!(floor_templates, if volcano { 4 } else { 2 });
            for (path, template) in &templates {
                let found = crate::kube::crd_schema::violations(schema, template);
                assert!(found.is_empty(), "{path}: {found:#?}");
            }
            let mut constraints = 0;
            for kind in [
                "TenantcTenantFloor",
                "TenantcTenantPodgroups",
                "TenantcTenantDeviceClaims",
            ] {
                let Some((_, template)) = templates
                    .iter()
                    .find(|(_, template)| template["spec"]["crd"]["spec"]["names"]["kind"] == kind)
                else {
                    assert!(!volcano || kind == "TenantcTenantFloor");
                    continue;
                };
                let typed: ConstraintTemplate = ConstraintTemplate::new(
                    ObjectMeta::default(),
                    ConstraintTemplateSpec {
                        crd:
                            Crd {
                                spec:
                                    CrdSpec {
                                        names: Names {
                                            kind: kind.to_string(),
                                        },
                                        validation:
                                            ParameterValidation {
                                                open_api_v3_schema: template["spec"]["crd"]["spec"]
                                                    ["validation"]["openAPIV3Schema"]
                                                    .clone(),
                                            },
                                    },
                            },
                        targets: Vec::new(),
                    },
                );
                let constraint_schema = crate::kube::gatekeeper::constraint_schema(&typed);
                for (path, constraint) in objects_of(&output, kind) {
                    constraints += 1;
                    let found =
                        crate::kube::crd_schema::violations(&constraint_schema, &constraint);
                    assert!(found.is_empty(), "{path}: {found:#?}");
                }
            }
            assert_eq!(constraints, expected);
        }
    }
}
