# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet's API objects, names and limits, and the checks on names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils.labels import HUB_NAMESPACE, MANAGED_BY as COLLECTION, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import validate_dns_label

GROUP_VERSION = "cluster.kubernetes-fleet.io/v1beta1"
MEMBER_CLUSTER = Resource(GROUP_VERSION, "MemberCluster", "memberclusters", namespaced=False)
WORK = Resource("placement.kubernetes-fleet.io/v1beta1", "Work", "works")
# The hub agent's per-member copy, in fleet-member-<name>: the member agent writes its heartbeat here first.
INTERNAL_MEMBER_CLUSTER = Resource(GROUP_VERSION, "InternalMemberCluster", "internalmemberclusters")

# KubeFleet's own namespace: the hub agent runs there and the member identities live there on the hub;
# the member-agent chart installs the agent into a namespace of the same name on the member.
KUBEFLEET_SYSTEM_NAMESPACE = "fleet-system"
# Where the collection keeps the member identities (ServiceAccounts and their tokens) on the hub: its own namespace, so
# the hub credential needs Secrets and ServiceAccounts nowhere else. Identities in KubeFleet's namespace (earlier
# versions' default) are moved on the member's next run (identity_move_reasons).
IDENTITY_NAMESPACE = HUB_NAMESPACE
LEGACY_IDENTITY_NAMESPACE = KUBEFLEET_SYSTEM_NAMESPACE
HUB_AGENT = "hub-agent"
MEMBER_NAMESPACE_PREFIX = "fleet-member-"
MEMBER_CLUSTER_FINALIZER = "kubernetes-fleet.io/membercluster-finalizer"
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
MANAGED_BY = {MANAGED_BY_LABEL: COLLECTION}
TOKEN_REVISION_ANNOTATION = "fleetops.registration/hub-token-revision"
# Labels that hub-side tooling sets on MemberClusters (AKS Fleet Manager sets fleet.azure.com/*);
# labels_mode=replace keeps them.
CONTROLLER_LABEL_PREFIXES = ("fleet.azure.com/", "kubernetes-fleet.io/")
CHART_NAME = "member-agent"
# The member agent's leader-election Leases (KubeFleet v0.14.0 memberagent, --leader-election-namespace default) and
# the label of its pods (the chart's Deployment, in agent_namespace).
AGENT_LEASE_NAMESPACE = "kube-system"
AGENT_LEASES = ("136224848560.member.fleet.azure.com", "136224848560.hub.fleet.azure.com")
# The one its hub controllers (the heartbeat among them) run under.
HUB_MANAGER_LEASE = AGENT_LEASES[1]
AGENT_POD_SELECTOR = "app.kubernetes.io/name=member-agent"
DEFAULT_RELEASE = "member-agent"
DEFAULT_HUB_SECRET = "hub-kubeconfig-secret"
# The token's own namespace, made by the collection (and removed by the leave): not ``default``, where anyone allowed
# to read Secrets of ordinary workloads would read the member's hub credential. Agents installed with the token in
# ``default`` (earlier versions of this collection) are moved on their next run.
DEFAULT_HUB_SECRET_NAMESPACE = "fleet-hub-credentials"
# Helm's records of the release sit beside the token (earlier versions: default; release_move moves them).
DEFAULT_RELEASE_NAMESPACE = DEFAULT_HUB_SECRET_NAMESPACE
# The hub names the member's namespace fleet-member-<name>, which must be a DNS label (63).
MAX_MEMBER_NAME = 63 - len(MEMBER_NAMESPACE_PREFIX)
HEARTBEAT_MIN, HEARTBEAT_MAX = 1, 600
# The MemberCluster API's default heartbeatPeriodSeconds.
DEFAULT_HEARTBEAT_PERIOD = 60


def validate_member_name(name, param="name"):
    """A member name the hub can build ``fleet-member-<name>`` from."""
    if not isinstance(name, str) or not name:
        raise ParameterError(param, "a member cluster name is required")
    if len(name) > MAX_MEMBER_NAME:
        raise ParameterError(
            param, "%r is %d characters long; at most %d are allowed" % (name, len(name), MAX_MEMBER_NAME),
            "The hub creates the namespace %s<name>, which must fit in 63 characters" % MEMBER_NAMESPACE_PREFIX,
        )
    try:
        validate_dns_label(name, param)
    except ParameterError:
        raise ParameterError(
            param, "%r is not a valid member cluster name" % (name,),
            "Use lower-case letters, digits and '-', starting and ending with a letter or digit "
            "(the hub derives the namespace %s<name> from it)" % MEMBER_NAMESPACE_PREFIX,
        )
    return name


def member_namespace(name):
    return MEMBER_NAMESPACE_PREFIX + name


def default_service_account(name):
    """The identity name KubeFleet's documentation and join script use."""
    return name + "-hub-cluster-access"


def default_token_secret(service_account):
    return service_account + "-token"


def validate_heartbeat(value, param="heartbeat_period_seconds"):
    if isinstance(value, bool) or not isinstance(value, int) or not HEARTBEAT_MIN <= value <= HEARTBEAT_MAX:
        raise ParameterError(
            param, "%r is out of range" % (value,),
            "Give whole seconds from %d to %d (the MemberCluster API's limits)" % (HEARTBEAT_MIN, HEARTBEAT_MAX),
        )
    return value


def chart_fullname(release, chart_name=CHART_NAME):
    """The chart's ``member-agent.fullname`` (the Deployment's name)."""
    name = release if chart_name in release else "%s-%s" % (release, chart_name)
    return name[:63].rstrip("-")


# The taint a member joins with when it is to be quarantined (kubefleet#625: KubeFleet places work on a member as soon as
# it joins); kubefleet_member_cluster's quarantine option alone adds and lifts it.
QUARANTINE_TAINT = {"key": "fleetops.registration/quarantine", "value": "unverified", "effect": "NoSchedule"}
