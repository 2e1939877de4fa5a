# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Rancher Fleet placed on a member (its bundle deployments' Helm releases), kept or removed by a leave.

Fleet's agent deploys each BundleDeployment as a Helm release whose chart carries the annotation
``fleet.cattle.io/bundle-id``; when a BundleDeployment goes (its Cluster is deleted, say) the agent uninstalls the
release. Its own release (``fleet-agent-<cluster>`` in cattle-fleet-system, when Fleet manages the agent) is the
agent's, not a workload, and is left to fleet_agent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import decode_release
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource, SECRET
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import AGENT_NAMESPACE, AGENT_RELEASE
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.targets import BUNDLE_NAME_LABEL, BUNDLE_NAMESPACE_LABEL

BUNDLE_ID_ANNOTATION = "fleet.cattle.io/bundle-id"
BUNDLE_DEPLOYMENT = Resource("fleet.cattle.io/v1alpha1", "BundleDeployment", "bundledeployments")
CLUSTER_NAMESPACE_LABEL = "fleet.cattle.io/cluster-namespace"
CLUSTER_LABEL = "fleet.cattle.io/cluster"
WORKLOADS = ("keep", "remove")
REMOVE_HINT = ("Fleet's agent uninstalls the release of each BundleDeployment that goes, once the member's Cluster is "
               "deleted (member_leave deletes it first with fleetops_leave_workloads=remove); check the agent's log, or "
               "leave with fleetops_leave_workloads=keep and uninstall the releases with helm")


def _agent_own(namespace, name):
    return namespace == AGENT_NAMESPACE and name.startswith(AGENT_RELEASE + "-")


def _newest_storage(secrets):
    """``{(namespace, release): storage Secret}`` of each release's newest revision, uninstalled ones left out."""
    newest = {}
    for secret in secrets:
        meta = secret.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get("status") == "uninstalled" or not labels.get("name"):
            continue
        try:
            revision = int(labels.get("version") or 0)
        except ValueError:
            continue
        key = (meta.get("namespace"), labels["name"])
        if key not in newest or revision > newest[key][0]:
            newest[key] = (revision, secret)
    return dict((key, secret) for key, (dummy, secret) in newest.items())


def bundle_releases(member):
    """The releases Fleet's agent deployed for bundles: ``[{'name', 'namespace', 'bundle'}]`` sorted, from one LIST of
    Helm's storage Secrets in all namespaces (the agent's own release left out)."""
    found = []
    for (namespace, name), secret in _newest_storage(member.list(SECRET, None, label_selector="owner=helm")).items():
        if _agent_own(namespace, name):
            continue
        try:
            chart = (decode_release((secret.get("data") or {}).get("release") or "") or {}).get("chart") or {}
        except (ValueError, TypeError, OSError):
            continue  # not a release Helm can read either; not one of Fleet's
        bundle = ((chart.get("metadata") or {}).get("annotations") or {}).get(BUNDLE_ID_ANNOTATION)
        if bundle:
            found.append({"name": name, "namespace": namespace, "bundle": bundle})
    return sorted(found, key=lambda r: (r["namespace"], r["name"]))


def running(member):
    """What Fleet's agent runs on the member: ``[{'placement': bundle, 'record': 'release <namespace>/<name>'}]`` of
    bundle_releases (one LIST), sorted by bundle."""
    rows = [{"placement": release["bundle"], "record": "release %s/%s" % (release["namespace"], release["name"])}
            for release in bundle_releases(member)]
    return sorted(rows, key=lambda row: (row["placement"], row["record"]))


def release_text(release):
    return "%s/%s (bundle %s)" % (release["namespace"], release["name"], release["bundle"])


def bundle_deployments(hub, cluster_namespace, cluster_name):
    """Names of the bundles deployed to a Cluster (its BundleDeployments in the Cluster's namespace on the hub, the
    agent's own bundle left out), sorted; [] without a namespace, None when the credential may not list them."""
    if not cluster_namespace:
        return []
    try:
        items = hub.list(BUNDLE_DEPLOYMENT, cluster_namespace)
    except ApiError as exc:
        if exc.status == 403:
            return None
        raise
    names = set()
    for item in items:
        meta = item.get("metadata") or {}
        name = (meta.get("labels") or {}).get(BUNDLE_NAME_LABEL) or meta.get("name")
        if name != "%s-%s" % (AGENT_RELEASE, cluster_name):
            names.add(name)
    return sorted(names)


def placements(hub, cluster):
    """``[{name, applied, message, bundle}]`` of the BundleDeployments a hub has for ``cluster`` (its Cluster object),
    the agent's own left out: applied when the agent reports it ready with the deployment the hub asks for
    (``appliedDeploymentID == deploymentID``). One LIST: Fleet labels each with its Cluster."""
    meta = cluster["metadata"]
    selector = "%s=%s,%s=%s" % (CLUSTER_NAMESPACE_LABEL, meta.get("namespace"), CLUSTER_LABEL, meta["name"])
    return placement_rows(hub.list(BUNDLE_DEPLOYMENT, label_selector=selector))


def placement_rows(bundle_deployments):
    """placements' rows of listed BundleDeployments."""
    found = []
    for item in bundle_deployments:
        name = item["metadata"]["name"]
        if name.startswith(AGENT_RELEASE + "-"):
            continue  # Fleet's own per-cluster agent bundle (manageAgent): each hub has its own, not a workload
        status, spec = item.get("status") or {}, item.get("spec") or {}
        current = bool(spec.get("deploymentID")) and status.get("appliedDeploymentID") == spec.get("deploymentID")
        applied = current and bool(status.get("ready"))
        message = None if applied else ("not deployed with its current content yet" if not current else
                                        "deployed, not ready: %s" % ((status.get("display") or {}).get("message") or status.get("state") or "?"))
        labels = item["metadata"].get("labels") or {}
        found.append({"name": name, "applied": applied, "message": message,
                      "bundle": {"namespace": labels.get(BUNDLE_NAMESPACE_LABEL) or item["metadata"].get("namespace"),
                                 "name": labels.get(BUNDLE_NAME_LABEL) or name}})
    return sorted(found, key=lambda item: item["name"])
