//! An offline evaluator of ValidatingAdmissionPolicies, for `tenantc test-policy` and the policy
//! tests.
//!
//! Consumes: a typed `admissionregistration.k8s.io/v1` policy, one of its bindings, the params
//! ConfigMap the binding names, and an admission request (the object as JSON, its namespace,
//! the operation). Produces: an [`Outcome`]: not matched (and why), admitted, or denied with
//! every failing validation and its message.
//!
//! It follows the API server's order: the policy's `matchConstraints` and the binding's
//! `matchResources` (resource rules, operations, the namespace selector against the labels
//! the API server puts on every namespace), then `matchConditions` (any false skips the
//! policy), then the `variables` in order, then every validation; a `messageExpression` that
//! fails or yields an empty string falls back to `message`.
//! The CEL engine is the `cel` crate with its strings extension (`split`, `join`,
//! `lowerAscii`, `replace`, `lastIndexOf`, `substring`, as in Kubernetes' strings library);
//! nothing else of Kubernetes' CEL libraries is provided, so a policy that used more would
//! fail its tests here.
//!
//! Invariants: fail closed like `failurePolicy: Fail`: an expression that does not compile, a
//! runtime error and a non-boolean result all deny; a variable that fails is left out, so every
//! expression that reads it fails too (the API server evaluates variables lazily, with the
//! same effect); the evaluator never panics on any object.

pub mod judge;
pub mod pod_security;

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{
    MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Map, Value as Json, json};

/// An admission request, as the policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: String,
    /// The namespace of the object.
    pub namespace: String,
    /// The object, as JSON; `null` on a DELETE, as the API server passes it.
    pub object: Json,
    /// The object before an UPDATE, or the one a DELETE removes.
    pub old_object: Option<Json>,
    /// The options of the request (`request.options`): a DELETE's `DeleteOptions`, such as
    /// `{"propagationPolicy": "Orphan"}`; `None` is `null`.
    pub options: Option<Json>,
    /// The subresource (`ephemeralcontainers`), if any.
    pub subresource: Option<String>,
    /// The user who makes the request (`request.userInfo.username`).
    pub username: String,
    /// The user's groups (`request.userInfo.groups`). A request with neither a username nor
    /// groups is a member of the tenant that owns the namespace ([`check_object`] fills in its
    /// member group), which is all the floor needs to know of one.
    pub groups: Vec<String>,
}

impl Request {
    /// A CREATE of `object` in `namespace`.
    pub fn create(namespace: &str, object: Json) -> Self {
        Self {
            operation: "CREATE".to_string(),
            namespace: namespace.to_string(),
            object,
            old_object: None,
            options: None,
            subresource: None,
            username: String::new(),
            groups: Vec::new(),
        }
    }

    /// A DELETE of `object` in `namespace` with `options` (its `DeleteOptions`; an empty
    /// object when the client sent none, as the API server passes it).
    pub fn delete(namespace: &str, object: Json, options: Json) -> Self {
        Self {
            operation: "DELETE".to_string(),
            namespace: namespace.to_string(),
            object: Json::Null,
            old_object: Some(object),
            options: Some(options),
            subresource: None,
            username: String::new(),
            groups: Vec::new(),
        }
    }

    /// The object the request is about: the one it writes, or the one a DELETE removes.
    pub fn subject(&self) -> &Json {
        match (&self.object, &self.old_object) {
            (Json::Null, Some(old)) => old,
            (object, _) => object,
        }
    }
}

/// One failing validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The index of the validation in the policy, or `None` for a match condition or a
    /// missing param.
    pub validation: Option<usize>,
    /// The failing expression.
    pub expression: String,
    /// The message the API server would return.
    pub message: String,
}

/// What the policy does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The policy or binding does not apply to the request.
    NotMatched(String),
    /// Every validation holds.
    Admitted,
    /// At least one validation fails; in policy order.
    Denied(Vec<Denial>),
}

impl Outcome {
    /// Whether the request is denied.
    pub fn is_denied(&self) -> bool {
        matches!(self, Outcome::Denied(_))
    }
}

/// The `(group, version, resource)` of an object, from its `apiVersion` and `kind`, for the
/// kinds whose plural is the kind in lower case plus `s` (every kind tenant workloads use).
pub fn resource_of(object: &Json) -> Option<(String, String, String)> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    Some((group, version, format!("{}s", kind.to_ascii_lowercase())))
}

fn listed(list: Option<&Vec<String>>, value: &str) -> bool {
    list.is_some_and(|items| items.iter().any(|item| item == "*" || item == value))
}

fn rule_matches(
    rule: &NamedRuleWithOperations,
    request: &Request,
    group: &str,
    version: &str,
    resource: &str,
) -> bool {
    let resource = match &request.subresource {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_string(),
    };
    listed(rule.api_groups.as_ref(), group)
        && listed(rule.api_versions.as_ref(), version)
        && listed(rule.operations.as_ref(), &request.operation)
        && listed(rule.resources.as_ref(), &resource)
}

/// Whether a label selector selects a set of labels.
pub fn selects(selector: &LabelSelector, labels: &Map<String, Json>) -> bool {
    let value = |key: &str| labels.get(key).and_then(Json::as_str);
    let pairs_hold = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, wanted)| value(key) == Some(wanted.as_str()));
    let expressions_hold = selector
        .match_expressions
        .iter()
        .flatten()
        .all(|requirement| {
            let values = requirement.values.clone().unwrap_or_default();
            let actual = value(&requirement.key);
            match requirement.operator.as_str() {
                "In" => actual.is_some_and(|actual| values.iter().any(|v| v == actual)),
                "NotIn" => actual.is_none_or(|actual| !values.iter().any(|v| v == actual)),
                "Exists" => actual.is_some(),
                "DoesNotExist" => actual.is_none(),
                _ => false,
            }
        });
    pairs_hold && expressions_hold
}

fn resources_match(
    resources: &MatchResources,
    request: &Request,
    target: &Target<'_>,
) -> Result<(), String> {
    let (group, version, resource) = (&target.group, &target.version, &target.resource);
    if let Some(rules) = &resources.resource_rules
        && !rules
            .iter()
            .any(|rule| rule_matches(rule, request, group, version, resource))
    {
        return Err(format!(
            "no resource rule matches {request_op} of {resource}",
            request_op = request.operation
        ));
    }
    if let Some(rules) = &resources.exclude_resource_rules
        && rules
            .iter()
            .any(|rule| rule_matches(rule, request, group, version, resource))
    {
        return Err(format!(
            "an excluded resource rule matches {request_op} of {resource}",
            request_op = request.operation
        ));
    }
    if let Some(selector) = &resources.namespace_selector
        && !selects(selector, target.namespace_labels)
    {
        return Err(format!(
            "the namespace selector does not select namespace `{}`",
            request.namespace
        ));
    }
    if let Some(selector) = &resources.object_selector {
        // As the API server does, the selector matches when it selects the labels of the
        // object or of the old object.
        let selected = |object: Option<&Json>| {
            let labels = object
                .and_then(|object| object.pointer("/metadata/labels"))
                .and_then(Json::as_object)
                .cloned()
                .unwrap_or_default();
            object.is_some_and(|object| !object.is_null()) && selects(selector, &labels)
        };
        if !selected(Some(&request.object)) && !selected(request.old_object.as_ref()) {
            return Err(
                "the object selector selects neither the object nor the old object".to_string(),
            );
        }
    }
    Ok(())
}

/// What a request is about: its resource, and the labels of its namespace.
struct Target<'a> {
    group: String,
    version: String,
    resource: String,
    namespace_labels: &'a Map<String, Json>,
}

/// A CEL environment with the Kubernetes functions the emitted policies use.
fn environment() -> Arc<cel::Env> {
    let mut env = cel::Env::stdlib();
    // The strings extension registers fixed overloads; it cannot fail on a fresh stdlib env.
    let _ = env.add_extension(cel::extensions::strings);
    Arc::new(env)
}

thread_local! {
    /// Programs compiled on this thread, by expression: a policy's expressions are the same
    /// on every request, and compiling them costs far more than evaluating them. Every
    /// program is compiled in the one [`environment`], so the expression alone is the key.
    static PROGRAMS: std::cell::RefCell<std::collections::BTreeMap<String, std::rc::Rc<cel::Program>>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// An expression compiled in `env`, from the cache when it was compiled before.
fn program(env: &cel::Env, expression: &str) -> Result<std::rc::Rc<cel::Program>, String> {
    if let Some(program) = PROGRAMS.with(|programs| programs.borrow().get(expression).cloned()) {
        return Ok(program);
    }
    let program = std::rc::Rc::new(
        env.compile(expression)
            .map_err(|error| format!("compile error: {error}"))?,
    );
    PROGRAMS.with(|programs| {
        programs
            .borrow_mut()
            .insert(expression.to_string(), program.clone())
    });
    Ok(program)
}

/// The result of one expression in a context: a value, or why it failed.
fn run(
    env: &cel::Env,
    context: &cel::Context<'_, '_>,
    expression: &str,
) -> Result<cel::Value, String> {
    program(env, expression)?
        .execute(context)
        .map_err(|error| format!("evaluation error: {error}"))
}

/// A root context holding `bindings`.
fn context_of(
    env: &Arc<cel::Env>,
    bindings: &Map<String, Json>,
) -> Result<cel::Context<'static, 'static>, String> {
    let mut context = cel::Context::with_env(env.clone());
    for (name, value) in bindings {
        let value =
            cel::to_value(value).map_err(|error| format!("cannot bind `{name}`: {error}"))?;
        context.add_variable_from_value(name.clone(), value);
    }
    Ok(context)
}

/// Checks that an expression compiles in the evaluator's environment.
pub fn compiles(expression: &str) -> Result<(), String> {
    environment()
        .compile(expression)
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// Evaluates a policy, through one binding and its params, on a request in a namespace that
/// carries only the label the API server puts on every namespace
/// (`kubernetes.io/metadata.name`).
pub fn evaluate(
    policy: &ValidatingAdmissionPolicy,
    binding: &ValidatingAdmissionPolicyBinding,
    params: Option<&ConfigMap>,
    request: &Request,
) -> Outcome {
    let namespace = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": request.namespace,
            "labels": {"kubernetes.io/metadata.name": request.namespace},
        },
    });
    evaluate_in(policy, binding, params, request, &namespace)
}

/// Evaluates a policy, through one binding and its params, on a request in `namespace` (the
/// Namespace object, as JSON: the namespace selector reads its labels and expressions read it
/// as `namespaceObject`). A policy without `paramKind` reads `params` as null; one with a
/// `paramKind` and no params denies, as `parameterNotFoundAction: Deny` does.
pub fn evaluate_in(
    policy: &ValidatingAdmissionPolicy,
    binding: &ValidatingAdmissionPolicyBinding,
    params: Option<&ConfigMap>,
    request: &Request,
    namespace: &Json,
) -> Outcome {
    let Some(spec) = &policy.spec else {
        return Outcome::NotMatched("the policy has no spec".to_string());
    };
    let Some((group, version, resource)) = resource_of(request.subject()) else {
        return Outcome::Denied(vec![Denial {
            validation: None,
            expression: String::new(),
            message: "the object has no apiVersion or kind".to_string(),
        }]);
    };
    let namespace_labels = namespace
        .pointer("/metadata/labels")
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default();
    let target = Target {
        group: group.clone(),
        version: version.clone(),
        resource: resource.clone(),
        namespace_labels: &namespace_labels,
    };
    if let Some(constraints) = &spec.match_constraints
        && let Err(why) = resources_match(constraints, request, &target)
    {
        return Outcome::NotMatched(why);
    }
    let binding_spec = binding.spec.clone().unwrap_or_default();
    if let Some(resources) = &binding_spec.match_resources
        && let Err(why) = resources_match(resources, request, &target)
    {
        return Outcome::NotMatched(why);
    }
    let params_json = match (params, &spec.param_kind) {
        (_, None) => Json::Null,
        (Some(config_map), Some(_)) => serde_json::to_value(config_map).unwrap_or(Json::Null),
        (None, Some(_)) => {
            return Outcome::Denied(vec![Denial {
                validation: None,
                expression: String::new(),
                // The API server's words for a binding whose params do not exist.
                message: "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".to_string(),
            }]);
        }
    };
    let env = environment();
    let mut bindings = Map::new();
    bindings.insert("object".to_string(), request.object.clone());
    bindings.insert(
        "oldObject".to_string(),
        request.old_object.clone().unwrap_or(Json::Null),
    );
    bindings.insert("params".to_string(), params_json);
    bindings.insert("namespaceObject".to_string(), namespace.clone());
    bindings.insert(
        "request".to_string(),
        json!({
            "operation": request.operation,
            "namespace": request.namespace,
            "kind": {"group": group, "version": version, "kind": request.subject().get("kind").cloned().unwrap_or(Json::Null)},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": request.subject().pointer("/metadata/name").cloned().unwrap_or(Json::String(String::new())),
            "options": request.options.clone().unwrap_or(Json::Null),
            "subResource": request.subresource.clone().unwrap_or_default(),
            "userInfo": {"username": request.username, "groups": request.groups},
        }),
    );
    let base = match context_of(&env, &bindings) {
        Ok(context) => context,
        Err(error) => {
            return Outcome::Denied(vec![Denial {
                validation: None,
                expression: String::new(),
                message: error,
            }]);
        }
    };
    for condition in spec.match_conditions.iter().flatten() {
        match run(&env, &base, &condition.expression) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                return Outcome::NotMatched(format!(
                    "match condition `{}` is false",
                    condition.name
                ));
            }
            Ok(other) => {
                return Outcome::Denied(vec![Denial {
                    validation: None,
                    expression: condition.expression.clone(),
                    message: format!(
                        "match condition `{}` is not a boolean: {other:?}",
                        condition.name
                    ),
                }]);
            }
            Err(error) => {
                return Outcome::Denied(vec![Denial {
                    validation: None,
                    expression: condition.expression.clone(),
                    message: format!("match condition `{}` failed: {error}", condition.name),
                }]);
            }
        }
    }
    let mut variables = Map::new();
    for variable in spec.variables.iter().flatten() {
        let mut scope = base.new_inner_scope();
        if let Ok(value) = cel::to_value(Json::Object(variables.clone())) {
            scope.add_variable_from_value("variables", value);
        }
        if let Ok(value) = run(&env, &scope, &variable.expression)
            && let Ok(value) = value.json()
        {
            variables.insert(variable.name.clone(), value);
        }
    }
    let mut context = base.new_inner_scope();
    if let Ok(value) = cel::to_value(Json::Object(variables)) {
        context.add_variable_from_value("variables", value);
    }
    let mut denials = Vec::new();
    for (idx, validation) in spec.validations.iter().flatten().enumerate() {
        let failure = match run(&env, &context, &validation.expression) {
            Ok(cel::Value::Bool(true)) => continue,
            Ok(cel::Value::Bool(false)) => None,
            Ok(other) => Some(format!("the expression is not a boolean: {other:?}")),
            Err(error) => Some(error),
        };
        let message = match failure {
            Some(error) => format!(
                "expression '{}' resulted in error: {error}",
                validation.expression
            ),
            None => validation
                .message_expression
                .as_deref()
                .and_then(|expression| match run(&env, &context, expression) {
                    Ok(cel::Value::String(text)) if !text.is_empty() => Some(text.to_string()),
                    _ => None,
                })
                .or_else(|| validation.message.clone())
                .unwrap_or_else(|| format!("failed expression: {}", validation.expression)),
        };
        denials.push(Denial {
            validation: Some(idx),
            expression: validation.expression.clone(),
            message,
        });
    }
    if denials.is_empty() {
        Outcome::Admitted
    } else {
        Outcome::Denied(denials)
    }
}

/// Reads one Kubernetes object from YAML (the declaration YAML reader: one document, no
/// anchors, aliases or tags) into JSON.
pub fn object_from_yaml(text: &str) -> Result<Json, String> {
    let mut sources = crate::source::SourceMap::new();
    let file = sources.add("object.yaml".to_string(), text.to_string());
    let (document, diagnostics) = crate::parse::parse(file, text, crate::parse::Format::Yaml);
    if let Some(problem) = diagnostics.first() {
        return Err(problem.message.clone());
    }
    let root = document
        .root
        .ok_or_else(|| "the file holds no object".to_string())?;
    node_to_json(&root.node)
}

fn node_to_json(node: &crate::parse::Node) -> Result<Json, String> {
    use crate::parse::Value;
    Ok(match &node.value {
        Value::Null => Json::Null,
        Value::Bool(flag) => Json::Bool(*flag),
        Value::Int(number) => i64::try_from(*number)
            .map(Json::from)
            .map_err(|_| format!("integer {number} is too large"))?,
        Value::Float(number) => serde_json::Number::from_f64(*number)
            .map(Json::Number)
            .ok_or_else(|| format!("{number} is not a number JSON can hold"))?,
        Value::Str(text) => Json::String(text.clone()),
        Value::Seq(items) => Json::Array(items.iter().map(node_to_json).collect::<Result<_, _>>()?),
        Value::Map(map) => {
            let mut object = Map::new();
            for entry in &map.entries {
                if object
                    .insert(entry.key.clone(), node_to_json(&entry.value)?)
                    .is_some()
                {
                    return Err(format!("`{}` is given twice", entry.key));
                }
            }
            Json::Object(object)
        }
    })
}

/// The verdict of the cell's tenant floor on one object in its namespace: the tenant whose
/// binding selects the namespace, and the outcome; `None` when no tenant of the cell owns the
/// namespace (the floor does not apply there). The floor is the one of the cell's scheduler;
/// in a Volcano cell a PodGroup is judged by the PodGroup policy, and in a DRA cell a
/// ResourceClaim or ResourceClaimTemplate by the device claims policy, which the floor leaves
/// them to.
pub fn check_object(cell: &crate::plan::CellPlan, request: &Request) -> Option<(String, Outcome)> {
    use crate::facts::backends::DeviceMode;
    use crate::lower::admission::{self, Scheduler};
    let tenant = cell.tenants.iter().find(|tenant| {
        tenant
            .namespaces
            .iter()
            .any(|namespace| namespace.name == request.namespace)
    })?;
    let subject = if request.object.is_null() {
        request.old_object.as_ref().unwrap_or(&Json::Null)
    } else {
        &request.object
    };
    let kind = subject
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let backends = cell.backends;
    let (policy, binding) = match (backends.scheduler, backends.devices, kind) {
        (Scheduler::Volcano, _, "PodGroup") => (
            admission::podgroup_policy(),
            admission::podgroup_binding(tenant),
        ),
        (_, DeviceMode::Dra, "ResourceClaim" | "ResourceClaimTemplate") => (
            admission::device_claims_policy(),
            admission::device_claims_binding(tenant),
        ),
        _ => (
            admission::policy_for(backends.scheduler),
            admission::binding(tenant),
        ),
    };
    let params = admission::params_config_map(tenant, cell);
    let mut request = request.clone();
    if request.username.is_empty() && request.groups.is_empty() {
        request.groups = tenant
            .groups
            .get(&crate::facts::rbac::TenantRole::Member)
            .cloned()
            .into_iter()
            .collect();
    }
    Some((
        tenant.name.clone(),
        evaluate(&policy, &binding, Some(&params), &request),
    ))
}
