# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member's side of Rancher Fleet: what is installed in cattle-fleet-system, and whether the hub accepts the agent.

What the member holds is evidence, never configuration: the agent's credential is checked only at the hub URL the
collection gives the agent (``expected_endpoint``: the options, Fleet's own configuration on the hub, the hub
connection), with the CA from there; a credential that names another server is reported, and its token sent nowhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import TaskOptions, hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import rollout_problem, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import read_releases, release_view
from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, KubeClient, credential_check,
)
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks, kubeconfig_server, kubeconfig_token, read_pem
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml, unb64
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_KEY, AGENT_CREDENTIAL_SECRET, AGENT_DEPLOYMENT, AGENT_LEASE, AGENT_NAMESPACE,
    AGENT_POD_SELECTOR, AGENT_RELEASE, FLEET_CONFIG_MAP,
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
    """``(url, token)`` from the agent's credential Secret (its ``kubeconfig``), or None when unusable. Nothing else of
    it is used: not its CA, nor any file it names."""
    data = ((secret or {}).get("data") or {}).get(AGENT_CREDENTIAL_KEY)
    if not data:
        return None
    try:
        config = load_yaml(unb64(data, AGENT_CREDENTIAL_KEY))
        return kubeconfig_server(config), kubeconfig_token(config)
    except (ParameterError, yaml.YAMLError, AttributeError, TypeError):
        return None


def fleet_config_endpoint(configmap):
    """``(apiServerURL, apiServerCA PEM)`` of Fleet's own configuration on the hub (ConfigMap fleet-controller, key
    ``config``): what Fleet writes into every registration token's values, so what fleet_agent gives the agent when its
    options do not say. Either is None when it does not say."""
    try:
        config = json.loads(((configmap or {}).get("data") or {}).get("config") or "{}")
    except ValueError:
        return None, None
    if not isinstance(config, dict):
        return None, None
    url, ca = config.get("apiServerURL"), config.get("apiServerCA")
    try:
        ca = certificate_blocks(unb64(ca, "apiServerCA")) if isinstance(ca, str) and ca else None
    except ParameterError:
        ca = None
    return (url if isinstance(url, str) and url else None), (ca or None)


def expected_endpoint(params, hub):
    """``((url, ca_pem), None)``: the hub URL and CA fleet_agent gives the agent, as the options tell - api_server_url
    (member_info: hub_url), else Fleet's configuration on the hub, else the hub connection's server; the CA likewise
    (api_server_ca or hub_ca_cert first) - in fleet_agent's order (agent_flow.hub_endpoint). ``(None, why)`` when
    they do not tell."""
    try:
        fleet_url, fleet_ca = fleet_config_endpoint(hub.get(CONFIG_MAP, FLEET_CONFIG_MAP, AGENT_NAMESPACE) if hub is not None else None)
    except FleetOpsError:  # e.g. no RBAC on it: the options and the hub connection still tell
        fleet_url, fleet_ca = None, None
    ca_option = "api_server_ca" if params.get("api_server_ca") else "hub_ca_cert"
    try:
        (url, _source), (ca, _ca_source) = hub_endpoint(
            TaskOptions(params), [(params.get("api_server_url") or params.get("hub_url"), "parameter"), (fleet_url, "fleet")],
            [(read_pem(params.get(ca_option), ca_option), "parameter"), (fleet_ca, "fleet")], "hub_url")
    except ParameterError as exc:
        return None, "the hub URL the collection gives the agent is not known, so its credential was not checked: %s" % exc.message()
    if not url:
        return None, ("the hub URL the collection gives the agent is not known (hub_url, Fleet's apiServerURL or the hub "
                      "connection), so its credential was not checked")
    return (url.rstrip("/"), ca), None


def same_server(url, other):
    return bool(url) and bool(other) and url.rstrip("/") == other.rstrip("/")


def check_credential(url, ca_pem, token, proxy=None, label="hub (with the agent's credential)"):
    """Ask the hub who ``token`` is, as the agent would connect: ``{accepted: True/False/None, user, error}``.

    False: the hub refused it (401). None: the hub could not be reached from here, so nothing is known.
    A 403 means the hub knows the credential (authenticated, just not allowed to ask): accepted.
    """
    return credential_check(KubeClient(endpoint_configuration(url, ca_pem, token, proxy=proxy), label=label))


def member_view(facts, check=None, expected_url=None):
    """The member's facts as plain data (no values, no token, no kubeconfig); ``check`` is check_credential's answer,
    ``expected_url`` the hub URL the collection gives the agent (None: not known)."""
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
        "expected_server": expected_url,
        "credential_accepted": check.get("accepted"),
        "credential_user": check.get("user"),
        "credential_error": check.get("error"),
        "credential_expires": token_expiry(endpoint[1]) if endpoint else None,
        "credential_age_seconds": age_seconds(((facts["credential"] or {}).get("metadata") or {}).get("creationTimestamp")),
        "bootstrap": facts["bootstrap"] is not None,
        "deployment": deployment is not None,
        "agent_pod": agent_settings.pod_view(deployment),
        "deployment_ready": bool(deployment) and (status.get("availableReplicas") or 0) > 0,
        "deployment_problem": rollout_problem(deployment),
    }
