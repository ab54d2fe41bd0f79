#!/usr/bin/env python3
"""Validate every object that tenantc emitted under out/, the way a cluster would see it.

For each cell folder out/<cell>/ (a folder holding kustomization.yaml):
  1. render it with `kubectl kustomize out/<cell>`: exactly what Argo CD or Flux applies;
  2. read the cell's Kubernetes minor version from the
     `pod-security.kubernetes.io/enforce-version: v1.NN` label of its Namespaces
     (no Namespace: the newest version kubernetes-validate knows, with a notice);
  3. validate every rendered object:
     - built-in API groups (v1, apps/v1, rbac.authorization.k8s.io/v1, ...): against the
       kubernetes-validate "local-strict" JSON schemas of that version (unknown fields are
       errors; a kind/version that Kubernetes 1.NN does not serve is an error), plus a few
       rules the API server applies that those schemas leave out (quantity syntax, label and
       annotation syntax, object names, namespaced vs cluster-scoped);
     - custom resources whose CRD is vendored under schema/crds/ (any *.yaml below it): against
       the CRD's openAPIV3Schema for the served version, strict (unknown fields are errors);
       CEL rules (x-kubernetes-validations) are not evaluated and are counted instead;
     - other custom resources: counted as "not validated: <kind> (no schema)".
Independently, every *.yaml file under out/, every YAML document embedded in a ConfigMap
(mig-parted and device-plugin configs) and every rendered cell is read with PyYAML (YAML 1.1,
as sigs.k8s.io/yaml in kubectl and Argo CD reads) and with ruamel.yaml (YAML 1.2); anything
that reads differently (unquoted on/yes/no, 0755, 1e3, 1:30, duplicate keys) fails. Every
*.json file under out/ must parse.

Exit status: 0 all good, 1 validation failures, 2 usage or setup errors.
Usage: validate-out.py [OUT] [--rendered DIR] [--crds DIR] [--kubectl PATH]
       validate-out.py --self-test     (the checks catch what they should; no out/ needed)
--rendered DIR reads DIR/<cell>.yaml (kubectl kustomize output, as .ci/run writes it) instead
of running kustomize again.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import functools
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterator

try:
    import jsonschema
    import kubernetes_validate
    import kubernetes_validate.utils as kv_utils
    import yaml
    from referencing import Registry, Resource
    from ruamel.yaml import YAML
except ImportError as err:  # pragma: no cover - setup problem
    sys.exit(
        f"validate-out: missing Python package ({err}); "
        "run: pip install kubernetes-validate==1.37.0 ruamel.yaml"
    )

# API groups built into Kubernetes. Objects in these groups must validate against the
# kubernetes-validate schemas; a kind or version missing from them is an error (removed or
# misspelt API). Every other group is a custom resource.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

# Built-in kinds that are cluster-scoped; every other built-in kind is namespaced.
CLUSTER_SCOPED_BUILTIN_KINDS = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterTrustBundle",
        "ComponentStatus",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "DeviceTaintRule",
        "FlowSchema",
        "IngressClass",
        "IPAddress",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "ServiceCIDR",
        "StorageClass",
        "StorageVersion",
        "StorageVersionMigration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
        "VolumeAttributesClass",
    }
)

# RBAC objects only need a path-segment name; Services need a DNS-1035 label; Namespaces a
# DNS-1123 label; every other kind a DNS-1123 subdomain (apimachinery's NameIsDNSSubdomain).
PATH_SEGMENT_NAME_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})

PSA_VERSION_LABEL = "pod-security.kubernetes.io/enforce-version"

# PyYAML's YAML 1.1 reader; the libyaml parser when present (same data, ~10x faster).
YAML11_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_all_11(text: str) -> list:
    return list(yaml.load_all(text, Loader=YAML11_LOADER))


DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# k8s.io/apimachinery/pkg/api/resource: <sign><digits>[.<digits>]<suffix>, where the suffix is a
# binary SI (Ki..Ei), a decimal SI (m, "", k, M..E) or a decimal exponent (e|E<signed int>).
QUANTITY = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def obj_id(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name", "<no name>")
    return f"{obj.get('kind', '<no kind>')} {ns + '/' if ns else ''}{name}"


def obj_key(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name"))


def json_path(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def error_text(err: jsonschema.ValidationError) -> str:
    msg = err.message
    if any(c.validator == "pattern" and c.validator_value == QUANTITY for c in err.context):
        return f"{err.instance!r} is not a Kubernetes quantity (like 500m, 1k, 2Gi, 1e3)"
    if err.validator in ("anyOf", "oneOf") and err.context:
        # Say why each branch failed, briefly, instead of "is not valid under any of ...".
        reasons = sorted({c.message for c in err.context})
        msg += " (" + "; ".join(reasons[:3]) + ")"
    if len(msg) > 400:
        msg = msg[:400] + "..."
    return msg


def qualified_name_problem(key: str) -> str | None:
    """apimachinery IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain <= 253."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"prefix {prefix!r} must be a lowercase DNS-1123 subdomain of at most 253 characters"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return f"name part {name!r} must be at most 63 characters"
    if not QUALIFIED_NAME_PART.match(name):
        return (
            f"name part {name!r} must consist of alphanumerics, '-', '_' or '.', "
            "and start and end with an alphanumeric"
        )
    return None


# --------------------------------------------------------------------------------------------
# YAML 1.1 versus YAML 1.2
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _ruamel() -> YAML:
    # YAML 1.2 unless a %YAML directive says otherwise. typ="safe" uses ruamel.yaml.clib's
    # parser when installed (4x faster, same 1.2 resolver), else the pure-Python one.
    reader = YAML(typ="safe")
    reader.allow_duplicate_keys = False
    return reader


def typed(value: Any) -> Any:
    """Make a scalar comparable with its type (in Python True == 1 and 1 == 1.0)."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return ("timestamp", value.isoformat())
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def first_difference(a: Any, b: Any, path: tuple = ()) -> tuple[tuple, Any, Any] | None:
    """The first place where two loaded documents differ in value or type, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys_a, keys_b = [typed(k) for k in a], [typed(k) for k in b]
        if sorted(map(repr, keys_a)) != sorted(map(repr, keys_b)):
            extra = [k for k, t in zip(a, keys_a) if t not in keys_b] + [
                k for k, t in zip(b, keys_b) if t not in keys_a
            ]
            key = extra[0] if extra else "<keys>"
            return (path + (key,), a.get(key, "<absent>"), b.get(key, "<absent>"))
        for key in a:
            if key not in a or key not in b:
                return (path + (key,), a.get(key, "<absent>"), b.get(key, "<absent>"))
            found = first_difference(a[key], b[key], path + (key,))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for idx, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, path + (idx,))
            if found:
                return found
        if len(a) != len(b):
            return (path, f"<{len(a)} items>", f"<{len(b)} items>")
        return None
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return (path, a, b)
    return None if typed(a) == typed(b) else (path, a, b)


def embedded_yaml(doc: Any) -> Iterator[tuple[str, str]]:
    """ConfigMap data values that are YAML documents: a *.yaml/*.yml key, or a multi-line
    value that YAML reads as a mapping."""
    if not isinstance(doc, dict) or doc.get("kind") != "ConfigMap" or doc.get("apiVersion") != "v1":
        return
    for key, value in (doc.get("data") or {}).items():
        if not isinstance(value, str):
            continue
        if str(key).endswith((".yaml", ".yml")):
            yield str(key), value
        elif "\n" in value.strip():
            try:
                parsed = yaml.load(value, Loader=YAML11_LOADER)
            except yaml.YAMLError:
                continue
            if isinstance(parsed, dict):
                yield str(key), value


def yaml_11_vs_12(text: str) -> str | None:
    """None if YAML 1.1 and YAML 1.2 read the same data, else what differs."""
    try:
        docs_11 = load_all_11(text)
    except yaml.YAMLError as err:
        return f"YAML 1.1 (PyYAML) cannot read it: {err}".replace("\n", " ")
    try:
        docs_12 = list(_ruamel().load_all(text))
    except Exception as err:  # ruamel raises several unrelated error classes
        text = str(err).split("To suppress this check")[0]
        return "YAML 1.2 (ruamel.yaml) cannot read it: " + " ".join(text.split())
    diff = first_difference(docs_11, docs_12)
    if diff is None:
        return None
    path, a, b = diff
    where = f"document {path[0] + 1}, {json_path(path[1:])}" if path else "(root)"
    return (
        f"{where}: YAML 1.1 reads {a!r} ({type(a).__name__}), "
        f"YAML 1.2 reads {b!r} ({type(b).__name__}); quote the value"
    )


# --------------------------------------------------------------------------------------------
# Built-in kinds: kubernetes-validate schemas, loaded once and kept
# --------------------------------------------------------------------------------------------


class BuiltinSchemas:
    """Cached strict validators over kubernetes-validate's bundled schemas.

    kubernetes_validate.validate() re-reads the 1.4 MB _definitions.json on every call
    (about 13 ms per object); this keeps one validator per (schema version, kind, apiVersion)
    and resolves files exactly as kubernetes_validate.validate(strict=True) does. --self-test
    checks that both give the same verdicts.
    """

    def __init__(self) -> None:
        self.versions = kv_utils.all_versions()  # e.g. ['1.25.0', ..., '1.37.0']
        self._validators: dict[tuple, Any] = {}
        self._registries: dict[str, Registry] = {}

    def newest_minor(self) -> str:
        return kv_utils.major_minor(self.versions[-1])

    def schema_version(self, minor: str) -> str:
        """The newest bundled schema not newer than Kubernetes <minor>, as validate() picks."""

        def key(v: str) -> tuple[int, ...]:
            return tuple(int(x) for x in kv_utils.major_minor(v).split("."))

        wanted = key(minor)
        candidates = [v for v in self.versions if key(v) <= wanted]
        if key(self.versions[-1]) < wanted or not candidates:
            raise LookupError(
                f"kubernetes-validate {kubernetes_validate.__version__} has schemas for "
                f"Kubernetes {kv_utils.major_minor(self.versions[0])} to {self.newest_minor()}, "
                f"not {minor}"
            )
        return candidates[-1]

    def _schema_dir(self, version: str) -> str:
        return f"kubernetes-json-schema/v{version}-local-strict"

    @functools.lru_cache(maxsize=None)
    def _load(self, rel: str) -> Any:
        ref = kv_utils.importlib_resources.files("kubernetes_validate").joinpath(rel)
        with kv_utils.importlib_resources.as_file(ref) as path:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)

    def definitions(self, version: str) -> dict:
        defs = copy.deepcopy(self._load(f"{self._schema_dir(version)}/_definitions.json"))
        # Tighten Quantity: the bundled schema accepts any string, the API server only
        # canonical quantities ("1k", "500m", "2Gi"); "2GB" or "1.5 Gi" would be rejected.
        defs["$defs"]["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {
            "anyOf": [{"type": "string", "pattern": QUANTITY}, {"type": ["number", "null"]}]
        }
        return defs

    def registry(self, version: str) -> Registry:
        if version not in self._registries:
            self._registries[version] = (
                Resource.from_contents(self.definitions(version)) @ Registry()
            )
        return self._registries[version]

    def validator(self, version: str, kind: str, api_version: str, tighten: bool = True) -> Any:
        """A strict validator, or None if this Kubernetes version has no such kind/version."""
        key = (version, kind, api_version, tighten)
        if key not in self._validators:
            api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
            try:
                schema = self._load(f"{self._schema_dir(version)}/{kind.lower()}-{api}.json")
            except FileNotFoundError:
                self._validators[key] = None
                return None
            if tighten:
                registry = self.registry(version)
            else:
                defs = self._load(f"{self._schema_dir(version)}/_definitions.json")
                registry = Resource.from_contents(defs) @ Registry()
            registry = Resource.from_contents(schema) @ registry
            self._validators[key] = jsonschema.Draft202012Validator(schema, registry=registry)
        return self._validators[key]

    def object_meta_validator(self, version: str) -> Any:
        key = (version, "ObjectMeta")
        if key not in self._validators:
            schema = {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$ref": "https://kubernetes.io/api/_definitions.json"
                "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            }
            self._validators[key] = jsonschema.Draft202012Validator(
                schema, registry=self.registry(version)
            )
        return self._validators[key]


# --------------------------------------------------------------------------------------------
# Custom resources: vendored CRDs
# --------------------------------------------------------------------------------------------

CRD_COPIED_KEYWORDS = (
    "required",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)


class CrdSchemas:
    """Strict JSON Schema (draft 4, as OpenAPI 3.0 is) from each CRD's openAPIV3Schema."""

    def __init__(self, crd_dir: Path | None) -> None:
        self.crd_dir = crd_dir
        # (group, kind) -> {"scope": ..., "versions": {name: {"served": bool, "schema": ...}}}
        self.kinds: dict[tuple[str, str], dict] = {}
        self.files = 0
        if crd_dir is None:
            return
        for path in sorted(crd_dir.rglob("*.y*ml")):
            if path.suffix not in (".yaml", ".yml"):
                continue
            self.files += 1
            with open(path, encoding="utf-8") as handle:
                for doc in load_all_11(handle.read()):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        self.add(doc, path)

    def add(self, crd: dict, source: Any = "<inline>") -> None:
        spec = crd["spec"]
        entry = self.kinds.setdefault(
            (spec["group"], spec["names"]["kind"]),
            {"scope": spec.get("scope", "Namespaced"), "versions": {}, "source": str(source)},
        )
        for version in spec.get("versions", []):
            raw = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            entry["versions"][version["name"]] = {
                "served": bool(version.get("served")),
                "deprecated": bool(version.get("deprecated")),
                "raw": raw,
                "validator": None,
            }

    def lookup(self, api_version: str, kind: str) -> tuple[str, dict | None]:
        """('no-crd'|'no-kind'|'not-served'|'ok', version entry)."""
        group = group_of(api_version)
        version = api_version.rsplit("/", 1)[-1]
        if not any(g == group for g, _ in self.kinds):
            return "no-crd", None
        entry = self.kinds.get((group, kind))
        if entry is None:
            return "no-kind", None
        ver = entry["versions"].get(version)
        if ver is None or not ver["served"]:
            return "not-served", entry
        return "ok", ver

    def scope(self, api_version: str, kind: str) -> str | None:
        entry = self.kinds.get((group_of(api_version), kind))
        return entry["scope"] if entry else None

    @staticmethod
    def convert(schema: dict, at_root: bool = False) -> dict:
        """OpenAPI v3 structural schema -> draft-4 JSON Schema that rejects unknown fields."""
        out: dict[str, Any] = {}
        nullable = bool(schema.get("nullable"))
        if schema.get("x-kubernetes-int-or-string"):
            types = ["integer", "string"]
        elif "type" in schema:
            types = [schema["type"]]
        else:
            types = []
        if types:
            out["type"] = types + (["null"] if nullable else [])
        if "enum" in schema:
            out["enum"] = list(schema["enum"]) + ([None] if nullable else [])
        for keyword in CRD_COPIED_KEYWORDS:
            if keyword in schema:
                out[keyword] = schema[keyword]
        for keyword in ("anyOf", "allOf", "oneOf"):
            if keyword in schema:
                out[keyword] = [CrdSchemas.convert(s) for s in schema[keyword]]
        if "not" in schema:
            out["not"] = CrdSchemas.convert(schema["not"])
        if "items" in schema and isinstance(schema["items"], dict):
            out["items"] = CrdSchemas.convert(schema["items"])
        props = dict(schema.get("properties") or {})
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        if at_root or embedded:
            # The API server checks metadata as ObjectMeta itself (done separately here).
            props["metadata"] = {"type": "object"}
            props.setdefault("apiVersion", {"type": "string"})
            props.setdefault("kind", {"type": "string"})
        if props:
            out["properties"] = {
                k: (
                    {"type": "object"}
                    if (at_root or embedded) and k == "metadata"
                    else CrdSchemas.convert(v)
                )
                for k, v in props.items()
            }
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            out["additionalProperties"] = CrdSchemas.convert(additional)
        elif additional is not None:
            out["additionalProperties"] = bool(additional)
        elif (
            schema.get("type") == "object"
            and not schema.get("x-kubernetes-preserve-unknown-fields")
            and "anyOf" not in schema
            and "allOf" not in schema
            and "oneOf" not in schema
        ):
            # Strict field validation: a field the schema does not declare is an error
            # (the API server would prune it, i.e. silently drop it).
            out["additionalProperties"] = False
        return out

    def validator(self, ver: dict) -> Any:
        if ver["validator"] is None:
            schema = self.convert(ver["raw"], at_root=True)
            schema["$schema"] = "http://json-schema.org/draft-04/schema#"
            ver["validator"] = jsonschema.Draft4Validator(schema)
        return ver["validator"]

    @staticmethod
    def cel_rules_on(schema: dict, instance: Any) -> int:
        """How many x-kubernetes-validations rules apply to values present in instance."""
        count = len(schema.get("x-kubernetes-validations") or [])
        if isinstance(instance, dict):
            for key, value in instance.items():
                sub = (schema.get("properties") or {}).get(key)
                if sub is None and isinstance(schema.get("additionalProperties"), dict):
                    sub = schema["additionalProperties"]
                if sub is not None:
                    count += CrdSchemas.cel_rules_on(sub, value)
        elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
            for value in instance:
                count += CrdSchemas.cel_rules_on(schema["items"], value)
        return count


# --------------------------------------------------------------------------------------------
# One object
# --------------------------------------------------------------------------------------------


class Validator:
    def __init__(self, builtin: BuiltinSchemas, crds: CrdSchemas) -> None:
        self.builtin = builtin
        self.crds = crds
        self.validated: Counter[str] = Counter()  # "apiVersion Kind" -> count
        self.not_validated: Counter[str] = Counter()
        self.cel_not_evaluated = 0

    def check(self, obj: Any, minor: str) -> list[str]:
        """Problems with one rendered object ('path: message'); [] if valid or unknown."""
        if not isinstance(obj, dict):
            return [f"(root): a document must be a mapping, got {type(obj).__name__}"]
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if (
            not isinstance(api_version, str)
            or not isinstance(kind, str)
            or not api_version
            or not kind
        ):
            return ["(root): apiVersion and kind must be non-empty strings"]
        group = group_of(api_version)
        label = f"{api_version} {kind}"
        problems: list[str] = []
        if group in BUILTIN_GROUPS:
            version = self.builtin.schema_version(minor)
            validator = self.builtin.validator(version, kind, api_version)
            if validator is None:
                return [
                    f"(root): Kubernetes {minor} serves no {kind} in {api_version} "
                    "(removed, not yet served, or misspelt kind/apiVersion)"
                ]
            problems += self.schema_errors(validator, obj)
            scope = "Cluster" if kind in CLUSTER_SCOPED_BUILTIN_KINDS else "Namespaced"
        else:
            status, ver = self.crds.lookup(api_version, kind)
            if status == "no-crd":
                self.not_validated[label] += 1
                return []
            if status == "no-kind":
                return [f"(root): the vendored CRDs of group {group} define no kind {kind}"]
            if status == "not-served":
                served = sorted(v for v, e in ver["versions"].items() if e["served"])
                return [
                    f"(root): {kind} is not served as {api_version}; served: {', '.join(served)}"
                ]
            problems += self.schema_errors(self.crds.validator(ver), obj)
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                meta_validator = self.builtin.object_meta_validator(
                    self.builtin.schema_version(minor)
                )
                problems += [
                    "metadata." + p if not p.startswith("(root)") else "metadata" + p[6:]
                    for p in self.schema_errors(meta_validator, meta)
                ]
            self.cel_not_evaluated += CrdSchemas.cel_rules_on(ver["raw"], obj)
            scope = self.crds.scope(api_version, kind)
        problems += self.server_rules(obj, kind, scope)
        if not problems:
            self.validated[label] += 1
        return problems

    @staticmethod
    def schema_errors(validator: Any, instance: Any) -> list[str]:
        errors = sorted(
            validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))
        )
        return [f"{json_path(e.absolute_path)}: {error_text(e)}" for e in errors]

    @staticmethod
    def server_rules(obj: dict, kind: str, scope: str | None) -> list[str]:
        """Rules of the API server's object-meta validation that the schemas leave out."""
        problems = []
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return ["metadata: required"]
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            problems.append("metadata.name: required")
        elif kind in PATH_SEGMENT_NAME_KINDS:
            if name in (".", "..") or "/" in name or "%" in name:
                problems.append(
                    f"metadata.name: {name!r} may not be '.', '..' or contain '/' or '%'"
                )
        elif kind == "Namespace":
            if len(name) > 63 or not DNS1123_LABEL.match(name):
                problems.append(
                    f"metadata.name: {name!r} must be a DNS-1123 label (a-z, 0-9, '-', <= 63)"
                )
        elif kind == "Service":
            if len(name) > 63 or not DNS1035_LABEL.match(name):
                problems.append(f"metadata.name: {name!r} must be a DNS-1035 label")
        elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
            problems.append(
                f"metadata.name: {name!r} must be a lowercase DNS-1123 subdomain (<= 253)"
            )
        namespace = meta.get("namespace")
        if scope == "Namespaced" and not namespace:
            problems.append(
                f"metadata.namespace: {kind} is namespaced; without a namespace it lands in "
                "whatever namespace the sync tool defaults to"
            )
        if scope == "Cluster" and namespace:
            problems.append(
                f"metadata.namespace: {kind} is cluster-scoped; remove namespace {namespace!r}"
            )
        if (
            isinstance(namespace, str)
            and namespace
            and (len(namespace) > 63 or not DNS1123_LABEL.match(namespace))
        ):
            problems.append(f"metadata.namespace: {namespace!r} must be a DNS-1123 label")
        for key, value in (meta.get("labels") or {}).items():
            why = qualified_name_problem(str(key))
            if why:
                problems.append(f"metadata.labels[{key}]: invalid label key: {why}")
            if not isinstance(value, str):
                continue  # the schema reports non-strings
            if len(value) > 63 or (value and not QUALIFIED_NAME_PART.match(value)):
                problems.append(
                    f"metadata.labels[{key}]: invalid label value {value!r}: at most 63 characters, "
                    "alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
                )
        annotations = meta.get("annotations") or {}
        for key in annotations:
            why = qualified_name_problem(str(key).lower())
            if why:
                problems.append(f"metadata.annotations[{key}]: invalid annotation key: {why}")
        if sum(len(str(k)) + len(str(v)) for k, v in annotations.items()) > 256 * 1024:
            problems.append("metadata.annotations: total size must be at most 256 KiB")
        return problems


# --------------------------------------------------------------------------------------------
# One out/ tree
# --------------------------------------------------------------------------------------------


def find_kubectl(explicit: str | None) -> str:
    candidate = explicit or os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not candidate:
        sys.exit("validate-out: kubectl not found (set KUBECTL or put kubectl on PATH)")
    return candidate


def kustomize(kubectl: str | None, folder: Path) -> str:
    assert kubectl is not None
    proc = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {folder} failed:\n{proc.stderr.strip()}")
    return proc.stdout


def cell_minor(objects: list[dict], builtin: BuiltinSchemas, cell: str) -> tuple[str | None, str]:
    """(minor, note) from the Namespaces' PSA enforce-version labels; minor None = error."""
    seen: dict[str, list[str]] = defaultdict(list)
    for obj in objects:
        if obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace":
            labels = (obj.get("metadata") or {}).get("labels") or {}
            value = labels.get(PSA_VERSION_LABEL)
            seen[str(value)].append((obj.get("metadata") or {}).get("name", "?"))
    if not seen:
        newest = builtin.newest_minor()
        return (
            newest,
            f"no Namespace in cell {cell}: validating against the newest schemas, {newest}",
        )
    minors = set()
    for value, names in seen.items():
        match = re.fullmatch(r"v(\d+\.\d+)", value)
        if value == "latest":
            minors.add(builtin.newest_minor())
        elif match:
            minors.add(match.group(1))
        else:
            return None, (
                f"Namespace {names[0]}: label {PSA_VERSION_LABEL}={value!r} is not v1.NN or latest"
            )
    if len(minors) > 1:
        detail = "; ".join(f"{v}: {', '.join(sorted(n)[:3])}" for v, n in sorted(seen.items()))
        return None, f"Namespaces of cell {cell} disagree on {PSA_VERSION_LABEL} ({detail})"
    minor = minors.pop()
    return (
        minor,
        f"Kubernetes {minor} (from {PSA_VERSION_LABEL} of {sum(map(len, seen.values()))} Namespaces)",
    )


def source_index(cell_dir: Path, out_dir: Path) -> dict[tuple, str]:
    """(apiVersion, kind, namespace, name) -> emitted file, to name the file in messages."""
    index = {}
    for path in sorted(cell_dir.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        try:
            for doc in load_all_11(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict):
                    index.setdefault(obj_key(doc), str(path.relative_to(out_dir.parent)))
        except yaml.YAMLError:
            pass  # reported by the YAML check
    return index


def validate_tree(
    out_dir: Path, crd_dir: Path | None, kubectl: str | None, rendered_dir: Path | None
) -> int:
    started = time.monotonic()
    builtin = BuiltinSchemas()
    crds = CrdSchemas(crd_dir)
    if crd_dir is None:
        print(
            "validate-out: notice: no schema/crds/ folder; custom resources are not validated "
            "against CRD schemas"
        )
    else:
        print(
            f"validate-out: CRD schemas: {len(crds.kinds)} kinds from {crds.files} files under "
            f"{crd_dir} ({', '.join(sorted({g for g, _ in crds.kinds}))})"
        )
    validator = Validator(builtin, crds)
    failures: list[str] = []

    # 1. YAML 1.1 versus 1.2, every emitted YAML file and the YAML documents embedded in
    #    ConfigMaps (mig-parted and device-plugin configs are read by Go YAML 1.1 readers too);
    #    every emitted JSON file must parse.
    files = sorted(p for p in out_dir.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))
    embedded = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        problem = yaml_11_vs_12(text)
        if problem:
            failures.append(f"{path}: {problem}")
            continue
        for doc in load_all_11(text):
            for key, value in embedded_yaml(doc):
                embedded += 1
                problem = yaml_11_vs_12(value)
                if problem:
                    failures.append(f"{path}: {obj_id(doc)} data.{key} (embedded YAML): {problem}")
    json_files = sorted(p for p in out_dir.rglob("*.json") if p.is_file())
    for path in json_files:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            failures.append(f"{path}: not valid JSON: {err}")

    # 2. Every cell, as kustomize renders it.
    cells = sorted(
        p for p in out_dir.iterdir() if p.is_dir() and (p / "kustomization.yaml").is_file()
    )
    if not cells:
        print(f"validate-out: no cell folders (with kustomization.yaml) under {out_dir}")
        return 2
    total_objects = 0
    for cell_dir in cells:
        cell = cell_dir.name
        if rendered_dir is not None:
            pre = rendered_dir / f"{cell}.yaml"
            if not pre.is_file():
                failures.append(f"{cell_dir}: no kustomize output {pre} (was the cell rendered?)")
                continue
            rendered = pre.read_text(encoding="utf-8")
        else:
            try:
                rendered = kustomize(kubectl, cell_dir)
            except RuntimeError as err:
                failures.append(f"{cell_dir}: {err}")
                continue
        problem = yaml_11_vs_12(rendered)
        if problem:
            failures.append(f"{cell_dir} (kustomize output): {problem}")
        objects = [d for d in load_all_11(rendered) if d is not None]
        total_objects += len(objects)
        minor, note = cell_minor(objects, builtin, cell)
        if minor is None:
            failures.append(f"{cell_dir}: {note}")
            continue
        try:
            builtin.schema_version(minor)
        except LookupError as err:
            failures.append(f"{cell_dir}: {err}")
            continue
        print(f"validate-out: {cell}: {len(objects)} objects, {note}")
        sources = source_index(cell_dir, out_dir)
        for obj in objects:
            for problem in validator.check(obj, minor):
                where = sources.get(
                    obj_key(obj) if isinstance(obj, dict) else None, "kustomize output"
                )
                failures.append(
                    f"{cell} {obj_id(obj) if isinstance(obj, dict) else '?'} ({where}): {problem}"
                )

    # 3. Summary.
    print(
        f"validate-out: {len(files)} YAML files and {embedded} embedded YAML documents read as "
        f"YAML 1.1 and 1.2, {len(json_files)} JSON files parsed, {len(cells)} cells, "
        f"{total_objects} objects"
    )
    for label, count in sorted(validator.validated.items()):
        print(f"  valid {count:5d}  {label}")
    if validator.not_validated:
        summary = ", ".join(f"{label} x{n}" for label, n in sorted(validator.not_validated.items()))
        print(
            f"validate-out: not validated: {sum(validator.not_validated.values())} objects (no schema): {summary}"
        )
    if validator.cel_not_evaluated:
        print(
            f"validate-out: notice: {validator.cel_not_evaluated} CEL rules (x-kubernetes-validations) of CRDs apply and were not evaluated"
        )
    for failure in failures:
        print(f"FAIL {failure}")
    print(
        f"validate-out: {sum(validator.validated.values())} valid, "
        f"{sum(validator.not_validated.values())} not validated, {len(failures)} failures "
        f"({time.monotonic() - started:.1f}s)"
    )
    return 1 if failures else 0


# --------------------------------------------------------------------------------------------
# Self-test: the checks catch what they should (a validator that passes everything is useless)
# --------------------------------------------------------------------------------------------

SELF_TEST_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.test}
spec:
  group: example.test
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1alpha1
    served: false
    storage: false
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [size]
            x-kubernetes-validations: [{rule: "self.size >= 0"}]
            properties:
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              mode: {type: string, enum: [a, b]}
              note: {type: string, nullable: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              labels: {type: object, additionalProperties: {type: string}}
"""


def self_test() -> int:
    builtin = BuiltinSchemas()
    crds = CrdSchemas(None)
    crds.add(yaml.safe_load(SELF_TEST_CRD))
    checker = Validator(builtin, crds)
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "t-a", "labels": {"a/b": "c"}},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "t-a"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "8", "pods": "1k", "requests.memory": "2Ti"}},
    }
    widget = {
        "apiVersion": "example.test/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": "3", "note": None, "extra": {"x": 1}},
    }

    def mutate(obj: dict, fn: Any) -> dict:
        obj = copy.deepcopy(obj)
        fn(obj)
        return obj

    cases = [  # (name, object, expected problem substring or None)
        ("valid namespace", ns, None),
        ("valid quota", quota, None),
        ("valid custom resource", widget, None),
        ("unknown top-level field", mutate(ns, lambda o: o.update(spc={})), "spc"),
        ("unknown nested field", mutate(quota, lambda o: o["spec"].update(hardd={})), "hardd"),
        ("wrong type", mutate(quota, lambda o: o["spec"].update(scopes="x")), "scopes"),
        ("bad quantity", mutate(quota, lambda o: o["spec"]["hard"].update(pods="2GB")), "pods"),
        ("kind not served", mutate(ns, lambda o: o.update(apiVersion="v2")), "serves no Namespace"),
        (
            "removed API",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "PodSecurityPolicy",
                "metadata": {"name": "p"},
            },
            "serves no",
        ),
        (
            "missing required",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "r", "namespace": "t-a"},
            },
            "roleRef",
        ),
        (
            "bad label value",
            mutate(ns, lambda o: o["metadata"]["labels"].update(x="a b")),
            "label value",
        ),
        (
            "bad label key",
            mutate(ns, lambda o: o["metadata"]["labels"].update({"A_/b": "c"})),
            "label key",
        ),
        (
            "namespaced without namespace",
            mutate(quota, lambda o: o["metadata"].pop("namespace")),
            "namespaced",
        ),
        (
            "cluster-scoped with namespace",
            mutate(ns, lambda o: o["metadata"].update(namespace="x")),
            "cluster-scoped",
        ),
        (
            "bad namespace name",
            mutate(ns, lambda o: o["metadata"].update(name="Team_A")),
            "DNS-1123 label",
        ),
        ("CR unknown field", mutate(widget, lambda o: o["spec"].update(sise=1)), "sise"),
        ("CR missing required", mutate(widget, lambda o: o["spec"].pop("size")), "size"),
        ("CR enum", mutate(widget, lambda o: o["spec"].update(mode="c")), "mode"),
        ("CR int-or-string", mutate(widget, lambda o: o["spec"].update(size=[1])), "size"),
        (
            "CR map of strings",
            mutate(widget, lambda o: o["spec"].update(labels={"a": 1})),
            "labels",
        ),
        ("CR metadata", mutate(widget, lambda o: o["metadata"].update(labelz={})), "labelz"),
        (
            "CR version not served",
            mutate(widget, lambda o: o.update(apiVersion="example.test/v1alpha1")),
            "not served",
        ),
        ("CR kind unknown", mutate(widget, lambda o: o.update(kind="Gadget")), "no kind Gadget"),
        (
            "CR namespaced on cluster scope",
            mutate(widget, lambda o: o["metadata"].update(namespace="t-a")),
            "cluster-scoped",
        ),
    ]
    bad = 0
    for name, obj, expected in cases:
        problems = checker.check(obj, "1.33")
        ok = not problems if expected is None else any(expected in p for p in problems)
        if not ok:
            bad += 1
            print(f"self-test FAIL {name}: expected {expected or 'no problem'}, got {problems}")
        # The cached validators must agree with kubernetes_validate.validate() itself.
        if group_of(obj["apiVersion"]) in BUILTIN_GROUPS and "quantity" not in name:
            try:
                kubernetes_validate.validate(obj, "1.33", strict=True)
                upstream_ok = True
            except kubernetes_validate.ValidationError:
                upstream_ok = False
            except kubernetes_validate.SchemaNotFoundError:
                upstream_ok = None
            validator = builtin.validator(
                builtin.schema_version("1.33"), obj["kind"], obj["apiVersion"], tighten=False
            )
            mine_ok = None if validator is None else not list(validator.iter_errors(obj))
            if upstream_ok != mine_ok:
                bad += 1
                print(
                    f"self-test FAIL {name}: kubernetes_validate says {upstream_ok}, cached validator {mine_ok}"
                )
    if checker.not_validated or not checker.cel_not_evaluated:
        bad += 1
        print(
            f"self-test FAIL counters: not_validated={dict(checker.not_validated)} cel={checker.cel_not_evaluated}"
        )
    checker.check(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "a"},
        },
        "1.33",
    )
    if checker.not_validated.get("monitoring.coreos.com/v1 PrometheusRule") != 1:
        bad += 1
        print("self-test FAIL unknown group is not counted as not validated")
    yaml_cases = [
        ("a: 'on'\nb: \"0755\"\nc: '1e3'\n", False),
        ("a: on\n", True),
        ("a: yes\n", True),
        ("mode: 0755\n", True),
        ("x: 1e3\n", True),
        ("t: 1:30\n", True),
        ("a: 1\na: 2\n", True),
        ("a: 1\n---\nb: [x, {c: d}]\n", False),
        ("on: 1\n", True),
        ("a: [yes]\n", True),
    ]
    for text, differs in yaml_cases:
        if (yaml_11_vs_12(text) is not None) != differs:
            bad += 1
            print(f"self-test FAIL YAML 1.1/1.2 check on {text!r}: expected differs={differs}")
    for minor, wanted in (("1.33", "1.33.0"), ("1.25", "1.25.0")):
        if builtin.schema_version(minor) != wanted:
            bad += 1
            print(f"self-test FAIL schema_version({minor}) = {builtin.schema_version(minor)}")
    for minor in ("1.24", "1.99"):
        try:
            builtin.schema_version(minor)
            bad += 1
            print(f"self-test FAIL schema_version({minor}) did not refuse")
        except LookupError:
            pass
    total = len(cases) + len(yaml_cases) + 5
    print(f"self-test: {total - bad} passed, {bad} failed")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default="out", help="the out/ folder [default: out]")
    parser.add_argument("--crds", help="folder of vendored CRDs [default: schema/crds beside OUT]")
    parser.add_argument(
        "--kubectl", help="kubectl to run [default: $KUBECTL, else kubectl on PATH]"
    )
    parser.add_argument(
        "--rendered",
        help="folder holding <cell>.yaml, the output of `kubectl kustomize OUT/<cell>` for every "
        "cell (as .ci/run writes it), instead of running kustomize again",
    )
    parser.add_argument("--self-test", action="store_true", help="check the checks, then exit")
    args = parser.parse_args()
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}"
        for name in ("kubernetes-validate", "jsonschema", "PyYAML", "ruamel.yaml")
    )
    parser_kind = "C" if "CParser" in str(_ruamel().Parser) else "pure Python"
    print(
        f"validate-out: {versions} ({parser_kind} parser), YAML 1.1 reader {YAML11_LOADER.__name__}"
    )
    if args.self_test:
        return self_test()
    out_dir = Path(args.out)
    if not out_dir.is_dir():
        print(f"validate-out: {out_dir} is not a folder")
        return 2
    if args.crds:
        crd_dir: Path | None = Path(args.crds)
        if not crd_dir.is_dir():
            print(f"validate-out: --crds {crd_dir} is not a folder")
            return 2
    else:
        crd_dir = out_dir.resolve().parent / "schema" / "crds"
        crd_dir = crd_dir if crd_dir.is_dir() else None
    rendered_dir = Path(args.rendered) if args.rendered else None
    if rendered_dir is not None and not rendered_dir.is_dir():
        print(f"validate-out: --rendered {rendered_dir} is not a folder")
        return 2
    kubectl = None if rendered_dir is not None else find_kubectl(args.kubectl)
    return validate_tree(out_dir, crd_dir, kubectl, rendered_dir)


if __name__ == "__main__":
    sys.exit(main())
