//! The typed declaration model.
//!
//! Consumes: nothing (plain data). Produced by `schema` from parsed files (with [`parse_cidr`]
//! for address blocks); read by `validate` and resolved by `plan`.
//!
//! Invariant: every value a user wrote keeps the span where it was written ([`Spanned`]), so any
//! later stage can point at it; fields that are optional in the language are `Option` here and
//! defaults are applied when the plan is resolved (`facts/defaults.rs` names them), never
//! silently at parse time.

use std::net::IpAddr;

use crate::quantity::Quantity;
use crate::source::{FileId, Span};

/// A value with the span it was written at.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Pairs a value with a span.
    pub fn new(value: T, span: Span) -> Self {
        Self { value, span }
    }
}

impl Spanned<String> {
    /// The string value.
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

/// Every declaration of one compilation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// Tenants, sorted by name.
    pub tenants: Vec<Tenant>,
    /// Cells, sorted by name.
    pub cells: Vec<Cell>,
}

impl Fleet {
    /// The cell of that name, if declared.
    pub fn cell(&self, name: &str) -> Option<&Cell> {
        self.cells.iter().find(|cell| cell.name.value == name)
    }
}

/// How strongly a tenant is isolated from others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Trust {
    /// Time-slicing or MPS sharing: utilisation, not isolation; one org only.
    Soft,
    /// Hardware MIG slices.
    Mig,
    /// Exclusive whole GPUs or nodes.
    Hard,
}

impl Trust {
    /// The declaration spelling, also used as a label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Soft => "soft",
            Trust::Mig => "mig",
            Trust::Hard => "hard",
        }
    }
}

/// The kind of a tenant workload, which gets a namespace of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// Training jobs.
    Train,
    /// Inference services.
    Infer,
}

impl WorkloadKind {
    /// The declaration spelling, also the namespace suffix.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Train => "train",
            WorkloadKind::Infer => "infer",
        }
    }
}

/// A tenant: an org, team or product.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    /// The file that declares it.
    pub file: FileId,
    /// The tenant name (a DNS label).
    pub name: Spanned<String>,
    /// The owning organisation.
    pub org: Spanned<String>,
    /// The team within the organisation.
    pub team: Spanned<String>,
    /// Isolation class; `None` when the value could not be read (the tenant is then incomplete,
    /// and no check that depends on the class runs).
    pub trust: Option<Spanned<Trust>>,
    /// Identity groups bound to Kubernetes roles.
    pub groups: Groups,
    /// Default container requests for the tenant's namespaces.
    pub container_defaults: ContainerDefaults,
    /// Per-cell quotas.
    pub quotas: Vec<Quota>,
    /// Workload kinds, one namespace each.
    pub workloads: Vec<Workload>,
    /// Allowed image registries.
    pub registries: Vec<Spanned<String>>,
    /// Model weights the tenant runs.
    pub models: Vec<ModelWeights>,
    /// Read-only object prefixes shared by several tenants, such as a base model
    /// (`shared-base "shared/llama-70b/"`); each starts with `shared/` and ends with `/`.
    pub shared_bases: Vec<Spanned<String>>,
    /// Fleet-level reservations across cells (`fleet` nodes), checked against the per-cell
    /// reservations.
    pub fleet: Vec<FleetReservation>,
    /// Extra chargeback labels (`chargeback { label "<key>" "<value>" }`), such as a cost
    /// centre, in the order written; added after tenantc's own to the tenant's Namespaces,
    /// ClusterQueue and LocalQueues once `validate/labels.rs` has checked them.
    pub chargeback: Vec<ChargebackLabel>,
    /// False when parts of the declaration could not be read and were left out (their errors
    /// are reported); checks that would report something as missing skip incomplete tenants.
    pub complete: bool,
}

impl Tenant {
    /// The tenant's quota in a cell, if it runs there.
    pub fn quota_in(&self, cell: &str) -> Option<&Quota> {
        self.quotas.iter().find(|quota| quota.cell.value == cell)
    }
}

/// A chargeback label a tenant declares: a label key and a label value, both read by `schema`
/// as their Kubernetes syntax.
#[derive(Debug, Clone, PartialEq)]
pub struct ChargebackLabel {
    /// The label key (`[prefix/]name`).
    pub key: Spanned<String>,
    /// The label value.
    pub value: Spanned<String>,
}

/// Identity groups of a tenant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Groups {
    /// Bound to tenantc's `tenantc:tenant-admin` ClusterRole (`lower/rbac.rs`).
    pub admin: Option<Spanned<String>>,
    /// Bound to tenantc's `tenantc:tenant-member` ClusterRole.
    pub member: Option<Spanned<String>>,
    /// Bound to tenantc's `tenantc:tenant-viewer` ClusterRole.
    pub viewer: Option<Spanned<String>>,
}

impl Groups {
    /// The group declared for `role`, if any.
    pub fn of(&self, role: TenantRole) -> Option<&Spanned<String>> {
        match role {
            TenantRole::Admin => self.admin.as_ref(),
            TenantRole::Member => self.member.as_ref(),
            TenantRole::Viewer => self.viewer.as_ref(),
        }
    }

    /// Every declared group with its role, in the order of [`TenantRole::ALL`].
    pub fn declared(&self) -> impl Iterator<Item = (TenantRole, &Spanned<String>)> {
        TenantRole::ALL
            .into_iter()
            .filter_map(|role| Some((role, self.of(role)?)))
    }
}

/// The role of a tenant group, as the keys of its `groups` declaration name it: each is bound
/// to one ClusterRole of tenantc's (`facts/rbac.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TenantRole {
    /// `admin`: manages the tenant's workloads and RoleBindings.
    Admin,
    /// `member`: runs workloads.
    Member,
    /// `viewer`: reads.
    Viewer,
}

impl TenantRole {
    /// Every role, in the order of their spellings.
    pub const ALL: [TenantRole; 3] = [TenantRole::Admin, TenantRole::Member, TenantRole::Viewer];

    /// The declaration spelling (the key in `groups`), also the suffix of the role's files.
    pub fn as_str(self) -> &'static str {
        match self {
            TenantRole::Admin => "admin",
            TenantRole::Member => "member",
            TenantRole::Viewer => "viewer",
        }
    }
}

/// Container defaults (LimitRange) of a tenant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerDefaults {
    /// CPU request for containers that set none.
    pub cpu: Option<Spanned<Quantity>>,
    /// Memory request for containers that set none (no limit is defaulted).
    pub memory: Option<Spanned<Quantity>>,
}

/// A tenant's quota in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Quota {
    /// The `quota` node or list item.
    pub span: Span,
    /// The cell.
    pub cell: Spanned<String>,
    /// CPU requests ceiling per namespace.
    pub cpu: Spanned<Quantity>,
    /// Memory requests ceiling per namespace.
    pub memory: Spanned<Quantity>,
    /// Pod count ceiling per namespace.
    pub pods: Spanned<i64>,
    /// GPU reservations per pool.
    pub pools: Vec<PoolQuota>,
    /// Kueue fair-sharing weight of the tenant's ClusterQueue in this cell (default 1).
    pub weight: Option<Spanned<i64>>,
    /// Explicit split of the cpu, memory and pods ceilings over the workload namespaces
    /// (`split` nodes); when empty, the ceilings are split by the workloads' `share`.
    pub splits: Vec<CeilingSplit>,
    /// Ceilings of storage and Service kinds (`ephemeral-storage=`, `storage=` and the others on
    /// the `quota` node); each is 0 where not declared.
    pub storage: StorageQuota,
    /// False when a reservation could not be read and was left out.
    pub complete: bool,
}

/// A tenant's ceilings beyond cpu, memory, pods and GPUs in one cell, split over its workload
/// namespaces by their `share`; an undeclared ceiling is 0 (deny by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageQuota {
    /// `requests.ephemeral-storage`: local scratch space that pods request.
    pub ephemeral_storage: Option<Spanned<Quantity>>,
    /// `requests.storage`: the storage that PersistentVolumeClaims request.
    pub storage: Option<Spanned<Quantity>>,
    /// `persistentvolumeclaims`: how many claims may exist.
    pub persistent_volume_claims: Option<Spanned<i64>>,
    /// `services.loadbalancers`: Services of type LoadBalancer.
    pub load_balancers: Option<Spanned<i64>>,
    /// `services.nodeports`: node ports of Services (NodePort and LoadBalancer).
    pub node_ports: Option<Spanned<i64>>,
}

/// One workload namespace's part of a tenant's cpu, memory and pods ceilings in a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingSplit {
    /// The node or list item.
    pub span: Span,
    /// The workload whose namespace gets this part.
    pub workload: Spanned<WorkloadKind>,
    /// CPU requests of the namespace.
    pub cpu: Spanned<Quantity>,
    /// Memory requests of the namespace.
    pub memory: Spanned<Quantity>,
    /// Pods of the namespace.
    pub pods: Spanned<i64>,
}

/// A tenant's reservation of one GPU model across cells.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetReservation {
    /// The node or list item.
    pub span: Span,
    /// The GPU model key (as pools name it).
    pub gpu: Spanned<String>,
    /// Whole GPUs reserved across the fleet.
    pub gpus: Spanned<i64>,
    /// How the total is split over cells.
    pub cells: Vec<FleetCellShare>,
}

/// One cell's part of a fleet reservation: a fixed number of GPUs, or a weight that shares
/// what the fixed parts leave.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetCellShare {
    /// The node or list item.
    pub span: Span,
    /// The cell.
    pub cell: Spanned<String>,
    /// Fixed GPUs in this cell.
    pub gpus: Option<Spanned<i64>>,
    /// Weight of this cell in the rest.
    pub weight: Option<Spanned<i64>>,
}

/// A reservation in one pool of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolQuota {
    /// The line or list item.
    pub span: Span,
    /// The pool name.
    pub pool: Spanned<String>,
    /// The MIG profile, for pools that offer MIG slices.
    pub profile: Option<Spanned<String>>,
    /// Guaranteed devices (Kueue nominal quota).
    pub reserved: Spanned<i64>,
    /// Devices that may be borrowed on top (Kueue borrowing limit).
    pub burst: Option<Spanned<i64>>,
    /// Restricts the reservation to one workload's namespace.
    pub workload: Option<Spanned<WorkloadKind>>,
    /// Devices of `reserved` that other tenants may borrow (Kueue lending limit); all of it
    /// when absent.
    pub lend: Option<Spanned<i64>>,
    /// The largest gang (devices one job needs at once) the tenant runs here.
    pub gang: Option<Spanned<i64>>,
    /// The topology level label a gang must stay within, when it does not fit one NVLink
    /// domain.
    pub within: Option<Spanned<String>>,
    /// The part of the tenant's cpu ceiling in the cell that pods on this pool may request
    /// (required, with `memory` and `pods`, once the tenant's queue has a topology pool).
    pub cpu: Option<Spanned<Quantity>>,
    /// The part of the tenant's memory ceiling that pods on this pool may request.
    pub memory: Option<Spanned<Quantity>>,
    /// The part of the tenant's pods ceiling that may run on this pool.
    pub pods: Option<Spanned<i64>>,
}

/// A tenant workload kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The node or list item.
    pub span: Span,
    /// Train or infer.
    pub kind: Spanned<WorkloadKind>,
    /// The service account pods of this workload run as.
    pub service_account: Spanned<String>,
    /// The priority class its pods use.
    pub priority: Option<Spanned<String>>,
    /// Weight of this workload's namespace in the split of the tenant's ceilings (default 1).
    pub share: Option<Spanned<i64>>,
    /// Reviewed exceptions to the `restricted` Pod Security level (`exception` nodes).
    pub exceptions: Vec<PodSecurityException>,
}

/// A reviewed exception to the `restricted` Pod Security level of a workload's namespace:
/// Linux capabilities its containers may add (`lower/guard.rs` keeps every other rule).
#[derive(Debug, Clone, PartialEq)]
pub struct PodSecurityException {
    /// The node or list item.
    pub span: Span,
    /// The exception's name (a DNS label), shown in reviews.
    pub name: Spanned<String>,
    /// Linux capabilities, as `securityContext.capabilities.add` spells them.
    pub capabilities: Vec<Spanned<String>>,
    /// Why the workload needs them.
    pub reason: Spanned<String>,
    /// Who reviewed and approved the exception.
    pub approved_by: Spanned<String>,
}

/// A model the tenant runs, with its weight location.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelWeights {
    /// The node or list item.
    pub span: Span,
    /// The model name.
    pub name: Spanned<String>,
    /// The version string.
    pub version: Spanned<String>,
    /// The object-storage prefix holding the weights.
    pub prefix: Spanned<String>,
    /// Who must have signed the weights; `None` when the model declares no signer, which
    /// `weights` reports (`weights-signer-missing`).
    pub signer: Option<Signer>,
}

/// Who signs a model's weights.
#[derive(Debug, Clone, PartialEq)]
pub enum Signer {
    /// PEM public keys (paths relative to the repository root, under `keys/<tenant>/`); a
    /// signature by any one of them is accepted.
    Keys(Vec<Spanned<String>>),
    /// A keyless (Fulcio certificate) identity, checked against a pinned trust root.
    Keyless(KeylessSigner),
}

/// A keyless signing identity.
#[derive(Debug, Clone, PartialEq)]
pub struct KeylessSigner {
    /// The `keyless` node or mapping.
    pub span: Span,
    /// The certificate's subject alternative name, such as a CI workflow URI.
    pub san: Spanned<String>,
    /// The OIDC issuer the certificate must name.
    pub issuer: Spanned<String>,
    /// The path of the pinned `trusted_root.json`, relative to the repository root.
    pub trust_root: Spanned<String>,
}

/// A cell: one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The file that declares it.
    pub file: FileId,
    /// The cell name (a DNS label).
    pub name: Spanned<String>,
    /// Cloud provider; empty when it could not be read (the cell is then incomplete, and the
    /// one check of it, the storage identity's cloud, skips an empty one).
    pub cloud: Spanned<String>,
    /// Cloud region; empty when it could not be read.
    pub region: Spanned<String>,
    /// Kubernetes minor version, such as `(1, 33)`; `None` when it could not be read (the cell
    /// is then incomplete, and is never planned).
    pub kubernetes: Option<Spanned<(u32, u32)>>,
    /// NVIDIA driver branch, such as 570; `None` when it could not be read (the cell is then
    /// incomplete, and no driver check runs).
    pub driver: Option<Spanned<u32>>,
    /// Where cluster DNS runs (for network policies).
    pub dns: Dns,
    /// The platform metrics scraper that may reach tenant pods (for network policies).
    pub metrics: Option<Metrics>,
    /// Where the cell's chargeback recording rules go and which serving metric they read
    /// (`metering`); no PrometheusRule is emitted when absent.
    pub metering: Option<Metering>,
    /// Endpoints outside the cluster that tenant pods may reach on TCP 443 (model weights and
    /// object storage), as CIDRs, since NetworkPolicy has no host names.
    pub endpoints: Vec<Endpoint>,
    /// DRA device classes whose devices tenant quotas deny (cells on Kubernetes 1.34 and later);
    /// empty means NVIDIA's `gpu.nvidia.com` and `mig.nvidia.com`.
    pub dra_device_classes: Vec<Spanned<String>>,
    /// Namespace of the NVIDIA GPU Operator, where MIG and device-plugin configs go.
    pub gpu_operator_namespace: Option<Spanned<String>>,
    /// Reserved or wildcard-like RBAC groups (`system:authenticated`) that tenants may bind in
    /// this cell; every other such group is refused.
    pub allow_groups: Vec<Spanned<String>>,
    /// GPU models declared by the cell because the catalog lacks them.
    pub gpu_models: Vec<GpuModelDecl>,
    /// False when a declared GPU model could not be read (pools naming an unknown model are
    /// then not reported, since the model may be the unreadable one).
    pub gpu_models_complete: bool,
    /// GPU node pools.
    pub pools: Vec<Pool>,
    /// Priority classes tenants may use.
    pub priorities: Vec<Priority>,
    /// How far the sum of reserved plus burst over a pool may exceed its capacity, as a ratio
    /// (`oversubscribe 1.5`); 1 when absent.
    pub oversubscribe: Option<Spanned<f64>>,
    /// Per-org settings of the cell's cohort tree (`org` nodes).
    pub orgs: Vec<OrgDecl>,
    /// The identities allowed to change objects tenantc manages (`gitops`); the defaults of
    /// `lower/guard.rs` when absent.
    pub gitops: Option<GitOps>,
    /// Container runtimes GPU pods may name (`runtime-class` nodes), each for some trust
    /// classes and pools.
    pub runtime_classes: Vec<RuntimeClassDecl>,
    /// Label keys that no tenant pod may carry (`forbidden-label-keys`), on top of
    /// `facts::labels::FORBIDDEN_LABEL_KEYS`.
    pub forbidden_label_keys: Vec<Spanned<String>>,
    /// The cell's object-store buckets and workload identity (`storage`), from which
    /// `lower/iam.rs` derives per-tenant storage IAM; no IAM is emitted when absent.
    pub storage: Option<Storage>,
    /// The cell's serving gateway and the models it serves once for several tenants
    /// (`serving`), from which `lower/serving.rs` emits per-tenant limits; none when absent.
    pub serving: Option<Serving>,
    /// The batch scheduler that holds the cell's queues and gangs (`scheduler`); Kueue
    /// (`facts/defaults.rs`) when absent.
    pub scheduler: Option<Spanned<Scheduler>>,
    /// The engine of the tenant admission floor (`admission`); ValidatingAdmissionPolicy
    /// (`facts/defaults.rs`) when absent.
    pub admission: Option<Spanned<AdmissionEngine>>,
    /// How GPUs and MIG slices reach pods (`devices`); the NVIDIA device plugin
    /// (`facts/defaults.rs`) when absent.
    pub devices: Option<Spanned<DeviceMode>>,
    /// False when parts of the declaration could not be read and were left out; references
    /// into an incomplete cell are not reported as unknown, and its capacity is not checked.
    pub complete: bool,
}

/// The batch scheduler of a cell: what its tenants' queues, quotas and gangs are lowered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scheduler {
    /// Kueue (`kueue.x-k8s.io/v1beta2`): ResourceFlavors, Cohorts, ClusterQueues, LocalQueues.
    Kueue,
    /// Volcano (`scheduling.volcano.sh/v1beta1`): a Queue per tenant under a Queue per org, gangs
    /// through PodGroups.
    Volcano,
}

impl Scheduler {
    /// Every scheduler, in the order of their spellings.
    pub const ALL: [Scheduler; 2] = [Scheduler::Kueue, Scheduler::Volcano];

    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheduler::Kueue => "kueue",
            Scheduler::Volcano => "volcano",
        }
    }
}

/// The policy engine of a cell's tenant admission floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdmissionEngine {
    /// ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`, Kubernetes 1.30 and later).
    Vap,
    /// Kyverno policies (declared and parsed; not yet emitted).
    Kyverno,
    /// OPA Gatekeeper ConstraintTemplates and Constraints (declared and parsed; not yet emitted).
    Gatekeeper,
}

impl AdmissionEngine {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionEngine::Vap => "vap",
            AdmissionEngine::Kyverno => "kyverno",
            AdmissionEngine::Gatekeeper => "gatekeeper",
        }
    }
}

/// How a cell hands GPUs and MIG slices to pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceMode {
    /// The NVIDIA device plugin's extended resources (`nvidia.com/gpu`, `nvidia.com/mig-…`).
    DevicePlugin,
    /// Dynamic Resource Allocation (`resource.k8s.io/v1`, Kubernetes 1.34 and later): the NVIDIA
    /// DRA driver's devices through DeviceClasses and ResourceClaims (`docs/dra.md`).
    Dra,
}

impl DeviceMode {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceMode::DevicePlugin => "device-plugin",
            DeviceMode::Dra => "dra",
        }
    }
}

/// A cell's shared inference serving (`serving { gateway …; model … { tenant …; } }`),
/// declared by the platform in the cell file ([serving.md](../../docs/serving.md)).
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    /// The node or mapping.
    pub span: Span,
    /// The gateway every served request passes.
    pub gateway: ServingGateway,
    /// Models served once for several tenants.
    pub models: Vec<ServedModel>,
}

/// The serving gateway of a cell: an Envoy Gateway `Gateway` that authenticates every request
/// and sets the tenant header from a verified claim.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingGateway {
    /// The node or mapping.
    pub span: Span,
    /// The Gateway implementation (`envoy-gateway`).
    pub kind: Spanned<GatewayKind>,
    /// The Gateway's name.
    pub name: Spanned<String>,
    /// The Gateway's namespace.
    pub namespace: Spanned<String>,
    /// The request header the gateway sets from the authenticated claim, after removing any
    /// copy the client sent; the only key of every emitted limit.
    pub tenant_header: Spanned<String>,
    /// The JWT claim the header is set from.
    pub claim: Spanned<String>,
}

/// The gateway implementations tenantc emits serving policies for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GatewayKind {
    /// Envoy Gateway (`gateway.envoyproxy.io` BackendTrafficPolicy on Gateway API routes).
    EnvoyGateway,
}

impl GatewayKind {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayKind::EnvoyGateway => "envoy-gateway",
        }
    }
}

/// An inference engine a served model runs on, which decides the cache partition setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServingStack {
    /// vLLM's OpenAI-compatible server.
    Vllm,
    /// SGLang's OpenAI-compatible server.
    Sglang,
}

impl ServingStack {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ServingStack::Vllm => "vllm",
            ServingStack::Sglang => "sglang",
        }
    }
}

/// Whether a served model keeps one prefix (KV) cache for all its tenants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PrefixCache {
    /// One engine-wide prefix cache; tenants' entries are told apart only by their cache salt.
    Shared,
    /// Prefix caching is off.
    Off,
}

impl PrefixCache {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PrefixCache::Shared => "shared",
            PrefixCache::Off => "off",
        }
    }
}

/// A model served once for several tenants.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedModel {
    /// The node or mapping.
    pub span: Span,
    /// The model's name (a DNS label), which names its routes and policies.
    pub name: Spanned<String>,
    /// The engine it runs on.
    pub stack: Spanned<ServingStack>,
    /// The platform namespace of its Service, where its routes and policies go.
    pub namespace: Spanned<String>,
    /// Its Service.
    pub service: Spanned<String>,
    /// The Service's port.
    pub port: Spanned<i64>,
    /// The requests per second it is sized for.
    pub requests_per_second: Spanned<i64>,
    /// The concurrent requests it is sized for.
    pub concurrency: Spanned<i64>,
    /// Whether its prefix cache is shared by its tenants.
    pub prefix_cache: Spanned<PrefixCache>,
    /// The tenants it serves, each with its limits.
    pub tenants: Vec<ServedTenant>,
}

/// One tenant of a served model and its limits at the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTenant {
    /// The node or mapping.
    pub span: Span,
    /// The tenant.
    pub tenant: Spanned<String>,
    /// Requests per second above which the gateway answers 429.
    pub requests_per_second: Spanned<i64>,
    /// Concurrent requests above which the gateway answers 429.
    pub concurrency: Spanned<i64>,
}

/// The object storage of a cell and how its workloads authenticate to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Storage {
    /// The node or mapping.
    pub span: Span,
    /// Buckets holding `models/<tenant>/`, `checkpoints/<tenant>/` and `shared/` prefixes.
    pub buckets: Vec<Spanned<String>>,
    /// The cloud identity tenant ServiceAccounts are bound to.
    pub identity: CloudIdentity,
    /// The shared bases the platform grants, each with its readers (`shared-base "shared/…/"
    /// { tenants "a" "b"; }`); when a cell lists any, a tenant's `shared-base` in this or any
    /// cell with one of the same buckets must lie in one that lists the tenant
    /// (`shared-base-not-granted`), else every base is open.
    pub shared_bases: Vec<SharedBaseGrant>,
}

/// A shared base a cell grants to some tenants.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBaseGrant {
    /// The node or list item.
    pub span: Span,
    /// The object key prefix, `shared/…/`.
    pub prefix: Spanned<String>,
    /// The tenants that may read it.
    pub tenants: Vec<Spanned<String>>,
}

/// A cell's workload identity: how a Kubernetes ServiceAccount becomes a cloud identity.
#[derive(Debug, Clone, PartialEq)]
pub enum CloudIdentity {
    /// AWS IAM roles, assumed through EKS Pod Identity or IRSA.
    Aws(AwsIdentity),
    /// Google service accounts, impersonated through GKE Workload Identity.
    Gcp(GcpIdentity),
}

impl CloudIdentity {
    /// The `cloud` a cell must declare for this identity.
    pub fn cloud(&self) -> &'static str {
        match self {
            CloudIdentity::Aws(_) => "aws",
            CloudIdentity::Gcp(_) => "gcp",
        }
    }

    /// The node that declares it.
    pub fn span(&self) -> Span {
        match self {
            CloudIdentity::Aws(aws) => aws.span,
            CloudIdentity::Gcp(gcp) => gcp.span,
        }
    }
}

/// How EKS pods assume an IAM role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AwsMode {
    /// EKS Pod Identity: a pod identity association per ServiceAccount.
    PodIdentity,
    /// IAM roles for service accounts: the cluster's OIDC provider and a role annotation.
    Irsa,
}

/// The AWS account and the way pods assume roles in it.
#[derive(Debug, Clone, PartialEq)]
pub struct AwsIdentity {
    /// The node or mapping.
    pub span: Span,
    /// The 12-digit account id that holds the roles and buckets.
    pub account: Spanned<String>,
    /// Pod Identity or IRSA.
    pub mode: Spanned<AwsMode>,
    /// The cluster's OIDC provider without `https://` (IRSA only).
    pub oidc_provider: Option<Spanned<String>>,
    /// The EKS cluster name (Pod Identity only); the cell name when absent.
    pub cluster: Option<Spanned<String>>,
}

/// The Google Cloud project and Workload Identity pool of a GKE cell.
#[derive(Debug, Clone, PartialEq)]
pub struct GcpIdentity {
    /// The node or mapping.
    pub span: Span,
    /// The project id that holds the Google service accounts.
    pub project: Spanned<String>,
    /// The Workload Identity pool; `<project>.svc.id.goog` when absent.
    pub workload_pool: Option<Spanned<String>>,
}

/// Who may change the objects tenantc manages in a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct GitOps {
    /// The node or list item.
    pub span: Span,
    /// The Kubernetes user name of the GitOps controller that syncs `out/<cell>/`.
    pub user: Option<Spanned<String>>,
    /// A group whose members may change managed objects by hand in an emergency.
    pub break_glass: Option<Spanned<String>>,
    /// Which controller syncs the cell, when declared; without it no Argo CD or Flux objects
    /// are emitted for the cell.
    pub controller: Option<Spanned<GitOpsController>>,
    /// Argo CD: the Git repository that holds the rendered tree (`https://` or `ssh://`).
    pub repo: Option<Spanned<String>>,
    /// Argo CD: the branch, tag or commit to sync.
    pub revision: Option<Spanned<String>>,
    /// The folder of the rendered tree inside the repository (`out` when absent).
    pub path: Option<Spanned<String>>,
    /// Argo CD: the API server URL of the cell's cluster.
    pub destination: Option<Spanned<String>>,
    /// Argo CD: the name of the cell's cluster as registered in Argo CD.
    pub cluster: Option<Spanned<String>>,
    /// Argo CD: the AppProject of the generated Applications.
    pub project: Option<Spanned<String>>,
    /// The namespace of the controller and of the objects tenantc emits for it.
    pub namespace: Option<Spanned<String>>,
    /// Flux: the name of the GitRepository that holds the rendered tree.
    pub source: Option<Spanned<String>>,
}

/// The GitOps controller that syncs a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GitOpsController {
    /// Argo CD: an ApplicationSet in `out/argocd/`.
    ArgoCd,
    /// Flux: Kustomizations in `out/flux/`.
    Flux,
}

/// An org's cohort settings in a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgDecl {
    /// The node or list item.
    pub span: Span,
    /// The org name, as tenants declare it.
    pub name: Spanned<String>,
    /// Kueue fair-sharing weight of the org's cohort.
    pub weight: Option<Spanned<i64>>,
    /// The tenants the platform lists as the org's members in this cell (`tenants "a" "b"`),
    /// or `None` when the cell lists none; `validate/orgs.rs` holds every tenant with a quota
    /// in the cell that declares the org to this list.
    pub tenants: Option<Vec<Spanned<String>>>,
}

/// A RuntimeClass of a cell: a container runtime handler that GPU pods of some trust classes
/// may name in `runtimeClassName`.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeClassDecl {
    /// The node or list item.
    pub span: Span,
    /// The RuntimeClass name (a DNS subdomain).
    pub name: Spanned<String>,
    /// The CRI handler the nodes register (a DNS label).
    pub handler: Spanned<String>,
    /// The trust classes whose tenants' GPU pods may use it.
    pub trust: Vec<Spanned<Trust>>,
    /// The pools whose nodes run the handler; every node of the cell when empty.
    pub pools: Vec<Spanned<String>>,
}

/// A GPU model declared in a cell, with the same facts as a catalog entry.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuModelDecl {
    /// The node or list item.
    pub span: Span,
    /// The model key pools refer to.
    pub name: Spanned<String>,
    /// Product name as NVML reports it.
    pub product: Option<Spanned<String>>,
    /// PCI ids in mig-parted device-filter form (`0xDDDDVVVV`).
    pub pci_ids: Vec<Spanned<String>>,
    /// Supported sharing modes.
    pub sharing: Vec<Spanned<Sharing>>,
    /// The MIG table, for models that support MIG.
    pub mig: Option<MigTableDecl>,
}

/// The MIG geometry of a declared GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct MigTableDecl {
    /// The node or list item.
    pub span: Span,
    /// Compute slices of the whole GPU.
    pub compute_slices: Spanned<i64>,
    /// Memory slices of the whole GPU.
    pub memory_slices: Spanned<i64>,
    /// Length of the placement axis.
    pub placement_units: Spanned<i64>,
    /// GPU-instance profiles.
    pub profiles: Vec<MigProfileDecl>,
}

/// One GPU-instance profile of a declared GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct MigProfileDecl {
    /// The node or list item.
    pub span: Span,
    /// Profile name such as `1g.10gb`.
    pub name: Spanned<String>,
    /// Profile id from `nvidia-smi mig -lgip`.
    pub id: Option<Spanned<i64>>,
    /// Compute slices.
    pub compute: Spanned<i64>,
    /// Memory slices.
    pub memory: Spanned<i64>,
    /// Instances per GPU at most.
    pub max: Spanned<i64>,
    /// Length on the placement axis.
    pub size: Spanned<i64>,
    /// Allowed start positions on the placement axis.
    pub starts: Vec<Spanned<i64>>,
}

/// Where cluster DNS runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Dns {
    /// Namespace of the DNS pods.
    pub namespace: Option<Spanned<String>>,
    /// Label selector `key=value` of the DNS pods.
    pub selector: Option<Spanned<String>>,
    /// The NodeLocal DNSCache address on every node, such as `169.254.20.10`, as a CIDR of one
    /// address.
    pub node_local: Option<Spanned<Cidr>>,
}

/// The platform's metrics scraper.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// The node or mapping.
    pub span: Span,
    /// Namespace of the scraper pods.
    pub namespace: Spanned<String>,
    /// Label selector `key=value` of the scraper pods; every pod of the namespace when absent.
    pub selector: Option<Spanned<String>>,
}

/// The cell's chargeback metering (`metering`): the PrometheusRule of `lower/metering.rs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Metering {
    /// The node or mapping.
    pub span: Span,
    /// The namespace of the PrometheusRule, one the Prometheus server's `ruleNamespaceSelector`
    /// selects; the `metrics` namespace when absent.
    pub namespace: Option<Spanned<String>>,
    /// The label `key=value` its `ruleSelector` matches, put on the PrometheusRule.
    pub rule_label: Option<Spanned<String>>,
    /// The serving metric whose value is the KV-cache seats in use per pod, such as
    /// `vllm:num_requests_running`; no KV-seat rules without it.
    pub serving_metric: Option<Spanned<String>>,
}

impl Metering {
    /// The prefix of every series the chargeback rules record (`tenantc:…`), which a serving
    /// metric may not carry: the rules would read their own output.
    pub const RECORDED_PREFIX: &'static str = "tenantc:";
}

/// An endpoint outside the cluster that tenant pods may reach on TCP 443.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The node or list item.
    pub span: Span,
    /// What it is, such as `model-weights`.
    pub name: Spanned<String>,
    /// Its addresses.
    pub cidr: Spanned<Cidr>,
}

/// An IPv4 or IPv6 address block, normalised: no host bits set below the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cidr {
    /// The network address.
    pub address: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// Parses `a.b.c.d/n`, an IPv6 block, or a bare address (a block of one address).
///
/// The error says what is wrong, for the label of `network-cidr-invalid`.
pub fn parse_cidr(text: &str) -> Result<Cidr, String> {
    let (address_text, prefix_text) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let address: IpAddr = address_text
        .parse()
        .map_err(|_| format!("`{address_text}` is not an IPv4 or IPv6 address"))?;
    let bits: u8 = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix_text {
        None => bits,
        Some(prefix) => {
            let digits_only = !prefix.is_empty()
                && prefix.chars().all(|ch| ch.is_ascii_digit())
                && (prefix.len() == 1 || !prefix.starts_with('0'));
            match prefix.parse::<u8>() {
                Ok(value) if digits_only && value <= bits => value,
                _ => return Err(format!("the prefix length must be 0 to {bits}")),
            }
        }
    };
    let network = mask(address, prefix);
    if network != address {
        return Err(format!(
            "host bits are set below the prefix; the block is `{network}/{prefix}`"
        ));
    }
    Ok(Cidr { address, prefix })
}

/// The address with every bit below `prefix` cleared.
fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & kept).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & kept).into())
        }
    }
}

/// How a pool's GPUs are shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sharing {
    /// Whole GPUs, one pod each.
    Exclusive,
    /// MIG with the device plugin's mixed strategy: one resource per profile.
    Mig,
    /// MIG with the single strategy: one profile per node, advertised as `nvidia.com/gpu`.
    MigSingle,
    /// Time-slicing replicas.
    TimeSlice,
    /// CUDA MPS.
    Mps,
}

impl Sharing {
    /// The declaration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Sharing::Exclusive => "exclusive",
            Sharing::Mig => "mig",
            Sharing::MigSingle => "mig-single",
            Sharing::TimeSlice => "time-slice",
            Sharing::Mps => "mps",
        }
    }

    /// Whether pods on this pool share a GPU with other pods.
    pub fn is_shared(self) -> bool {
        matches!(self, Sharing::TimeSlice | Sharing::Mps)
    }

    /// Whether the pool uses MIG partitions.
    pub fn is_mig(self) -> bool {
        matches!(self, Sharing::Mig | Sharing::MigSingle)
    }
}

/// Gives each closed set its declaration spelling wherever it is shown: printed, and serialized
/// (the plan's `describe` JSON), so the plan keeps the enum and the views show what the
/// declaration says.
macro_rules! spelled_as_declared {
    ($($set:ty),* $(,)?) => {
        $(
            impl std::fmt::Display for $set {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(self.as_str())
                }
            }

            impl serde::Serialize for $set {
                fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    serializer.serialize_str(self.as_str())
                }
            }
        )*
    };
}

spelled_as_declared!(
    Trust,
    WorkloadKind,
    Sharing,
    TenantRole,
    GatewayKind,
    ServingStack,
    PrefixCache,
    Scheduler,
    AdmissionEngine,
    DeviceMode,
);

/// A GPU node pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// The `pool` node or list item.
    pub span: Span,
    /// The pool name (a DNS label).
    pub name: Spanned<String>,
    /// The GPU model key.
    pub gpu: Spanned<String>,
    /// Number of nodes.
    pub nodes: Spanned<i64>,
    /// GPUs per node.
    pub gpus_per_node: Spanned<i64>,
    /// Sharing mode.
    pub sharing: Spanned<Sharing>,
    /// GPUs per NVLink domain.
    pub nvlink_domain: Option<Spanned<i64>>,
    /// Node labels, sorted by key.
    pub labels: Vec<(Spanned<String>, Spanned<String>)>,
    /// Node taints.
    pub taints: Vec<Taint>,
    /// Price per GPU-hour.
    pub price_per_gpu_hour: Option<Spanned<f64>>,
    /// Replicas per GPU for time-slicing or MPS.
    pub replicas: Option<Spanned<i64>>,
    /// MIG layouts (node groups).
    pub mig_layouts: Vec<MigLayout>,
    /// Network topology below the pool, coarse to fine; `kubernetes.io/hostname` is the
    /// implied last level.
    pub topology: Option<Topology>,
    /// The one tenant the platform reserves the pool for (`owner "<tenant>"`): no other tenant
    /// may name it in a quota, and only its owner can be granted host access on it.
    pub owner: Option<Spanned<String>>,
}

/// The topology levels of a pool, for Kueue topology-aware scheduling.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// The node or list item.
    pub span: Span,
    /// Levels from coarsest to finest.
    pub levels: Vec<TopologyLevel>,
}

/// One topology level: a node label and how many nodes one domain of it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyLevel {
    /// The node or list item.
    pub span: Span,
    /// The node label whose value names the domain.
    pub label: Spanned<String>,
    /// Nodes per domain.
    pub nodes: Spanned<i64>,
}

/// The node label of the finest topology level.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

impl Pool {
    /// Total GPUs in the pool.
    pub fn gpus(&self) -> i64 {
        self.nodes.value.saturating_mul(self.gpus_per_node.value)
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq)]
pub struct Taint {
    /// The node or list item.
    pub span: Span,
    /// Taint key.
    pub key: Spanned<String>,
    /// Taint value.
    pub value: Option<Spanned<String>>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: Spanned<String>,
}

/// A MIG geometry applied to every GPU of a group of nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct MigLayout {
    /// The node or list item.
    pub span: Span,
    /// Layout name.
    pub name: Spanned<String>,
    /// Nodes in this group; all nodes of the pool when the pool has one layout.
    pub nodes: Option<Spanned<i64>>,
    /// Profile name and count per GPU, in source order.
    pub profiles: Vec<(Spanned<String>, Spanned<i64>)>,
}

/// A PriorityClass that tenant workloads may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Priority {
    /// The node or list item.
    pub span: Span,
    /// Class name.
    pub name: Spanned<String>,
    /// Priority value.
    pub value: Spanned<i64>,
    /// Whether pods of this class may preempt lower ones.
    pub preempt: Option<Spanned<bool>>,
    /// Free-text description.
    pub description: Option<Spanned<String>>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::parse_cidr;

    #[test]
    fn parses_canonical_blocks_and_bare_addresses() {
        assert_eq!(
            parse_cidr("10.40.0.0/16").unwrap().to_string(),
            "10.40.0.0/16"
        );
        assert_eq!(
            parse_cidr("169.254.20.10").unwrap().to_string(),
            "169.254.20.10/32"
        );
        assert_eq!(parse_cidr("0.0.0.0/0").unwrap().to_string(), "0.0.0.0/0");
        assert_eq!(
            parse_cidr("fd00:10::/32").unwrap().to_string(),
            "fd00:10::/32"
        );
        assert_eq!(parse_cidr("fd00::1").unwrap().to_string(), "fd00::1/128");
    }

    #[test]
    fn rejects_blocks_that_are_not_canonical_cidrs() {
        for text in [
            "10.40.0.1/16",
            "10.40.0.0/33",
            "10.40.0.0/",
            "10.40.0.0/016",
            "10.40.0.0/+8",
            "10.40.0/16",
            "010.40.0.0/16",
            "s3.amazonaws.com",
            "fd00::1/64",
            "fd00::/129",
            "",
        ] {
            assert!(parse_cidr(text).is_err(), "{text} was accepted");
        }
        assert_eq!(
            parse_cidr("10.40.0.1/16").unwrap_err(),
            "host bits are set below the prefix; the block is `10.40.0.0/16`"
        );
    }
}
