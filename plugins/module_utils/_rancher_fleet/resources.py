# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet's objects and the facts about them.

Facts below were read from Fleet v0.16.0 (the ClusterRegistrationToken and
ClusterRegistration handlers, the cluster import controller, the agent's
register.go and the fleet-agent chart), not guessed:

- A ClusterRegistrationToken gets a Secret of the same name (``status.secretName``),
  type ``fleet.cattle.io/cluster-registration-values``, whose ``values`` key holds
  the agent's values.yaml: clusterNamespace, apiServerURL, apiServerCA, token,
  systemRegistrationNamespace, tokenName. It appears asynchronously (fleet#707)
  and is removed by the controller when the token goes.
- ``spec.ttl`` must match ``^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$`` or be ``0``
  (CRD validation); ``status.expires`` is creation + ttl, and the controller deletes
  expired tokens.
- The fleet-agent chart refuses any namespace but cattle-fleet-system, any
  release name but fleet-agent, and values without apiServerURL or tokenName.
  It creates the Deployment ``fleet-agent`` and the Secret ``fleet-agent-bootstrap``
  (the token's values).
- An agent registers with ``clientID`` (default: the kube-system Namespace UID);
  the hub binds it to the Cluster whose ``spec.clientID`` matches in the token's
  namespace, or creates ``cluster-<hash>``. ``status.agent.lastSeen`` is its check-in.
  Once registered, the agent keeps its own hub credential in the Secret ``fleet-agent``
  (key ``kubeconfig``) and deletes the bootstrap Secret.
- With ``manageAgent`` on (the default), Fleet deploys the agent again as bundle
  ``fleet-agent-<cluster>``, a Helm release of that name on the member.
- Manager-initiated: the Secret that ``spec.kubeConfigSecret`` names holds the
  kubeconfig under the key ``value`` (the cluster-api format), optionally with
  ``apiServerURL``/``apiServerCA`` keys overriding the hub address the agent uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import AgentObjects
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource

API_VERSION = "fleet.cattle.io/v1alpha1"
CLUSTER = Resource(API_VERSION, "Cluster", "clusters")
TOKEN = Resource(API_VERSION, "ClusterRegistrationToken", "clusterregistrationtokens")
REGISTRATION = Resource(API_VERSION, "ClusterRegistration", "clusterregistrations")

AGENT_NAMESPACE = "cattle-fleet-system"
AGENT_RELEASE = "fleet-agent"
AGENT_DEPLOYMENT = "fleet-agent"
AGENT_CREDENTIAL_SECRET = "fleet-agent"

AGENT_CREDENTIAL_KEY = "kubeconfig"
AGENT_BOOTSTRAP_SECRET = "fleet-agent-bootstrap"
# The agent's leader-election Lease (Fleet v0.16.0 internal/cmd/agent) and its pods' label (both the bootstrap chart's
# and Fleet's adopted fleet-agent-<cluster> Deployment).
AGENT_LEASE = "fleet-agent"
AGENT_POD_SELECTOR = "app=fleet-agent"
VALUES_SECRET_TYPE = "fleet.cattle.io/cluster-registration-values"
VALUES_KEY = "values"
KUBECONFIG_KEY = "value"
API_SERVER_URL_KEY = "apiServerURL"
API_SERVER_CA_KEY = "apiServerCA"

FLEET_CONFIG_MAP = "fleet-controller"
MANAGE_AGENT_WARNING = (
    "Fleet's controller runs with manageAgent: false (ConfigMap %s/fleet-controller). Fleet v0.16.0 cannot import a cluster "
    "then: its import handler first deletes the agent bundle fleet-agent-<cluster>, which only exists with manageAgent on, "
    "and retries forever on 'not found'. Enable manageAgent, or register this cluster agent-initiated (fleet_agent)")

# Labels Fleet (and Rancher) manage on Cluster objects; ``labels_mode: replace`` keeps them.
MANAGED_LABEL_PREFIXES = ("fleet.cattle.io/", "management.cattle.io/", "provisioning.cattle.io/")
OWNER_CLUSTER_LABEL = "fleetops.registration/cluster"
# On the tokens this collection creates: which run made them, and when they expire.
RUN_LABEL = "fleetops.registration/run"
EXPIRES_ANNOTATION = "fleetops.registration/expires"
# The member lock (namespace/name) a token was made under: once its run no longer holds it, the token is left over.
LOCK_ANNOTATION = "fleetops.registration/lock"

# The token's secret value keys in an agent values.yaml.
SECRET_VALUE_KEYS = ("token",)


def agent_objects(namespace):
    """What an uninstall of a Fleet agent release in ``namespace`` may delete (helm_records.AgentObjects): the
    fleet-agent chart names its cluster RBAC fleet-agent-..., Fleet's own managed agent (fleet-agent-<cluster>)
    <namespace>-fleet-agent-... and its PriorityClass fleet-agent-priority-class."""
    return AgentObjects(namespace, ("fleet-agent", namespace + "-fleet-agent"))
