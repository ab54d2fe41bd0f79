#!/usr/bin/env python3
"""Vendors the Kubernetes definitions of the core kinds tenantc emits, for one minor version.

Reads the `_definitions.json` that kubernetes-validate ships for a version (the Kubernetes
OpenAPI definitions as JSON Schema, the same schemas `.ci/validate-out.py` judges out/ with;
`pip install kubernetes-validate==1.37.0`), keeps the definitions reachable from the kinds
below, drops every `description` (text only; nothing is checked against it) and writes
`schema/k8s/core-v<minor>.json` with sorted keys, so a re-run gives the same bytes.

Usage: python3 schema/k8s/vendor.py 1.33 1.34
"""

import json
import sys
from pathlib import Path

import kubernetes_validate

# The built-in kinds tenantc emits or lets a platform template emit, as (group, version, kind).
ROOTS = [
    ("", "v1", "ConfigMap"),
    ("", "v1", "LimitRange"),
    ("", "v1", "Namespace"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "ResourceQuota"),
    ("", "v1", "ServiceAccount"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("node.k8s.io", "v1", "RuntimeClass"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("resource.k8s.io", "v1", "DeviceClass"),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
]


def strip(node):
    if isinstance(node, dict):
        return {key: strip(value) for key, value in node.items() if key != "description"
                or not isinstance(value, str)}
    if isinstance(node, list):
        return [strip(item) for item in node]
    return node


def refs(node, into):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                into.add(value.rsplit("/", 1)[-1])
            else:
                refs(value, into)
    elif isinstance(node, list):
        for item in node:
            refs(item, into)


def main(minors):
    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    for minor in minors:
        defs = json.loads((base / f"v{minor}.0-local" / "_definitions.json").read_text())["$defs"]
        by_kind = {}
        for name, definition in defs.items():
            for gvk in definition.get("x-kubernetes-group-version-kind", []):
                by_kind[(gvk["group"], gvk["version"], gvk["kind"])] = name
        pending = [by_kind[root] for root in ROOTS if root in by_kind]
        kept = {}
        while pending:
            name = pending.pop()
            if name in kept:
                continue
            kept[name] = strip(defs[name])
            found = set()
            refs(kept[name], found)
            pending.extend(found - kept.keys())
        missing = [root for root in ROOTS if root not in by_kind]
        document = {
            "description": f"The definitions of the Kubernetes {minor} OpenAPI document that the "
            "core kinds tenantc emits reach, as kubernetes-validate 1.37.0 ships them "
            f"(v{minor}.0-local/_definitions.json), descriptions dropped; written by "
            "schema/k8s/vendor.py. Kinds this version does not serve: "
            + (", ".join(f"{g or 'core'}/{v} {k}" for g, v, k in missing) or "none") + ".",
            "definitions": kept,
        }
        out = Path(__file__).parent / f"core-v{minor}.json"
        out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        print(f"{out}: {len(kept)} definitions")


if __name__ == "__main__":
    main(sys.argv[1:] or ["1.33", "1.34"])
