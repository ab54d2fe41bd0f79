//! The Pod Security Standards as the PodSecurity admission plugin enforces them, for
//! `tenantc test-policy` and its conformance check.
//!
//! Consumes: a namespace's `pod-security.kubernetes.io/*` labels, the cell's Kubernetes minor
//! version, and an admission request (operation, resource, the object and the old object as
//! JSON). Produces: a [`PodSecurityVerdict`]: not judged (and why), or for a Pod the `enforce`
//! level's denial and the `warn` level's warning, or for a pod template the `warn` level's
//! warning (the plugin never denies a workload object, it only warns).
//!
//! The checks are those of `k8s.io/pod-security-admission` v0.36.3 (`policy/check_*.go`), read
//! from its source and written here as a table: one [`Check`] per check ID, each with its
//! versions (a version applies from its minor on, until the next one), and for `restricted`
//! checks the `baseline` checks they replace. A level at version `v1.N` runs the checks of
//! that version, `baseline` ones first and each group in the byte order of the IDs, as the
//! plugin's registry orders them; a version newer than the newest check, or `latest`, runs the
//! newest checks (1.35), capped at the cell's own minor version (the plugin's emulation
//! version). The messages are the plugin's, word for word, because the conformance check
//! compares them with the API server's.
//!
//! The plugin's order is followed too: Pods (CREATE and UPDATE, no subresource but
//! `ephemeralcontainers`; an UPDATE that changes no container image and adds no ephemeral
//! container is not checked) are judged against `enforce` and, when admitted, warned against
//! `warn`; the workload kinds with a pod template (Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, Job, CronJob, ReplicationController, PodTemplate) are only warned against `warn`.
//! Without labels a namespace is `privileged` (the API server's default configuration, with no
//! exemptions, which is what tenantc's cells are assumed to run).
//!
//! Invariants: an object is read as the API server decodes it (typed `k8s-openapi` structs,
//! unknown fields ignored); an object that does not decode is an error, since the API server
//! refuses it before admission; nothing here panics on any object.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EphemeralContainer, Lifecycle, LifecycleHandler, Pod,
    PodTemplateSpec, Probe, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value as Json;

// The capabilities `baseline` lets containers add: the container runtimes' default set, which
// the exception policy of `lower/guard.rs` uses too.
use crate::facts::pod_security::BASELINE_CAPABILITIES;

/// A Pod Security level: the one enum of `facts`, which the plan carries too, here read from
/// the labels of Namespaces read back from the output (an open set, parsed into it).
pub use crate::facts::pod_security::PodSecurityLevel as Level;

/// The version of the standard a level is pinned to: `v1.N`, or `latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Kubernetes `1.N`.
    Minor(u32),
    /// The newest version the API server knows.
    Latest,
}

impl Version {
    /// The version a label value names: `latest`, or `v1.N` with no leading zero.
    pub fn parse(text: &str) -> Option<Version> {
        if text == "latest" {
            return Some(Version::Latest);
        }
        let digits = text.strip_prefix("v1.")?;
        let well_formed = !digits.is_empty()
            && digits.bytes().all(|byte| byte.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !well_formed {
            return None;
        }
        digits.parse().ok().map(Version::Minor)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Minor(minor) => write!(f, "v1.{minor}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version, as the API server names it in its messages: `restricted:v1.33`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelVersion {
    /// The level.
    pub level: Level,
    /// The version.
    pub version: Version,
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// A namespace's three modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespacePolicy {
    /// Denies a Pod that violates it.
    pub enforce: LevelVersion,
    /// Records a violation in the audit log.
    pub audit: LevelVersion,
    /// Warns the client of a violation.
    pub warn: LevelVersion,
}

/// The label of each mode's level; its version label adds `-version`.
const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

impl NamespacePolicy {
    /// The policy a namespace's labels give, over the API server's default configuration
    /// (`privileged:latest` in every mode), with the label values it could not read. As the
    /// plugin does, an unreadable `enforce` level is `restricted` (fail closed), an unreadable
    /// `audit` or `warn` level is `privileged`, an unreadable version is `latest`, and without
    /// a `warn` label, `warn` follows a stricter `enforce`.
    pub fn from_labels(labels: &BTreeMap<String, String>) -> (NamespacePolicy, Vec<String>) {
        let default = LevelVersion {
            level: Level::Privileged,
            version: Version::Latest,
        };
        let mut policy = NamespacePolicy {
            enforce: default,
            audit: default,
            warn: default,
        };
        let mut errors = Vec::new();
        let label = |mode: &str, suffix: &str| labels.get(&format!("{LABEL_PREFIX}{mode}{suffix}"));
        let mut read = |mode: &str, unreadable: Level, target: &mut LevelVersion| {
            let mut level_given = false;
            if let Some(text) = label(mode, "") {
                match Level::parse(text) {
                    Some(level) => {
                        target.level = level;
                        level_given = true;
                    }
                    None => {
                        target.level = unreadable;
                        errors.push(format!("{LABEL_PREFIX}{mode}: {text:?}"));
                    }
                }
            }
            let version_given = if let Some(text) = label(mode, "-version") {
                target.version = Version::parse(text).unwrap_or_else(|| {
                    errors.push(format!("{LABEL_PREFIX}{mode}-version: {text:?}"));
                    Version::Latest
                });
                true
            } else {
                false
            };
            (level_given, version_given)
        };
        let (enforce_given, _) = read("enforce", Level::Restricted, &mut policy.enforce);
        read("audit", Level::Privileged, &mut policy.audit);
        let warn_level_given = label("warn", "").is_some();
        let (_, warn_version_given) = read("warn", Level::Privileged, &mut policy.warn);
        if !warn_level_given && enforce_given && policy.enforce.level > policy.warn.level {
            policy.warn.level = policy.enforce.level;
            if !warn_version_given {
                policy.warn.version = policy.enforce.version;
            }
        }
        (policy, errors)
    }

    fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn]
            .iter()
            .all(|mode| mode.level == Level::Privileged)
    }
}

/// One failed check: the API server's reason and detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Such as `host namespaces`.
    pub reason: String,
    /// Such as `hostNetwork=true`; may be empty.
    pub detail: String,
}

/// The violations as the API server lists them: `reason (detail), reason (detail)`.
pub fn forbidden_detail(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|violation| {
            if violation.detail.is_empty() {
                violation.reason.clone()
            } else {
                format!("{} ({})", violation.reason, violation.detail)
            }
        })
        .collect();
    parts.join(", ")
}

/// A container of any kind (init, regular, ephemeral), with what the checks read.
struct ContainerView<'a> {
    name: &'a str,
    security_context: Option<&'a SecurityContext>,
    ports: &'a [ContainerPort],
    probes: [Option<&'a Probe>; 3],
    lifecycle: Option<&'a Lifecycle>,
}

impl<'a> ContainerView<'a> {
    fn of(container: &'a Container) -> Self {
        Self {
            name: &container.name,
            security_context: container.security_context.as_ref(),
            ports: container.ports.as_deref().unwrap_or_default(),
            probes: [
                container.liveness_probe.as_ref(),
                container.readiness_probe.as_ref(),
                container.startup_probe.as_ref(),
            ],
            lifecycle: container.lifecycle.as_ref(),
        }
    }

    fn of_ephemeral(container: &'a EphemeralContainer) -> Self {
        Self {
            name: &container.name,
            security_context: container.security_context.as_ref(),
            ports: container.ports.as_deref().unwrap_or_default(),
            probes: [
                container.liveness_probe.as_ref(),
                container.readiness_probe.as_ref(),
                container.startup_probe.as_ref(),
            ],
            lifecycle: container.lifecycle.as_ref(),
        }
    }
}

/// What a check reads of a pod: its annotations and spec, containers in the plugin's visiting
/// order (init containers, containers, ephemeral containers).
pub struct PodView<'a> {
    annotations: BTreeMap<&'a str, &'a str>,
    spec: &'a k8s_openapi::api::core::v1::PodSpec,
    containers: Vec<ContainerView<'a>>,
}

impl<'a> PodView<'a> {
    /// The view of a pod's (or pod template's) metadata and spec.
    pub fn new(metadata: &'a ObjectMeta, spec: &'a k8s_openapi::api::core::v1::PodSpec) -> Self {
        let annotations = metadata
            .annotations
            .iter()
            .flatten()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        let mut containers: Vec<ContainerView<'a>> = spec
            .init_containers
            .iter()
            .flatten()
            .map(ContainerView::of)
            .collect();
        containers.extend(spec.containers.iter().map(ContainerView::of));
        containers.extend(
            spec.ephemeral_containers
                .iter()
                .flatten()
                .map(ContainerView::of_ephemeral),
        );
        Self {
            annotations,
            spec,
            containers,
        }
    }

    fn pod_context(&self) -> Option<&'a k8s_openapi::api::core::v1::PodSecurityContext> {
        self.spec.security_context.as_ref()
    }

    fn windows(&self) -> bool {
        self.spec.os.as_ref().is_some_and(|os| os.name == "windows")
    }

    /// `hostUsers: false`: the pod runs in a user namespace.
    fn user_namespace(&self) -> bool {
        self.spec.host_users == Some(false)
    }
}

/// `singular` or `plural`, by `count`, as the plugin words its details.
fn plural<'s>(singular: &'s str, plural: &'s str, count: usize) -> &'s str {
    if count == 1 { singular } else { plural }
}

/// `"a", "b"`: items in double quotes, as written (the plugin does not escape them).
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let inner: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", inner.join("\", \""))
}

/// `containers "a", "b"`.
fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        plural("container", "containers", names.len()),
        join_quote(names)
    )
}

/// A string quoted as Go's `%q` quotes it: `"`, `\` and non-printable characters escaped.
pub(crate) fn go_quote(text: &str) -> String {
    let mut quoted = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                quoted.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() || c == '\u{feff}' => {
                quoted.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn violation(reason: impl Into<String>, detail: impl Into<String>) -> Option<Violation> {
    Some(Violation {
        reason: reason.into(),
        detail: detail.into(),
    })
}

/// A check's verdict on a pod: `None` when it holds.
type CheckFn = fn(&PodView<'_>) -> Option<Violation>;

/// One version of a check: from Kubernetes `1.since` on, until the check's next version.
struct Versioned {
    since: u32,
    check: CheckFn,
    /// The `baseline` checks this `restricted` version replaces.
    overrides: &'static [&'static str],
}

/// A check of the standard, by ID.
struct Check {
    id: &'static str,
    level: Level,
    versions: &'static [Versioned],
}

const fn from(since: u32, check: CheckFn) -> Versioned {
    Versioned {
        since,
        check,
        overrides: &[],
    }
}

const fn replacing(since: u32, check: CheckFn, overrides: &'static [&'static str]) -> Versioned {
    Versioned {
        since,
        check,
        overrides,
    }
}

/// Every check of k8s.io/pod-security-admission v0.36.3, `baseline` ones first, each level in
/// the byte order of the IDs (a test keeps the order).
const CHECKS: &[Check] = &[
    Check {
        id: "appArmorProfile",
        level: Level::Baseline,
        versions: &[from(0, app_armor_profile)],
    },
    Check {
        id: "capabilities_baseline",
        level: Level::Baseline,
        versions: &[from(0, capabilities_baseline)],
    },
    Check {
        id: "hostNamespaces",
        level: Level::Baseline,
        versions: &[from(0, host_namespaces)],
    },
    Check {
        id: "hostPathVolumes",
        level: Level::Baseline,
        versions: &[from(0, host_path_volumes)],
    },
    Check {
        id: "hostPorts",
        level: Level::Baseline,
        versions: &[from(0, host_ports)],
    },
    Check {
        id: "hostProbesAndHostLifecycle",
        level: Level::Baseline,
        versions: &[from(34, host_probes_and_lifecycle)],
    },
    Check {
        id: "privileged",
        level: Level::Baseline,
        versions: &[from(0, privileged)],
    },
    Check {
        id: "procMount",
        level: Level::Baseline,
        versions: &[from(0, proc_mount), from(35, proc_mount_1_35)],
    },
    Check {
        id: "seLinuxOptions",
        level: Level::Baseline,
        versions: &[
            from(0, se_linux_options_1_0),
            from(31, se_linux_options_1_31),
        ],
    },
    Check {
        id: "seccompProfile_baseline",
        level: Level::Baseline,
        versions: &[
            from(0, seccomp_annotations),
            from(19, seccomp_profile_baseline),
        ],
    },
    Check {
        id: "sysctls",
        level: Level::Baseline,
        versions: &[
            from(0, sysctls_1_0),
            from(27, sysctls_1_27),
            from(29, sysctls_1_29),
            from(32, sysctls_1_32),
        ],
    },
    Check {
        id: "windowsHostProcess",
        level: Level::Baseline,
        versions: &[from(0, windows_host_process)],
    },
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        versions: &[
            from(8, allow_privilege_escalation),
            from(25, allow_privilege_escalation_1_25),
        ],
    },
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        versions: &[
            replacing(22, capabilities_restricted, &["capabilities_baseline"]),
            replacing(25, capabilities_restricted_1_25, &["capabilities_baseline"]),
        ],
    },
    Check {
        id: "procMount_restricted",
        level: Level::Restricted,
        versions: &[replacing(35, proc_mount, &["procMount"])],
    },
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        versions: &[replacing(0, restricted_volumes, &["hostPathVolumes"])],
    },
    Check {
        id: "runAsNonRoot",
        level: Level::Restricted,
        versions: &[from(0, run_as_non_root), from(35, run_as_non_root_1_35)],
    },
    Check {
        id: "runAsUser",
        level: Level::Restricted,
        versions: &[from(23, run_as_user), from(35, run_as_user_1_35)],
    },
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        versions: &[
            replacing(19, seccomp_profile_restricted, &["seccompProfile_baseline"]),
            replacing(
                25,
                seccomp_profile_restricted_1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    },
];

/// The newest minor version at which any check changes: 1.35 for v0.36.3.
pub fn newest_check_minor() -> u32 {
    CHECKS
        .iter()
        .filter_map(|check| check.versions.last())
        .map(|versioned| versioned.since)
        .max()
        .unwrap_or(0)
}

/// The version of a check that applies at `minor`, if any does.
fn at(check: &Check, minor: u32) -> Option<&Versioned> {
    check
        .versions
        .iter()
        .rev()
        .find(|versioned| versioned.since <= minor)
}

/// The minor version whose checks judge `version` on an API server of minor `server_minor`.
fn effective_minor(version: Version, server_minor: u32) -> u32 {
    let newest = newest_check_minor().min(server_minor);
    match version {
        Version::Latest => newest,
        Version::Minor(minor) => minor.min(newest),
    }
}

/// Every check that judges a level at a version, in the plugin's order.
fn checks_of(level_version: LevelVersion, server_minor: u32) -> Vec<(&'static str, CheckFn)> {
    let minor = effective_minor(level_version.version, server_minor);
    let active = |level: Level| {
        CHECKS
            .iter()
            .filter(move |check| check.level == level)
            .filter_map(move |check| at(check, minor).map(|versioned| (check.id, versioned)))
    };
    match level_version.level {
        Level::Privileged => Vec::new(),
        Level::Baseline => active(Level::Baseline)
            .map(|(id, versioned)| (id, versioned.check))
            .collect(),
        Level::Restricted => {
            let overridden: BTreeSet<&str> = active(Level::Restricted)
                .flat_map(|(_, versioned)| versioned.overrides.iter().copied())
                .collect();
            active(Level::Baseline)
                .filter(|(id, _)| !overridden.contains(id))
                .chain(active(Level::Restricted))
                .map(|(id, versioned)| (id, versioned.check))
                .collect()
        }
    }
}

/// The violations of a pod (or pod template) at a level and version, on an API server of
/// minor version `server_minor`, in the plugin's order; empty when it is admitted.
pub fn violations(
    level_version: LevelVersion,
    server_minor: u32,
    pod: &PodView<'_>,
) -> Vec<Violation> {
    checks_of(level_version, server_minor)
        .into_iter()
        .filter_map(|(_, check)| check(pod))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The admission plugin.

/// What Pod Security admission does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodSecurityVerdict {
    /// The plugin does not check this request, and why.
    NotJudged(String),
    /// A Pod, judged against `enforce` and, when admitted, warned against `warn`.
    Pod {
        /// The namespace's `enforce` level.
        enforce: LevelVersion,
        /// `violates PodSecurity "…": …`, the API server's reason for refusing it.
        denial: Option<String>,
        /// `would violate PodSecurity "…": …`, the warning it returns with an admission.
        warning: Option<String>,
    },
    /// A workload's pod template: never denied, only warned against `warn`.
    Template {
        /// The namespace's `warn` level.
        warn: LevelVersion,
        /// `would violate PodSecurity "…": …`.
        warning: Option<String>,
    },
}

/// An admission request as the plugin reads it.
#[derive(Debug, Clone, Copy)]
pub struct PodSecurityRequest<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// The API group of the resource (`""` for core).
    pub group: &'a str,
    /// The resource, such as `pods` or `deployments`.
    pub resource: &'a str,
    /// The subresource, if any.
    pub subresource: Option<&'a str>,
    /// The object.
    pub object: &'a Json,
    /// The object before an UPDATE.
    pub old_object: Option<&'a Json>,
}

/// Where each workload kind keeps its pod template, and whether a missing one is no template
/// (the Go field is a pointer) rather than an empty one.
const TEMPLATES: &[(&str, &str, &str, bool)] = &[
    ("", "replicationcontrollers", "/spec/template", true),
    ("", "podtemplates", "/template", false),
    ("apps", "replicasets", "/spec/template", false),
    ("apps", "deployments", "/spec/template", false),
    ("apps", "statefulsets", "/spec/template", false),
    ("apps", "daemonsets", "/spec/template", false),
    ("batch", "jobs", "/spec/template", false),
    (
        "batch",
        "cronjobs",
        "/spec/jobTemplate/spec/template",
        false,
    ),
];

/// Pod subresources the plugin never checks.
const IGNORED_POD_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// Whether an UPDATE of a pod is one the plugin checks: it changes the number of containers or
/// init containers or an image, or adds or changes an ephemeral container's image. Every other
/// field that Pod Security reads is immutable in a pod.
fn significant_pod_update(pod: &Pod, old: &Pod) -> bool {
    let spec = pod.spec.clone().unwrap_or_default();
    let old_spec = old.spec.clone().unwrap_or_default();
    let images = |containers: &[Container]| -> Vec<String> {
        containers
            .iter()
            .map(|c| c.image.clone().unwrap_or_default())
            .collect()
    };
    if images(&spec.containers) != images(&old_spec.containers)
        || images(spec.init_containers.as_deref().unwrap_or_default())
            != images(old_spec.init_containers.as_deref().unwrap_or_default())
    {
        return true;
    }
    let old_ephemeral = old_spec.ephemeral_containers.as_deref().unwrap_or_default();
    spec.ephemeral_containers.iter().flatten().any(|container| {
        old_ephemeral
            .iter()
            .find(|old| old.name == container.name)
            .is_none_or(|old| {
                old.image.as_deref().unwrap_or_default()
                    != container.image.as_deref().unwrap_or_default()
            })
    })
}

fn decode<T: serde::de::DeserializeOwned>(value: &Json, what: &str) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|error| {
        format!("the {what} does not decode as the API server reads it, which refuses it before admission: {error}")
    })
}

/// What Pod Security admission, on an API server of minor version `server_minor`, does with a
/// request in a namespace with `namespace_labels`; an error when the object does not decode.
pub fn admit(
    request: &PodSecurityRequest<'_>,
    namespace_labels: &BTreeMap<String, String>,
    server_minor: u32,
) -> Result<PodSecurityVerdict, String> {
    let not_judged = |why: &str| Ok(PodSecurityVerdict::NotJudged(why.to_string()));
    if !matches!(request.operation, "CREATE" | "UPDATE") {
        return not_judged("Pod Security admission judges only CREATE and UPDATE");
    }
    let (policy, errors) = NamespacePolicy::from_labels(namespace_labels);
    let is_pod = request.group.is_empty() && request.resource == "pods";
    if is_pod {
        if let Some(sub) = request.subresource
            && IGNORED_POD_SUBRESOURCES.contains(&sub)
        {
            return not_judged("Pod Security admission does not judge this subresource");
        }
        if errors.is_empty() && policy.fully_privileged() {
            return not_judged("the namespace enforces, audits and warns at `privileged`");
        }
        let pod: Pod = decode(request.object, "Pod")?;
        if request.operation == "UPDATE"
            && let Some(old) = request.old_object
        {
            let old: Pod = decode(old, "old Pod")?;
            if !significant_pod_update(&pod, &old) {
                return not_judged(
                    "Pod Security admission does not judge a pod UPDATE that changes no container image and adds no ephemeral container",
                );
            }
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let view = PodView::new(&pod.metadata, &spec);
        let enforced = violations(policy.enforce, server_minor, &view);
        let denial = (!enforced.is_empty()).then(|| {
            format!(
                "violates PodSecurity \"{}\": {}",
                policy.enforce,
                forbidden_detail(&enforced)
            )
        });
        let warning = if denial.is_some() {
            None
        } else {
            let warned = violations(policy.warn, server_minor, &view);
            (!warned.is_empty()).then(|| {
                format!(
                    "would violate PodSecurity \"{}\": {}",
                    policy.warn,
                    forbidden_detail(&warned)
                )
            })
        };
        return Ok(PodSecurityVerdict::Pod {
            enforce: policy.enforce,
            denial,
            warning,
        });
    }
    let Some((_, _, pointer, optional)) = TEMPLATES
        .iter()
        .find(|(group, resource, _, _)| *group == request.group && *resource == request.resource)
    else {
        return not_judged(
            "Pod Security admission judges only Pods and the workload kinds with a pod template",
        );
    };
    if request.subresource.is_some() {
        return not_judged("Pod Security admission does not judge a subresource of a workload");
    }
    if errors.is_empty()
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return not_judged("the namespace warns and audits at `privileged`");
    }
    let template: PodTemplateSpec = match request.object.pointer(pointer) {
        Some(template) if !template.is_null() => decode(template, "pod template")?,
        _ if *optional => return not_judged("the object has no pod template"),
        _ => PodTemplateSpec::default(),
    };
    let metadata = template.metadata.unwrap_or_default();
    let spec = template.spec.unwrap_or_default();
    let view = PodView::new(&metadata, &spec);
    let warned = violations(policy.warn, server_minor, &view);
    let warning = (!warned.is_empty()).then(|| {
        format!(
            "would violate PodSecurity \"{}\": {}",
            policy.warn,
            forbidden_detail(&warned)
        )
    });
    Ok(PodSecurityVerdict::Template {
        warn: policy.warn,
        warning,
    })
}

// ---------------------------------------------------------------------------------------------
// The checks, one function per version of a check.

fn app_armor_profile(pod: &PodView<'_>) -> Option<Violation> {
    let allowed = |kind: &str| kind == "RuntimeDefault" || kind == "Localhost";
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    if let Some(profile) = pod
        .pod_context()
        .and_then(|sc| sc.app_armor_profile.as_ref())
        && !allowed(&profile.type_)
    {
        setters.push("pod".to_string());
        bad_values.insert(profile.type_.clone());
    }
    let mut bad_containers = Vec::new();
    for container in &pod.containers {
        if let Some(profile) = container
            .security_context
            .and_then(|sc| sc.app_armor_profile.as_ref())
            && !allowed(&profile.type_)
        {
            bad_containers.push(container.name);
            bad_values.insert(profile.type_.clone());
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    let forbidden_annotations: Vec<String> = pod
        .annotations
        .iter()
        .filter(|(key, value)| {
            key.starts_with("container.apparmor.security.beta.kubernetes.io/")
                && !(value.is_empty()
                    || **value == "runtime/default"
                    || value.starts_with("localhost/"))
        })
        .map(|(key, value)| format!("{key}={}", go_quote(value)))
        .collect();
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !forbidden_annotations.is_empty() {
        setters.push(plural("annotation", "annotations", forbidden_annotations.len()).to_string());
        values.extend(forbidden_annotations);
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        plural(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

fn capabilities_baseline(pod: &PodView<'_>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut added = BTreeSet::new();
    for container in &pod.containers {
        let Some(capabilities) = container
            .security_context
            .and_then(|sc| sc.capabilities.as_ref())
        else {
            continue;
        };
        let mut valid = true;
        for capability in capabilities.add.iter().flatten() {
            if !BASELINE_CAPABILITIES.contains(&capability.as_str()) {
                valid = false;
                added.insert(capability.as_str());
            }
        }
        if !valid {
            bad_containers.push(container.name);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let added: Vec<&str> = added.into_iter().collect();
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&added)
        ),
    )
}

fn host_namespaces(pod: &PodView<'_>) -> Option<Violation> {
    let spec = pod.spec;
    let shared: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(flag, _)| *flag == Some(true))
    .map(|(_, text)| text)
    .collect();
    if shared.is_empty() {
        return None;
    }
    violation("host namespaces", shared.join(", "))
}

fn host_path_volumes(pod: &PodView<'_>) -> Option<Violation> {
    let volumes: Vec<&str> = pod
        .spec
        .volumes
        .iter()
        .flatten()
        .filter(|volume| volume.host_path.is_some())
        .map(|volume| volume.name.as_str())
        .collect();
    if volumes.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!(
            "{} {}",
            plural("volume", "volumes", volumes.len()),
            join_quote(&volumes)
        ),
    )
}

fn host_ports(pod: &PodView<'_>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    // Sorted as text, as the plugin's string set sorts them: "10" before "9".
    let mut ports = BTreeSet::new();
    for container in &pod.containers {
        let mut valid = true;
        for port in container.ports {
            if let Some(host_port) = port.host_port
                && host_port != 0
            {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(container.name);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            plural("uses", "use", bad_containers.len()),
            plural("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

fn host_probes_and_lifecycle(pod: &PodView<'_>) -> Option<Violation> {
    let mut bad_containers = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    let host_of = |http: Option<&str>, tcp: Option<&str>| -> Vec<String> {
        [http, tcp]
            .into_iter()
            .flatten()
            .filter(|host| !host.is_empty())
            .map(str::to_string)
            .collect()
    };
    let probe_hosts = |probe: &Probe| {
        host_of(
            probe.http_get.as_ref().and_then(|get| get.host.as_deref()),
            probe
                .tcp_socket
                .as_ref()
                .and_then(|tcp| tcp.host.as_deref()),
        )
    };
    let handler_hosts = |handler: &LifecycleHandler| {
        host_of(
            handler
                .http_get
                .as_ref()
                .and_then(|get| get.host.as_deref()),
            handler
                .tcp_socket
                .as_ref()
                .and_then(|tcp| tcp.host.as_deref()),
        )
    };
    for container in &pod.containers {
        let mut found: Vec<String> = container
            .probes
            .iter()
            .flatten()
            .flat_map(|probe| probe_hosts(probe))
            .collect();
        if let Some(lifecycle) = container.lifecycle {
            for handler in [&lifecycle.post_start, &lifecycle.pre_stop]
                .into_iter()
                .flatten()
            {
                found.extend(handler_hosts(handler));
            }
        }
        if !found.is_empty() {
            bad_containers.insert(container.name);
            hosts.extend(found);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let bad_containers: Vec<&str> = bad_containers.into_iter().collect();
    let hosts: Vec<String> = hosts.into_iter().collect();
    violation(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            plural("uses", "use", bad_containers.len()),
            plural(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    )
}

fn privileged(pod: &PodView<'_>) -> Option<Violation> {
    let bad: Vec<&str> = pod
        .containers
        .iter()
        .filter(|container| {
            container
                .security_context
                .and_then(|sc| sc.privileged)
                .unwrap_or(false)
        })
        .map(|container| container.name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

fn proc_mount(pod: &PodView<'_>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut kinds = BTreeSet::new();
    for container in &pod.containers {
        if let Some(kind) = container
            .security_context
            .and_then(|sc| sc.proc_mount.as_deref())
            && kind != "Default"
        {
            bad_containers.push(container.name);
            kinds.insert(kind);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let kinds: Vec<&str> = kinds.into_iter().collect();
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&kinds)
        ),
    )
}

fn proc_mount_1_35(pod: &PodView<'_>) -> Option<Violation> {
    if pod.user_namespace() {
        return None;
    }
    proc_mount(pod)
}

fn se_linux_options(pod: &PodView<'_>, allowed_types: &[&str]) -> Option<Violation> {
    let mut bad_types = BTreeSet::new();
    let (mut sets_user, mut sets_role) = (false, false);
    let mut valid = |options: &k8s_openapi::api::core::v1::SELinuxOptions| {
        let mut ok = true;
        let kind = options.type_.as_deref().unwrap_or("");
        if !allowed_types.contains(&kind) {
            ok = false;
            bad_types.insert(kind.to_string());
        }
        if options.user.as_deref().is_some_and(|user| !user.is_empty()) {
            ok = false;
            sets_user = true;
        }
        if options.role.as_deref().is_some_and(|role| !role.is_empty()) {
            ok = false;
            sets_role = true;
        }
        ok
    };
    let mut setters = Vec::new();
    if let Some(options) = pod
        .pod_context()
        .and_then(|sc| sc.se_linux_options.as_ref())
        && !valid(options)
    {
        setters.push("pod".to_string());
    }
    let mut bad_containers = Vec::new();
    for container in &pod.containers {
        if let Some(options) = container
            .security_context
            .and_then(|sc| sc.se_linux_options.as_ref())
            && !valid(options)
        {
            bad_containers.push(container.name);
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            plural("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if sets_user {
        data.push("user may not be set".to_string());
    }
    if sets_role {
        data.push("role may not be set".to_string());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    )
}

fn se_linux_options_1_0(pod: &PodView<'_>) -> Option<Violation> {
    se_linux_options(
        pod,
        &["", "container_t", "container_init_t", "container_kvm_t"],
    )
}

fn se_linux_options_1_31(pod: &PodView<'_>) -> Option<Violation> {
    se_linux_options(
        pod,
        &[
            "",
            "container_t",
            "container_init_t",
            "container_kvm_t",
            "container_engine_t",
        ],
    )
}

/// Before Kubernetes 1.19, seccomp profiles were annotations.
fn seccomp_annotations(pod: &PodView<'_>) -> Option<Violation> {
    let valid = |value: &str| {
        value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
    };
    let mut forbidden = BTreeSet::new();
    let pod_key = "seccomp.security.alpha.kubernetes.io/pod".to_string();
    let keys = std::iter::once(pod_key).chain(
        pod.containers
            .iter()
            .map(|c| format!("container.seccomp.security.alpha.kubernetes.io/{}", c.name)),
    );
    for key in keys {
        if let Some(value) = pod.annotations.get(key.as_str())
            && !valid(value)
        {
            forbidden.insert(format!("{key}={}", go_quote(value)));
        }
    }
    if forbidden.is_empty() {
        return None;
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    violation(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            plural("annotation", "annotations", forbidden.len()),
            forbidden.join(", ")
        ),
    )
}

fn valid_seccomp(kind: &str) -> bool {
    kind == "Localhost" || kind == "RuntimeDefault"
}

/// The seccomp profile checks of both levels: explicitly bad settings, and for `restricted`
/// (`required`) the containers that set none where the pod sets none either.
fn seccomp_profile(pod: &PodView<'_>, required: bool) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    let mut pod_sets_it = false;
    if let Some(profile) = pod.pod_context().and_then(|sc| sc.seccomp_profile.as_ref()) {
        if valid_seccomp(&profile.type_) {
            pod_sets_it = true;
        } else {
            setters.push("pod".to_string());
            bad_values.insert(profile.type_.clone());
        }
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in &pod.containers {
        match container
            .security_context
            .and_then(|sc| sc.seccomp_profile.as_ref())
        {
            Some(profile) => {
                if !valid_seccomp(&profile.type_) {
                    explicitly_bad.push(container.name);
                    bad_values.insert(profile.type_.clone());
                }
            }
            None => {
                if !pod_sets_it {
                    implicitly_bad.push(container.name);
                }
            }
        }
    }
    if !explicitly_bad.is_empty() {
        setters.push(containers_phrase(&explicitly_bad));
    }
    if !setters.is_empty() {
        let values: Vec<String> = bad_values.into_iter().collect();
        return violation(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters.join(" and "),
                join_quote(&values)
            ),
        );
    }
    if required && !implicitly_bad.is_empty() {
        return violation(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&implicitly_bad)
            ),
        );
    }
    None
}

fn seccomp_profile_baseline(pod: &PodView<'_>) -> Option<Violation> {
    seccomp_profile(pod, false)
}

fn seccomp_profile_restricted(pod: &PodView<'_>) -> Option<Violation> {
    seccomp_profile(pod, true)
}

fn seccomp_profile_restricted_1_25(pod: &PodView<'_>) -> Option<Violation> {
    if pod.windows() {
        return None;
    }
    seccomp_profile(pod, true)
}

/// The sysctls `baseline` allows from 1.0 on; later versions add to them.
const SAFE_SYSCTLS_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const SAFE_SYSCTLS_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
const SAFE_SYSCTLS_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const SAFE_SYSCTLS_1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

fn sysctls(pod: &PodView<'_>, allowed: &[&[&str]]) -> Option<Violation> {
    let forbidden: Vec<&str> = pod
        .pod_context()
        .and_then(|sc| sc.sysctls.as_ref())
        .into_iter()
        .flatten()
        .map(|sysctl| sysctl.name.as_str())
        .filter(|name| !allowed.iter().any(|set| set.contains(name)))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn sysctls_1_0(pod: &PodView<'_>) -> Option<Violation> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0])
}

fn sysctls_1_27(pod: &PodView<'_>) -> Option<Violation> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27])
}

fn sysctls_1_29(pod: &PodView<'_>) -> Option<Violation> {
    sysctls(
        pod,
        &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27, SAFE_SYSCTLS_1_29],
    )
}

fn sysctls_1_32(pod: &PodView<'_>) -> Option<Violation> {
    sysctls(
        pod,
        &[
            SAFE_SYSCTLS_1_0,
            SAFE_SYSCTLS_1_27,
            SAFE_SYSCTLS_1_29,
            SAFE_SYSCTLS_1_32,
        ],
    )
}

fn windows_host_process(pod: &PodView<'_>) -> Option<Violation> {
    let host_process = |options: Option<
        &k8s_openapi::api::core::v1::WindowsSecurityContextOptions,
    >| { options.and_then(|options| options.host_process) == Some(true) };
    let bad_containers: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| {
            host_process(
                c.security_context
                    .and_then(|sc| sc.windows_options.as_ref()),
            )
        })
        .map(|c| c.name)
        .collect();
    let mut setters = Vec::new();
    if host_process(pod.pod_context().and_then(|sc| sc.windows_options.as_ref())) {
        setters.push("pod".to_string());
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

fn allow_privilege_escalation(pod: &PodView<'_>) -> Option<Violation> {
    let bad: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| {
            c.security_context
                .and_then(|sc| sc.allow_privilege_escalation)
                != Some(false)
        })
        .map(|c| c.name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

fn allow_privilege_escalation_1_25(pod: &PodView<'_>) -> Option<Violation> {
    if pod.windows() {
        return None;
    }
    allow_privilege_escalation(pod)
}

fn capabilities_restricted(pod: &PodView<'_>) -> Option<Violation> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for container in &pod.containers {
        let Some(capabilities) = container
            .security_context
            .and_then(|sc| sc.capabilities.as_ref())
        else {
            missing_drop_all.push(container.name);
            continue;
        };
        if !capabilities.drop.iter().flatten().any(|cap| cap == "ALL") {
            missing_drop_all.push(container.name);
        }
        let mut adds_forbidden = false;
        for capability in capabilities.add.iter().flatten() {
            if capability != "NET_BIND_SERVICE" {
                adds_forbidden = true;
                forbidden.insert(capability.as_str());
            }
        }
        if adds_forbidden {
            adding_forbidden.push(container.name);
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        let forbidden: Vec<&str> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

fn capabilities_restricted_1_25(pod: &PodView<'_>) -> Option<Violation> {
    if pod.windows() {
        return None;
    }
    capabilities_restricted(pod)
}

fn restricted_volumes(pod: &PodView<'_>) -> Option<Violation> {
    let mut bad_volumes = Vec::new();
    let mut bad_types = BTreeSet::new();
    for volume in pod.spec.volumes.iter().flatten() {
        let allowed = volume.config_map.is_some()
            || volume.csi.is_some()
            || volume.downward_api.is_some()
            || volume.empty_dir.is_some()
            || volume.ephemeral.is_some()
            || volume.image.is_some()
            || volume.persistent_volume_claim.is_some()
            || volume.projected.is_some()
            || volume.secret.is_some();
        if allowed {
            continue;
        }
        bad_volumes.push(volume.name.as_str());
        // The first source set, in the plugin's order.
        let kind = [
            (volume.host_path.is_some(), "hostPath"),
            (volume.gce_persistent_disk.is_some(), "gcePersistentDisk"),
            (
                volume.aws_elastic_block_store.is_some(),
                "awsElasticBlockStore",
            ),
            (volume.git_repo.is_some(), "gitRepo"),
            (volume.nfs.is_some(), "nfs"),
            (volume.iscsi.is_some(), "iscsi"),
            (volume.glusterfs.is_some(), "glusterfs"),
            (volume.rbd.is_some(), "rbd"),
            (volume.flex_volume.is_some(), "flexVolume"),
            (volume.cinder.is_some(), "cinder"),
            (volume.cephfs.is_some(), "cephfs"),
            (volume.flocker.is_some(), "flocker"),
            (volume.fc.is_some(), "fc"),
            (volume.azure_file.is_some(), "azureFile"),
            (volume.vsphere_volume.is_some(), "vsphereVolume"),
            (volume.quobyte.is_some(), "quobyte"),
            (volume.azure_disk.is_some(), "azureDisk"),
            (
                volume.photon_persistent_disk.is_some(),
                "photonPersistentDisk",
            ),
            (volume.portworx_volume.is_some(), "portworxVolume"),
            (volume.scale_io.is_some(), "scaleIO"),
            (volume.storageos.is_some(), "storageos"),
        ]
        .into_iter()
        .find(|(set, _)| *set)
        .map_or("unknown", |(_, kind)| kind);
        bad_types.insert(kind);
    }
    if bad_volumes.is_empty() {
        return None;
    }
    let bad_types: Vec<&str> = bad_types.into_iter().collect();
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            plural("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            plural("uses", "use", bad_volumes.len()),
            plural(
                "restricted volume type",
                "restricted volume types",
                bad_types.len()
            ),
            join_quote(&bad_types)
        ),
    )
}

fn run_as_non_root(pod: &PodView<'_>) -> Option<Violation> {
    let mut setters = Vec::new();
    let mut pod_non_root = false;
    match pod.pod_context().and_then(|sc| sc.run_as_non_root) {
        Some(false) => setters.push("pod".to_string()),
        Some(true) => pod_non_root = true,
        None => {}
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in &pod.containers {
        match container.security_context.and_then(|sc| sc.run_as_non_root) {
            Some(false) => explicitly_bad.push(container.name),
            Some(true) => {}
            None => {
                if !pod_non_root {
                    implicitly_bad.push(container.name);
                }
            }
        }
    }
    if !explicitly_bad.is_empty() {
        setters.push(containers_phrase(&explicitly_bad));
    }
    if !setters.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if !implicitly_bad.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicitly_bad)
            ),
        );
    }
    None
}

fn run_as_non_root_1_35(pod: &PodView<'_>) -> Option<Violation> {
    if pod.user_namespace() {
        return None;
    }
    run_as_non_root(pod)
}

fn run_as_user(pod: &PodView<'_>) -> Option<Violation> {
    let mut setters = Vec::new();
    if pod.pod_context().and_then(|sc| sc.run_as_user) == Some(0) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = pod
        .containers
        .iter()
        .filter(|c| c.security_context.and_then(|sc| sc.run_as_user) == Some(0))
        .map(|c| c.name)
        .collect();
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}

fn run_as_user_1_35(pod: &PodView<'_>) -> Option<Violation> {
    if pod.user_namespace() {
        return None;
    }
    run_as_user(pod)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use serde_json::json;

    use super::*;

    /// A pod that `restricted` admits at every version: non-root, `RuntimeDefault` seccomp,
    /// no privilege escalation, every capability dropped, a Secret volume.
    fn restricted_pod() -> Json {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "demo", "namespace": "team"},
            "spec": {
                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "main",
                    "image": "registry.example/main@sha256:00",
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }],
                "volumes": [{"name": "token", "secret": {"secretName": "team-token"}}],
            },
        })
    }

    /// `restricted_pod` changed by `change`.
    fn changed(change: impl FnOnce(&mut Json)) -> Json {
        let mut pod = restricted_pod();
        change(&mut pod);
        pod
    }

    /// The API server's detail for `pod` at `level:v1.<minor>` on a 1.36 API server; empty
    /// when admitted.
    fn detail(level: Level, minor: u32, pod: &Json) -> String {
        let pod: Pod = serde_json::from_value(pod.clone()).unwrap();
        let spec = pod.spec.clone().unwrap();
        let view = PodView::new(&pod.metadata, &spec);
        let level_version = LevelVersion {
            level,
            version: Version::Minor(minor),
        };
        forbidden_detail(&violations(level_version, 36, &view))
    }

    fn baseline(minor: u32, pod: &Json) -> String {
        detail(Level::Baseline, minor, pod)
    }

    fn restricted(minor: u32, pod: &Json) -> String {
        detail(Level::Restricted, minor, pod)
    }

    fn container(pod: &mut Json) -> &mut Json {
        &mut pod["spec"]["containers"][0]
    }

    #[test]
    fn the_restricted_pod_passes_every_level_at_every_version() {
        for minor in [0, 18, 19, 22, 25, 30, 33, 34, 35, 36, 40] {
            assert_eq!(baseline(minor, &restricted_pod()), "", "v1.{minor}");
            assert_eq!(restricted(minor, &restricted_pod()), "", "v1.{minor}");
        }
    }

    #[test]
    fn checks_are_in_the_registrys_order_baseline_first_then_by_id_bytes() {
        let keys: Vec<(Level, &[u8])> = CHECKS
            .iter()
            .map(|check| (check.level, check.id.as_bytes()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(
            CHECKS.len(),
            19,
            "k8s.io/pod-security-admission v0.36.3 has 19 checks"
        );
        assert_eq!(newest_check_minor(), 35);
    }

    #[test]
    fn every_kubernetes_minor_tenantc_accepts_has_known_checks() {
        // A newer minor may add checks; accepting one means reading its pod-security-admission
        // release and adding them here.
        assert!(*crate::schema::KUBERNETES_MINORS.end() <= 36);
    }

    #[test]
    fn a_pod_without_security_context_violates_four_restricted_checks() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bare"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        });
        assert_eq!(baseline(33, &pod), "");
        assert_eq!(
            restricted(33, &pod),
            "allowPrivilegeEscalation != false (container \"main\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"main\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"main\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn host_namespaces_are_denied_at_baseline() {
        let pod = changed(|pod| {
            pod["spec"]["hostNetwork"] = json!(true);
            pod["spec"]["hostIPC"] = json!(true);
        });
        assert_eq!(
            baseline(30, &pod),
            "host namespaces (hostNetwork=true, hostIPC=true)"
        );
        let pod = changed(|pod| pod["spec"]["hostPID"] = json!(false));
        assert_eq!(baseline(30, &pod), "");
    }

    #[test]
    fn privileged_containers_are_denied_at_baseline() {
        let pod = changed(|pod| {
            container(pod)["securityContext"]["privileged"] = json!(true);
            pod["spec"]["initContainers"] =
                json!([{"name": "setup", "securityContext": {"privileged": true}}]);
        });
        assert_eq!(
            baseline(30, &pod),
            "privileged (containers \"setup\", \"main\" must not set securityContext.privileged=true)"
        );
        let pod = changed(|pod| container(pod)["securityContext"]["privileged"] = json!(false));
        assert_eq!(baseline(30, &pod), "");
    }

    #[test]
    fn host_path_volumes_are_denied_at_baseline_and_replaced_by_volume_types_at_restricted() {
        let pod = changed(|pod| {
            pod["spec"]["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]);
        });
        assert_eq!(baseline(30, &pod), "hostPath volumes (volume \"root\")");
        assert_eq!(
            restricted(30, &pod),
            "restricted volume types (volume \"root\" uses restricted volume type \"hostPath\")"
        );
    }

    #[test]
    fn restricted_allows_only_the_listed_volume_sources() {
        let pod = changed(|pod| {
            pod["spec"]["volumes"] = json!([
                {"name": "scratch", "emptyDir": {}},
                {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "share", "nfs": {"server": "nfs", "path": "/x"}},
                {"name": "repo", "gitRepo": {"repository": "https://x"}},
                {"name": "other"},
            ]);
        });
        assert_eq!(baseline(30, &pod), "");
        assert_eq!(
            restricted(30, &pod),
            "restricted volume types (volumes \"share\", \"repo\", \"other\" use restricted volume types \"gitRepo\", \"nfs\", \"unknown\")"
        );
    }

    #[test]
    fn host_ports_are_denied_and_listed_in_text_order() {
        let pod = changed(|pod| {
            container(pod)["ports"] = json!([{"containerPort": 80, "hostPort": 9}, {"containerPort": 81, "hostPort": 10}, {"containerPort": 82}]);
        });
        assert_eq!(
            baseline(30, &pod),
            "hostPort (container \"main\" uses hostPorts 10, 9)"
        );
        let pod =
            changed(|pod| container(pod)["ports"] = json!([{"containerPort": 80, "hostPort": 0}]));
        assert_eq!(baseline(30, &pod), "");
    }

    #[test]
    fn baseline_allows_only_the_default_capabilities_and_restricted_only_net_bind_service() {
        let pod = changed(|pod| {
            container(pod)["securityContext"]["capabilities"]["add"] =
                json!(["SYS_ADMIN", "CHOWN", "NET_RAW"]);
        });
        assert_eq!(
            baseline(30, &pod),
            "non-default capabilities (container \"main\" must not include \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"
        );
        assert_eq!(
            restricted(30, &pod),
            "unrestricted capabilities (container \"main\" must not include \"CHOWN\", \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"
        );
        let pod = changed(|pod| {
            container(pod)["securityContext"]["capabilities"]["add"] = json!(["NET_BIND_SERVICE"]);
        });
        assert_eq!(restricted(30, &pod), "");
        // Before 1.22, restricted used baseline's capability check and required no drop.
        let pod = changed(|pod| {
            container(pod)["securityContext"]["capabilities"] = json!({"add": ["CHOWN"]});
        });
        assert_eq!(restricted(21, &pod), "");
        assert_eq!(
            restricted(22, &pod),
            "unrestricted capabilities (container \"main\" must set securityContext.capabilities.drop=[\"ALL\"]; container \"main\" must not include \"CHOWN\" in securityContext.capabilities.add)"
        );
    }

    #[test]
    fn app_armor_may_not_be_unconfined() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["appArmorProfile"] = json!({"type": "Unconfined"});
            pod["metadata"]["annotations"] = json!({
                "container.apparmor.security.beta.kubernetes.io/main": "unconfined",
                "container.apparmor.security.beta.kubernetes.io/side": "localhost/mine",
            });
        });
        assert_eq!(
            baseline(30, &pod),
            "forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to \"Unconfined\", \"container.apparmor.security.beta.kubernetes.io/main=\"unconfined\"\")"
        );
        let pod = changed(|pod| {
            container(pod)["securityContext"]["appArmorProfile"] =
                json!({"type": "RuntimeDefault"});
        });
        assert_eq!(baseline(30, &pod), "");
    }

    #[test]
    fn probe_and_lifecycle_hosts_are_denied_from_1_34_on() {
        let pod = changed(|pod| {
            container(pod)["readinessProbe"] = json!({"httpGet": {"host": "10.0.0.1", "port": 80}});
            container(pod)["lifecycle"] =
                json!({"preStop": {"tcpSocket": {"host": "169.254.169.254", "port": 80}}});
        });
        assert_eq!(baseline(33, &pod), "");
        assert_eq!(
            baseline(34, &pod),
            "probe or lifecycle host (container \"main\" uses probe or lifecycle hosts \"10.0.0.1\", \"169.254.169.254\")"
        );
        let pod = changed(|pod| {
            container(pod)["readinessProbe"] = json!({"httpGet": {"host": "", "port": 80}});
        });
        assert_eq!(baseline(36, &pod), "");
    }

    #[test]
    fn proc_mount_is_relaxed_for_user_namespaces_at_baseline_only_from_1_35() {
        let pod = changed(|pod| {
            container(pod)["securityContext"]["procMount"] = json!("Unmasked");
            pod["spec"]["hostUsers"] = json!(false);
        });
        assert_eq!(
            baseline(34, &pod),
            "procMount (container \"main\" must not set securityContext.procMount to \"Unmasked\")"
        );
        assert_eq!(baseline(35, &pod), "");
        assert_eq!(
            restricted(35, &pod),
            "procMount (container \"main\" must not set securityContext.procMount to \"Unmasked\")"
        );
        let pod = changed(|pod| container(pod)["securityContext"]["procMount"] = json!("Default"));
        assert_eq!(restricted(36, &pod), "");
    }

    #[test]
    fn se_linux_options_allow_container_types_and_container_engine_t_from_1_31() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["seLinuxOptions"] =
                json!({"type": "spc_t", "user": "root"});
            container(pod)["securityContext"]["seLinuxOptions"] = json!({"role": "sysadm_r"});
        });
        assert_eq!(
            baseline(30, &pod),
            "seLinuxOptions (pod and container \"main\" set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set; role may not be set)"
        );
        let engine = changed(|pod| {
            container(pod)["securityContext"]["seLinuxOptions"] =
                json!({"type": "container_engine_t", "level": "s0:c1"});
        });
        assert_eq!(
            baseline(30, &engine),
            "seLinuxOptions (container \"main\" set forbidden securityContext.seLinuxOptions: type \"container_engine_t\")"
        );
        assert_eq!(baseline(31, &engine), "");
    }

    #[test]
    fn seccomp_was_annotations_before_1_19_and_fields_after() {
        let annotated = changed(|pod| {
            pod["metadata"]["annotations"] =
                json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"});
        });
        assert_eq!(
            baseline(18, &annotated),
            "seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"
        );
        assert_eq!(baseline(19, &annotated), "");
        let unconfined = changed(|pod| {
            container(pod)["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
        });
        assert_eq!(
            baseline(19, &unconfined),
            "seccompProfile (container \"main\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        assert_eq!(
            restricted(30, &unconfined),
            "seccompProfile (container \"main\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        let unset = changed(|pod| {
            pod["spec"]["securityContext"]
                .as_object_mut()
                .unwrap()
                .remove("seccompProfile");
        });
        assert_eq!(baseline(30, &unset), "");
        assert_eq!(
            restricted(30, &unset),
            "seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn only_safe_sysctls_are_allowed_and_the_list_grows_by_version() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["sysctls"] = json!([
                {"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"},
                {"name": "kernel.msgmax", "value": "65536"},
                {"name": "net.ipv4.ip_local_reserved_ports", "value": "8080"},
            ]);
        });
        assert_eq!(
            baseline(26, &pod),
            "forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax, net.ipv4.ip_local_reserved_ports)"
        );
        assert_eq!(
            baseline(31, &pod),
            "forbidden sysctls (net.ipv4.tcp_rmem, kernel.msgmax)"
        );
        assert_eq!(baseline(32, &pod), "forbidden sysctls (kernel.msgmax)");
    }

    #[test]
    fn windows_host_processes_are_denied() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["windowsOptions"] = json!({"hostProcess": true});
        });
        assert_eq!(
            baseline(30, &pod),
            "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)"
        );
        let pod = changed(|pod| {
            container(pod)["securityContext"]["windowsOptions"] = json!({"hostProcess": false});
        });
        assert_eq!(baseline(30, &pod), "");
    }

    #[test]
    fn privilege_escalation_must_be_off_except_for_windows_pods_from_1_25() {
        let pod = changed(|pod| {
            container(pod)["securityContext"]
                .as_object_mut()
                .unwrap()
                .remove("allowPrivilegeEscalation");
        });
        assert_eq!(
            restricted(30, &pod),
            "allowPrivilegeEscalation != false (container \"main\" must set securityContext.allowPrivilegeEscalation=false)"
        );
        assert_eq!(restricted(7, &pod), "", "the check starts at 1.8");
        let windows = changed(|pod| {
            pod["spec"]["os"] = json!({"name": "windows"});
            container(pod)["securityContext"] = json!({});
            pod["spec"]["securityContext"] = json!({"runAsNonRoot": true});
        });
        assert_eq!(restricted(25, &windows), "");
        assert_eq!(
            restricted(24, &windows),
            "allowPrivilegeEscalation != false (container \"main\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"main\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn containers_must_run_as_non_root_unless_in_a_user_namespace_from_1_35() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["runAsNonRoot"] = json!(false);
            container(pod)["securityContext"]["runAsNonRoot"] = json!(false);
        });
        assert_eq!(
            restricted(30, &pod),
            "runAsNonRoot != true (pod and container \"main\" must not set securityContext.runAsNonRoot=false)"
        );
        let user_namespace = changed(|pod| {
            pod["spec"]["securityContext"]
                .as_object_mut()
                .unwrap()
                .remove("runAsNonRoot");
            pod["spec"]["hostUsers"] = json!(false);
        });
        assert_eq!(
            restricted(34, &user_namespace),
            "runAsNonRoot != true (pod or container \"main\" must set securityContext.runAsNonRoot=true)"
        );
        assert_eq!(restricted(35, &user_namespace), "");
        let container_only = changed(|pod| {
            pod["spec"]["securityContext"]
                .as_object_mut()
                .unwrap()
                .remove("runAsNonRoot");
            container(pod)["securityContext"]["runAsNonRoot"] = json!(true);
        });
        assert_eq!(restricted(30, &container_only), "");
    }

    #[test]
    fn user_0_is_denied_from_1_23_on() {
        let pod = changed(|pod| {
            pod["spec"]["securityContext"]["runAsUser"] = json!(0);
            container(pod)["securityContext"]["runAsUser"] = json!(1000);
        });
        assert_eq!(restricted(22, &pod), "");
        assert_eq!(
            restricted(23, &pod),
            "runAsUser=0 (pod must not set runAsUser=0)"
        );
        let user_namespace = changed(|pod| {
            container(pod)["securityContext"]["runAsUser"] = json!(0);
            pod["spec"]["hostUsers"] = json!(false);
        });
        assert_eq!(
            restricted(34, &user_namespace),
            "runAsUser=0 (container \"main\" must not set runAsUser=0)"
        );
        assert_eq!(restricted(35, &user_namespace), "");
    }

    #[test]
    fn ephemeral_and_init_containers_are_checked_in_order() {
        let pod = changed(|pod| {
            pod["spec"]["initContainers"] = json!([{"name": "init", "image": "x"}]);
            pod["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "x"}]);
        });
        assert_eq!(
            restricted(36, &pod),
            "allowPrivilegeEscalation != false (containers \"init\", \"debug\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (containers \"init\", \"debug\" must set securityContext.capabilities.drop=[\"ALL\"])"
        );
    }

    #[test]
    fn versions_beyond_the_newest_check_and_latest_use_the_newest_checks_capped_at_the_server() {
        assert_eq!(effective_minor(Version::Minor(40), 36), 35);
        assert_eq!(effective_minor(Version::Latest, 36), 35);
        assert_eq!(effective_minor(Version::Latest, 33), 33);
        assert_eq!(effective_minor(Version::Minor(34), 33), 33);
        assert_eq!(effective_minor(Version::Minor(30), 36), 30);
    }

    #[test]
    fn labels_give_the_policy_as_the_plugin_reads_them() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(key, value)| (format!("{LABEL_PREFIX}{key}"), value.to_string()))
                .collect()
        };
        let (policy, errors) = NamespacePolicy::from_labels(&labels(&[
            ("enforce", "baseline"),
            ("enforce-version", "v1.33"),
        ]));
        assert!(errors.is_empty());
        assert_eq!(policy.enforce.to_string(), "baseline:v1.33");
        assert_eq!(
            policy.warn.to_string(),
            "baseline:v1.33",
            "warn follows a stricter enforce"
        );
        assert_eq!(policy.audit.to_string(), "privileged:latest");
        let (policy, errors) = NamespacePolicy::from_labels(&labels(&[
            ("enforce", "strict"),
            ("warn", "bogus"),
            ("audit-version", "1.30"),
        ]));
        assert_eq!(errors.len(), 3);
        assert_eq!(
            policy.enforce.level,
            Level::Restricted,
            "fails closed on enforce"
        );
        assert_eq!(policy.warn.level, Level::Privileged, "fails open on warn");
        assert_eq!(policy.audit.version, Version::Latest);
        for (text, version) in [
            ("v1.0", Some(Version::Minor(0))),
            ("v1.33", Some(Version::Minor(33))),
            ("latest", Some(Version::Latest)),
            ("v1.033", None),
            ("v2.1", None),
            ("v1.", None),
            ("v1.3x", None),
        ] {
            assert_eq!(Version::parse(text), version, "{text}");
        }
    }

    fn tenant_labels(enforce: &str) -> BTreeMap<String, String> {
        [
            ("enforce", enforce),
            ("enforce-version", "v1.33"),
            ("audit", "restricted"),
            ("audit-version", "v1.33"),
            ("warn", "restricted"),
            ("warn-version", "v1.33"),
        ]
        .iter()
        .map(|(key, value)| (format!("{LABEL_PREFIX}{key}"), value.to_string()))
        .collect()
    }

    fn admit_as(
        operation: &str,
        object: &Json,
        old: Option<&Json>,
        labels: &BTreeMap<String, String>,
    ) -> PodSecurityVerdict {
        let (group, resource) = match object["kind"].as_str().unwrap() {
            "Pod" => ("", "pods"),
            "Job" => ("batch", "jobs"),
            "CronJob" => ("batch", "cronjobs"),
            "Deployment" => ("apps", "deployments"),
            other => panic!("{other}"),
        };
        admit(
            &PodSecurityRequest {
                operation,
                group,
                resource,
                subresource: None,
                object,
                old_object: old,
            },
            labels,
            33,
        )
        .unwrap()
    }

    #[test]
    fn a_pod_on_the_host_network_is_denied_in_a_restricted_namespace() {
        let pod = changed(|pod| pod["spec"]["hostNetwork"] = json!(true));
        let PodSecurityVerdict::Pod {
            denial, warning, ..
        } = admit_as("CREATE", &pod, None, &tenant_labels("restricted"))
        else {
            panic!("a pod is judged");
        };
        assert_eq!(
            denial.as_deref(),
            Some("violates PodSecurity \"restricted:v1.33\": host namespaces (hostNetwork=true)")
        );
        assert_eq!(warning, None, "no warning comes with a denial");
    }

    #[test]
    fn an_excepted_namespace_admits_and_warns() {
        let pod = changed(|pod| {
            container(pod)["securityContext"]["capabilities"]["add"] = json!(["IPC_LOCK"]);
        });
        let verdict = admit_as("CREATE", &pod, None, &tenant_labels("privileged"));
        assert_eq!(
            verdict,
            PodSecurityVerdict::Pod {
                enforce: LevelVersion {
                    level: Level::Privileged,
                    version: Version::Minor(33)
                },
                denial: None,
                warning: Some(
                    "would violate PodSecurity \"restricted:v1.33\": unrestricted capabilities (container \"main\" must not include \"IPC_LOCK\" in securityContext.capabilities.add)"
                        .to_string()
                ),
            }
        );
    }

    #[test]
    fn a_workload_template_is_only_warned_about() {
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "team"},
            "spec": {"template": {"spec": {"hostPID": true, "containers": restricted_pod()["spec"]["containers"].clone(), "securityContext": restricted_pod()["spec"]["securityContext"].clone()}}},
        });
        assert_eq!(
            admit_as("CREATE", &job, None, &tenant_labels("restricted")),
            PodSecurityVerdict::Template {
                warn: LevelVersion {
                    level: Level::Restricted,
                    version: Version::Minor(33)
                },
                warning: Some(
                    "would violate PodSecurity \"restricted:v1.33\": host namespaces (hostPID=true)"
                        .to_string()
                ),
            }
        );
        let mut cron = json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": job["spec"]["template"].clone()}}},
        });
        assert!(matches!(
            admit_as("UPDATE", &cron, Some(&cron), &tenant_labels("restricted")),
            PodSecurityVerdict::Template {
                warning: Some(_),
                ..
            }
        ));
        cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("hostPID");
        assert!(matches!(
            admit_as("CREATE", &cron, None, &tenant_labels("restricted")),
            PodSecurityVerdict::Template { warning: None, .. }
        ));
    }

    #[test]
    fn a_pod_update_is_judged_only_when_it_changes_an_image_or_adds_an_ephemeral_container() {
        let bare = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bare"},
            "spec": {"containers": [{"name": "main", "image": "busybox:1"}]},
        });
        let mut relabelled = bare.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(matches!(
            admit_as(
                "UPDATE",
                &relabelled,
                Some(&bare),
                &tenant_labels("restricted")
            ),
            PodSecurityVerdict::NotJudged(_)
        ));
        let mut new_image = bare.clone();
        new_image["spec"]["containers"][0]["image"] = json!("busybox:2");
        assert!(matches!(
            admit_as(
                "UPDATE",
                &new_image,
                Some(&bare),
                &tenant_labels("restricted")
            ),
            PodSecurityVerdict::Pod {
                denial: Some(_),
                ..
            }
        ));
        let mut debugged = bare.clone();
        debugged["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox:1"}]);
        assert!(matches!(
            admit_as(
                "UPDATE",
                &debugged,
                Some(&bare),
                &tenant_labels("restricted")
            ),
            PodSecurityVerdict::Pod {
                denial: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn deletes_and_privileged_namespaces_are_not_judged() {
        let pod = changed(|pod| pod["spec"]["hostNetwork"] = json!(true));
        assert!(matches!(
            admit_as("DELETE", &pod, None, &tenant_labels("restricted")),
            PodSecurityVerdict::NotJudged(_)
        ));
        assert!(matches!(
            admit_as("CREATE", &pod, None, &BTreeMap::new()),
            PodSecurityVerdict::NotJudged(_)
        ));
    }

    #[test]
    fn an_object_the_api_server_cannot_decode_is_an_error() {
        let pod = changed(|pod| pod["spec"]["hostNetwork"] = json!("yes"));
        let result = admit(
            &PodSecurityRequest {
                operation: "CREATE",
                group: "",
                resource: "pods",
                subresource: None,
                object: &pod,
                old_object: None,
            },
            &tenant_labels("restricted"),
            33,
        );
        assert!(result.is_err(), "{result:?}");
    }

    #[test]
    fn go_quote_escapes_like_go() {
        assert_eq!(go_quote("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\x01\"");
    }
}
