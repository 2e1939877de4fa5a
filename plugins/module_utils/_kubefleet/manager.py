# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet as a fleet manager (``fleet_managers.FleetManager``): the member judged from the hub and the member.

- hub: the MemberCluster (one LIST for any number of members), its conditions and the member agent's heartbeat;
- member: the member-agent release (read from Helm's storage, no helm process), the token Secret the options name
  and whether the hub accepts that token, and the agent Deployment. Where the agent should connect, with which CA,
  and which Secret holds its token come from the options and the hub connection only (``hub_access.agent_endpoint``,
  what the agent module installs); what the release's values say is evidence, compared with that and reported as
  drift, never followed: a member-held token goes only to the hub URL the collection configures, with its CA;
- ``judge`` (pure): the rule table in ``judge.py`` turns both views and what the inventory wants into findings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings, hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.agent_versions import image_tag, release_version
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import pod_selector, rollout_problem, tls_problem, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, SECRET, SERVICE_ACCOUNT, credential_check
from ansible_collections.fleetops.registration.plugins.module_utils.silence import available_since
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import contact, hub_access, tokens
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    DEFAULT_HUB_SECRET, DEFAULT_HUB_SECRET_NAMESPACE, DEFAULT_RELEASE, DEFAULT_RELEASE_NAMESPACE, GROUP_VERSION,
    DEFAULT_HEARTBEAT_PERIOD, HUB_AGENT, KUBEFLEET_SYSTEM_NAMESPACE, MEMBER_CLUSTER, chart_fullname,
    validate_heartbeat, validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    agent_configuration, agent_hub_endpoint, normalize_taints, secret_token, wanted_configuration,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge, targets, views, workloads
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.workloads import PLACEMENT
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.release_move import ReleaseMove

AGENT_CONTAINER = "member-agent"
# The status word of a member whose findings name these causes (findings.STATUS_CAUSES); else joined, ready-to-join
# or waiting.
STATE_OF_CAUSE = {"leaving": "leaving", "silent": "silent", "quarantined": "quarantined"}
# Options member_view reads from the caller's params: ``kubefleet_<key>`` first (a module serving several
# managers), then ``<key>`` (kubefleet_member_agent's own names), then the default.
MEMBER_OPTIONS = {
    "release_name": DEFAULT_RELEASE,
    "release_namespace": DEFAULT_RELEASE_NAMESPACE,
    "agent_namespace": KUBEFLEET_SYSTEM_NAMESPACE,
    "secret_name": DEFAULT_HUB_SECRET,
    "secret_namespace": DEFAULT_HUB_SECRET_NAMESPACE,
}


def option(params, key):
    for name in ("kubefleet_" + key, key):
        if params.get(name):
            return params[name]
    return MEMBER_OPTIONS.get(key)


class KubeFleet(FleetManager):
    """KubeFleet: MemberCluster on the hub, member-agent release and hub-kubeconfig-secret on the member."""

    name = "kubefleet"
    title = "KubeFleet"
    group_version = GROUP_VERSION
    join_results = views.JOIN_RESULTS
    leave_results = views.LEAVE_RESULTS
    summary_shape = views.SUMMARY_SHAPE
    member_resource = MEMBER_CLUSTER
    hub_resources = ("memberclusters", "internalmemberclusters")
    controller = (KUBEFLEET_SYSTEM_NAMESPACE, HUB_AGENT)
    install_hint = "apply KubeFleet's hub CRDs and install the hub-agent chart on the hub"
    version_fix = ("install the member-agent chart of the hub's release - the KubeFleet project's chart at chart version "
                   "%(hub)s (fleetops_kubefleet_member_agent_chart_version), or with Azure/fleet's chart the image tag "
                   "v%(hub)s (fleetops_kubefleet_member_agent_image_tag) - and re-run join_cluster.yml")
    # a new token, and the identity's older ones revoked at once: one an earlier join left on the hub is held by no agent
    first_credential = ("credential_missing", ("new_token", "revoke_at_once"))
    leave_steps = ("finish_leave",)  # the hub agent keeps a deleted MemberCluster until the member agent acknowledges
    rollback_result = "member_join_kubefleet_rollback"

    def read_hub(self, hub, names=None, namespace=None, label_selector=None):
        """One LIST of MemberClusters (cluster-scoped, so ``namespace`` does not apply); when any is found, one LIST of
        ServiceAccounts per namespace their identities name, and each carries whether its own exists
        (``views.IDENTITY_PRESENT``): an agent whose identity is gone is cut off once the hub's token cache forgets it."""
        wanted = None if names is None else set(names)
        found = {}
        for obj in hub.list(MEMBER_CLUSTER, label_selector=label_selector):
            name = (obj.get("metadata") or {}).get("name")
            if wanted is None or name in wanted:
                found[name] = obj
        mark_identities(hub, found.values())
        return found

    def hub_view(self, hub_object, now=None):
        return views.hub_view(hub_object, now)

    def host_view(self, hub_object, now, member_url=None):
        return views.host_view(hub_object, now)

    def member_view(self, member, hub, params):
        """The member's side, judged against what the collection configures; never holds the token
        (``credential.accepted`` says whether the hub takes it). ``configured``: what the release's values say (evidence);
        ``wanted``: what the options and the hub connection say; ``hub_url``: the URL the token was checked against.
        A credential that may not read Secrets (the view role) reads the rest: ``unread`` says so, and the release and
        the token are null (not known)."""
        release_name = option(params, "release_name")
        try:
            records = ReleaseMove(member, release_name, option(params, "release_namespace"))
            release, unread, moves = records.release(), [], records.describe() if records.pending else None
        except ApiError as exc:
            if exc.status != 403:
                raise
            release, unread, moves = None, [SECRETS], None
        endpoint, unknown = configured_endpoint(params)
        location = (option(params, "secret_namespace"), option(params, "secret_name"))
        configured = agent_configuration(release.get("values")) if release else None
        wanted = wanted_configuration(endpoint, location[0], location[1], params.get("name")) if endpoint else None
        deployment_name = chart_fullname(release_name)
        deployment = member.get(DEPLOYMENT, deployment_name, option(params, "agent_namespace"))
        return {
            "release": _release_summary(release),
            "release_moves": moves,
            "hub_url": endpoint[0] if endpoint else None,
            "configured": configured,
            "wanted": wanted,
            "configured_ca_problem": _configured_ca_problem(release, configured, wanted, params),
            "credential": None if unread else self._credential(member, params, location, endpoint, unknown),
            "agent_pod": agent_settings.pod_view(deployment),
            "deployment": {"name": deployment_name, "namespace": option(params, "agent_namespace"),
                           "present": deployment is not None,
                           "ready_replicas": ((deployment or {}).get("status") or {}).get("readyReplicas") or 0,
                           "rollout_problem": rollout_problem(deployment), "selector": pod_selector(deployment),
                           "available_since": available_since(deployment)},
            "unread": unread,
        }

    def _credential(self, member, params, location, endpoint, unknown):
        """The token in the Secret the options name (``location``), checked at the hub ``endpoint`` (url, ca, insecure)
        the collection configures; with no endpoint known (``unknown`` says why) it is not sent anywhere."""
        namespace, name = location
        credential = {"name": name, "namespace": namespace, "present": False, "accepted": None, "username": None, "problem": None,
                      "expires": None, "issued": None, "age_seconds": None}
        secret = member.get(SECRET, name, namespace)
        token = secret_token(secret)
        if not token:
            return credential
        issued = ((secret.get("metadata") or {}).get("annotations") or {}).get(tokens.ISSUED_ANNOTATION)
        credential.update(present=True, expires=token_expiry(token), issued=issued, age_seconds=age_seconds(issued))
        if endpoint is None:
            credential["problem"] = unknown
            return credential
        url, ca, insecure = endpoint
        check = credential_check(hub_access.agent_client(url, ca, token, insecure=insecure, proxy=params.get("hub_proxy")))
        credential.update(accepted=check["accepted"], username=check["user"], problem=check["error"])
        return credential

    def agent_version(self, member_view):
        """The release in the image tag of the member-agent container of the agent's pod."""
        for container in (member_view.get("agent_pod") or {}).get("containers") or []:
            if container.get("name") == AGENT_CONTAINER:
                return release_version(image_tag(container.get("image")))
        return None

    def running(self, member):
        """The AppliedWorks KubeFleet's agent keeps on the member, each by its placement and with what it applied."""
        return workloads.running(member)

    def placements(self, hub, hub_object, name):
        return workloads.placement_rows(hub.list(PLACEMENT), name)

    def unplaced(self, hub, name, served, labels, namespace=None):
        names = [item["name"] for item in served]
        return targets.unplaced(names, hub.list(PLACEMENT) if names else [], name, labels)

    def contact(self, hub_view):
        """The last heartbeat; the agent sends one every heartbeatPeriodSeconds (and a few seconds' margin)."""
        return hub_view.get("heartbeat"), (hub_view.get("heartbeat_period_seconds") or DEFAULT_HEARTBEAT_PERIOD) + views.HEARTBEAT_MARGIN_SECONDS

    def newest_contact(self, hub, name, hub_object):
        return contact.newest_contact(hub, name, hub_object)

    def overdue(self, hub_view, stale_after=None):
        """A missed heartbeat: after a hub outage the agent's heartbeat backs off, and its next may come after the
        staleness rule's bound (``make soak``, docs/testing.md)."""
        return views.heartbeat_overdue(hub_view or {}, stale_after)

    def reconnect_grace(self, member, hub_view):
        return contact.reconnect_grace(member, hub_view)

    def status_columns(self, hub, hub_objects):
        """Each member's hub token: when it expires, and a warning once it is overdue for renewal."""
        return dict((member, {"credential": credential}) for member, credential in tokens.hub_credentials(hub, hub_objects).items())

    desired_options = dict(
        identity_namespace=dict(type="str"),
        heartbeat_period_seconds=dict(type="int"),
        taints=dict(type="list", elements="dict"),
        kubefleet_token_lifetime=dict(type="str", default=tokens.DEFAULT_LIFETIME, no_log=False),
    )

    def desired(self, params):
        """The identity namespace, the token lifetime, the MemberCluster's heartbeat period and taints (each checked
        here, so a bad value fails whatever the member's state; None: not judged)."""
        tokens.lifetime_seconds(params.get("kubefleet_token_lifetime"), "kubefleet_token_lifetime")
        heartbeat = params.get("heartbeat_period_seconds")
        return {"identity_namespace": params.get("identity_namespace"), "token_lifetime": params.get("kubefleet_token_lifetime"),
                "heartbeat_period_seconds": None if heartbeat is None else validate_heartbeat(heartbeat),
                "taints": normalize_taints(params.get("taints"))}

    def judge(self, hub_view, member_view, desired):
        return judge.judge(hub_view, member_view, desired)

    def agent_workload(self, member_view):
        deployment = (member_view or {}).get("deployment") or {}
        return (deployment["namespace"], deployment["selector"]) if deployment.get("present") and deployment.get("selector") else None

    def leave_summary(self, results):
        return views.leave_summary(results)

    def check_member_name(self, name, param="name"):
        validate_member_name(name, param)

    def status_row(self, hub_view, cause):
        if hub_view is None:
            return None
        word = STATE_OF_CAUSE.get(cause)
        if word is None:
            word = "joined" if hub_view["joined"] else "ready-to-join" if hub_view["ready_to_join"] else "waiting"
        return {
            "state": word, "last_contact_age_seconds": hub_view["heartbeat_age_seconds"],
            "labels": hub_view["labels"], "joined": hub_view["joined"], "ready_to_join": hub_view["ready_to_join"],
            "leaving": hub_view["leaving"], "heartbeat": hub_view["heartbeat"], "quarantined": hub_view.get("quarantined"),
        }


def _service_account(obj):
    identity = ((obj or {}).get("spec") or {}).get("identity") or {}
    if identity.get("kind") == "ServiceAccount" and identity.get("name") and identity.get("namespace"):
        return identity["namespace"], identity["name"]
    return None


def mark_identities(hub, member_clusters):
    """Set ``views.IDENTITY_PRESENT`` on each of ``member_clusters`` whose identity is a ServiceAccount, from one LIST
    per namespace; a namespace the credential may not list (403) leaves its members unmarked (not known)."""
    accounts = dict((id(obj), _service_account(obj)) for obj in member_clusters)
    for namespace in sorted(set(account[0] for account in accounts.values() if account)):
        try:
            names = set((sa.get("metadata") or {}).get("name") for sa in hub.list(SERVICE_ACCOUNT, namespace))
        except ApiError as exc:
            if exc.status != 403:
                raise
            continue
        for obj in member_clusters:
            account = accounts[id(obj)]
            if account and account[0] == namespace:
                obj[views.IDENTITY_PRESENT] = account[1] in names


def _release_summary(release):
    """The release without anything bulky or secret: the hub CA is replaced by whether it is there."""
    if release is None:
        return None
    summary = dict((k, release.get(k)) for k in ("name", "namespace", "revision", "status", "chart", "chart_version", "updated"))
    values = dict(release.get("values") or {})
    if isinstance(values.get("config"), dict) and "hubCA" in values["config"]:
        values["config"] = dict(values["config"], hubCA=True)
    summary["values"] = values
    return summary


def _configured_ca_problem(release, configured, wanted, params):
    """Why the CA the release gives the agent does not verify the hub, when it is not the collection's CA: checked at
    the URL the collection configures with a TLS handshake and an anonymous request - no token (diagnosis:
    hub_ca_untrusted). None when it verifies, or when there is nothing to check."""
    if not (configured and wanted) or configured["insecure"] or configured["hub_ca_sha256"] in (wanted["hub_ca_sha256"], "unreadable"):
        return None
    ca = agent_hub_endpoint(release.get("values"))[1]
    check = credential_check(hub_access.agent_client(wanted["hub_url"], certificate_blocks(ca or "") or None, None,
                                                     proxy=params.get("hub_proxy")))
    return check["error"] if tls_problem(check["error"]) else None


def configured_endpoint(params):
    """``((url, ca_pem, insecure), None)`` the collection gives the member agent (``hub_access.agent_endpoint``), or
    ``(None, why)`` when the options and the hub connection do not say."""
    endpoint = hub_endpoint.resolve(params)  # an option that cannot be used fails here, naming it
    try:
        return hub_access.known_endpoint(endpoint), None
    except ParameterError as exc:
        return None, "the hub endpoint the collection gives the member agent is not known, so its token was not checked: %s" % (
            exc.message())


MANAGER = KubeFleet()
