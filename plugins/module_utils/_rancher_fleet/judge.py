# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet's rule table: every cause a member can have in Rancher Fleet, written once (pure).

``judge(hub_view, member_view, desired)`` gives the findings ``[{cause, evidence, action, fix}]``; ``findings.py``
turns them into the action, the reasons, ``healthy`` and the diagnosis, the same way for every manager. ``member_view``
is {} when the member was not read (``fleet_status``, the inventory plugin): then only the hub's rows can fire.
To add a cause, see ``findings.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings, findings
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import needs_rollout, rollout_fix
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import CredentialRules, membership_rules
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS, Rule
from ansible_collections.fleetops.registration.plugins.module_utils.labels import labels_drift, normalize_labels
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import rotation_reasons
from ansible_collections.fleetops.registration.plugins.module_utils.silence import unheard_since_start
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_settings as fleet_settings
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import cluster_namespace, views
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_SECRET, AGENT_NAMESPACE, MANAGED_LABEL_PREFIXES,
)

CREDENTIAL = "Secret %s/%s" % (AGENT_NAMESPACE, AGENT_CREDENTIAL_SECRET)
FORCE_FIX = "member_join_fleet_agent_force: true makes a re-run register it again at once."
REREGISTER = "A re-run registers the agent again with a fresh registration token."
LOOK_AT_AGENT = "Look at the agent on the member (its pods and log); the findings from the member say more."


# -- the hub's rows ------------------------------------------------------------------------------------------------

def _namespace(hub, member, desired):
    problem = (hub or {}).get("cluster_namespace_problem")
    return "Cluster %s is not joinable yet: %s" % (hub.get("name"), cluster_namespace.describe(problem)) if problem else None


def _never_checked_in(hub, member, desired):
    return "the agent of Cluster %s has never checked in" % hub.get("name") if hub is not None and not hub.get("checked_in") else None


def _silent(hub, member, desired):
    """A check-in too old, or older than the agent that runs now (silence.py; the member's row when it was read)."""
    if hub is None or hub.get("deleting"):
        return None
    started = (member or {}).get("agent_available_since")
    return views.stale_problem(hub, desired.get("stale_after")) or unheard_since_start(hub.get("last_seen"), started)


def _not_ready(hub, member, desired):
    if hub is not None and hub.get("checked_in") and hub.get("ready_status") == "False":
        return "Cluster %s is not Ready: %s" % (hub.get("name"), hub.get("ready_message") or "-")
    return None


def _labels_drift(hub, member, desired):
    labels = desired.get("labels")
    if hub is not None and labels is not None and labels_drift(hub.get("labels"), normalize_labels(labels),
                                                               desired.get("labels_mode") or "merge", MANAGED_LABEL_PREFIXES):
        return "the Cluster's labels differ from the inventory's"
    return None


def _settings_drift(hub, member, desired):
    setting, _ignored = fleet_settings.fleet_setting(desired.get("agent"))
    found = fleet_settings.hub_drift(setting, hub.get("agent_fields")) if hub is not None else []
    if (setting or {}).get("env"):  # the running pod has its values; a new one could not start
        found += ["the agent's environment Secret %s/%s is missing" % (AGENT_NAMESPACE, name) for name in member.get("env_secrets_missing") or []]
    return found + agent_settings.drift(setting, member.get("agent_pod"))


# -- the member's rows ---------------------------------------------------------------------------------------------

def _release_missing(hub, member, desired):
    return "the fleet-agent release is not installed on the member" if member and member.get("release") is None else None


def _release_not_deployed(hub, member, desired):
    release = member.get("release")
    if release and release.get("status") != "deployed":
        return "the fleet-agent release %s is %s, not deployed" % (release.get("name"), release.get("status"))
    return None


def _deployment_missing(hub, member, desired):
    installed = member.get("release") is not None or SECRETS in (member.get("unread") or ())  # or not known
    return "the agent Deployment fleet-agent is missing on the member" if member and installed and not member.get("deployment") else None


def _credential_missing(hub, member, desired):
    if member and not member.get("credential") and member.get("bootstrap"):
        return "the agent's hub credential (%s) is missing on the member" % CREDENTIAL
    return None


def _registration_gone(hub, member, desired):
    """The agent registered with a Cluster the hub no longer has (or is deleting): its credential goes with that
    Cluster's namespace, and a running agent does not register again by itself, even with its credential Secret gone
    (it keeps what it read) - an upgrade alone leaves it without a hub."""
    if (member.get("credential") or member.get("deployment")) and (hub is None or hub.get("deleting")):
        return ("the agent (its Deployment or its credential %s) was registered with a Cluster the hub no longer has"
                % CREDENTIAL)
    return None


def _bootstrap_missing(hub, member, desired):
    if member and not member.get("credential") and not member.get("bootstrap"):
        return "the agent's hub credential (%s) is missing on the member, and so is the Secret %s/%s to register with" % (
            CREDENTIAL, AGENT_NAMESPACE, AGENT_BOOTSTRAP_SECRET)
    return None


def _credential_unusable(hub, member, desired):
    if member.get("credential") and not member.get("credential_usable") and member.get("credential_accepted") is not False:
        return "the agent's hub credential (%s) holds no usable kubeconfig" % CREDENTIAL
    return None


def _wrong_hub(hub, member, desired):
    if member.get("credential_usable") and member.get("expected_server") and \
            (member.get("credential_server") or "").rstrip("/") != member["expected_server"]:
        return ("the agent's hub credential (%s) names the hub %s, not %s (what the collection gives the agent); its token was "
                "not sent there" % (CREDENTIAL, member.get("credential_server"), member["expected_server"]))
    return None


def _credential(member):
    # with no hub URL known for the agent the credential was not checked: its "error" says only that
    return {"present": member.get("credential_usable"), "accepted": member.get("credential_accepted"),
            "problem": member.get("credential_error") if member.get("expected_server") else None,
            "expires": member.get("credential_expires"), "url": member.get("credential_server"), "where": CREDENTIAL,
            "noun": "the agent's credential"}


def _chart_version(hub, member, desired):
    release, version = member.get("release") or {}, desired.get("chart_version")
    if version and release and release.get("chart_version") != version and not member.get("fleet_managed_releases"):
        return "chart version %s -> %s" % (release.get("chart_version"), version)
    return None


def _rotation_due(hub, member, desired):
    return rotation_reasons(member.get("credential_usable"), member.get("credential_accepted"), member.get("credential_age_seconds"),
                            desired, "the agent's credential (%s)" % CREDENTIAL) if member else None


RULES = tuple(membership_rules("Cluster", "deleting")) + (
    Rule("registration_gone", "reregister", _registration_gone, "A re-run makes the Cluster again and registers the agent "
                                                                "with it, with a fresh registration token.", reads=SECRETS),
    Rule("cluster_namespace", "join", _namespace, "Let Fleet's controller finish the cluster namespace (is it running?), then re-run."),
    Rule("never_checked_in", "join", _never_checked_in, LOOK_AT_AGENT),
    Rule("silent", "reregister", _silent, "Look at the agent on the member: is it running, can it reach the hub? " + FORCE_FIX),
    Rule("hub_reports", "none", _not_ready, "kubectl get bundledeployments -A on the hub shows which bundles are not ready on the member."),
    Rule("forced", "reregister", lambda hub, member, desired: "force asks for a new registration" if desired.get("force") else None, REREGISTER),
    Rule("agent_missing", "install", _release_missing, "A re-run installs it.", reads=SECRETS),
    Rule("release_not_deployed", "install", _release_not_deployed, "A re-run installs it again (helm history -n %s fleet-agent on the "
                                                                   "member says why the last one failed)." % AGENT_NAMESPACE,
         reads=SECRETS),
    Rule("agent_missing", "install", _deployment_missing, "A re-run installs the agent again."),
    Rule("bootstrap_missing", "reregister", _bootstrap_missing, "A re-run registers it with a new registration token.", reads=SECRETS),
    Rule("credential_missing", "reregister", _credential_missing, REREGISTER, reads=SECRETS),
    Rule("credential_unusable", "reregister", _credential_unusable, REREGISTER, reads=SECRETS),
    Rule("wrong_hub", "reregister", _wrong_hub, REREGISTER, reads=SECRETS),
    CredentialRules(_credential, {"token_expired": "reregister", "hub_ca_untrusted": "none", "hub_unreachable": "none",
                                  "credential_rejected": "reregister"}, "a fresh registration token; the agent registers again"),
    Rule("chart_version", "upgrade", _chart_version, "A re-run upgrades the agent.", reads=SECRETS),
    Rule("rotation_due", "rotate", _rotation_due, "A re-run rotates the credential; the member stays checked in.", reads=SECRETS),
    Rule("settings_drift", "reconfigure", _settings_drift, "A re-run puts the agent setting on the Cluster and the agent again."),
    Rule("labels_drift", "relabel", _labels_drift, "A re-run sets the Cluster's labels."),
    Rule("agent_unavailable", "install",
         lambda hub, member, desired: member.get("deployment_problem") if needs_rollout(member.get("deployment_problem")) else None,
         lambda hub, member, desired: rollout_fix(member.get("deployment_problem"), AGENT_NAMESPACE)),
    Rule("not_rolled_out", "none",
         lambda hub, member, desired: None if needs_rollout(member.get("deployment_problem")) else member.get("deployment_problem"),
         "kubectl -n %s get deployment,replicaset,pod on the member shows which pods wait; the other findings say why." % AGENT_NAMESPACE),
)


def judge(hub_view, member_view, desired):
    """Rancher Fleet's findings for one member, root cause first."""
    return findings.judge(RULES, hub_view, member_view, desired)
