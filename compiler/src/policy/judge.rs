//! What a cell's API server answers to one request, as far as tenantc can know it offline:
//! Pod Security admission, then every ValidatingAdmissionPolicy the cell's output holds.
//!
//! Consumes: a cell's plan (which tenant owns a namespace, and its member group), the output
//! tree of a compilation (the cell's policies, bindings, params ConfigMaps and Namespaces,
//! read back from the emitted bytes, so every policy tenantc emits is judged exactly as it is
//! synced), and a [`Request`]. Produces: a [`Verdict`]: the principal as the API server sees
//! it, the Pod Security verdict, each policy binding that applied and what it said, and the
//! warnings.
//!
//! The API server's order is followed: the object is defaulted as the API server defaults it
//! before admission where that changes what is judged (a Pod on the host network gets
//! `hostPort` = `containerPort` on every port, `pkg/apis/core/v1/defaults.go`); Pod Security
//! runs before the admission policies (its place in kube-apiserver's plugin order), so when it
//! denies, its message is the answer; otherwise the answer is the first failing validation of
//! one of the denying policy bindings (the API server walks its policies in no fixed order, so
//! any of them may be the one it names). The principal is completed as the API server's
//! impersonation filter completes it: a ServiceAccount user without groups gets
//! `system:serviceaccounts` and `system:serviceaccounts:<namespace>`, and every user but
//! `system:anonymous` is in `system:authenticated`.
//!
//! Not judged (the verdict cannot see them): RBAC, quota (ResourceQuota and Kueue's
//! admission), LimitRange, the API server's own validation of the object, the other
//! admission plugins (ServiceAccount, RuntimeClass, Priority, …) and admission webhooks
//! (Kueue's among them). [`NOT_JUDGED`] says so in one line.
//!
//! Invariants: pure; never panics on any object; an object that cannot be judged (it does
//! not decode, or a policy uses what the evaluator does not model) is an error, never an
//! admission.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value as Json;

use super::pod_security::{self, PodSecurityRequest, PodSecurityVerdict};
use super::{Outcome, Request, evaluate_in, object_from_yaml, resource_of};
use crate::emit::OutputTree;
use crate::plan::{CellPlan, TenantPlan};

/// What the verdict does not judge, for people.
pub const NOT_JUDGED: &str = "RBAC (whether the principal may make the request at all), quota (the namespace's ResourceQuotas and Kueue's admission), LimitRange, the API server's own validation of the object, and the other admission plugins and webhooks (ServiceAccount, RuntimeClass, Priority, Kueue's webhooks)";

/// The `DeleteOptions` kubectl sends with `kubectl delete --cascade=<propagation>`
/// (`Background` without `--cascade`), as the API server shows them to admission.
pub fn kubectl_delete_options(propagation: &str) -> Json {
    serde_json::json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "propagationPolicy": propagation,
    })
}

/// The user and groups of a request, as the API server's admission sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `request.userInfo.username`; empty for the default member.
    pub username: String,
    /// `request.userInfo.groups`, completed as the API server completes them.
    pub groups: Vec<String>,
    /// Whether the request named nobody, so the principal is a member of the tenant (its
    /// `member` group), as `tenantc test-policy` assumes by default.
    pub default_member: bool,
}

/// The groups the API server gives a user who asked for `groups`: a ServiceAccount user who
/// names no group is in its fixed groups, and every user but `system:anonymous` is in
/// `system:authenticated` (unless it names `system:unauthenticated`), as kube-apiserver's
/// impersonation filter and authenticators do.
pub fn completed_groups(username: &str, groups: &[String]) -> Vec<String> {
    let mut completed = groups.to_vec();
    if completed.is_empty()
        && let Some(rest) = username.strip_prefix("system:serviceaccount:")
        && let Some((namespace, name)) = rest.split_once(':')
        && !namespace.is_empty()
        && !name.is_empty()
    {
        completed = vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ];
    }
    let has = |group: &str| completed.iter().any(|g| g == group);
    if username == "system:anonymous" {
        if !has("system:unauthenticated") {
            completed.push("system:unauthenticated".to_string());
        }
    } else if !has("system:authenticated") && !has("system:unauthenticated") {
        completed.push("system:authenticated".to_string());
    }
    completed
}

/// One policy binding that applied to the request, and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict {
    /// The ValidatingAdmissionPolicy.
    pub policy: String,
    /// The binding.
    pub binding: String,
    /// The binding's `validationActions` (`Deny`, `Warn`, `Audit`).
    pub actions: Vec<String>,
    /// [`Outcome::Admitted`] or [`Outcome::Denied`].
    pub outcome: Outcome,
}

/// Who refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judge {
    /// Pod Security admission, at the namespace's `enforce` level.
    PodSecurity,
    /// A validation (by index; `None` for its params or match conditions) of a policy binding.
    Policy {
        /// The policy's name.
        policy: String,
        /// The binding's name.
        binding: String,
        /// The index of the failing validation in the policy.
        validation: Option<usize>,
    },
}

/// One reason the API server refuses the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Who refused it.
    pub judge: Judge,
    /// The message the API server answers with, as kubectl prints it after
    /// `Error from server (Forbidden): `: `pods "x" is forbidden: …`.
    pub message: String,
}

/// The verdict on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The tenant that owns the request's namespace.
    pub tenant: String,
    /// The principal, as admission sees it.
    pub principal: Principal,
    /// What Pod Security admission does.
    pub pod_security: PodSecurityVerdict,
    /// Every policy binding that applied, by policy and binding name.
    pub policies: Vec<PolicyVerdict>,
    /// The policy bindings that did not apply, with why: `(policy, binding, why)`.
    pub not_applied: Vec<(String, String, String)>,
    /// `pods "name"`: how the API server names the object in its messages.
    subject: String,
}

impl Verdict {
    /// Every reason to refuse the request: Pod Security's first, then each denying policy
    /// binding's failing validations in policy order.
    pub fn refusals(&self) -> Vec<Refusal> {
        let mut refusals = Vec::new();
        if let PodSecurityVerdict::Pod {
            denial: Some(denial),
            ..
        } = &self.pod_security
        {
            refusals.push(Refusal {
                judge: Judge::PodSecurity,
                message: format!("{} is forbidden: {denial}", self.subject),
            });
        }
        for verdict in &self.policies {
            let Outcome::Denied(denials) = &verdict.outcome else {
                continue;
            };
            if !verdict.actions.iter().any(|action| action == "Deny") {
                continue;
            }
            for denial in denials {
                refusals.push(Refusal {
                    judge: Judge::Policy {
                        policy: verdict.policy.clone(),
                        binding: verdict.binding.clone(),
                        validation: denial.validation,
                    },
                    message: format!(
                        "{} is forbidden: ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
                        self.subject, verdict.policy, verdict.binding, denial.message
                    ),
                });
            }
        }
        refusals
    }

    /// Whether the API server refuses the request.
    pub fn is_denied(&self) -> bool {
        !self.refusals().is_empty()
    }

    /// The messages the API server may answer a refused request with: Pod Security's denial
    /// alone when it denies (it runs first), else the first failing validation of each
    /// denying policy binding (the API server names one of them). Empty when admitted.
    pub fn answers(&self) -> Vec<String> {
        let refusals = self.refusals();
        if let Some(first) = refusals.first()
            && first.judge == Judge::PodSecurity
        {
            return vec![first.message.clone()];
        }
        let mut answers: Vec<String> = Vec::new();
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for refusal in &refusals {
            if let Judge::Policy {
                policy, binding, ..
            } = &refusal.judge
                && !seen.contains(&(policy.as_str(), binding.as_str()))
            {
                seen.push((policy, binding));
                answers.push(refusal.message.clone());
            }
        }
        answers
    }

    /// The warnings the API server returns (kubectl prints each after `Warning: `), with an
    /// admission or a refusal alike: Pod Security's, and the failing validations of bindings
    /// whose actions include `Warn`. When Pod Security denies, no policy runs, so it warns of
    /// nothing else.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        match &self.pod_security {
            PodSecurityVerdict::Pod {
                denial: Some(_), ..
            } => return warnings,
            PodSecurityVerdict::Pod {
                warning: Some(warning),
                ..
            }
            | PodSecurityVerdict::Template {
                warning: Some(warning),
                ..
            } => warnings.push(warning.clone()),
            _ => {}
        }
        for verdict in &self.policies {
            if let Outcome::Denied(denials) = &verdict.outcome
                && verdict.actions.iter().any(|action| action == "Warn")
            {
                for denial in denials {
                    warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        verdict.policy, verdict.binding, denial.message
                    ));
                }
            }
        }
        warnings
    }
}

/// The admission objects of one cell, read from a compilation's output tree.
#[derive(Debug, Clone)]
pub struct CellAdmission<'a> {
    cell: &'a CellPlan,
    /// Every policy with its bindings, by policy name; bindings by name.
    policies: Vec<(
        ValidatingAdmissionPolicy,
        Vec<ValidatingAdmissionPolicyBinding>,
    )>,
    /// ConfigMaps by namespace and name (the params).
    config_maps: BTreeMap<(String, String), ConfigMap>,
    /// Namespaces by name, as JSON.
    namespaces: BTreeMap<String, Json>,
}

fn name_of(object: &Json) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

fn typed<T: serde::de::DeserializeOwned>(path: &str, object: Json) -> Result<T, String> {
    serde_json::from_value(object).map_err(|error| format!("{path}: {error}"))
}

impl<'a> CellAdmission<'a> {
    /// Reads the cell's ValidatingAdmissionPolicies, their bindings, ConfigMaps and Namespaces
    /// from `output` (every YAML file under `<cell>/`); an error when a file does not read
    /// back, which is a bug in tenantc.
    pub fn read(cell: &'a CellPlan, output: &OutputTree) -> Result<Self, String> {
        let prefix = format!("{}/", cell.name);
        let mut policies: BTreeMap<String, ValidatingAdmissionPolicy> = BTreeMap::new();
        let mut bindings: BTreeMap<String, ValidatingAdmissionPolicyBinding> = BTreeMap::new();
        let mut config_maps = BTreeMap::new();
        let mut namespaces = BTreeMap::new();
        for (path, bytes) in output.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if !path.ends_with(".yaml") || path.ends_with("/kustomization.yaml") {
                continue;
            }
            let text = std::str::from_utf8(bytes).map_err(|error| format!("{path}: {error}"))?;
            let object = object_from_yaml(text).map_err(|error| format!("{path}: {error}"))?;
            let kind = object
                .get("kind")
                .and_then(Json::as_str)
                .unwrap_or_default();
            match kind {
                "ValidatingAdmissionPolicy" => {
                    policies.insert(name_of(&object), typed(path, object)?);
                }
                "ValidatingAdmissionPolicyBinding" => {
                    bindings.insert(name_of(&object), typed(path, object)?);
                }
                "ConfigMap" => {
                    let namespace = object
                        .pointer("/metadata/namespace")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string();
                    config_maps.insert((namespace, name_of(&object)), typed(path, object)?);
                }
                "Namespace" => {
                    namespaces.insert(name_of(&object), object);
                }
                _ => {}
            }
        }
        let mut by_policy: BTreeMap<String, Vec<ValidatingAdmissionPolicyBinding>> =
            BTreeMap::new();
        for binding in bindings.into_values() {
            let policy = binding
                .spec
                .as_ref()
                .and_then(|spec| spec.policy_name.clone())
                .unwrap_or_default();
            by_policy.entry(policy).or_default().push(binding);
        }
        // A binding of a policy that does not exist is skipped, as the API server skips it.
        let policies = policies
            .into_iter()
            .map(|(name, policy)| (policy, by_policy.remove(&name).unwrap_or_default()))
            .collect();
        Ok(Self {
            cell,
            policies,
            config_maps,
            namespaces,
        })
    }

    /// The tenant of the cell that owns `namespace`.
    pub fn tenant_of(&self, namespace: &str) -> Option<&'a TenantPlan> {
        self.cell
            .tenants
            .iter()
            .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
    }

    /// The verdict of the cell's admission on `request`. A request that names neither a user
    /// nor a group is made by a member of the tenant that owns the namespace (its `member`
    /// group). An error when no tenant owns the namespace, or the request cannot be judged.
    pub fn judge(&self, request: &Request) -> Result<Verdict, String> {
        let tenant = self.tenant_of(&request.namespace).ok_or_else(|| {
            format!(
                "no tenant of cell `{}` owns namespace `{}`",
                self.cell.name, request.namespace
            )
        })?;
        let namespace = self.namespaces.get(&request.namespace).ok_or_else(|| {
            format!(
                "the output of cell `{}` has no Namespace `{}`",
                self.cell.name, request.namespace
            )
        })?;
        let default_member = request.username.is_empty() && request.groups.is_empty();
        let asked: Vec<String> = if default_member {
            tenant
                .groups
                .get(&crate::facts::rbac::TenantRole::Member)
                .cloned()
                .into_iter()
                .collect()
        } else {
            request.groups.clone()
        };
        let principal = Principal {
            username: request.username.clone(),
            groups: completed_groups(&request.username, &asked),
            default_member,
        };
        let mut request = request.clone();
        request.groups = principal.groups.clone();
        default_host_ports(&mut request.object);
        if let Some(old) = &mut request.old_object {
            default_host_ports(old);
        }
        let subject_object = if request.object.is_null() {
            request.old_object.clone().unwrap_or(Json::Null)
        } else {
            request.object.clone()
        };
        let (group, _, resource) = resource_of(&subject_object)
            .ok_or_else(|| "the object has no apiVersion or kind".to_string())?;
        let labels: BTreeMap<String, String> = namespace
            .pointer("/metadata/labels")
            .and_then(Json::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
            .collect();
        let pod_security = pod_security::admit(
            &PodSecurityRequest {
                operation: &request.operation,
                group: &group,
                resource: &resource,
                subresource: request.subresource.as_deref(),
                object: &request.object,
                old_object: request.old_object.as_ref(),
            },
            &labels,
            self.cell.kubernetes.1,
        )?;
        let mut policies = Vec::new();
        let mut not_applied = Vec::new();
        for (policy, bindings) in &self.policies {
            let policy_name = policy.metadata.name.clone().unwrap_or_default();
            for binding in bindings {
                let binding_name = binding.metadata.name.clone().unwrap_or_default();
                let spec = binding.spec.clone().unwrap_or_default();
                let params = match &spec.param_ref {
                    Some(reference) => {
                        if reference.selector.is_some() {
                            return Err(format!(
                                "binding `{binding_name}` selects its params by label, which tenantc cannot judge offline"
                            ));
                        }
                        let namespace = reference
                            .namespace
                            .clone()
                            .unwrap_or_else(|| request.namespace.clone());
                        let name = reference.name.clone().unwrap_or_default();
                        let found = self.config_maps.get(&(namespace, name));
                        if found.is_none()
                            && reference.parameter_not_found_action.as_deref() == Some("Allow")
                        {
                            not_applied.push((
                                policy_name.clone(),
                                binding_name,
                                "its params do not exist and parameterNotFoundAction is Allow"
                                    .to_string(),
                            ));
                            continue;
                        }
                        found
                    }
                    None => None,
                };
                let outcome = evaluate_in(policy, binding, params, &request, namespace);
                if let Outcome::NotMatched(why) = outcome {
                    not_applied.push((policy_name.clone(), binding_name, why));
                    continue;
                }
                policies.push(PolicyVerdict {
                    policy: policy_name.clone(),
                    binding: binding_name,
                    actions: spec.validation_actions.clone().unwrap_or_default(),
                    outcome,
                });
            }
        }
        let name = name_of(&subject_object);
        let qualified = if group.is_empty() {
            resource
        } else {
            format!("{resource}.{group}")
        };
        let subject = if name.is_empty() {
            qualified
        } else {
            format!("{qualified} {}", pod_security::go_quote(&name))
        };
        Ok(Verdict {
            tenant: tenant.name.clone(),
            principal,
            pod_security,
            policies,
            not_applied,
            subject,
        })
    }
}

/// The API server's defaulting of a v1 Pod on the host network: every container port (init
/// containers' too) without a `hostPort` gets its `containerPort` as `hostPort`.
fn default_host_ports(object: &mut Json) {
    if object.get("apiVersion").and_then(Json::as_str) != Some("v1")
        || object.get("kind").and_then(Json::as_str) != Some("Pod")
        || object.pointer("/spec/hostNetwork").and_then(Json::as_bool) != Some(true)
    {
        return;
    }
    for list in ["containers", "initContainers"] {
        let Some(containers) = object
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Json::as_array_mut)
        else {
            continue;
        };
        for port in containers
            .iter_mut()
            .filter_map(|container| container.get_mut("ports"))
            .filter_map(Json::as_array_mut)
            .flatten()
        {
            let unset = port
                .get("hostPort")
                .is_none_or(|host| host.is_null() || host.as_i64() == Some(0));
            if let (true, Some(container_port)) = (unset, port.get("containerPort").cloned())
                && let Some(port) = port.as_object_mut()
            {
                port.insert("hostPort".to_string(), container_port);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use serde_json::json;

    use super::*;
    use crate::policy::Denial;
    use crate::policy::pod_security::{Level, LevelVersion, Version};

    fn groups(list: &[&str]) -> Vec<String> {
        list.iter().map(|group| (*group).to_string()).collect()
    }

    #[test]
    fn principals_are_completed_as_the_api_server_completes_them() {
        assert_eq!(
            completed_groups("alice", &groups(&["acme"])),
            groups(&["acme", "system:authenticated"])
        );
        assert_eq!(
            completed_groups("", &groups(&["acme", "system:authenticated"])),
            groups(&["acme", "system:authenticated"])
        );
        assert_eq!(
            completed_groups("system:serviceaccount:team-train:trainer", &[]),
            groups(&[
                "system:serviceaccounts",
                "system:serviceaccounts:team-train",
                "system:authenticated"
            ])
        );
        // Named groups are the authority for a ServiceAccount too.
        assert_eq!(
            completed_groups(
                "system:serviceaccount:team-train:trainer",
                &groups(&["acme"])
            ),
            groups(&["acme", "system:authenticated"])
        );
        assert_eq!(
            completed_groups("system:anonymous", &[]),
            groups(&["system:unauthenticated"])
        );
        assert_eq!(
            completed_groups("bob", &groups(&["system:unauthenticated"])),
            groups(&["system:unauthenticated"])
        );
    }

    #[test]
    fn a_pod_on_the_host_network_gets_its_container_ports_as_host_ports() {
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "spec": {
                "hostNetwork": true,
                "initContainers": [{"name": "init", "ports": [{"containerPort": 53}]}],
                "containers": [{"name": "main", "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 9081}]}],
            },
        });
        default_host_ports(&mut pod);
        assert_eq!(pod["spec"]["initContainers"][0]["ports"][0]["hostPort"], 53);
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["hostPort"], 80);
        assert_eq!(pod["spec"]["containers"][0]["ports"][1]["hostPort"], 9081);
        // Templates are not defaulted so (only v1 Pods are), nor pods off the host network.
        for mut object in [
            json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"hostNetwork": true, "containers": [{"ports": [{"containerPort": 80}]}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"ports": [{"containerPort": 80}]}]}}),
        ] {
            let before = object.clone();
            default_host_ports(&mut object);
            assert_eq!(object, before);
        }
    }

    fn verdict(pod_security: PodSecurityVerdict, policies: Vec<PolicyVerdict>) -> Verdict {
        Verdict {
            tenant: "acme".to_string(),
            principal: Principal {
                username: String::new(),
                groups: groups(&["acme", "system:authenticated"]),
                default_member: true,
            },
            pod_security,
            policies,
            not_applied: Vec::new(),
            subject: "pods \"demo\"".to_string(),
        }
    }

    fn denied(policy: &str, actions: &[&str], messages: &[&str]) -> PolicyVerdict {
        PolicyVerdict {
            policy: policy.to_string(),
            binding: format!("{policy}-binding"),
            actions: groups(actions),
            outcome: Outcome::Denied(
                messages
                    .iter()
                    .enumerate()
                    .map(|(idx, message)| Denial {
                        validation: Some(idx),
                        expression: String::new(),
                        message: (*message).to_string(),
                    })
                    .collect(),
            ),
        }
    }

    const RESTRICTED: LevelVersion = LevelVersion {
        level: Level::Restricted,
        version: Version::Minor(33),
    };

    #[test]
    fn pod_security_answers_first_and_silences_the_policies() {
        let verdict = verdict(
            PodSecurityVerdict::Pod {
                enforce: RESTRICTED,
                denial: Some(
                    "violates PodSecurity \"restricted:v1.33\": host namespaces (hostNetwork=true)"
                        .to_string(),
                ),
                warning: None,
            },
            vec![denied("floor", &["Deny"], &["no host network"])],
        );
        assert_eq!(verdict.refusals().len(), 2);
        assert_eq!(
            verdict.answers(),
            vec![
                "pods \"demo\" is forbidden: violates PodSecurity \"restricted:v1.33\": host namespaces (hostNetwork=true)"
                    .to_string()
            ]
        );
        assert!(verdict.warnings().is_empty());
    }

    #[test]
    fn each_denying_policy_may_answer_with_its_first_failing_validation() {
        let verdict = verdict(
            PodSecurityVerdict::Template {
                warn: RESTRICTED,
                warning: Some("would violate PodSecurity \"restricted:v1.33\": x".to_string()),
            },
            vec![
                denied("a", &["Deny"], &["first", "second"]),
                denied("b", &["Deny", "Warn"], &["only"]),
                denied("c", &["Warn"], &["warned"]),
                denied("d", &["Audit"], &["audited"]),
            ],
        );
        assert_eq!(
            verdict.answers(),
            vec![
                "pods \"demo\" is forbidden: ValidatingAdmissionPolicy 'a' with binding 'a-binding' denied request: first".to_string(),
                "pods \"demo\" is forbidden: ValidatingAdmissionPolicy 'b' with binding 'b-binding' denied request: only".to_string(),
            ]
        );
        assert_eq!(
            verdict.refusals().len(),
            3,
            "a binding that only warns or audits does not refuse"
        );
        assert_eq!(
            verdict.warnings(),
            vec![
                "would violate PodSecurity \"restricted:v1.33\": x".to_string(),
                "Validation failed for ValidatingAdmissionPolicy 'b' with binding 'b-binding': only".to_string(),
                "Validation failed for ValidatingAdmissionPolicy 'c' with binding 'c-binding': warned".to_string(),
            ]
        );
    }
}
