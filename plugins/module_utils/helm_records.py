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

``helm upgrade`` and ``helm rollback`` are held to the same rule: an upgrade deletes what the record it upgrades from
lists and the chart no longer renders; a rollback applies the objects of the revision it rolls back to and deletes
those of the newest one that the target lacks. So every record Helm would act on must list only the agent's objects.
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


def records(kube, name, namespace):
    """``{revision: (Secret name, decoded payload, deployed)}`` of every record Helm keeps of release ``name`` (one
    LIST); ``deployed`` when the record's label or payload says so (Helm's storage selects by the label). A record that
    is not Helm's encoding has the payload of a manifest that is no YAML, so it is judged foreign."""
    found = {}
    for secret in kube.list(SECRET, namespace, label_selector=release_selector(name)):
        secret_name, revision = storage_revision(secret)
        if secret_name != name or revision is None or not (secret.get("data") or {}).get("release"):
            continue
        try:
            payload = decode_release(secret["data"]["release"])
        except (ValueError, TypeError, OSError):
            payload = {"manifest": "{"}
        label = ((secret.get("metadata") or {}).get("labels") or {}).get("status")
        deployed = "deployed" in (label, (payload.get("info") or {}).get("status"))
        found[revision] = (secret["metadata"]["name"], payload, deployed)
    return found


def newest_record(kube, name, namespace):
    """``(Secret name, decoded payload)`` of the newest record Helm keeps of release ``name``, or ``(None, None)``."""
    kept = records(kube, name, namespace)
    return kept[max(kept)][:2] if kept else (None, None)


def refuse_foreign(record, payload, namespace, name, agent, verb):
    """Refuse (HelmError) to let Helm (``verb``) act on ``record`` when its manifest lists an object ``agent`` does not
    cover."""
    foreign = foreign_objects(manifest_objects(payload.get("manifest"), namespace), agent)
    if foreign:
        raise HelmError(
            "release record %s/%s lists objects the agent chart does not make (%s): %s would act on them, so it was not "
            "run; this record was not written by the collection" % (namespace, record, ", ".join(sorted(foreign)), verb),
            "Find out who created the Secret %s/%s (anyone who may create Secrets in %s can); delete it if it is forged "
            "(helm history %s -n %s shows the revisions), then re-run" % (namespace, record, namespace, name, namespace))


def check_uninstall(kube, name, namespace, agent):
    """Refuse (HelmError) to let ``helm uninstall name`` run when the record it would act on lists an object
    ``agent`` (AgentObjects) does not cover; nothing to check when Helm keeps no record of it."""
    record, payload = newest_record(kube, name, namespace)
    if record is not None:
        refuse_foreign(record, payload, namespace, name, agent, "helm uninstall")


def check_rollback(kube, name, namespace, agent, revision):
    """Refuse (HelmError) to let ``helm rollback name revision`` run when the target record (whose objects Helm
    applies) or the newest one (whose objects the target lacks Helm deletes) lists an object ``agent`` does not cover."""
    kept = records(kube, name, namespace)
    for number in sorted(set((revision, max(kept))) if kept else ()):
        if number in kept:
            refuse_foreign(kept[number][0], kept[number][1], namespace, name, agent, "helm rollback")


def check_upgrade(kube, name, namespace, agent):
    """Refuse (HelmError) to let ``helm upgrade name`` run when the record it upgrades from (the newest, or the newest
    deployed one) lists an object ``agent`` does not cover: Helm deletes what that record lists and the chart no longer
    renders. Nothing to check before a first install."""
    kept = records(kube, name, namespace)
    for number in sorted(kept):
        if number == max(kept) or kept[number][2]:
            refuse_foreign(kept[number][0], kept[number][1], namespace, name, agent, "helm upgrade")


def guarded_uninstall(kube, helm, name, namespace, agent):
    """``helm uninstall`` (no hooks) of an agent's release, once check_uninstall has found nothing foreign in it."""
    check_uninstall(kube, name, namespace, agent)
    helm.uninstall(name, namespace)
