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
- ``decide`` (pure) turns both views and what the inventory wants into one action with its reasons.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import needs_rollout
from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import TaskOptions
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import pod_selector, rollout_problem, tls_problem, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager, MemberState
from ansible_collections.fleetops.registration.plugins.module_utils.helm import read_release
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT, SECRET, credential_check
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import renewal_reasons, rotation_reasons
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds, parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import hub_access, tokens
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    QUARANTINE_TAINT, DEFAULT_HUB_SECRET, DEFAULT_HUB_SECRET_NAMESPACE, DEFAULT_RELEASE, DEFAULT_RELEASE_NAMESPACE, GROUP_VERSION,
    HUB_AGENT, KUBEFLEET_SYSTEM_NAMESPACE, MEMBER_CLUSTER, chart_fullname, validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    agent_configuration, agent_hub_endpoint, configuration_drift, identity_username, secret_token, wanted_configuration, wanted_labels,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import diagnosis, views
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity_move import identity_move_reasons
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import (
    heartbeat_problem,
)

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


def values_cover(live, wanted):
    """Whether the release values ``live`` hold every value in ``wanted`` (nested mappings compared key by key)."""
    for key, value in (wanted or {}).items():
        if isinstance(value, dict) and isinstance((live or {}).get(key), dict):
            if not values_cover(live[key], value):
                return False
        elif (live or {}).get(key) != value:
            return False
    return True


def _join_reasons(name, hub):
    if hub is None:
        return ["the hub has no MemberCluster named %s" % name]
    if hub.get("leaving"):
        return ["MemberCluster %s is leaving the fleet" % name]
    if hub.get("joined") is not True and not hub.get("heartbeat"):
        return ["the member agent never joined MemberCluster %s" % name]
    return []


def _reregister_reasons(hub, member, desired):
    reasons = []
    credential = member.get("credential") or {}
    if member and not credential.get("present") and not token_moved(member):
        reasons.append("the token Secret %s/%s is missing on the member" % (credential.get("namespace"), credential.get("name")))
    elif credential.get("accepted") is False:
        reasons.append("the hub rejects the member agent's token (%s)" % (credential.get("problem") or "401 Unauthorized"))
    expected = identity_username(hub.get("identity"))
    if credential.get("username") and expected and credential["username"] != expected:
        reasons.append("the member agent's token authenticates as %s, but the MemberCluster names %s" % (credential["username"], expected))
    if hub.get("joined") is False:
        reasons.append("the hub reports the member agent as not joined")
    stale = heartbeat_problem(hub, desired.get("stale_after"))
    if stale:
        reasons.append(stale)
    if desired.get("force"):
        reasons.append("re-registration was forced")
    return reasons


def _install_reasons(member):
    release = member.get("release")
    if not member:
        return []
    if release is None:
        return ["the member-agent release is not installed on the member"]
    if release.get("status") != "deployed":
        return ["the member-agent release is %s, not deployed" % release.get("status")]
    if not (member.get("deployment") or {}).get("present"):
        return ["the member agent Deployment %s is missing on the member" % (member.get("deployment") or {}).get("name")]
    if needs_rollout(member["deployment"].get("rollout_problem")):
        return [member["deployment"]["rollout_problem"]]
    return []


def token_moved(member):
    """The release reads its token from another Secret than the options name: the upgrade writes the one they name."""
    configured, wanted = member.get("configured") or {}, member.get("wanted") or {}
    return bool(configured.get("token_secret") and wanted.get("token_secret") and configured["token_secret"] != wanted["token_secret"])


def _upgrade_reasons(member, desired):
    release = member.get("release") or {}
    reasons = []
    if desired.get("chart_version") and release.get("chart_version") != desired["chart_version"]:
        reasons.append("chart version %s -> %s" % (release.get("chart_version"), desired["chart_version"]))
    if desired.get("values") and not values_cover(release.get("values"), desired["values"]):
        reasons.append("values differ")
    if tls_problem((member.get("credential") or {}).get("problem")):
        reasons.append("the hub CA the collection gives the member agent does not verify the hub's certificate")
    if tls_problem(member.get("configured_ca_problem")):
        reasons.append("the hub CA the member agent uses does not verify the hub's certificate")
    if release:
        reasons += configuration_drift(member.get("configured"), member.get("wanted"))
    return reasons


def _rotation_reasons(member, desired):
    credential = member.get("credential") or {}
    reasons = rotation_reasons(credential.get("present"), credential.get("accepted"), credential.get("age_seconds"), desired,
                               "the member agent's token")
    if reasons or not credential.get("present") or credential.get("accepted") is False:
        return reasons
    return renewal_reasons(parse_time(credential.get("issued")), parse_time(credential.get("expires")),
                           tokens.lifetime_seconds(desired.get("token_lifetime"), "kubefleet_token_lifetime"))


def _quarantine_reasons(hub):
    """A quarantined member stays 'relabel' (the member object step, then the lift) until it is verified and lifted."""
    if hub.get("quarantined"):
        return ["MemberCluster %s is quarantined (taint %s) until it is joined, healthy and has reported its properties"
                % (hub.get("name"), QUARANTINE_TAINT["key"])]
    return []


def _relabel_reasons(hub, desired):
    if not desired.get("labels") and desired.get("labels_mode") != "replace":
        return []
    live = hub.get("labels") or {}
    wanted = wanted_labels(live, desired.get("labels") or {}, desired.get("labels_mode") or "merge")
    if wanted == live:
        return []
    added = sorted(k for k in wanted if live.get(k) != wanted[k])
    removed = sorted(k for k in live if k not in wanted)
    parts = (["set %s" % ", ".join(added)] if added else []) + (["remove %s" % ", ".join(removed)] if removed else [])
    return ["labels drift: %s" % "; ".join(parts)]


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

    def read_hub(self, hub, names=None, namespace=None, label_selector=None):
        """One LIST of MemberClusters (cluster-scoped, so ``namespace`` does not apply)."""
        wanted = None if names is None else set(names)
        found = {}
        for obj in hub.list(MEMBER_CLUSTER, label_selector=label_selector):
            name = (obj.get("metadata") or {}).get("name")
            if wanted is None or name in wanted:
                found[name] = obj
        return found

    def hub_view(self, hub_object, now=None):
        return views.hub_view(hub_object, now)

    def host_view(self, hub_object, now, stale_after=None, member_url=None):
        return views.host_view(hub_object, now, stale_after)

    def member_view(self, member, hub, params):
        """The member's side, judged against what the collection configures; never holds the token
        (``credential.accepted`` says whether the hub takes it). ``configured``: what the release's values say (evidence);
        ``wanted``: what the options and the hub connection say; ``hub_url``: the URL the token was checked against."""
        release_name = option(params, "release_name")
        release = read_release(member, release_name, option(params, "release_namespace"))
        endpoint, unknown = configured_endpoint(params)
        location = (option(params, "secret_namespace"), option(params, "secret_name"))
        configured = agent_configuration(release.get("values")) if release else None
        wanted = wanted_configuration(endpoint, location[0], location[1], params.get("name")) if endpoint else None
        deployment_name = chart_fullname(release_name)
        deployment = member.get(DEPLOYMENT, deployment_name, option(params, "agent_namespace"))
        return {
            "release": _release_summary(release),
            "hub_url": endpoint[0] if endpoint else None,
            "configured": configured,
            "wanted": wanted,
            "configured_ca_problem": _configured_ca_problem(release, configured, wanted, params),
            "credential": self._credential(member, params, location, endpoint, unknown),
            "agent_pod": agent_settings.pod_view(deployment),
            "deployment": {"name": deployment_name, "namespace": option(params, "agent_namespace"),
                           "present": deployment is not None,
                           "ready_replicas": ((deployment or {}).get("status") or {}).get("readyReplicas") or 0,
                           "rollout_problem": rollout_problem(deployment), "selector": pod_selector(deployment)},
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

    def decide(self, name, hub_view, member_view, desired):
        member = member_view or {}
        desired = desired or {}
        for action, reasons in (
            ("join", _join_reasons(name, hub_view)),
            ("reregister", _reregister_reasons(hub_view or {}, member, desired) if hub_view else []),
            ("install", _install_reasons(member)),
            ("upgrade", _upgrade_reasons(member, desired)),
            ("rotate", _rotation_reasons(member, desired) + identity_move_reasons(hub_view, desired)),
            ("reconfigure", agent_settings.drift(desired.get("agent"), member.get("agent_pod"))),
            ("relabel", _relabel_reasons(hub_view, desired) + _quarantine_reasons(hub_view) if hub_view else []),
        ):
            if reasons:
                return MemberState(self.name, name, hub_view, member_view, action, reasons)
        return MemberState(self.name, name, hub_view, member_view, "none", [])

    def stale_problem(self, hub_view, stale_after=None):
        return heartbeat_problem(hub_view or {}, stale_after)

    def hub_findings(self, hub_view, stale_after=None):
        return diagnosis.hub_findings(hub_view, stale_after)

    def findings(self, name, hub_view, member_view, now=None, stale_after=None):
        return diagnosis.findings(hub_view, member_view, now, stale_after)

    def agent_trouble(self, member_view):
        return ((member_view or {}).get("deployment") or {}).get("rollout_problem")

    def agent_workload(self, member_view):
        deployment = (member_view or {}).get("deployment") or {}
        return (deployment["namespace"], deployment["selector"]) if deployment.get("present") and deployment.get("selector") else None

    def leave_summary(self, results):
        return views.leave_summary(results)

    def check_member_name(self, name, param="name"):
        validate_member_name(name, param)

    def status_row(self, hub_view):
        if hub_view is None:
            return None
        if hub_view["leaving"]:
            state = "leaving"
        elif hub_view["joined"] and hub_view["heartbeat_stale"]:
            state = "silent"
        elif hub_view["joined"] and hub_view.get("quarantined"):
            state = "quarantined"
        elif hub_view["joined"]:
            state = "joined"
        elif hub_view["ready_to_join"]:
            state = "ready-to-join"
        else:
            state = "waiting"
        healthy = None if hub_view["joined"] is None else bool(
            hub_view["joined"] and hub_view["healthy"] is not False and not hub_view["heartbeat_stale"])
        return {
            "state": state, "healthy": healthy, "last_contact_age_seconds": hub_view["heartbeat_age_seconds"],
            "labels": hub_view["labels"], "joined": hub_view["joined"], "ready_to_join": hub_view["ready_to_join"],
            "leaving": hub_view["leaving"], "heartbeat": hub_view["heartbeat"], "quarantined": hub_view.get("quarantined"),
        }


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
    try:
        return hub_access.agent_endpoint(TaskOptions(params)), None
    except ParameterError as exc:
        return None, "the hub endpoint the collection gives the member agent is not known, so its token was not checked: %s" % (
            exc.message())


MANAGER = KubeFleet()
