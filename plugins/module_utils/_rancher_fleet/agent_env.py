# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Secret on the member the Fleet agent reads its environment from (``agent_settings.env_secret``). fleet_agent
writes it before Helm, so neither the chart's Deployment (patched with the references) nor the one Fleet deploys
from the Cluster starts without it. The collection's older ones are removed, except the newest other one (what a
rollback of the Cluster's agent fields names) and any the agent Deployment still reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import ENV_SECRET_LABEL

SELECTOR = "%s=%s,%s" % (MANAGED_BY_LABEL, MANAGED_BY, ENV_SECRET_LABEL)


def desired_secret(name, namespace, values):
    data = dict((key, base64.b64encode(value.encode("utf-8")).decode("ascii")) for key, value in values.items())
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": data,
            "metadata": {"name": name, "namespace": namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY, ENV_SECRET_LABEL: "true"}}}


def read_by(deployment):
    """The Secrets the pod template's containers take environment values from."""
    spec = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
    return set(((item.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
               for container in spec.get("containers") or [] for item in container.get("env") or []) - set([None])


def removable(secrets, wanted, deployment):
    """Names of the collection's env Secrets (``secrets``, listed by ``SELECTOR``) to remove: all but ``wanted``, those
    the ``deployment`` reads, and the newest of the rest."""
    kept = set([wanted]) | read_by(deployment)
    others = sorted((s for s in secrets if s["metadata"]["name"] not in kept),
                    key=lambda s: (s["metadata"].get("creationTimestamp") or "", s["metadata"]["name"]), reverse=True)
    return [s["metadata"]["name"] for s in others[1:]]


def write(kube, namespace, secret, deployment, dry_run):
    """Make the Secret ``secret`` (``(name, values)``) hold those values and remove the older ones: the reasons, as
    sentences ([] when all was in place)."""
    name, values = secret
    desired = desired_secret(name, namespace, values)
    current = kube.get(SECRET, name, namespace)
    reasons = []
    if current is None:
        current = _create(kube, desired, namespace, dry_run)
        if current is None:
            reasons.append("the agent's environment Secret %s/%s was written" % (namespace, name))
    if current is not None and (current.get("data") != desired["data"]
                                or (current["metadata"].get("labels") or {}).get(ENV_SECRET_LABEL) != "true"):
        kube.patch(SECRET, name, {"data": desired["data"], "metadata": {"labels": desired["metadata"]["labels"]}}, namespace, dry_run=dry_run)
        reasons.append("the agent's environment Secret %s/%s did not hold the setting's values and was written again" % (namespace, name))
    old = removable(kube.list(SECRET, namespace, label_selector=SELECTOR), name, deployment)
    for stale in old:
        kube.delete(SECRET, stale, namespace, dry_run=dry_run)
    if old:
        reasons.append("older environment Secrets of the agent were removed: %s" % ", ".join(old))
    return reasons


def _create(kube, desired, namespace, dry_run):
    """Create the Secret: None, or the one found in its place when another run (outside the member lock: a module
    used on its own) made it first; its name is the values' digest, so ``write`` then only checks it."""
    try:
        kube.create(SECRET, desired, namespace, dry_run=dry_run)
    except ApiError as exc:
        found = kube.get(SECRET, desired["metadata"]["name"], namespace) if exc.status == 409 else None
        if found is None:
            raise
        return found
    return None


def written_by_collection(secret):
    """Whether ``secret`` is an env Secret the collection wrote (its label; what ``SELECTOR`` lists)."""
    labels = ((secret or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and ENV_SECRET_LABEL in labels


def remove_all(kube, namespace, names, dry_run):
    """Delete the env Secrets ``names`` (those ``written_by_collection``, from the namespace's Secrets a leave has read):
    their names."""
    for name in names:
        kube.delete(SECRET, name, namespace, dry_run=dry_run)
    return names
