# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The member's side of Rancher Fleet: what is installed in cattle-fleet-system, and whether the hub accepts the agent.

What the member holds is evidence, never configuration: the agent's credential is checked only at the hub URL the
collection gives the agent (``expected_endpoint``: hub_endpoint's, with Fleet's own configuration on the hub), with
the CA from there; a credential that names another server is reported, and its token sent nowhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import rollout_problem, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS
from ansible_collections.fleetops.registration.plugins.module_utils.helm import helm_storage, release_view, releases_of
from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, KubeClient, credential_check,
)
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks, kubeconfig_server, kubeconfig_token
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml, unb64
from ansible_collections.fleetops.registration.plugins.module_utils.silence import available_since
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import ENV_SECRET_PREFIX
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_KEY, AGENT_CREDENTIAL_SECRET, AGENT_DEPLOYMENT, AGENT_LEASE, AGENT_NAMESPACE,
    AGENT_POD_SELECTOR, AGENT_RELEASE, FLEET_CONFIG_MAP,
)

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml


def split_releases(releases):
    """``(the fleet-agent release or None, sorted names of Fleet's own fleet-agent-<cluster> releases)``."""
    adopted = sorted(name for name in releases if name.startswith(AGENT_RELEASE + "-"))
    return releases.get(AGENT_RELEASE), adopted


def read_member(kube, namespace_object=True, secrets_optional=False):
    """What cattle-fleet-system on the member holds: releases (with values: secret-bearing), credential, bootstrap, Deployment.

    Two reads where the agent is installed: one LIST of the namespace's Secrets (Helm's storage, the credential, the
    bootstrap) and the Deployment; the namespace itself only when neither shows it exists, or with ``namespace_object``
    (its labels and deletion state, for a leave). Without ``namespace_object`` an existing namespace is ``{}``. With
    ``secrets_optional`` a credential that may not list Secrets (the view role) reads the rest: ``unread`` says so.
    """
    unread = []
    try:
        secrets = kube.list(SECRET, AGENT_NAMESPACE)
    except ApiError as exc:
        if not (secrets_optional and exc.status == 403):
            raise
        secrets, unread = [], [SECRETS]
    deployment = kube.get(DEPLOYMENT, AGENT_DEPLOYMENT, AGENT_NAMESPACE)
    namespace = {} if (secrets or deployment is not None) and not namespace_object else kube.get(NAMESPACE, AGENT_NAMESPACE)
    by_name = dict(((secret.get("metadata") or {}).get("name"), secret) for secret in secrets)
    facts = {"namespace": namespace, "releases": releases_of(helm_storage(secrets), AGENT_NAMESPACE), "release": None, "adopted": [],
             "credential": by_name.get(AGENT_CREDENTIAL_SECRET), "bootstrap": by_name.get(AGENT_BOOTSTRAP_SECRET),
             "deployment": deployment, "unread": unread, "secret_names": set(by_name),
             "env_secrets": sorted(name for name, secret in by_name.items() if agent_env.written_by_collection(secret))}
    facts["release"], facts["adopted"] = split_releases(facts["releases"])
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


def fleet_configured_endpoint(hub):
    """``fleet_config_endpoint`` of the hub's Fleet configuration, read once per hub client (a batch of members shares
    its hub's); ``(None, None)`` without a hub, or when it cannot be read (e.g. no RBAC on it: the options and the hub
    connection still tell)."""
    if hub is None:
        return None, None
    with _FLEET_CONFIG_LOCK:  # a batch's members are read side by side: the first reads it, the others wait for it
        if id(hub) not in _FLEET_CONFIG:
            try:
                endpoint = fleet_config_endpoint(hub.get(CONFIG_MAP, FLEET_CONFIG_MAP, AGENT_NAMESPACE))
            except FleetOpsError:
                endpoint = (None, None)
            _FLEET_CONFIG[id(hub)] = (hub, endpoint)  # the client kept, so its id is not reused for another
        return _FLEET_CONFIG[id(hub)][1]


_FLEET_CONFIG = {}
_FLEET_CONFIG_LOCK = threading.Lock()


def expected_endpoint(params, hub):
    """``((url, ca_pem), None)``: the hub URL and CA fleet_agent gives the agent (hub_endpoint.resolve), Fleet's
    configuration on the hub standing for the registration token's values (Fleet writes it into them). ``(None, why)``
    when they do not tell."""
    fleet_url, fleet_ca = fleet_configured_endpoint(hub)
    # an option that cannot be used fails, naming it; so does a Fleet configuration with a URL that is not https://
    endpoint = hub_endpoint.resolve(params, fleet_url, fleet_ca, "Fleet's configuration")
    if not endpoint.url:
        return None, ("the hub URL the collection gives the agent is not known (%s, Fleet's apiServerURL or the hub "
                      "connection), so its credential was not checked" % hub_endpoint.URL)
    return (endpoint.url.rstrip("/"), endpoint.ca), None


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
    view = {
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
        "env_secrets_missing": sorted(name for name in agent_env.read_by(deployment) - facts.get("secret_names", set())
                                      if name.startswith(ENV_SECRET_PREFIX)),
        "deployment_ready": bool(deployment) and (status.get("availableReplicas") or 0) > 0,
        "agent_available_since": available_since(deployment),
        "deployment_problem": rollout_problem(deployment),
        "unread": facts.get("unread") or [],
    }
    if SECRETS in view["unread"]:  # not known, rather than missing
        view.update(dict.fromkeys(("credential", "credential_usable", "bootstrap", "env_secrets_missing"), None))
    return view
