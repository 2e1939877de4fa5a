# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Helm release record on a member may make an uninstall delete.

``helm uninstall`` deletes every object the manifest of the release's newest record lists. That record is a Secret
(``sh.helm.release.v1.<name>.v<N>``) that anyone who may create Secrets in the release's namespace can plant, and the
collection runs Helm with the member's own, usually admin, credential: a planted record listing a ``kube-system``
object or a cluster's RoleBinding would have the leave delete it. Before it uninstalls an agent, the collection reads
that record (one LIST, the same as read_release) and lets Helm act only when every object it lists is one the agent
chart makes: namespaced objects of the chart's kinds in the agent's namespace, that namespace itself, and cluster RBAC
named after the agent. Anything else is refused before Helm runs, naming the record and the objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml
from ansible_collections.fleetops.registration.plugins.module_utils.errors import HelmError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import decode_release, release_selector, storage_revision
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET

# What the agent charts (fleet-agent, member-agent) render, and a few kinds a later chart version may add.
NAMESPACED_KINDS = frozenset(("ServiceAccount", "Secret", "ConfigMap", "Deployment", "NetworkPolicy", "Service", "Role",
                              "RoleBinding", "PodDisruptionBudget"))
# Cluster-scoped kinds an agent makes, each named after the agent (Fleet's managed agent adds a PriorityClass).
CLUSTER_RBAC_KINDS = frozenset(("ClusterRole", "ClusterRoleBinding", "PriorityClass"))


class AgentObjects:
    """What an agent's chart makes on a member: its kinds in ``namespace``, that Namespace, and ClusterRoles,
    ClusterRoleBindings and PriorityClasses whose names start with one of ``prefixes`` (e.g. ``member-agent``)."""

    def __init__(self, namespace, prefixes):
        self.namespace = namespace
        self.prefixes = tuple(prefixes)

    def allows(self, kind, namespace, name):
        if kind == "Namespace":
            return name == self.namespace
        if kind in CLUSTER_RBAC_KINDS:
            return name.startswith(self.prefixes)
        return kind in NAMESPACED_KINDS and namespace == self.namespace


def manifest_objects(manifest, release_namespace):
    """``[(kind, namespace, name)]`` of the objects a release manifest lists, an object of the agents' namespaced kinds
    without a namespace in the release's own (as Helm applies it); an entry that is no object is ``(None, None, text)``."""
    objects = []
    try:
        documents = list(yaml.safe_load_all(manifest or ""))
    except yaml.YAMLError as exc:
        return [(None, None, "a manifest that is not YAML (%s)" % str(exc).splitlines()[0])]
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict) or not isinstance(document.get("metadata"), dict):
            objects.append((None, None, "an entry that is no object"))
            continue
        kind, metadata = document.get("kind"), document["metadata"]
        namespace = metadata.get("namespace") or (release_namespace if kind in NAMESPACED_KINDS else None)
        if kind == "Namespace" or kind in CLUSTER_RBAC_KINDS:
            namespace = None
        objects.append((kind, namespace, metadata.get("name") or ""))
    return objects


def foreign_objects(objects, agent):
    """The objects of ``objects`` the agent's chart does not make, as ``Kind namespace/name`` (``Kind name`` for cluster
    ones)."""
    return ["%s %s" % (kind, "%s/%s" % (namespace, name) if namespace else name)
            for kind, namespace, name in objects if not agent.allows(kind, namespace, name)]


def newest_record(kube, name, namespace):
    """``(Secret name, decoded payload)`` of the newest record Helm keeps of release ``name``, or ``(None, None)``."""
    newest = None
    for secret in kube.list(SECRET, namespace, label_selector=release_selector(name)):
        secret_name, revision = storage_revision(secret)
        if secret_name == name and revision is not None and (newest is None or revision > newest[0]):
            newest = (revision, secret)
    if newest is None or not (newest[1].get("data") or {}).get("release"):
        return None, None
    secret = newest[1]
    try:
        return secret["metadata"]["name"], decode_release(secret["data"]["release"])
    except (ValueError, TypeError, OSError):
        return secret["metadata"]["name"], {"manifest": "{"}  # not Helm's encoding: judged as a manifest that is no YAML


def check_uninstall(kube, name, namespace, agent):
    """Refuse (HelmError) to let ``helm uninstall name`` run when the record it would act on lists an object
    ``agent`` (AgentObjects) does not cover; nothing to check when Helm keeps no record of it."""
    record, payload = newest_record(kube, name, namespace)
    if record is None:
        return
    foreign = foreign_objects(manifest_objects(payload.get("manifest"), namespace), agent)
    if foreign:
        raise HelmError(
            "release record %s/%s lists objects the agent chart does not make (%s): helm uninstall would delete them, so "
            "it was not run; this record was not written by the collection" % (namespace, record, ", ".join(sorted(foreign))),
            "Find out who created the Secret %s/%s (anyone who may create Secrets in %s can); delete it if it is forged "
            "(helm history %s -n %s shows the revisions), then re-run" % (namespace, record, namespace, name, namespace))


def guarded_uninstall(kube, helm, name, namespace, agent):
    """``helm uninstall`` (no hooks) of an agent's release, once check_uninstall has found nothing foreign in it."""
    check_uninstall(kube, name, namespace, agent)
    helm.uninstall(name, namespace)
