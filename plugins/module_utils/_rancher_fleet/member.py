# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member's side of Rancher Fleet: what is installed in cattle-fleet-system, and whether the hub accepts the agent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import rollout_problem, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import read_releases, release_view
from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, NAMESPACE, SECRET, KubeClient, credential_check
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import (
    kubeconfig_ca_pem, kubeconfig_server, kubeconfig_token,
)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml, unb64
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_KEY, AGENT_CREDENTIAL_SECRET, AGENT_DEPLOYMENT, AGENT_LEASE, AGENT_NAMESPACE,
    AGENT_POD_SELECTOR, AGENT_RELEASE,
)

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml


def split_releases(releases):
    """``(the fleet-agent release or None, sorted names of Fleet's own fleet-agent-<cluster> releases)``."""
    adopted = sorted(name for name in releases if name.startswith(AGENT_RELEASE + "-"))
    return releases.get(AGENT_RELEASE), adopted


def read_member(kube):
    """What cattle-fleet-system on the member holds: releases (with values: secret-bearing), credential, bootstrap, Deployment.

    Four reads: the namespace, one LIST of Helm's storage Secrets, the credential Secret, the bootstrap Secret and the
    Deployment (the last three skipped when the namespace does not exist).
    """
    namespace = kube.get(NAMESPACE, AGENT_NAMESPACE)
    facts = {"namespace": namespace, "releases": {}, "release": None, "adopted": [], "credential": None, "bootstrap": None,
             "deployment": None}
    if namespace is None:
        return facts
    facts["releases"] = read_releases(kube, AGENT_NAMESPACE)
    facts["release"], facts["adopted"] = split_releases(facts["releases"])
    facts["credential"] = kube.get(SECRET, AGENT_CREDENTIAL_SECRET, AGENT_NAMESPACE)
    facts["bootstrap"] = kube.get(SECRET, AGENT_BOOTSTRAP_SECRET, AGENT_NAMESPACE)
    facts["deployment"] = kube.get(DEPLOYMENT, AGENT_DEPLOYMENT, AGENT_NAMESPACE)
    return facts


def release_departed_lease(kube, namespace=AGENT_NAMESPACE):
    """Delete the agent's leader Lease when its holder is gone (leases.py), so the waiting agent takes it at its next
    retry instead of after a lease duration. Returns the departed holder's identity, or None."""
    released = leases.release_departed(kube, namespace, [AGENT_LEASE], namespace, AGENT_POD_SELECTOR)
    return released[0] if released else None


def credential_endpoint(secret):
    """``(url, ca_pem, token)`` from the agent's credential Secret (its ``kubeconfig``), or None when unusable."""
    data = ((secret or {}).get("data") or {}).get(AGENT_CREDENTIAL_KEY)
    if not data:
        return None
    try:
        config = load_yaml(unb64(data, AGENT_CREDENTIAL_KEY))
        return kubeconfig_server(config), kubeconfig_ca_pem(config), kubeconfig_token(config)
    except (ParameterError, yaml.YAMLError, AttributeError, TypeError):
        return None


def check_credential(url, ca_pem, token, proxy=None, label="hub (with the agent's credential)"):
    """Ask the hub who ``token`` is, as the agent would connect: ``{accepted: True/False/None, user, error}``.

    False: the hub refused it (401). None: the hub could not be reached from here, so nothing is known.
    A 403 means the hub knows the credential (authenticated, just not allowed to ask): accepted.
    """
    return credential_check(KubeClient(endpoint_configuration(url, ca_pem, token, proxy=proxy), label=label))


def member_view(facts, check=None):
    """The member's facts as plain data (no values, no token, no kubeconfig); ``check`` is check_credential's answer."""
    release = facts["release"]
    if release is None and facts["adopted"]:
        release = facts["releases"][facts["adopted"][0]]
    deployment = facts["deployment"]
    status = (deployment or {}).get("status") or {}
    endpoint = credential_endpoint(facts["credential"])
    check = check or {}
    return {
        "namespace": facts["namespace"] is not None,
        "release": release_view(release),
        "fleet_managed_releases": facts["adopted"],
        "credential": facts["credential"] is not None,
        "credential_usable": endpoint is not None,
        "credential_server": endpoint[0] if endpoint else None,
        "credential_accepted": check.get("accepted"),
        "credential_user": check.get("user"),
        "credential_error": check.get("error"),
        "credential_expires": token_expiry(endpoint[2]) if endpoint else None,
        "credential_age_seconds": age_seconds(((facts["credential"] or {}).get("metadata") or {}).get("creationTimestamp")),
        "bootstrap": facts["bootstrap"] is not None,
        "deployment": deployment is not None,
        "agent_pod": agent_settings.pod_view(deployment),
        "deployment_ready": bool(deployment) and (status.get("availableReplicas") or 0) > 0,
        "deployment_problem": rollout_problem(deployment),
    }
