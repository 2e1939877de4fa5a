# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving Helm's records of the member-agent release out of ``default``.

Earlier versions of the collection kept them in ``default``, as KubeFleet's ``join.sh`` does. Every revision there
holds the agent's values (``secret_values`` included), readable by whoever may read the Secrets of ordinary workloads,
and every revision there is a Secret that whoever may create Secrets in ``default`` can plant. They move to the
release namespace the options name, without a Helm run and without touching the agent's pods:

1. each record is copied into the new namespace with the release's namespace rewritten, labelled ``MOVED_FROM``;
2. each object the release made is annotated with the new release namespace (metadata only, so no rollout);
3. the records in ``default`` are deleted.

A run that stops between the steps leaves copies that say where they came from, and the next run finishes the move.
Records are moved only when every one of them lists only the agent chart's objects (helm_records), and only when the
new namespace holds no record of the release that is not such a copy: a release installed there meanwhile is the
agent's, and records of the same name left in ``default`` are then not the collection's to touch.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import NotFoundError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import (
    decode_release, encode_release, release_selector, releases_of, storage_revision,
)
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import manifest_objects, refuse_foreign
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, SERVICE_ACCOUNT, Resource,
)

LEGACY_RELEASE_NAMESPACE = "default"
MOVED_FROM_LABEL = "fleetops.io/moved-from"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
HELM_RELEASE_NAME = "meta.helm.sh/release-name"

RBAC = "rbac.authorization.k8s.io/v1"
RESOURCES = {resource.kind: resource for resource in (
    NAMESPACE, SECRET, SERVICE_ACCOUNT, CONFIG_MAP, DEPLOYMENT,
    Resource("v1", "Service", "services"),
    Resource(RBAC, "Role", "roles"), Resource(RBAC, "RoleBinding", "rolebindings"),
    Resource(RBAC, "ClusterRole", "clusterroles", namespaced=False),
    Resource(RBAC, "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
    Resource("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    Resource("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False),
)}


def storage_secrets(kube, name, namespace):
    """``{revision: Secret}`` of Helm's records of release ``name`` in ``namespace`` (one LIST)."""
    found = {}
    for secret in kube.list(SECRET, namespace, label_selector=release_selector(name)):
        secret_name, revision = storage_revision(secret)
        if secret_name == name and revision is not None and (secret.get("data") or {}).get("release"):
            found[revision] = secret
    return found


def moved_copy(secret, target):
    """The Secret for record ``secret`` in namespace ``target``: the same name, type and labels (and ``MOVED_FROM``),
    its payload's namespace rewritten (pure)."""
    metadata = secret.get("metadata") or {}
    payload = decode_release(secret["data"]["release"])
    payload["namespace"] = target
    labels = dict(metadata.get("labels") or {}, **{MOVED_FROM_LABEL: metadata.get("namespace") or LEGACY_RELEASE_NAMESPACE})
    return {"apiVersion": "v1", "kind": "Secret", "type": secret.get("type") or "helm.sh/release.v1",
            "metadata": {"name": metadata["name"], "namespace": target, "labels": labels},
            "data": {"release": encode_release(payload)}}


def pending_move(legacy, current, source):
    """Whether records ``legacy`` (``{revision: Secret}`` in ``source``) are to move next to ``current`` (those in the
    release namespace): there are some, and every record already there is a copy of one from ``source`` (pure)."""
    if not legacy:
        return False
    return all(((secret.get("metadata") or {}).get("labels") or {}).get(MOVED_FROM_LABEL) == source for secret in current.values())


def owned_objects(payload, source, agent):
    """``[(Resource, namespace, object name)]`` of the objects the record's manifest lists that the agent chart makes."""
    found = []
    for kind, namespace, object_name in manifest_objects(payload.get("manifest"), source):
        if kind in RESOURCES and agent.allows(kind, namespace, object_name):
            found.append((RESOURCES[kind], namespace, object_name))
    return found


def reannotate(kube, objects, name, source, target):
    """Point each object's Helm owner at ``target`` where it names release ``name`` in ``source``; the objects of
    another owner, and those gone, are left alone. Returns how many were patched."""
    patched = 0
    for resource, namespace, object_name in objects:
        live = kube.get(resource, object_name, namespace)
        annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
        if annotations.get(HELM_RELEASE_NAME) != name or annotations.get(HELM_RELEASE_NAMESPACE) != source:
            continue
        try:
            kube.patch(resource, object_name, {"metadata": {"annotations": {HELM_RELEASE_NAMESPACE: target}}}, namespace)
        except NotFoundError:
            continue
        patched += 1
    return patched


def moved(secret):
    """Whether the record is a copy whose move is not finished (``MOVED_FROM`` is dropped from the newest one last)."""
    return MOVED_FROM_LABEL in (((secret or {}).get("metadata") or {}).get("labels") or {})


class ReleaseMove:
    """Where Helm's records of release ``name`` are on the member ``kube``: in ``target``, or still in ``default``
    while a move is pending (two LISTs then, and before a first install; one otherwise)."""

    def __init__(self, kube, name, target, agent=None, source=LEGACY_RELEASE_NAMESPACE):
        self.kube, self.name, self.source, self.target, self.agent = kube, name, source, target, agent
        self.current = storage_secrets(kube, name, target)
        newest = self.current[max(self.current)] if self.current else None
        check_source = source != target and (newest is None or moved(newest))
        self.legacy = storage_secrets(kube, name, source) if check_source else {}
        self.pending = pending_move(self.legacy, self.current, source)

    @property
    def namespace(self):
        """Where Helm keeps the release now."""
        return self.source if self.pending else self.target

    def release(self):
        """The release at its newest revision, as read_release gives it, or None."""
        records = self.legacy if self.pending else self.current
        return releases_of(list(records.values()), self.namespace).get(self.name)

    def check(self):
        """Refuse (HelmError) when a record to move lists an object the agent chart does not make."""
        for revision in sorted(self.legacy):
            secret = self.legacy[revision]
            refuse_foreign(secret["metadata"]["name"], decode_release(secret["data"]["release"]), self.source, self.name,
                           self.agent, "moving the release's records")

    def describe(self):
        return "Helm's records of release %s (revisions %s) move from namespace %s to %s" % (
            self.name, ", ".join(str(revision) for revision in sorted(self.legacy)), self.source, self.target)

    def apply(self):
        """Copy the records not yet copied, re-annotate the release's objects, delete the records in ``source``, and
        last mark the move finished (the newest copy loses ``MOVED_FROM``)."""
        for revision in sorted(self.legacy):
            if revision not in self.current:
                self.current[revision] = self.kube.create(SECRET, moved_copy(self.legacy[revision], self.target), self.target)
        newest = decode_release(self.legacy[max(self.legacy)]["data"]["release"])
        reannotate(self.kube, owned_objects(newest, self.source, self.agent), self.name, self.source, self.target)
        for revision in sorted(self.legacy):
            self.kube.delete(SECRET, self.legacy[revision]["metadata"]["name"], self.source)
        self.legacy, self.pending = {}, False
        self.finish()

    def finish(self):
        """Drop ``MOVED_FROM`` from the newest copy once nothing is left to move (also after a run that stopped just
        before), so that later runs read one namespace only."""
        newest = self.current[max(self.current)] if self.current else None
        if not self.pending and moved(newest):
            self.kube.patch(SECRET, newest["metadata"]["name"], {"metadata": {"labels": {MOVED_FROM_LABEL: None}}}, self.target)

    def discard_copies(self):
        """After the release was uninstalled from ``source``: the copies a move that stopped halfway left."""
        for secret in self.current.values():
            if moved(secret):
                self.kube.delete(SECRET, secret["metadata"]["name"], self.target)
