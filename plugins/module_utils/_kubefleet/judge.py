# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet's rule table: every cause a member can have in KubeFleet, written once (pure).

``judge(hub_view, member_view, desired)`` gives the findings ``[{cause, evidence, action, fix}]``; ``findings.py``
turns them into the action, the reasons, ``healthy`` and the diagnosis, the same way for every manager. ``member_view``
is {} when the member was not read (``fleet_status``, the inventory plugin): then only the hub's rows can fire.
To add a cause, see ``findings.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings, findings
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import needs_rollout, rollout_fix
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import CA_FIX, CredentialRules, membership_rules, tls_problem
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS, Rule
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import renewal_reasons, rotation_reasons
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.agent_settings import image_drift
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity_move import identity_move_reasons
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import QUARANTINE_TAINT
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import configuration_drift, identity_username, spec_drift, wanted_labels
from ansible_collections.fleetops.registration.plugins.module_utils.silence import unheard_since_start
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import heartbeat_problem

AGENT_LOG = "The member agent's log says more: kubectl logs -n fleet-system deployment/member-agent on the member."
LOOK_AT_AGENT = "Look at the agent on the member (its pods and log); the findings from the member say more."
REREGISTER = "A re-run registers the member again: a new token for its identity, the agent restarted with it."
UPGRADE = "A re-run installs the agent again with the collection's hub URL, CA, token Secret and values."


def values_cover(live, wanted):
    """Whether the release values ``live`` hold every value in ``wanted`` (nested mappings compared key by key)."""
    for key, value in (wanted or {}).items():
        if isinstance(value, dict) and isinstance((live or {}).get(key), dict):
            if not values_cover(live[key], value):
                return False
        elif (live or {}).get(key) != value:
            return False
    return True


def token_moved(member):
    """The release reads its token from another Secret than the options name: the upgrade writes the one they name."""
    configured, wanted = member.get("configured") or {}, member.get("wanted") or {}
    return bool(configured.get("token_secret") and wanted.get("token_secret") and configured["token_secret"] != wanted["token_secret"])


def _credential(member):
    return member.get("credential") or {}


def _where(member):
    return "Secret %s/%s" % (_credential(member).get("namespace"), _credential(member).get("name"))


# -- the hub's rows ------------------------------------------------------------------------------------------------

def _never_joined(hub, member, desired):
    if hub is not None and hub.get("joined") is not True and not hub.get("heartbeat"):
        return "the member agent never joined MemberCluster %s (no heartbeat)" % hub.get("name")
    return None


def _not_joined(hub, member, desired):
    if hub is not None and hub.get("joined") is False and hub.get("heartbeat") and not hub.get("leaving"):
        return "the hub reports the member agent as not joined (Joined=False)"
    return None


def _hub_reports(hub, member, desired):
    """The hub's False conditions but Joined (its own row)."""
    return [text for text in (hub or {}).get("conditions_false") or [] if " Joined=False " not in text]


def _silent(hub, member, desired):
    """A heartbeat too old, or older than the agent that runs now (silence.py; the member's row when it was read)."""
    if hub is None or hub.get("leaving"):
        return None
    started = ((member or {}).get("deployment") or {}).get("available_since")
    return heartbeat_problem(hub, desired.get("stale_after")) or unheard_since_start(hub.get("heartbeat"), started)


def _token_accepted(member):
    """The member's token is in its Secret and the hub accepts it (checked with it at the hub, this run)."""
    read = SECRETS not in ((member or {}).get("unread") or ())
    return bool(read and _credential(member).get("present") and _credential(member).get("accepted") is True)


def _silent_token_unproven(hub, member, desired):
    return None if _token_accepted(member) else _silent(hub, member, desired)


def _silent_token_accepted(hub, member, desired):
    """Silent, though its token works: after a hub outage the agent backs its heartbeat off for minutes (controller-runtime's
    retry delay doubles at each failure). A restart ends the back-off; a new token would change nothing."""
    return _silent(hub, member, desired) if _token_accepted(member) else None


def _forced(hub, member, desired):
    return "re-registration was forced" if desired.get("force") else None


def _identity_gone(hub, member, desired):
    """The ServiceAccount the MemberCluster names is gone: the hub accepts its tokens for up to 10 s more (the API
    server's cache of authenticated tokens), then never again, and nothing on the hub makes it again."""
    identity = (hub or {}).get("identity") or {}
    if hub is not None and not hub.get("leaving") and hub.get("identity_present") is False:
        return "the identity the MemberCluster names, ServiceAccount %s/%s, does not exist on the hub" % (
            identity.get("namespace"), identity.get("name"))
    return None


def _quarantined(hub, member, desired):
    if hub is not None and hub.get("quarantined"):
        return ("MemberCluster %s is quarantined (taint %s) until it is joined, healthy and has reported its properties"
                % (hub.get("name"), QUARANTINE_TAINT["key"]))
    return None


def _labels_drift(hub, member, desired):
    if hub is None or (not desired.get("labels") and desired.get("labels_mode") != "replace"):
        return None
    live = hub.get("labels") or {}
    wanted = wanted_labels(live, desired.get("labels") or {}, desired.get("labels_mode") or "merge")
    if wanted == live:
        return None
    added = sorted(k for k in wanted if live.get(k) != wanted[k])
    removed = sorted(k for k in live if k not in wanted)
    parts = (["set %s" % ", ".join(added)] if added else []) + (["remove %s" % ", ".join(removed)] if removed else [])
    return "labels drift: %s" % "; ".join(parts)


# -- the member's rows ---------------------------------------------------------------------------------------------

def _release_missing(hub, member, desired):
    return "the member-agent release is not installed on the member" if member and member.get("release") is None else None


def _release_not_deployed(hub, member, desired):
    release = member.get("release")
    if release and release.get("status") != "deployed":
        return "the member-agent release is %s, not deployed" % release.get("status")
    return None


def _deployment_missing(hub, member, desired):
    release, deployment = member.get("release"), member.get("deployment") or {}
    installed = (release or {}).get("status") == "deployed" or SECRETS in (member.get("unread") or ())  # or not known
    if member and installed and not deployment.get("present"):
        return "the member agent Deployment %s is missing on the member" % deployment.get("name")
    return None


def _credential_missing(hub, member, desired):
    if member and not _credential(member).get("present") and not token_moved(member):
        return "the token %s is missing on the member" % _where(member)
    return None


def _wrong_identity(hub, member, desired):
    username, expected = _credential(member).get("username"), identity_username((hub or {}).get("identity"))
    if username and expected and username != expected:
        return "the member agent's token authenticates as %s, but the MemberCluster names %s" % (username, expected)
    return None


def _configured_ca_untrusted(hub, member, desired):
    """The release's own CA (when it is not the collection's), checked without a token at the collection's hub URL."""
    if tls_problem(member.get("configured_ca_problem")):
        return "the hub CA the member agent uses does not verify the hub's certificate at %s: %s" % (
            member.get("hub_url"), member["configured_ca_problem"])
    return None


def _config_drift(hub, member, desired):
    return configuration_drift(member.get("configured"), member.get("wanted")) if member.get("release") else None


def _chart_version(hub, member, desired):
    release = member.get("release") or {}
    if desired.get("chart_version") and member and release.get("chart_version") != desired["chart_version"]:
        return "chart version %s -> %s" % (release.get("chart_version"), desired["chart_version"])
    return None


def _values_drift(hub, member, desired):
    if desired.get("values") and member and not values_cover((member.get("release") or {}).get("values"), desired["values"]):
        return "values differ"
    return None


def _image_drift(hub, member, desired):
    release = member.get("release")
    return image_drift(release.get("values"), desired.get("images"), desired.get("agent")) if release else None


def _rotation_due(hub, member, desired):
    credential = _credential(member)
    if not member:
        return None
    reasons = rotation_reasons(credential.get("present"), credential.get("accepted"), credential.get("age_seconds"), desired,
                               "the member agent's token")
    if reasons or not credential.get("present") or credential.get("accepted") is False:
        return reasons
    return renewal_reasons(parse_time(credential.get("issued")), parse_time(credential.get("expires")),
                           tokens.lifetime_seconds(desired.get("token_lifetime"), "kubefleet_token_lifetime"))


def _agent_unavailable(hub, member, desired):
    problem = (member.get("deployment") or {}).get("rollout_problem")
    return problem if needs_rollout(problem) else None


def _not_rolled_out(hub, member, desired):
    problem = (member.get("deployment") or {}).get("rollout_problem")
    return None if needs_rollout(problem) else problem


RULES = tuple(membership_rules("MemberCluster", "leaving")) + (
    Rule("identity_gone", "reregister", _identity_gone, "A re-run makes the ServiceAccount again and registers the member with "
                                                        "a token of it; the agent is restarted with that token."),
    Rule("never_checked_in", "join", _never_joined, LOOK_AT_AGENT),
    Rule("not_joined", "reregister", _not_joined, AGENT_LOG + " " + REREGISTER),
    Rule("hub_reports", "none", _hub_reports, AGENT_LOG),
    Rule("silent", "reregister", _silent_token_unproven, "Look at the agent on the member: is it running, can it reach the hub? " + REREGISTER),
    Rule("silent", "install", _silent_token_accepted, "The hub accepts the agent's token, so a re-run keeps it and restarts the agent "
                                                      "(rollout restart), then waits for a heartbeat made after the restart. " + AGENT_LOG,
         reads=SECRETS),
    Rule("forced", "reregister", _forced, REREGISTER),
    Rule("agent_missing", "install", _release_missing, "A re-run installs it.", reads=SECRETS),
    Rule("release_not_deployed", "install", _release_not_deployed, "A re-run installs it again (helm history on the member says why "
                                                                   "the last one failed).", reads=SECRETS),
    Rule("agent_missing", "install", _deployment_missing, "A re-run installs the agent again."),
    Rule("credential_missing", "reregister", _credential_missing, "A re-run writes it again, with a new token for the member's identity.",
         reads=SECRETS),
    # with no hub endpoint known the token was not sent anywhere: its "problem" says only that
    CredentialRules(lambda member: dict(_credential(member), url=member.get("hub_url"), where=_where(member), noun="the member agent's token",
                                        problem=_credential(member).get("problem") if member.get("hub_url") else None),
                    {"token_expired": "reregister", "hub_ca_untrusted": "upgrade", "hub_unreachable": "none",
                     "credential_rejected": "reregister"}, "a new token for the member's identity, swapped into the member's Secret"),
    Rule("hub_ca_untrusted", "upgrade", _configured_ca_untrusted, CA_FIX + " " + UPGRADE, reads=SECRETS),
    Rule("wrong_identity", "reregister", _wrong_identity, "A re-run registers the member again with the identity the MemberCluster names.",
         reads=SECRETS),
    Rule("agent_config_drift", "upgrade", _config_drift, UPGRADE, reads=SECRETS),
    Rule("chart_version", "upgrade", _chart_version, "A re-run upgrades the agent.", reads=SECRETS),
    Rule("values_drift", "upgrade", _values_drift, "A re-run upgrades the agent with the inventory's values.", reads=SECRETS),
    Rule("image_drift", "upgrade", _image_drift, "A re-run upgrades the agent with the images the inventory sets.", reads=SECRETS),
    Rule("rotation_due", "rotate", _rotation_due, "A re-run rotates the token; the member stays joined.", reads=SECRETS),
    Rule("identity_moves", "rotate", lambda hub, member, desired: identity_move_reasons(hub, desired),
         "A re-run gives the member a token of the identity in its new namespace, then deletes the old one."),
    Rule("release_records_move", "reconfigure", lambda hub, member, desired: member.get("release_moves"),
         "A re-run moves them (no Helm run, the agent keeps running).", reads=SECRETS),
    Rule("settings_drift", "reconfigure", lambda hub, member, desired: agent_settings.drift(desired.get("agent"), member.get("agent_pod")),
         "A re-run puts the agent setting on the agent again."),
    Rule("labels_drift", "relabel", _labels_drift, "A re-run sets the MemberCluster's labels."),
    Rule("spec_drift", "relabel",
         lambda hub, member, desired: spec_drift(hub, desired.get("heartbeat_period_seconds"), desired.get("taints")) if hub else None,
         "A re-run sets them on the MemberCluster."),
    Rule("quarantined", "relabel", _quarantined, "A re-run lifts the quarantine once the member is verified."),
    Rule("agent_unavailable", "install", _agent_unavailable, lambda hub, member, desired: rollout_fix(
        (member.get("deployment") or {}).get("rollout_problem"), (member.get("deployment") or {}).get("namespace"))),
    Rule("not_rolled_out", "none", _not_rolled_out, lambda hub, member, desired: "kubectl -n %s get deployment,replicaset,pod on the "
         "member shows which pods wait; the other findings say why." % (member.get("deployment") or {}).get("namespace")),
)


def judge(hub_view, member_view, desired):
    """KubeFleet's findings for one member, root cause first."""
    return findings.judge(RULES, hub_view, member_view, desired)
