//! The tenant RBAC against the isolation floor (issue 8 item 3), evaluated offline from the
//! emitted objects and judged by the API server's authorizer (issue 11).
//!
//! Consumes: the emitted objects of the fixture fleet and of a generated fleet (ClusterRoles,
//! RoleBindings, ServiceAccounts and the tenant labels of Namespaces), `docs/tenant-access.md`,
//! and the control plane of the runner in `tests/conformance.rs`, which answers
//! SubjectAccessReviews and impersonated requests.
//! Produces: the RBAC checks of the runner's `CHECKS`: the offline access table (compared with
//! `docs/tenant-access.md`, which `UPDATE_GOLDEN=1` rewrites), the same table asked of the API
//! server and printed, the escalation, aggregation and cross-tenant Secret checks, the
//! ServiceAccount check, and a self-test that tampers with the cluster so that each check fails.
//!
//! Invariants:
//! - What a check expects comes from the emitted objects, never from the cluster: the offline
//!   evaluator reads the rules of the ClusterRoles tenantc emits and the RoleBindings that bind
//!   them, and refuses what it cannot evaluate (a binding to a role tenantc does not emit, such
//!   as the built-in `edit`, an `aggregationRule`, a `*`, `resourceNames` or `nonResourceURLs`).
//! - The table the API server answers must equal the offline table exactly, cell for cell, so
//!   a permission that appears on the cluster (aggregation, a stray binding) or disappears (a
//!   binding that grants nothing) fails the check.
//! - Every tampering of the self-test is undone by a guard, also when the check fails, and
//!   the checks pass again afterwards.

use super::*;

use std::time::Duration;

/// Verbs that read an object.
const READ_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs that change an object.
const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
/// The verbs asked about an ordinary resource.
const STANDARD_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// The label of every object tenantc emits.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=tenantc";
/// The tenant roles tenantc emits (`compiler/src/lower/rbac.rs`), by the kind of group bound.
const TENANT_ROLES: &[(&str, &str)] = &[
    ("admin", "tenantc:tenant-admin"),
    ("member", "tenantc:tenant-member"),
    ("viewer", "tenantc:tenant-viewer"),
];
/// The golden copy of the access table.
const TABLE_DOC: &str = "docs/tenant-access.md";

/// How a row of the access table is addressed in an access review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// Objects in the tenant's own namespaces.
    Namespaced,
    /// The tenant's own Namespace objects (the namespace is the object's name).
    NamespaceItself,
    /// Cluster-scoped objects, and creating namespaces.
    Cluster,
}

/// One kind of object that no tenant group may write: the isolation floor, kept as data so a
/// new floor kind is added here in one line.
struct FloorKind {
    group: &'static str,
    resource: &'static str,
    scope: Scope,
    /// Why it is on the floor.
    why: &'static str,
}

const FLOOR: &[FloorKind] = &[
    FloorKind {
        group: "",
        resource: "resourcequotas",
        scope: Scope::Namespaced,
        why: "GPU and compute reservations",
    },
    FloorKind {
        group: "",
        resource: "limitranges",
        scope: Scope::Namespaced,
        why: "container defaults",
    },
    FloorKind {
        group: "",
        resource: "namespaces",
        scope: Scope::NamespaceItself,
        why: "tenant, trust and Pod Security labels",
    },
    FloorKind {
        group: "",
        resource: "namespaces",
        scope: Scope::Cluster,
        why: "namespaces outside the declarations",
    },
    FloorKind {
        group: "",
        resource: "serviceaccounts",
        scope: Scope::Namespaced,
        why: "tenantc's ServiceAccounts, which mount no token (issue 8)",
    },
    FloorKind {
        group: "",
        resource: "serviceaccounts/token",
        scope: Scope::Namespaced,
        why: "API tokens of the namespace's ServiceAccounts (issue 8)",
    },
    FloorKind {
        group: "networking.k8s.io",
        resource: "networkpolicies",
        scope: Scope::Namespaced,
        why: "default deny (issue 8)",
    },
    FloorKind {
        group: "kueue.x-k8s.io",
        resource: "localqueues",
        scope: Scope::Namespaced,
        why: "queue and flavor pinning (issue 7)",
    },
    FloorKind {
        group: "rbac.authorization.k8s.io",
        resource: "roles",
        scope: Scope::Namespaced,
        why: "the rules a RoleBinding can grant",
    },
    FloorKind {
        group: "admissionregistration.k8s.io",
        resource: "validatingadmissionpolicies",
        scope: Scope::Cluster,
        why: "admission policies (issue 8)",
    },
    FloorKind {
        group: "admissionregistration.k8s.io",
        resource: "validatingadmissionpolicybindings",
        scope: Scope::Cluster,
        why: "admission policy bindings and their params (issue 8)",
    },
    FloorKind {
        group: "scheduling.k8s.io",
        resource: "priorityclasses",
        scope: Scope::Cluster,
        why: "the cell's priority ladder",
    },
    FloorKind {
        group: "rbac.authorization.k8s.io",
        resource: "clusterroles",
        scope: Scope::Cluster,
        why: "the tenant roles themselves",
    },
    FloorKind {
        group: "rbac.authorization.k8s.io",
        resource: "clusterrolebindings",
        scope: Scope::Cluster,
        why: "cluster-wide grants",
    },
];

/// Floor rules that the emitted RBAC breaks, as (resource, bound roles, why): every write verb
/// is expected to be allowed. Empty since issue 8 bound tenant groups to tenantc's own roles;
/// the check fails when the observed failures differ from this list in any way.
const EXPECTED_FLOOR_FAILURES: &[(&str, &str, &str)] = &[];

/// Rows of the access table that no emitted role or floor kind names, asked because a grant
/// there would let a tenant reach beyond its namespaces or its identity.
const SENSITIVE_ROWS: &[(Scope, &str, &str)] = &[
    (Scope::Namespaced, "", "endpoints"),
    (Scope::Namespaced, "", "pods/ephemeralcontainers"),
    (Scope::Namespaced, "apps", "daemonsets"),
    (Scope::Namespaced, "discovery.k8s.io", "endpointslices"),
    (Scope::Cluster, "", "groups"),
    (Scope::Cluster, "", "nodes"),
    (Scope::Cluster, "", "persistentvolumes"),
    (Scope::Cluster, "", "serviceaccounts"),
    (Scope::Cluster, "", "users"),
    (
        Scope::Cluster,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ),
];

/// A row of the access table: a resource (or `resource/subresource`) and where it is asked.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    scope: Scope,
    api_group: String,
    resource: String,
}

impl Row {
    fn new(scope: Scope, api_group: &str, resource: &str) -> Row {
        Row {
            scope,
            api_group: api_group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// The verbs asked about this row.
    fn verbs(&self) -> Vec<&'static str> {
        match (self.scope, self.resource.as_str()) {
            (Scope::Cluster, "users" | "groups") => vec!["impersonate"],
            (Scope::Cluster, "serviceaccounts") => vec!["impersonate"],
            (Scope::NamespaceItself, _) => vec!["get", "update", "patch", "delete"],
            (_, "serviceaccounts") => [STANDARD_VERBS, &["impersonate"]].concat(),
            (_, "roles" | "clusterroles") => [STANDARD_VERBS, &["bind", "escalate"]].concat(),
            _ => STANDARD_VERBS.to_vec(),
        }
    }

    fn group_name(&self) -> &str {
        if self.api_group.is_empty() {
            "core"
        } else {
            &self.api_group
        }
    }
}

/// Granted permissions: (API group, resource, verb).
type Grants = BTreeSet<(String, String, String)>;

/// Whether `grants` hold `verb` on `row`.
fn holds(grants: &Grants, row: &Row, verb: &str) -> bool {
    grants.contains(&(
        row.api_group.clone(),
        row.resource.clone(),
        verb.to_string(),
    ))
}

/// The RBAC of an output tree, evaluated offline.
struct Evaluated {
    /// `(cell, namespace, group)` to what the group may do in that namespace.
    namespaced: BTreeMap<(String, String, String), Grants>,
    /// Group to what it may do at cluster scope (ClusterRoleBindings; tenantc emits none).
    cluster: BTreeMap<String, Grants>,
    /// `(cell, namespace, group)` to the roles bound there.
    roles: BTreeMap<(String, String, String), BTreeSet<String>>,
    /// Tenant to its `(cell, namespace)`s, from the Namespaces' tenant label.
    tenants: BTreeMap<String, BTreeSet<(String, String)>>,
    /// Group to the tenants whose folders bind it, from the RoleBindings' tenant label.
    group_tenants: BTreeMap<String, BTreeSet<String>>,
    /// Every ServiceAccount: `(cell, namespace, name)` to its `automountServiceAccountToken`.
    service_accounts: BTreeMap<(String, String, String), Option<bool>>,
    /// The rows of the table: every resource an emitted role names, the floor and the
    /// sensitive rows.
    rows: BTreeSet<Row>,
    /// What the evaluator cannot evaluate or refuses.
    problems: Vec<String>,
}

/// The cell of an emitted object: the first folder of its path.
fn cell_of(object: &Object) -> String {
    object
        .path
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The grants of one role's rules; a rule that is not explicit is a problem (and still
/// evaluated, wildcards included, so the table shows what it would grant).
fn rule_grants(
    role: &str,
    rules: &Value,
    rows: &BTreeSet<Row>,
    problems: &mut Vec<String>,
) -> Grants {
    let mut grants = Grants::new();
    for rule in rules.as_array().into_iter().flatten() {
        let groups = strings(&rule["apiGroups"]);
        let resources = strings(&rule["resources"]);
        let verbs = strings(&rule["verbs"]);
        for (field, values) in [
            ("apiGroups", &groups),
            ("resources", &resources),
            ("verbs", &verbs),
        ] {
            if values.iter().any(|value| value.contains('*')) {
                problems.push(format!("ClusterRole {role}: a `*` in {field}: {values:?}"));
            }
        }
        for field in ["resourceNames", "nonResourceURLs"] {
            if !rule[field].is_null() {
                problems.push(format!("ClusterRole {role}: a rule with {field}"));
            }
        }
        let mut named: BTreeSet<(String, String)> = groups
            .iter()
            .flat_map(|group| {
                resources
                    .iter()
                    .map(move |resource| (group.clone(), resource.clone()))
            })
            .collect();
        // Wildcards reach every row they match.
        for row in rows {
            let group_ok = groups.iter().any(|g| g == "*" || *g == row.api_group);
            let resource_ok = resources.iter().any(|r| {
                r == "*"
                    || *r == row.resource
                    || r.strip_suffix("/*").is_some_and(|base| {
                        row.resource
                            .split_once('/')
                            .is_some_and(|(head, _)| head == base)
                    })
            });
            if group_ok && resource_ok {
                named.insert((row.api_group.clone(), row.resource.clone()));
            }
        }
        for (group, resource) in named {
            if group.contains('*') || resource.contains('*') {
                continue;
            }
            for verb in &verbs {
                if verb == "*" {
                    for any in row_verbs_of(rows, &group, &resource) {
                        grants.insert((group.clone(), resource.clone(), any.to_string()));
                    }
                } else {
                    grants.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    grants
}

/// Every verb any row of `(group, resource)` is asked about.
fn row_verbs_of(rows: &BTreeSet<Row>, group: &str, resource: &str) -> BTreeSet<&'static str> {
    let mut verbs: BTreeSet<&'static str> = STANDARD_VERBS.iter().copied().collect();
    for row in rows
        .iter()
        .filter(|row| row.api_group == group && row.resource == resource)
    {
        verbs.extend(row.verbs());
    }
    verbs
}

/// Evaluates the RBAC of `objects` the way the API server's authorizer would, from the
/// emitted objects alone.
fn evaluate(objects: &[Object]) -> Evaluated {
    let mut problems = Vec::new();
    // The rows: the floor, the sensitive rows, and every resource an emitted ClusterRole names.
    let mut rows: BTreeSet<Row> = FLOOR
        .iter()
        .map(|kind| Row::new(kind.scope, kind.group, kind.resource))
        .chain(
            SENSITIVE_ROWS
                .iter()
                .map(|(scope, group, resource)| Row::new(*scope, group, resource)),
        )
        .collect();
    for object in objects.iter().filter(|object| object.kind == "ClusterRole") {
        for rule in object.json["rules"].as_array().into_iter().flatten() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    if !group.contains('*') && !resource.contains('*') {
                        rows.insert(Row::new(Scope::Namespaced, &group, &resource));
                    }
                }
            }
        }
    }
    // The roles of each cell.
    let mut role_grants: BTreeMap<(String, String), Grants> = BTreeMap::new();
    for object in objects.iter().filter(|object| object.kind == "ClusterRole") {
        if !object.json["aggregationRule"].is_null() {
            problems.push(format!(
                "ClusterRole {} ({}): has an aggregationRule, so its rules are whatever the \
                 cluster aggregates into it",
                object.name, object.path
            ));
        }
        let labels = object.json["metadata"]["labels"].as_object();
        for key in labels.into_iter().flat_map(|labels| labels.keys()) {
            if key.contains("aggregate-to-") {
                problems.push(format!(
                    "ClusterRole {} ({}): carries the label {key}, so it widens a built-in role",
                    object.name, object.path
                ));
            }
        }
        let grants = rule_grants(&object.name, &object.json["rules"], &rows, &mut problems);
        role_grants.insert((cell_of(object), object.name.clone()), grants);
    }
    let mut tenants: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut service_accounts = BTreeMap::new();
    for object in objects {
        match object.kind.as_str() {
            "Namespace" => {
                if let Some(tenant) =
                    object.json["metadata"]["labels"]["tenant.platform/tenant"].as_str()
                {
                    tenants
                        .entry(tenant.to_string())
                        .or_default()
                        .insert((cell_of(object), object.name.clone()));
                }
            }
            "ServiceAccount" => {
                let automount = object.json["automountServiceAccountToken"]
                    .as_str()
                    .map(|value| value == "true");
                service_accounts.insert(
                    (
                        cell_of(object),
                        object.namespace.clone().unwrap_or_default(),
                        object.name.clone(),
                    ),
                    automount,
                );
            }
            "Role" | "ClusterRoleBinding" => problems.push(format!(
                "{} ({}): tenantc emits no {}; teach the evaluator first",
                object.id(),
                object.path,
                object.kind
            )),
            _ => {}
        }
    }
    let mut namespaced: BTreeMap<(String, String, String), Grants> = BTreeMap::new();
    let mut roles: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    let mut group_tenants: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for object in objects.iter().filter(|object| object.kind == "RoleBinding") {
        let cell = cell_of(object);
        let namespace = object.namespace.clone().unwrap_or_default();
        let tenant = object.json["metadata"]["labels"]["tenant.platform/tenant"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let owner = tenants
            .iter()
            .find(|(_, places)| places.contains(&(cell.clone(), namespace.clone())))
            .map(|(owner, _)| owner.clone());
        if owner.as_deref() != Some(tenant.as_str()) {
            problems.push(format!(
                "{} ({}): a binding of tenant `{tenant}` in namespace {namespace}, which belongs to {}",
                object.id(),
                object.path,
                owner.as_deref().map_or("no tenant".to_string(), |owner| format!("tenant `{owner}`"))
            ));
        }
        let role_kind = object.json["roleRef"]["kind"].as_str().unwrap_or_default();
        let role = object.json["roleRef"]["name"].as_str().unwrap_or_default();
        let grants = match role_grants.get(&(cell.clone(), role.to_string())) {
            Some(grants) if role_kind == "ClusterRole" => grants.clone(),
            _ => {
                problems.push(format!(
                    "{} ({}): binds the {role_kind} `{role}`, which tenantc does not emit in \
                     cell {cell}: its rules (and whatever is aggregated into it) are unknown",
                    object.id(),
                    object.path
                ));
                Grants::new()
            }
        };
        for subject in object.json["subjects"].as_array().into_iter().flatten() {
            let name = subject["name"].as_str().unwrap_or_default().to_string();
            if subject["kind"] != "Group" {
                problems.push(format!(
                    "{} ({}): binds a {} `{name}`; tenant bindings name groups",
                    object.id(),
                    object.path,
                    subject["kind"].as_str().unwrap_or_default()
                ));
                continue;
            }
            group_tenants
                .entry(name.clone())
                .or_default()
                .insert(tenant.clone());
            let key = (cell.clone(), namespace.clone(), name);
            namespaced
                .entry(key.clone())
                .or_default()
                .extend(grants.iter().cloned());
            roles.entry(key).or_default().insert(role.to_string());
        }
    }
    Evaluated {
        namespaced,
        cluster: BTreeMap::new(),
        roles,
        tenants,
        group_tenants,
        service_accounts,
        rows,
        problems,
    }
}

impl Evaluated {
    /// The access table: per row and group, the verbs the group holds, from the offline
    /// grants, one cell per group across its namespaces.
    fn table(&self) -> Table {
        let namespaced: BTreeMap<(String, String), Grants> = self
            .namespaced
            .iter()
            .map(|((cell, namespace, group), grants)| {
                (
                    (format!("{cell}/{namespace}"), group.clone()),
                    grants.clone(),
                )
            })
            .collect();
        let roles = self
            .roles
            .iter()
            .map(|((_, _, group), roles)| (group.clone(), roles.clone()))
            .fold(
                BTreeMap::new(),
                |mut all: BTreeMap<String, BTreeSet<String>>, (group, roles)| {
                    all.entry(group).or_default().extend(roles);
                    all
                },
            );
        Table::build(&self.rows, &namespaced, &self.cluster, &roles)
    }

    /// Floor failures as (resource, roles, verb), and cross-tenant Secret reads.
    fn floor_failures(&self) -> (BTreeSet<(String, String, String)>, Vec<String>) {
        let mut failures = BTreeSet::new();
        for (key, grants) in &self.namespaced {
            let roles = self.roles.get(key).map(join).unwrap_or_default();
            for kind in FLOOR.iter().filter(|kind| kind.scope != Scope::Cluster) {
                let row = Row::new(kind.scope, kind.group, kind.resource);
                for verb in WRITE_VERBS {
                    // A namespaced grant on `namespaces` reaches the Namespace object itself.
                    if holds(grants, &row, verb) {
                        failures.insert((
                            kind.resource.to_string(),
                            roles.clone(),
                            verb.to_string(),
                        ));
                    }
                }
            }
        }
        for (group, grants) in &self.cluster {
            for kind in FLOOR {
                let row = Row::new(kind.scope, kind.group, kind.resource);
                for verb in WRITE_VERBS {
                    if holds(grants, &row, verb) {
                        failures.insert((
                            kind.resource.to_string(),
                            format!("(cluster) {group}"),
                            verb.to_string(),
                        ));
                    }
                }
            }
        }
        let groups = self.group_tenants.clone();
        let secrets = Row::new(Scope::Namespaced, "", "secrets");
        let mut reads = Vec::new();
        for ((cell, namespace, group), grants) in &self.namespaced {
            let own = groups.get(group).cloned().unwrap_or_default();
            let owner = self
                .tenants
                .iter()
                .find(|(_, places)| places.contains(&(cell.clone(), namespace.clone())))
                .map(|(tenant, _)| tenant.clone());
            if owner.as_ref().is_some_and(|owner| !own.contains(owner)) {
                for verb in READ_VERBS {
                    if holds(grants, &secrets, verb) {
                        reads.push(format!(
                            "{group} (of {}) may {verb} secrets in {cell}/{namespace} (of {})",
                            join(&own),
                            owner.clone().unwrap_or_default()
                        ));
                    }
                }
            }
        }
        (failures, reads)
    }
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(",")
}

/// The per-group, per-kind verbs table.
#[derive(PartialEq, Eq)]
struct Table {
    /// Columns: group to the roles it is bound to.
    groups: BTreeMap<String, BTreeSet<String>>,
    rows: Vec<Row>,
    /// `(row, group)` to the verbs held, written as in the doc.
    cells: BTreeMap<(Row, String), String>,
}

/// The verbs of a row that `grants` hold, written shortly: `read` for get, list and watch,
/// `write` for create, update, patch, delete and deletecollection, other verbs by name, `-` for
/// none.
fn verbs_text(row: &Row, grants: &Grants) -> String {
    let held: Vec<&str> = row
        .verbs()
        .into_iter()
        .filter(|verb| holds(grants, row, verb))
        .collect();
    if held.is_empty() {
        return "-".to_string();
    }
    let mut words = Vec::new();
    let mut rest: Vec<&str> = held.clone();
    for (word, set) in [("read", READ_VERBS), ("write", WRITE_VERBS)] {
        if set.iter().all(|verb| held.contains(verb)) {
            words.push(word.to_string());
            rest.retain(|verb| !set.contains(verb));
        }
    }
    words.extend(rest.iter().map(|verb| verb.to_string()));
    words.join(" ")
}

impl Table {
    /// Builds the table from grants per `(place, group)` (a place is a namespace, in a cell
    /// offline) and cluster grants per group; a group whose namespaces differ shows each
    /// variant, so the difference is visible and fails any comparison.
    fn build(
        rows: &BTreeSet<Row>,
        namespaced: &BTreeMap<(String, String), Grants>,
        cluster: &BTreeMap<String, Grants>,
        roles: &BTreeMap<String, BTreeSet<String>>,
    ) -> Table {
        let mut cells = BTreeMap::new();
        for group in roles.keys() {
            let places: Vec<&Grants> = namespaced
                .iter()
                .filter(|((_, g), _)| g == group)
                .map(|(_, grants)| grants)
                .collect();
            let empty = Grants::new();
            let cluster_grants = cluster.get(group).unwrap_or(&empty);
            for row in rows {
                let text = if row.scope == Scope::Cluster {
                    verbs_text(row, cluster_grants)
                } else {
                    let variants: BTreeSet<String> = places
                        .iter()
                        .map(|grants| verbs_text(row, grants))
                        .collect();
                    variants.into_iter().collect::<Vec<_>>().join(" | ")
                };
                cells.insert((row.clone(), group.clone()), text);
            }
        }
        Table {
            groups: roles.clone(),
            rows: rows.iter().cloned().collect(),
            cells,
        }
    }

    /// The table as Markdown: one row per kind, one column per group.
    fn markdown(&self) -> String {
        let mut text = String::from("| scope | API group | resource |");
        for (group, roles) in &self.groups {
            let short: Vec<&str> = roles
                .iter()
                .map(|role| role.strip_prefix("tenantc:tenant-").unwrap_or(role))
                .collect();
            text.push_str(&format!(" {group} ({}) |", short.join(",")));
        }
        text.push_str("\n| --- | --- | --- |");
        for _ in &self.groups {
            text.push_str(" --- |");
        }
        text.push('\n');
        for row in &self.rows {
            let scope = match row.scope {
                Scope::Namespaced => "namespace",
                Scope::NamespaceItself => "own Namespace",
                Scope::Cluster => "cluster",
            };
            text.push_str(&format!(
                "| {scope} | {} | {} |",
                row.group_name(),
                row.resource
            ));
            for group in self.groups.keys() {
                let cell = self
                    .cells
                    .get(&(row.clone(), group.clone()))
                    .map_or("?", String::as_str);
                text.push_str(&format!(" {cell} |"));
            }
            text.push('\n');
        }
        text
    }

    /// The cells where `other` differs from `self`.
    fn differences(&self, other: &Table) -> Vec<String> {
        let keys: BTreeSet<&(Row, String)> = self.cells.keys().chain(other.cells.keys()).collect();
        keys.into_iter()
            .filter_map(|key| {
                let (mine, theirs) = (self.cells.get(key), other.cells.get(key));
                (mine != theirs).then(|| {
                    format!(
                        "{} {} ({}) for {}: expected `{}`, the API server answers `{}`",
                        key.0.group_name(),
                        key.0.resource,
                        match key.0.scope {
                            Scope::Namespaced => "namespace",
                            Scope::NamespaceItself => "own Namespace",
                            Scope::Cluster => "cluster",
                        },
                        key.1,
                        mine.map_or("(none)", String::as_str),
                        theirs.map_or("(none)", String::as_str)
                    )
                })
            })
            .collect()
    }
}

/// The whole `docs/tenant-access.md`: its fixed text, the table and the bindings.
fn table_doc(evaluated: &Evaluated) -> String {
    let mut text = String::new();
    text.push_str(
        "<!-- Generated by `cargo test --test conformance` (the offline check \
         `tenant_access_table_matches_the_emitted_rbac`) from the RBAC objects tenantc emits for \
         the fixture fleet `tests/fixtures/fleet/`. Do not edit: `UPDATE_GOLDEN=1 cargo test \
         --test conformance` rewrites it. -->\n",
    );
    text.push_str("# What each tenant group may do\n\n");
    text.push_str(
        "This table is evaluated from the ClusterRoles and RoleBindings tenantc emits for the fixture fleet (`tests/fixtures/fleet/`, a frozen copy of the example fleet), with no cluster.\n\
         The conformance check `rbac_of_the_example_fleet_keeps_the_floor` asks a real API server the same questions (a SubjectAccessReview per group, namespace, resource and verb), prints its answers as the same table and fails unless both are equal.\n\
         [security.md](security.md#tenant-roles) explains the roles and why each permission is there.\n\n",
    );
    text.push_str(
        "`read` is get, list and watch; `write` is create, update, patch, delete and deletecollection; other verbs are named; `-` is nothing.\n\
         Rows marked `namespace` are asked in each namespace the group is bound in, `own Namespace` of the Namespace object of each of those namespaces, and `cluster` at cluster scope.\n\
         A row is listed when a tenant role names the resource, when it is a floor kind, or when a grant there would reach beyond the tenant (endpoints, nodes, impersonation).\n\n",
    );
    text.push_str(&evaluated.table().markdown());
    text.push_str("\n## Where each group is bound\n\n| cell | namespace | group | role |\n| --- | --- | --- | --- |\n");
    for ((cell, namespace, group), roles) in &evaluated.roles {
        text.push_str(&format!(
            "| {cell} | {namespace} | {group} | {} |\n",
            join(roles)
        ));
    }
    text
}

// Offline --------------------------------------------------------------------------------------

/// What the offline evaluation of a tree reports: problems, floor failures other than the
/// expected ones, cross-tenant Secret reads, and ServiceAccounts that mount a token.
fn offline_findings(objects: &[Object]) -> Vec<String> {
    let evaluated = evaluate(objects);
    let mut findings = evaluated.problems.clone();
    let (failures, reads) = evaluated.floor_failures();
    for (resource, roles, verb) in &failures {
        let expected = EXPECTED_FLOOR_FAILURES
            .iter()
            .any(|(r, role, _)| r == resource && role == roles);
        if !expected {
            findings.push(format!("{roles} may {verb} {resource}, a floor kind"));
        }
    }
    findings.extend(reads);
    for ((cell, namespace, name), automount) in &evaluated.service_accounts {
        if *automount != Some(false) {
            findings.push(format!(
                "ServiceAccount {cell}/{namespace}/{name}: automountServiceAccountToken is {automount:?}, not false"
            ));
        }
    }
    // Every binding names a tenant group, bound to one of the tenant roles.
    for ((cell, namespace, group), roles) in &evaluated.roles {
        for role in roles {
            if !TENANT_ROLES.iter().any(|(_, name)| name == role) {
                findings.push(format!(
                    "{cell}/{namespace}: {group} is bound to `{role}`, not a tenant role"
                ));
            }
        }
    }
    findings
}

/// Replaces the first object of `kind` whose path ends in `suffix` with `change(json)`.
fn with_changed(
    objects: &[Object],
    kind: &str,
    suffix: &str,
    change: impl Fn(&mut Value),
) -> Vec<Object> {
    let mut changed = objects.to_vec();
    let object = changed
        .iter_mut()
        .find(|object| object.kind == kind && object.path.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {kind} ending in {suffix}"));
    change(&mut object.json);
    object.text = object.json.to_string();
    changed
}

pub(super) fn tenant_access_table_matches_the_emitted_rbac(_: &Cluster) {
    let objects = objects_of(&fleet_tree());
    let evaluated = evaluate(&objects);
    let findings = offline_findings(&objects);
    assert!(
        findings.is_empty(),
        "the fixture fleet's RBAC:\n{}",
        findings.join("\n")
    );
    // The roles grant something at all: members run pods, viewers read them.
    let table = evaluated.table();
    let pods = Row::new(Scope::Namespaced, "", "pods");
    for (group, roles) in &table.groups {
        let cell = &table.cells[&(pods.clone(), group.clone())];
        let expected = if roles.contains("tenantc:tenant-viewer") {
            "read"
        } else {
            "read write"
        };
        assert_eq!(cell, expected, "pods for {group} ({})", join(roles));
    }
    let doc = table_doc(&evaluated);
    let path = support::repo().join(TABLE_DOC);
    if support::update_golden() {
        std::fs::write(&path, &doc).unwrap();
        println!("  rewrote {TABLE_DOC}");
    } else {
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == doc,
            "{TABLE_DOC} is stale: run UPDATE_GOLDEN=1 cargo test --locked --test conformance\n--- expected:\n{doc}"
        );
    }
    println!(
        "  {TABLE_DOC} matches the emitted RBAC: {} rows, {} groups",
        table.rows.len(),
        table.groups.len()
    );

    // The generated fleets keep the same rules, over every tenant of every cell.
    for (what, tree) in [
        (
            "generated fleet",
            compile_inputs(&generated_fleet(
                "gen",
                GENERATED_TENANTS,
                GENERATED_CELLS,
                Variant::New,
            )),
        ),
        (
            "generated older fleet",
            compile_inputs(&generated_fleet("upd", 8, 2, Variant::Old)),
        ),
    ] {
        let objects = objects_of(&tree);
        let findings = offline_findings(&objects);
        assert!(
            findings.is_empty(),
            "the {what}'s RBAC:\n{}",
            findings.join("\n")
        );
        let evaluated = evaluate(&objects);
        println!(
            "  {what}: {} bindings over {} tenants and {} ServiceAccounts keep the floor offline",
            evaluated.roles.len(),
            evaluated.tenants.len(),
            evaluated.service_accounts.len()
        );
    }

    // The evaluator can fail: each broken variant of the fixture fleet is reported.
    let broken: Vec<(&str, Vec<Object>, &str)> = vec![
        (
            "a member group bound to the built-in edit",
            with_changed(
                &objects,
                "RoleBinding",
                "/rolebinding-member.yaml",
                |json| {
                    json["roleRef"]["name"] = json!("edit");
                },
            ),
            "which tenantc does not emit",
        ),
        (
            "the member role aggregating aggregate-to-edit",
            with_changed(
                &objects,
                "ClusterRole",
                "/clusterrole-tenant-member.yaml",
                |json| {
                    json["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]});
                },
            ),
            "aggregationRule",
        ),
        (
            "the member role writing NetworkPolicies",
            with_changed(
                &objects,
                "ClusterRole",
                "/clusterrole-tenant-member.yaml",
                |json| {
                    json["rules"].as_array_mut().unwrap().push(json!({"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["delete"]}));
                },
            ),
            "may delete networkpolicies, a floor kind",
        ),
        (
            "the viewer role with a wildcard",
            with_changed(
                &objects,
                "ClusterRole",
                "/clusterrole-tenant-viewer.yaml",
                |json| {
                    json["rules"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}));
                },
            ),
            "a `*` in resources",
        ),
        (
            "a member group bound in another tenant's namespace",
            {
                let mut more = objects.clone();
                let binding = objects
                    .iter()
                    .find(|o| {
                        o.kind == "RoleBinding" && o.path.ends_with("/rolebinding-member.yaml")
                    })
                    .unwrap();
                let other = objects
                    .iter()
                    .find(|o| {
                        // Another tenant's namespace, not a platform one such as `tenantc-system`.
                        o.kind == "Namespace"
                            && cell_of(o) == cell_of(binding)
                            && !o.json["metadata"]["labels"]["tenant.platform/tenant"].is_null()
                            && o.json["metadata"]["labels"]["tenant.platform/tenant"]
                                != binding.json["metadata"]["labels"]["tenant.platform/tenant"]
                    })
                    .unwrap();
                let mut stray = binding.clone();
                stray.json["metadata"]["namespace"] = json!(other.name);
                stray.namespace = Some(other.name.clone());
                stray.path = format!("{}/tenants/stray/rolebinding-member.yaml", cell_of(binding));
                more.push(stray);
                more
            },
            "may get secrets in",
        ),
        (
            "a ServiceAccount that mounts its token",
            with_changed(&objects, "ServiceAccount", ".yaml", |json| {
                json["automountServiceAccountToken"] = json!("true");
            }),
            "automountServiceAccountToken is Some(true)",
        ),
    ];
    for (what, objects, expect) in broken {
        let findings = offline_findings(&objects);
        assert!(
            findings.iter().any(|finding| finding.contains(expect)),
            "the offline evaluator missed {what}: {findings:?}"
        );
        println!("  self-test, {what}: reported ({})", findings.len());
    }
}

// Asking the API server -----------------------------------------------------------------------

/// One access question: may `group` do `verb` on `resource` (in `namespace`, named `name`)?
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Question {
    group: String,
    namespace: String,
    api_group: String,
    /// `resource` or `resource/subresource`.
    resource: String,
    verb: String,
    name: String,
}

impl Question {
    fn about(group: &str, namespace: &str, row: &Row, verb: &str) -> Question {
        let (namespace, name) = match row.scope {
            Scope::Namespaced => (namespace, ""),
            Scope::NamespaceItself => (namespace, namespace),
            Scope::Cluster => ("", ""),
        };
        Question {
            group: group.to_string(),
            namespace: namespace.to_string(),
            api_group: row.api_group.clone(),
            resource: row.resource.clone(),
            verb: verb.to_string(),
            name: name.to_string(),
        }
    }
}

/// Concurrent kubectl runs of one batch of access reviews.
const PARALLEL_REVIEWS: usize = 4;

/// Asks the API server every question with SubjectAccessReviews, in a few concurrent kubectl
/// runs. The subject is a user who is a member of the group and of `system:authenticated`.
fn ask(cluster: &Cluster, questions: &[Question]) -> Vec<bool> {
    if questions.is_empty() {
        return Vec::new();
    }
    let size = questions.len().div_ceil(PARALLEL_REVIEWS).max(50);
    std::thread::scope(|scope| {
        let runs: Vec<_> = questions
            .chunks(size)
            .map(|chunk| scope.spawn(move || ask_chunk(cluster, chunk)))
            .collect();
        runs.into_iter()
            .flat_map(|run| run.join().expect("an access review thread"))
            .collect()
    })
}

fn ask_chunk(cluster: &Cluster, questions: &[Question]) -> Vec<bool> {
    let items: Vec<Value> = questions
        .iter()
        .map(|question| {
            let (resource, subresource) = question
                .resource
                .split_once('/')
                .unwrap_or((question.resource.as_str(), ""));
            let mut attributes = json!({
                "verb": question.verb,
                "group": question.api_group,
                "resource": resource,
            });
            if !subresource.is_empty() {
                attributes["subresource"] = json!(subresource);
            }
            if !question.namespace.is_empty() {
                attributes["namespace"] = json!(question.namespace);
            }
            if !question.name.is_empty() {
                attributes["name"] = json!(question.name);
            }
            json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": format!("conformance:member-of:{}", question.group),
                    "groups": [question.group, "system:authenticated"],
                    "resourceAttributes": attributes,
                },
            })
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let run = cluster.kubectl(&["create", "-o", "json", "-f", "-"], &list.to_string());
    assert!(run.ok, "SubjectAccessReviews failed:\n{}", run.stderr);
    // kubectl prints one JSON document per created object.
    let reviews: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("SubjectAccessReview output: {error}"));
    assert_eq!(reviews.len(), questions.len(), "one review per question");
    reviews
        .iter()
        .map(|review| review["status"]["allowed"].as_bool().unwrap_or(false))
        .collect()
}

/// The emitted objects of the fixture fleet as the cluster holds them: applied, and with any
/// RoleBinding that tenantc labelled but no longer emits deleted, as a GitOps controller with
/// pruning does (older trees named their bindings otherwise).
fn set_up(cluster: &Cluster) -> Vec<Object> {
    install_crds(cluster);
    let objects = objects_of(&fleet_tree());
    let applied = apply_tree(cluster, &objects, false);
    assert!(
        applied.refusals.is_empty(),
        "the fixture fleet must apply before its RBAC is asked about:\n{}",
        format_refusals(&applied.refusals)
    );
    // Only the fixture fleet's namespaces: other checks' fleets have namespaces of their own.
    let namespaces: BTreeSet<&str> = objects
        .iter()
        .filter(|object| object.kind == "Namespace")
        .map(|object| object.name.as_str())
        .collect();
    let emitted: BTreeSet<(String, String)> = objects
        .iter()
        .filter(|object| object.kind == "RoleBinding")
        .map(|object| {
            (
                object.namespace.clone().unwrap_or_default(),
                object.name.clone(),
            )
        })
        .collect();
    let run = cluster.kubectl(
        &["get", "rolebindings", "-A", "-l", MANAGED_BY, "-o", "json"],
        "",
    );
    assert!(run.ok, "listing RoleBindings failed:\n{}", run.stderr);
    let held: Value = serde_json::from_str(&run.stdout).unwrap();
    for item in held["items"].as_array().into_iter().flatten() {
        let namespace = item["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        if namespaces.contains(namespace)
            && !emitted.contains(&(namespace.to_string(), name.to_string()))
        {
            let run = cluster.kubectl(&["delete", "rolebinding", "-n", namespace, name], "");
            assert!(run.ok, "pruning {namespace}/{name} failed:\n{}", run.stderr);
            println!("  pruned RoleBinding {namespace}/{name}, which tenantc no longer emits");
        }
    }
    objects
}

/// The access table as the API server answers it, for every group and namespace the tree
/// binds, and the questions with their answers.
fn live_table(cluster: &Cluster, evaluated: &Evaluated) -> (Table, Vec<(Question, bool)>) {
    let places: BTreeSet<(String, String)> = evaluated
        .namespaced
        .keys()
        .map(|(_, namespace, group)| (namespace.clone(), group.clone()))
        .collect();
    let groups: BTreeSet<String> = places.iter().map(|(_, group)| group.clone()).collect();
    let mut questions = Vec::new();
    for (namespace, group) in &places {
        for row in evaluated
            .rows
            .iter()
            .filter(|row| row.scope != Scope::Cluster)
        {
            for verb in row.verbs() {
                questions.push(Question::about(group, namespace, row, verb));
            }
        }
    }
    for group in &groups {
        for row in evaluated
            .rows
            .iter()
            .filter(|row| row.scope == Scope::Cluster)
        {
            for verb in row.verbs() {
                questions.push(Question::about(group, "", row, verb));
            }
        }
    }
    let answers = ask(cluster, &questions);
    let mut namespaced: BTreeMap<(String, String), Grants> = places
        .iter()
        .map(|place| (place.clone(), Grants::new()))
        .collect();
    let mut cluster_grants: BTreeMap<String, Grants> = BTreeMap::new();
    for (question, allowed) in questions.iter().zip(&answers) {
        if !allowed {
            continue;
        }
        let grant = (
            question.api_group.clone(),
            question.resource.clone(),
            question.verb.clone(),
        );
        if question.namespace.is_empty() {
            cluster_grants
                .entry(question.group.clone())
                .or_default()
                .insert(grant);
        } else {
            namespaced
                .entry((question.namespace.clone(), question.group.clone()))
                .or_default()
                .insert(grant);
        }
    }
    let roles = evaluated.table().groups;
    let table = Table::build(&evaluated.rows, &namespaced, &cluster_grants, &roles);
    (table, questions.into_iter().zip(answers).collect())
}

/// Cross-tenant Secret reads the API server allows, for every group and every namespace of
/// every tenant it is not bound in.
fn live_secret_reads(cluster: &Cluster, evaluated: &Evaluated) -> Vec<String> {
    let groups = evaluated.group_tenants.clone();
    let mut questions = Vec::new();
    for (group, own) in &groups {
        for (tenant, places) in &evaluated.tenants {
            if own.contains(tenant) {
                continue;
            }
            let namespaces: BTreeSet<&String> = places.iter().map(|(_, ns)| ns).collect();
            for namespace in namespaces {
                for verb in READ_VERBS {
                    questions.push(Question {
                        group: group.clone(),
                        namespace: namespace.clone(),
                        api_group: String::new(),
                        resource: "secrets".to_string(),
                        verb: verb.to_string(),
                        name: String::new(),
                    });
                }
            }
        }
    }
    let answers = ask(cluster, &questions);
    assert!(
        !questions.is_empty(),
        "no cross-tenant Secret question to ask"
    );
    questions
        .iter()
        .zip(answers)
        .filter(|(_, allowed)| *allowed)
        .map(|(q, _)| {
            format!(
                "{} may {} secrets in {}, another tenant's namespace",
                q.group, q.verb, q.namespace
            )
        })
        .collect()
}

/// What the table check reports: cells where the API server and the offline table differ,
/// floor writes, and cross-tenant Secret reads; with the questions asked and their answers.
fn table_findings(
    cluster: &Cluster,
    evaluated: &Evaluated,
    print: bool,
) -> (Vec<String>, Vec<(Question, bool)>) {
    let expected = evaluated.table();
    let (live, answers) = live_table(cluster, evaluated);
    if print {
        println!(
            "  the access table as the API server answers it ({} access reviews; read = get list watch, write = create update patch delete deletecollection):",
            answers.len()
        );
        for line in live.markdown().lines() {
            println!("    {line}");
        }
    }
    let mut findings = expected.differences(&live);
    // The floor, from the API server's answers.
    for (question, _) in answers.iter().filter(|(question, allowed)| {
        *allowed
            && WRITE_VERBS.contains(&question.verb.as_str())
            && FLOOR.iter().any(|kind| {
                kind.group == question.api_group
                    && kind.resource == question.resource
                    && (kind.scope == Scope::Cluster) == question.namespace.is_empty()
            })
    }) {
        let roles = expected
            .groups
            .get(&question.group)
            .map(join)
            .unwrap_or_default();
        let known = EXPECTED_FLOOR_FAILURES
            .iter()
            .any(|(resource, role, _)| *resource == question.resource && *role == roles);
        if !known {
            findings.push(format!(
                "{} ({roles}) may {} {} in {}: a floor kind",
                question.group,
                question.verb,
                question.resource,
                if question.namespace.is_empty() {
                    "the cluster"
                } else {
                    &question.namespace
                }
            ));
        }
    }
    findings.extend(live_secret_reads(cluster, evaluated));
    (findings, answers)
}

pub(super) fn rbac_of_the_example_fleet_keeps_the_floor(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    assert!(
        evaluated.problems.is_empty(),
        "{}",
        evaluated.problems.join("\n")
    );
    println!("  floor kinds (no tenant group may write them):");
    for kind in FLOOR {
        let scope = match kind.scope {
            Scope::Namespaced => "in its namespaces",
            Scope::NamespaceItself => "its own Namespace objects",
            Scope::Cluster => "cluster scope",
        };
        let group = if kind.group.is_empty() {
            "core"
        } else {
            kind.group
        };
        println!("    {} ({group}, {scope}): {}", kind.resource, kind.why);
    }
    let (findings, answers) = table_findings(cluster, &evaluated, true);
    let expected_failures: Vec<String> = EXPECTED_FLOOR_FAILURES
        .iter()
        .map(|(resource, role, why)| format!("{resource} through {role}: {why}"))
        .collect();
    println!(
        "  expected floor failures: {}",
        if expected_failures.is_empty() {
            "none".to_string()
        } else {
            expected_failures.join("; ")
        }
    );
    assert!(
        findings.is_empty(),
        "the tenant RBAC on the API server differs from the emitted RBAC or breaks the floor:\n{}",
        findings.join("\n")
    );
    println!(
        "  the API server's answers equal {TABLE_DOC}; no floor write; no cross-tenant Secret read"
    );

    // The reviews agree with real impersonation by a user who may only impersonate.
    let mut checked = 0;
    let samples = answers
        .iter()
        .filter(|(q, allowed)| *allowed && q.verb == "create" && q.resource == "pods")
        .take(3)
        .chain(
            answers
                .iter()
                .filter(|(q, _)| q.verb == "delete" && q.resource == "networkpolicies")
                .take(3),
        )
        .chain(
            answers
                .iter()
                .filter(|(q, _)| q.verb == "create" && q.resource == "rolebindings")
                .take(4),
        )
        .chain(
            answers
                .iter()
                .filter(|(q, _)| q.verb == "get" && q.resource == "secrets")
                .take(4),
        );
    for (question, expect) in samples {
        let user = format!("conformance:member-of:{}", question.group);
        let mut args = vec![
            "auth",
            "can-i",
            question.verb.as_str(),
            question.resource.as_str(),
        ];
        if !question.namespace.is_empty() {
            args.extend(["-n", question.namespace.as_str()]);
        }
        args.extend([
            "--as",
            &user,
            "--as-group",
            &question.group,
            "--as-group",
            "system:authenticated",
        ]);
        let run = cluster.kubectl_as_user(&args);
        let answer = run.stdout.trim();
        assert!(
            answer == "yes" || answer == "no",
            "kubectl auth can-i as an impersonating user failed:\n{}{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(
            answer == "yes",
            *expect,
            "auth can-i and SubjectAccessReview disagree on {} {} in {} for {}",
            question.verb,
            question.resource,
            question.namespace,
            question.group
        );
        checked += 1;
    }
    println!("  {checked} answers confirmed with kubectl auth can-i under impersonation");
}

// Escalation ----------------------------------------------------------------------------------

/// The RoleBinding message of the API server's escalation check.
const ESCALATION_MESSAGE: &str = "is attempting to grant RBAC permissions not currently held";

/// A RoleBinding named `name` in `namespace` of the ClusterRole `role` to a group of nobody.
fn probe_binding(name: &str, namespace: &str, role: &str, subject: &str) -> String {
    probe_binding_of(
        name,
        namespace,
        role,
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": subject}),
    )
}

/// A RoleBinding of `role` in `namespace` to one `subject`.
fn probe_binding_of(name: &str, namespace: &str, role: &str, subject: Value) -> String {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    })
    .to_string()
}

/// Creates `manifest` as a member of `group` (server-side dry-run: authorization and the
/// escalation check run before storage, so nothing is left behind). Returns the error output
/// when refused.
fn create_as(cluster: &Cluster, group: &str, manifest: &str) -> Result<(), String> {
    let user = format!("conformance:member-of:{group}");
    let run = cluster.kubectl_with(
        &cluster.user_kubeconfig,
        &[
            "create",
            "--dry-run=server",
            "-o",
            "name",
            "-f",
            "-",
            "--as",
            &user,
            "--as-group",
            group,
            "--as-group",
            "system:authenticated",
        ],
        manifest,
    );
    if run.ok {
        Ok(())
    } else {
        Err(run.stderr.trim().to_string())
    }
}

/// What the escalation check reports: for each tenant's admin group, in one of its
/// namespaces, bindings of roles with more than it holds that are admitted, bindings of the
/// tenant roles that are refused, and RoleBinding writes by members, viewers or in another
/// tenant's namespace that are admitted.
fn escalation_findings(cluster: &Cluster, evaluated: &Evaluated) -> (Vec<String>, usize) {
    let mut findings = Vec::new();
    let mut probes = 0;
    let mut seen = BTreeSet::new();
    let groups = evaluated.group_tenants.clone();
    for ((_, namespace, group), roles) in &evaluated.roles {
        let kind = if roles.contains("tenantc:tenant-admin") {
            "admin"
        } else if roles.contains("tenantc:tenant-member") {
            "member"
        } else {
            "viewer"
        };
        if !seen.insert((group.clone(), kind)) {
            continue;
        }
        let cases: Vec<(&str, bool)> = if kind == "admin" {
            vec![
                ("cluster-admin", false),
                ("admin", false),
                ("edit", false),
                ("tenantc:tenant-admin", true),
                ("tenantc:tenant-member", true),
                ("tenantc:tenant-viewer", true),
            ]
        } else {
            vec![("tenantc:tenant-viewer", false)]
        };
        for (idx, (role, may)) in cases.into_iter().enumerate() {
            probes += 1;
            // The binding names the creating group itself, which the subjects policy admits, so
            // only the escalation check decides.
            let manifest = probe_binding(
                &format!("conformance-escalation-{idx}"),
                namespace,
                role,
                group,
            );
            match (create_as(cluster, group, &manifest), may) {
                (Ok(()), true) => {}
                (Ok(()), false) => findings.push(format!(
                    "{group} ({kind}) may bind the ClusterRole {role} in {namespace}"
                )),
                (Err(message), true) => findings.push(format!(
                    "{group} ({kind}) may not bind {role} in {namespace}, which it holds:\n{message}"
                )),
                (Err(message), false) => {
                    let why = if kind == "admin" { ESCALATION_MESSAGE } else { "cannot create resource \"rolebindings\"" };
                    if !message.contains(why) {
                        findings.push(format!(
                            "{group} ({kind}) binding {role} in {namespace} was refused for another reason than `{why}`:\n{message}"
                        ));
                    }
                }
            }
        }
        // Not even its own role in another tenant's namespace.
        let own = groups.get(group).cloned().unwrap_or_default();
        if let Some((_, places)) = evaluated
            .tenants
            .iter()
            .find(|(tenant, _)| !own.contains(*tenant))
            && let Some((_, other)) = places.iter().next()
            && kind == "admin"
        {
            probes += 1;
            let manifest = probe_binding(
                "conformance-escalation-other",
                other,
                "tenantc:tenant-viewer",
                group,
            );
            match create_as(cluster, group, &manifest) {
                Ok(()) => findings.push(format!(
                    "{group} (admin) may bind roles in {other}, another tenant's namespace"
                )),
                Err(message) if message.contains("cannot create resource \"rolebindings\"") => {}
                Err(message) => findings.push(format!(
                    "{group} binding in {other} refused for another reason:\n{message}"
                )),
            }
        }
    }
    (findings, probes)
}

pub(super) fn tenant_admins_cannot_bind_more_than_they_hold(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    let (findings, probes) = escalation_findings(cluster, &evaluated);
    assert!(probes > 0, "no escalation probe");
    assert!(findings.is_empty(), "{}", findings.join("\n"));
    println!(
        "  {probes} RoleBinding probes: tenant admins bind the tenant roles but not cluster-admin, admin or edit (`{ESCALATION_MESSAGE}`), nor in another tenant's namespace; members and viewers write no RoleBinding"
    );
}

/// The message of the RoleBinding subjects policy (`lower/guard.rs`) for a refused subject.
const SUBJECTS_MESSAGE: &str = "RoleBindings in a tenant namespace may name only the groups";

pub(super) fn tenant_admins_bind_only_their_own_subjects(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    let mut findings = Vec::new();
    let mut probes = 0;
    let mut seen = BTreeSet::new();
    for ((_, namespace, group), roles) in &evaluated.roles {
        if !roles.contains("tenantc:tenant-admin") || !seen.insert(group.clone()) {
            continue;
        }
        let own = evaluated
            .group_tenants
            .get(group)
            .cloned()
            .unwrap_or_default();
        let other_group = evaluated
            .group_tenants
            .iter()
            .find(|(_, tenants)| tenants.is_disjoint(&own))
            .map(|(other, _)| other.clone());
        let other_namespace = evaluated
            .tenants
            .iter()
            .find(|(tenant, _)| !own.contains(*tenant))
            .and_then(|(_, places)| places.iter().next())
            .map(|(_, other)| other.clone());
        let account = |namespace: &str| json!({"kind": "ServiceAccount", "namespace": namespace, "name": "default"});
        let group_subject = |name: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name});
        let mut cases: Vec<(String, Value, bool)> = vec![
            ("its own group".to_string(), group_subject(group), true),
            (
                "a ServiceAccount of its namespace".to_string(),
                account(namespace),
                true,
            ),
            (
                "system:authenticated".to_string(),
                group_subject("system:authenticated"),
                false,
            ),
            (
                "system:serviceaccounts".to_string(),
                group_subject("system:serviceaccounts"),
                false,
            ),
            (
                "a user".to_string(),
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "conformance:someone"}),
                false,
            ),
            (
                "a kube-system ServiceAccount".to_string(),
                account("kube-system"),
                false,
            ),
        ];
        if let Some(other) = &other_group {
            cases.push((
                format!("another tenant's group {other}"),
                group_subject(other),
                false,
            ));
        }
        if let Some(other) = &other_namespace {
            cases.push((
                format!("a ServiceAccount of {other}"),
                account(other),
                false,
            ));
        }
        for (idx, (what, subject, may)) in cases.into_iter().enumerate() {
            probes += 1;
            let manifest = probe_binding_of(
                &format!("conformance-subjects-{idx}"),
                namespace,
                "tenantc:tenant-viewer",
                subject,
            );
            match (create_as(cluster, group, &manifest), may) {
                (Ok(()), true) => {}
                (Ok(()), false) => findings.push(format!(
                    "{group} (admin) may bind the tenant viewer role to {what} in {namespace}"
                )),
                (Err(message), true) => findings.push(format!(
                    "{group} (admin) may not bind the tenant viewer role to {what} in {namespace}:\n{message}"
                )),
                (Err(message), false) => {
                    if !message.contains(SUBJECTS_MESSAGE) {
                        findings.push(format!(
                            "binding {what} in {namespace} was refused for another reason than the subjects policy:\n{message}"
                        ));
                    }
                }
            }
        }
        // The break-glass identity (the harness's admin is in `system:masters`) passes.
        probes += 1;
        let manifest = probe_binding(
            "conformance-subjects-break-glass",
            namespace,
            "tenantc:tenant-viewer",
            "system:authenticated",
        );
        let run = cluster.kubectl(
            &["create", "--dry-run=server", "-o", "name", "-f", "-"],
            &manifest,
        );
        if !run.ok {
            findings.push(format!(
                "the break-glass identity may not bind system:authenticated in {namespace}:\n{}",
                run.stderr
            ));
        }
    }
    assert!(probes > 0, "no subjects probe");
    assert!(findings.is_empty(), "{}", findings.join("\n"));
    println!(
        "  {probes} RoleBinding subject probes: tenant admins bind their own groups and ServiceAccounts, but not system:authenticated, system:serviceaccounts, users, another tenant's group or ServiceAccounts of other namespaces (`{SUBJECTS_MESSAGE}`); the break-glass identity may"
    );
}

// Aggregation -----------------------------------------------------------------------------------

/// A ClusterRole that a platform admin (or an operator's release) labels for aggregation into
/// the built-in roles: it writes floor kinds and reads Secrets.
const AGGREGATE_PROBE: &str = "conformance:aggregate-probe";

fn aggregate_probe() -> String {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": AGGREGATE_PROBE,
            "labels": {
                "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                "rbac.authorization.k8s.io/aggregate-to-view": "true",
            },
        },
        "rules": [
            {"apiGroups": [""], "resources": ["resourcequotas", "limitranges", "secrets", "serviceaccounts/token"], "verbs": STANDARD_VERBS},
            {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": STANDARD_VERBS},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": STANDARD_VERBS},
        ],
    })
    .to_string()
}

/// Whether the ClusterRole `role` holds a rule writing ResourceQuotas (which no built-in role
/// has unless something was aggregated into it).
fn writes_quotas(cluster: &Cluster, role: &str) -> bool {
    let run = cluster.kubectl(&["get", "clusterrole", role, "-o", "json"], "");
    let json: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    json["rules"].as_array().into_iter().flatten().any(|rule| {
        strings(&rule["resources"])
            .iter()
            .any(|r| r == "resourcequotas")
            && strings(&rule["verbs"]).iter().any(|v| v == "delete")
    })
}

/// Waits at most 30 s until `ready` holds.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "timed out after 30 s waiting for {what} (clusterrole-aggregation-controller)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Deletes the aggregation probe when dropped, and waits until the built-ins lose it again.
struct ProbeGuard<'a>(&'a Cluster);

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        let run = self.0.kubectl(
            &[
                "delete",
                "clusterrole",
                AGGREGATE_PROBE,
                "--ignore-not-found",
            ],
            "",
        );
        if !run.ok {
            eprintln!("  could not delete {AGGREGATE_PROBE}: {}", run.stderr);
        }
        let started = Instant::now();
        while writes_quotas(self.0, "edit") && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// What the aggregation check reports: with a ClusterRole labelled for aggregation into
/// `admin`, `edit` and `view` in place (and seen aggregated into `edit` and `admin`, the
/// control), the cells where the tenant groups' access now differs from the emitted RBAC.
/// `also` names another ClusterRole to wait for (the self-test's tampered tenant role).
fn aggregation_findings(
    cluster: &Cluster,
    evaluated: &Evaluated,
    also: Option<&str>,
) -> Vec<String> {
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-platform",
            "-f",
            "-",
        ],
        &aggregate_probe(),
    );
    assert!(run.ok, "creating {AGGREGATE_PROBE} failed:\n{}", run.stderr);
    let _guard = ProbeGuard(cluster);
    wait_until("the probe to be aggregated into edit and admin", || {
        writes_quotas(cluster, "edit")
            && writes_quotas(cluster, "admin")
            && also.is_none_or(|role| writes_quotas(cluster, role))
    });
    println!(
        "  {AGGREGATE_PROBE} is aggregated into the built-in admin and edit (they now write ResourceQuotas)"
    );
    table_findings(cluster, evaluated, false).0
}

pub(super) fn aggregated_cluster_roles_do_not_widen_tenant_groups(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    let findings = aggregation_findings(cluster, &evaluated, None);
    assert!(
        findings.is_empty(),
        "aggregation widened tenant groups:\n{}",
        findings.join("\n")
    );
    println!("  every tenant group's access equals {TABLE_DOC} while the probe is aggregated");
}

// ServiceAccounts ------------------------------------------------------------------------------

/// What the ServiceAccount check reports: every emitted ServiceAccount, read back from the API
/// server, must exist and set `automountServiceAccountToken: false`.
fn service_account_findings(cluster: &Cluster, evaluated: &Evaluated) -> (Vec<String>, usize) {
    let run = cluster.kubectl(
        &[
            "get",
            "serviceaccounts",
            "-A",
            "-l",
            MANAGED_BY,
            "-o",
            "json",
        ],
        "",
    );
    assert!(run.ok, "listing ServiceAccounts failed:\n{}", run.stderr);
    let held: Value = serde_json::from_str(&run.stdout).unwrap();
    let mut automount: BTreeMap<(String, String), Value> = BTreeMap::new();
    for item in held["items"].as_array().into_iter().flatten() {
        automount.insert(
            (
                item["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                item["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            item["automountServiceAccountToken"].clone(),
        );
    }
    let emitted: BTreeSet<(String, String)> = evaluated
        .service_accounts
        .keys()
        .map(|(_, namespace, name)| (namespace.clone(), name.clone()))
        .collect();
    let findings = emitted
        .iter()
        .filter_map(|(namespace, name)| match automount.get(&(namespace.clone(), name.clone())) {
            Some(Value::Bool(false)) => None,
            Some(other) => Some(format!("ServiceAccount {namespace}/{name}: automountServiceAccountToken is {other} on the API server")),
            None => Some(format!("ServiceAccount {namespace}/{name}: not on the API server")),
        })
        .collect();
    (findings, emitted.len())
}

pub(super) fn tenant_service_accounts_mount_no_token(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    let (findings, count) = service_account_findings(cluster, &evaluated);
    assert!(count > 0, "the fixture fleet emits no ServiceAccount");
    assert!(findings.is_empty(), "{}", findings.join("\n"));
    println!("  {count} tenant ServiceAccounts read back with automountServiceAccountToken: false");
}

// Self-test -------------------------------------------------------------------------------------

/// Deletes what a tampering step created, or re-applies the emitted objects it changed, when
/// dropped, so that a failing self-test leaves the cluster as the checks expect it.
struct Undo<'a> {
    cluster: &'a Cluster,
    /// `kubectl delete` arguments of what the step created.
    delete: Vec<Vec<String>>,
    /// Emitted objects to delete and apply again.
    reapply: Vec<Object>,
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        for args in &self.delete {
            let mut full: Vec<&str> = vec!["delete", "--ignore-not-found"];
            full.extend(args.iter().map(String::as_str));
            let run = self.cluster.kubectl(&full, "");
            if !run.ok {
                eprintln!("  could not undo {args:?}: {}", run.stderr);
            }
        }
        for object in &self.reapply {
            let kind = object.kind.to_lowercase();
            let mut args = vec![
                "delete",
                "--ignore-not-found",
                kind.as_str(),
                object.name.as_str(),
            ];
            if let Some(namespace) = &object.namespace {
                args.extend(["-n", namespace.as_str()]);
            }
            // A delete that fails shows in the apply below, which is reported.
            let _ = self.cluster.kubectl(&args, "");
            let refusals = apply_batch(self.cluster, &[object], false);
            if !refusals.is_empty() {
                eprintln!(
                    "  could not re-apply {}: {}",
                    object.id(),
                    format_refusals(&refusals)
                );
            }
        }
    }
}

fn admin(cluster: &Cluster, manifest: &str) {
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-tamper",
            "--force-conflicts",
            "-f",
            "-",
        ],
        manifest,
    );
    assert!(run.ok, "tampering was refused:\n{}", run.stderr);
}

fn report(what: &str, findings: &[String]) {
    assert!(!findings.is_empty(), "the check did not detect {what}");
    println!("  {what}: detected");
    for finding in findings.iter().take(3) {
        println!("      {}", finding.lines().next().unwrap_or_default());
    }
    if findings.len() > 3 {
        println!("      ... and {} more", findings.len() - 3);
    }
}

/// The first binding of a group of `kind` (its ClusterRole) in the evaluated tree, as
/// `(namespace, group)`.
fn bound(evaluated: &Evaluated, role: &str) -> (String, String) {
    evaluated
        .roles
        .iter()
        .find(|(_, roles)| roles.contains(role))
        .map(|((_, namespace, group), _)| (namespace.clone(), group.clone()))
        .unwrap_or_else(|| panic!("no group bound to {role}"))
}

pub(super) fn rbac_self_test_tampered_rbac_fails_the_checks(cluster: &Cluster) {
    let objects = set_up(cluster);
    let evaluated = evaluate(&objects);
    let (admin_namespace, admin_group) = bound(&evaluated, "tenantc:tenant-admin");
    let (member_namespace, member_group) = bound(&evaluated, "tenantc:tenant-member");

    // The table and floor check: a member group also bound to the built-in edit.
    {
        let _undo = Undo {
            cluster,
            delete: vec![vec![
                "rolebinding".into(),
                "conformance-tamper-edit".into(),
                "-n".into(),
                member_namespace.clone(),
            ]],
            reapply: Vec::new(),
        };
        admin(cluster, &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "conformance-tamper-edit", "namespace": member_namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": member_group}],
        }).to_string());
        let (findings, _) = table_findings(cluster, &evaluated, false);
        assert!(
            findings
                .iter()
                .any(|f| f.contains("networkpolicies") && f.contains("floor kind")),
            "{findings:?}"
        );
        report(
            &format!("{member_group} also bound to edit in {member_namespace}"),
            &findings,
        );
    }

    // The escalation check: the admin group may `bind` cluster-admin.
    {
        let _undo = Undo {
            cluster,
            delete: vec![
                vec![
                    "rolebinding".into(),
                    "conformance-tamper-bind".into(),
                    "-n".into(),
                    admin_namespace.clone(),
                ],
                vec!["clusterrole".into(), "conformance:tamper-bind".into()],
            ],
            reapply: Vec::new(),
        };
        admin(cluster, &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "conformance:tamper-bind"},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["cluster-admin"]}],
        }).to_string());
        admin(cluster, &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "conformance-tamper-bind", "namespace": admin_namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "conformance:tamper-bind"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": admin_group}],
        }).to_string());
        let (findings, _) = escalation_findings(cluster, &evaluated);
        assert!(
            findings
                .iter()
                .any(|f| f.contains("may bind the ClusterRole cluster-admin")),
            "{findings:?}"
        );
        report(
            &format!("{admin_group} given `bind` on cluster-admin"),
            &findings,
        );
    }

    // The aggregation check: the member role selects what is aggregated into edit.
    {
        let member_role = objects
            .iter()
            .find(|object| object.kind == "ClusterRole" && object.name == "tenantc:tenant-member")
            .expect("the member role")
            .clone();
        let _undo = Undo {
            cluster,
            delete: Vec::new(),
            reapply: vec![member_role.clone()],
        };
        let mut json = member_role.json.clone();
        json["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]});
        admin(cluster, &json.to_string());
        let findings = aggregation_findings(cluster, &evaluated, Some("tenantc:tenant-member"));
        assert!(
            findings.iter().any(|f| f.contains("resourcequotas")),
            "{findings:?}"
        );
        report("the member role with an aggregationRule", &findings);
    }

    // The cross-tenant Secret check: a member group bound in another tenant's namespace.
    {
        let own = evaluated
            .group_tenants
            .clone()
            .get(&member_group)
            .cloned()
            .unwrap_or_default();
        let other = evaluated
            .tenants
            .iter()
            .find(|(tenant, _)| !own.contains(*tenant))
            .and_then(|(_, places)| places.iter().next())
            .map(|(_, namespace)| namespace.clone())
            .expect("another tenant's namespace");
        let _undo = Undo {
            cluster,
            delete: vec![vec![
                "rolebinding".into(),
                "conformance-tamper-cross".into(),
                "-n".into(),
                other.clone(),
            ]],
            reapply: Vec::new(),
        };
        admin(cluster, &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "conformance-tamper-cross", "namespace": other},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tenantc:tenant-member"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": member_group}],
        }).to_string());
        let findings = live_secret_reads(cluster, &evaluated);
        assert!(
            findings
                .iter()
                .any(|f| f.contains(&format!("secrets in {other}"))),
            "{findings:?}"
        );
        report(&format!("{member_group} bound in {other}"), &findings);
    }

    // The ServiceAccount check: one account mounts its token again.
    {
        let account = objects
            .iter()
            .find(|object| object.kind == "ServiceAccount")
            .expect("a ServiceAccount")
            .clone();
        let _undo = Undo {
            cluster,
            delete: Vec::new(),
            reapply: vec![account.clone()],
        };
        let mut json = account.json.clone();
        json["automountServiceAccountToken"] = json!(true);
        admin(cluster, &json.to_string());
        let (findings, _) = service_account_findings(cluster, &evaluated);
        assert!(
            findings.iter().any(|f| f.contains(&account.name)),
            "{findings:?}"
        );
        report(
            &format!("ServiceAccount {} mounting its token", account.id()),
            &findings,
        );
    }

    // Every check passes again on the restored cluster.
    let (mut after, _) = table_findings(cluster, &evaluated, false);
    after.extend(escalation_findings(cluster, &evaluated).0);
    after.extend(service_account_findings(cluster, &evaluated).0);
    assert!(
        after.is_empty(),
        "the checks fail after the self-test restored the cluster:\n{}",
        after.join("\n")
    );
    println!("  every check passes again after the tampering is undone");
}

// The reviewer view's claims ------------------------------------------------------------------

/// Every verb a tenant role could hold on a namespaced resource, and those it must never hold.
const VIEW_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
    "impersonate",
];

/// One question about a tenant group and what the reviewer view says the answer is.
struct ViewClaim {
    question: Question,
    claimed: bool,
}

/// The questions of [`view_claims`]: in every namespace of every tenant, for each of its groups,
/// every verb of [`VIEW_VERBS`] on every resource the view names for any role and on every
/// namespaced floor kind (claimed where the view lists the verb, a sample it does not claim
/// otherwise), and in one namespace of another tenant in the same cell, reads and writes of
/// pods and Secrets (never claimed).
fn view_claims(review: &tenantc::review::Review) -> Vec<ViewClaim> {
    let mut resources: BTreeSet<(String, String)> = BTreeSet::new();
    for summary in &review.tenants {
        for group in &summary.groups {
            for rule in &group.rules {
                resources.insert((rule.api_group.clone(), rule.resource.clone()));
            }
        }
    }
    for kind in FLOOR.iter().filter(|kind| kind.scope == Scope::Namespaced) {
        resources.insert((kind.group.to_string(), kind.resource.to_string()));
    }
    let mut claims = Vec::new();
    for summary in &review.tenants {
        for group in &summary.groups {
            for cell in &summary.cells {
                for namespace in &cell.namespaces {
                    for (api_group, resource) in &resources {
                        let row = Row::new(Scope::Namespaced, api_group, resource);
                        let rule = group.rules.iter().find(|rule| {
                            &rule.api_group == api_group && &rule.resource == resource
                        });
                        for verb in VIEW_VERBS {
                            claims.push(ViewClaim {
                                question: Question::about(
                                    &group.group,
                                    &namespace.name,
                                    &row,
                                    verb,
                                ),
                                claimed: rule
                                    .is_some_and(|rule| rule.verbs.iter().any(|v| v == verb)),
                            });
                        }
                    }
                }
                // Another tenant's namespace in the same cell: the view claims nothing there.
                let other = review
                    .tenants
                    .iter()
                    .filter(|other| other.tenant != summary.tenant)
                    .flat_map(|other| &other.cells)
                    .filter(|other| other.cell == cell.cell)
                    .flat_map(|other| &other.namespaces)
                    .next();
                if let Some(other) = other {
                    for resource in ["pods", "secrets"] {
                        let row = Row::new(Scope::Namespaced, "", resource);
                        for verb in ["get", "list", "create", "delete"] {
                            claims.push(ViewClaim {
                                question: Question::about(&group.group, &other.name, &row, verb),
                                claimed: false,
                            });
                        }
                    }
                }
            }
        }
    }
    claims
}

/// Where the API server's answers differ from the view's claims.
fn view_mismatches(claims: &[ViewClaim], answers: &[bool]) -> Vec<String> {
    claims
        .iter()
        .zip(answers)
        .filter(|(claim, allowed)| claim.claimed != **allowed)
        .map(|(claim, allowed)| {
            let question = &claim.question;
            format!(
                "{} {} {}{} in {}: the view says {}, the API server says {}",
                question.group,
                question.verb,
                if question.api_group.is_empty() {
                    String::new()
                } else {
                    format!("{}/", question.api_group)
                },
                question.resource,
                question.namespace,
                if claim.claimed { "allowed" } else { "denied" },
                if *allowed { "allowed" } else { "denied" },
            )
        })
        .collect()
}

/// For each tenant group and each kind and verb the reviewer view (`golden/review/`) claims, and
/// a sample it does not claim, a SubjectAccessReview must answer exactly as the view says.
pub(super) fn rbac_matches_the_reviewer_view(cluster: &Cluster) {
    set_up(cluster);
    let compilation = support::compile_root(&support::fleet());
    let review = tenantc::review::review(compilation.plan.as_ref().expect("a plan"));
    let claims = view_claims(&review);
    let questions: Vec<Question> = claims.iter().map(|claim| claim.question.clone()).collect();
    let answers = ask(cluster, &questions);
    let mismatches = view_mismatches(&claims, &answers);
    let claimed = claims.iter().filter(|claim| claim.claimed).count();
    println!(
        "  {} questions about {} tenants: {claimed} claimed by the reviewer view, {} not claimed",
        claims.len(),
        review.tenants.len(),
        claims.len() - claimed
    );
    assert!(
        mismatches.is_empty(),
        "the API server and the reviewer view disagree ({}):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // Self-test: a view that claims one verb more, or one less, than the API server grants is
    // reported.
    let mut widened = claims;
    let denied = widened
        .iter()
        .position(|claim| !claim.claimed && claim.question.resource == "networkpolicies")
        .expect("a denied write on NetworkPolicies");
    widened[denied].claimed = true;
    let granted = widened
        .iter()
        .position(|claim| claim.claimed && claim.question.resource == "pods")
        .expect("a granted verb on pods");
    widened[granted].claimed = false;
    assert_eq!(
        view_mismatches(&widened, &answers).len(),
        2,
        "a tampered view must show two mismatches"
    );
    println!(
        "  the API server answers every question as the reviewer view claims; a tampered view is reported"
    );
}
