# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' wiring, in one table: where each role setting comes from (the role variable, else the inventory) and
which module option each step gives it. The action plugin step_args builds the steps' arguments from it and the filter
inventory_terms names the variable behind a module's option from it, so the two cannot drift apart.

A setting's value: its role variable (``<role>_<setting>``) when the play has it (set by the user, or a fixed default
in the role's defaults/main.yml), else the first of its inventory variables that is set and not blank (an AWX survey
or credential injects blanks), else its default here. ``hub:fleetops_x`` is the hub host's variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.fleetops.registration.plugins.module_utils import findings
from ansible_collections.fleetops.registration.plugins.module_utils.labels import HUB_NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils.times import RUN_LIFETIME_WAITS

# Variables a credential or survey injects: named after the host's own in an error.
_INJECTED = {"fleetops_member_kubeconfig": "the member credential's", "fleetops_hub_kubeconfig": "the hub credential's",
             "fleetops_hub_context": "the hub credential's", "fleetops_survey_backends": "the survey's",
             "fleetops_survey_leave_workloads": "the survey's"}
_BOOLEAN = ("replace_rebuilt", "allow_workload_removal", "allow_non_expiring_token", "rotate_credentials",
            "kubefleet_quarantine", "fleet_agent_force", "keep_agents", "kubefleet_remove_identity")


def _setting(*sources, default=""):
    return {"sources": sources, "default": default}


_CONNECTION = {
    "cluster_name": _setting("fleetops_cluster_name", "inventory_hostname"),
    "kubeconfig": _setting("fleetops_member_kubeconfig", "fleetops_kubeconfig"),
    "context": _setting("fleetops_context"),
    "hub_kubeconfig": _setting("fleetops_hub_kubeconfig", "hub:fleetops_kubeconfig"),
    "hub_context": _setting("fleetops_hub_context", "hub:fleetops_context"),
    "helm_binary": _setting("fleetops_helm_binary"),
    "fleet_namespace": _setting("fleetops_fleet_namespace", default="fleet-default"),
    "kubefleet_identity_namespace": _setting("fleetops_kubefleet_namespace", default=HUB_NAMESPACE),
    # fixed defaults (defaults/main.yml)
    "wait_timeout": _setting(),
    "lock_namespace": _setting(),
}

# Per role: each setting behind a role variable. Settings with sources and no entry in defaults/main.yml take their
# default from here; the others from defaults/main.yml.
SETTINGS = {
    "member_join": dict(
        _CONNECTION,
        backends=_setting("fleetops_backends", "fleetops_survey_backends"),
        labels=_setting("fleetops_labels", default={}),
        hub_api_server_url=_setting("hub:fleetops_api_server_url"),
        hub_ca_file=_setting("hub:fleetops_ca_file"),
        replace_rebuilt=_setting("fleetops_replace_rebuilt", default=False),
        allow_workload_removal=_setting("fleetops_allow_workload_removal", default=False),
        allow_non_expiring_token=_setting("fleetops_allow_non_expiring_token", default=False),
        fleet_token_max_ttl=_setting("fleetops_fleet_token_max_ttl"),
        credential_max_age=_setting("fleetops_credential_max_age"),
        rotate_credentials=_setting("fleetops_rotate_credentials", default=False),
        agent=_setting("fleetops_agent", default={}),
        fleet_client_id=_setting("fleetops_fleet_client_id"),
        fleet_agent_chart_ref=_setting("fleetops_fleet_agent_chart"),
        fleet_agent_chart_version=_setting("fleetops_fleet_agent_chart_version"),
        fleet_agent_chart_repo_url=_setting("fleetops_fleet_agent_chart_repo_url"),
        kubefleet_taints=_setting("fleetops_kubefleet_taints", default=None),
        kubefleet_quarantine=_setting("fleetops_kubefleet_quarantine", default=False),
        kubefleet_agent_chart_ref=_setting("fleetops_kubefleet_member_agent_chart"),
        kubefleet_agent_chart_version=_setting("fleetops_kubefleet_member_agent_chart_version"),
        kubefleet_agent_chart_repo_url=_setting("fleetops_kubefleet_member_agent_chart_repo_url"),
        kubefleet_agent_image_repository=_setting("fleetops_kubefleet_member_agent_image_repository"),
        kubefleet_agent_image_tag=_setting("fleetops_kubefleet_member_agent_image_tag"),
        kubefleet_refresh_token_image_repository=_setting("fleetops_kubefleet_refresh_token_image_repository"),
        # member_info's own default (how long a silent Fleet agent counts as fresh) unless set
        fleet_agent_stale_after=_setting(default=None),
        # worked out from other settings unless set
        hub_host=_setting(), detect_backends=_setting(), fleet_token_ttl=_setting(), rollback_wait_timeout=_setting(),
        # fixed defaults (defaults/main.yml)
        **{name: _setting() for name in (
            "labels_mode", "agent_secret_values", "fleet_token_name", "fleet_values_dest", "fleet_agent_values",
            "fleet_agent_force", "kubefleet_heartbeat_period_seconds",
            "kubefleet_agent_values", "kubefleet_preflight")}
    ),
    "member_leave": dict(
        _CONNECTION,
        backends=_setting("fleetops_backends", "fleetops_survey_backends"),
        # A job's survey answer, when not blank, over the host's (as the survey's fleet managers are).
        workloads=_setting("fleetops_survey_leave_workloads", "fleetops_leave_workloads", default="keep"),
        hub_host=_setting(),
        kubefleet_force=_setting(),
        kubefleet_force_grace_period=_setting(),
        keep_agents=_setting(),
        kubefleet_remove_identity=_setting(),
    ),
}
# What the current step of playbook move_hub.yml gives each role (the action hub_move registers it under this name):
# the hub it acts on, with that hub host's connection, and the fleet managers - set over everything else.
MOVE_STEP = "fleetops_hub_move"
# Settings that are no role variable: the inventory's alone.
INVENTORY_ONLY = {"kubefleet_token_lifetime": _setting("fleetops_kubefleet_token_lifetime")}
# Settings worked out from others (and the member's state), named in errors after the setting they come from.
DERIVED = {"token_name": "fleet_token_name", "quarantine": "kubefleet_quarantine",
           "secret_values_rancher_fleet": "agent_secret_values", "secret_values_kubefleet": "agent_secret_values",
           "state_labels": "labels", "kubefleet_leave_waits": "kubefleet_force"}

_MEMBER_SIDE = {"kubeconfig": "kubeconfig", "context": "context", "hub_kubeconfig": "hub_kubeconfig",
                "hub_context": "hub_context", "helm_binary": "helm_binary", "wait_timeout": "wait_timeout",
                "member_lock": "state_lock"}
_HUB_SIDE = {"kubeconfig": "hub_kubeconfig", "context": "hub_context", "wait_timeout": "wait_timeout",
             "member_lock": "state_lock"}
_MEMBER_OBJECT = dict(_HUB_SIDE, name="cluster_name", labels="state_labels", labels_mode="labels_mode",
                      cluster_identity="state_identity")

# Per role and module (the step's module_defaults): each option -> the setting it is given.
MODULE_ARGS = {
    "member_join": {
        "fleet_agent": dict(
            _MEMBER_SIDE, token_namespace="fleet_namespace", hub_api_server_url="hub_api_server_url",
            hub_api_server_ca="hub_ca_file", chart_ref="fleet_agent_chart_ref", chart_version="fleet_agent_chart_version",
            chart_repo_url="fleet_agent_chart_repo_url", values="fleet_agent_values",
            secret_values="secret_values_rancher_fleet", agent="agent", allow_workload_removal="allow_workload_removal",
            silent="state_rancher_fleet_silent"),
        "kubefleet_member_agent": dict(
            _MEMBER_SIDE, name="cluster_name", identity_namespace="kubefleet_identity_namespace",
            hub_api_server_url="hub_api_server_url", hub_api_server_ca="hub_ca_file", chart_ref="kubefleet_agent_chart_ref",
            chart_version="kubefleet_agent_chart_version", chart_repo_url="kubefleet_agent_chart_repo_url",
            image_repository="kubefleet_agent_image_repository", image_tag="kubefleet_agent_image_tag",
            refresh_token_image_repository="kubefleet_refresh_token_image_repository", values="kubefleet_agent_values",
            secret_values="secret_values_kubefleet", agent="agent", preflight="kubefleet_preflight",
            silent="state_kubefleet_silent"),
        "fleet_registration_token": dict(
            _HUB_SIDE, name="token_name", namespace="fleet_namespace", cluster="cluster_name", run_id="state_run_id",
            ttl="fleet_token_ttl", max_ttl="fleet_token_max_ttl", values_dest="fleet_values_dest"),
        "kubefleet_member_identity": dict(
            _HUB_SIDE, name="cluster_name", namespace="kubefleet_identity_namespace",
            token_lifetime="kubefleet_token_lifetime", allow_non_expiring_token="allow_non_expiring_token"),
        "fleet_cluster": dict(_MEMBER_OBJECT, namespace="fleet_namespace", client_id="fleet_client_id", agent="agent"),
        "kubefleet_member_cluster": dict(
            _MEMBER_OBJECT, identity_namespace="kubefleet_identity_namespace",
            heartbeat_period_seconds="kubefleet_heartbeat_period_seconds", taints="kubefleet_taints",
            quarantine="quarantine"),
        # What member_info judges the member's state against (one item of its batch; the request).
        "member_info": dict(
            name="cluster_name", kubeconfig="kubeconfig", context="context", hub_kubeconfig="hub_kubeconfig",
            hub_context="hub_context", backends="backends", detect_backends="detect_backends", labels="labels",
            labels_mode="labels_mode", fleet_namespace="fleet_namespace", identity_namespace="kubefleet_identity_namespace",
            heartbeat_period_seconds="kubefleet_heartbeat_period_seconds", taints="kubefleet_taints",
            stale_after="fleet_agent_stale_after", hub_api_server_url="hub_api_server_url", hub_api_server_ca="hub_ca_file",
            agent_chart_versions="agent_chart_versions", agent_values="agent_values", agent_images="agent_images",
            agent_secret_values="agent_secret_values", force="force", replace_rebuilt="replace_rebuilt",
            credential_max_age="credential_max_age", rotate_credentials="rotate_credentials",
            kubefleet_token_lifetime="kubefleet_token_lifetime", agent="agent"),
        "member_lock": {"lock_namespace": "lock_namespace", "wait_timeout": "wait_timeout"},
    },
    "member_leave": {
        "fleet_agent": {"kubeconfig": "kubeconfig", "context": "context", "helm_binary": "helm_binary",
                        "wait_timeout": "wait_timeout", "workloads": "workloads"},
        # The uninstall reads the MemberCluster on the hub and first lets its agent finish the leave (_kubefleet/leave).
        "kubefleet_member_agent": {"kubeconfig": "kubeconfig", "context": "context", "helm_binary": "helm_binary",
                                   "wait_timeout": "wait_timeout", "name": "cluster_name", "workloads": "workloads",
                                   "hub_kubeconfig": "hub_kubeconfig", "hub_context": "hub_context"},
        "fleet_registration_token": {"kubeconfig": "hub_kubeconfig", "context": "hub_context",
                                     "member_lock": "state_lock", "namespace": "fleet_namespace",
                                     "cluster": "cluster_name"},
        # Otherwise the agent step waits for the leave, and can restart an agent that does not acknowledge it.
        "kubefleet_member_cluster": dict(_HUB_SIDE, name="cluster_name", force_remove_finalizers="kubefleet_force",
                                         force_grace_period="kubefleet_force_grace_period", wait="kubefleet_leave_waits"),
        "kubefleet_member_identity": dict(_HUB_SIDE, name="cluster_name", namespace="kubefleet_identity_namespace"),
        "fleet_cluster": dict(_HUB_SIDE, name="cluster_name", namespace="fleet_namespace"),
        # What the batch's lock is taken for (member_lock's batch item).
        "member_lock": {"name": "cluster_name", "hub_kubeconfig": "hub_kubeconfig", "hub_context": "hub_context"},
    },
}
# The entry point rollback (member_join's tasks_from: rollback): the agents' connection alone.
ROLLBACK_ARGS = {
    "fleet_agent": {"kubeconfig": "kubeconfig", "context": "context", "hub_kubeconfig": "hub_kubeconfig",
                    "hub_context": "hub_context", "helm_binary": "helm_binary", "wait_timeout": "rollback_wait_timeout"},
}
ROLLBACK_ARGS["kubefleet_member_agent"] = dict(ROLLBACK_ARGS["fleet_agent"], name="cluster_name",
                                               identity_namespace="kubefleet_identity_namespace")


def role_variable(role, setting):
    setting = DERIVED.get(setting, setting)
    return "%s_%s" % (role, setting) if setting in SETTINGS[role] else None


def sources(role, setting):
    setting = DERIVED.get(setting, setting)
    spec = SETTINGS[role].get(setting) or INVENTORY_ONLY.get(setting) or {}
    return spec.get("sources", ())


def words(role, setting):
    """Where a user of ``role`` set ``setting``, e.g. ``fleetops_context (member_join_context)``: the host's
    variables first, then what a credential or survey injects, then the role variable."""
    said = []
    for source in sources(role, setting):
        if source == "inventory_hostname":
            said.append("the inventory host name")
        elif source.startswith("hub:"):
            said.append("the hub host's %s" % source[4:])
        elif source not in _INJECTED:
            said.append(source)
    said += ["%s %s" % (_INJECTED[source], source) for source in sources(role, setting) if source in _INJECTED]
    variable = role_variable(role, setting)
    if not said:
        return variable
    return "%s (%s)" % (", or ".join(said), variable) if variable else ", or ".join(said)


def option_words(role, module=None):
    """For each option ``module`` (a task's action, short or FQCN) takes in ``role``: where a user set it. The
    role's own request (member_info's, or the lock's) answers for any other action."""
    short = str(module or "").rsplit(".", 1)[-1]
    wiring = dict(MODULE_ARGS[role]["member_info" if role == "member_join" else "member_lock"])
    wiring.update(MODULE_ARGS[role].get(short, {}))
    found = {}
    for option, setting in wiring.items():
        said = words(role, setting) if not setting.startswith("state_") or setting == "state_labels" else None
        if said:
            found[option] = said
    return found


_BLANK = (None, "")


def first_set(values, default):
    """The first of ``values`` that is set and not blank, else ``default``."""
    for value in values:
        if value not in _BLANK:
            return value
    return default


def as_bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


_SECONDS = re.compile(r"^\s*(\d+)\s*$")


def token_ttl(wait_timeout):
    """The registration token lives as long as a run: three of its waits (the lock's lifetime too)."""
    match = _SECONDS.match(str(wait_timeout))
    return "%ds" % (RUN_LIFETIME_WAITS * int(match.group(1))) if match else "%ss" % (wait_timeout,)


MISSING = object()
_WORKED_OUT = ("hub_host", "backends", "detect_backends", "fleet_token_ttl", "rollback_wait_timeout")
INVENTORY_HINT = {"member_join": (
    "Each member needs the hub (exactly one host in the inventory group 'hub' with fleetops_kubeconfig and "
    "fleetops_context, or member_join_hub_kubeconfig) and, for each fleet manager in member_join_backends, its agent "
    "chart (member_join_fleet_agent_chart_ref / fleetops_fleet_agent_chart, member_join_kubefleet_agent_chart_ref / "
    "fleetops_kubefleet_member_agent_chart): a local chart, an oci:// mirror, or a chart name with its repository URL."),
    "member_leave": (
    "The hub is unknown: put exactly one host in the inventory group 'hub' (with fleetops_kubeconfig and "
    "fleetops_context), or set member_leave_hub_kubeconfig.")}


def _from_inventory(spec, get, hub_get, hub_host):
    values = []
    for source in spec["sources"]:
        if source.startswith("hub:"):
            value = hub_get(hub_host, source[4:]) if hub_host else MISSING
        else:
            value = get(source)
        values.append(None if value is MISSING else value)
    return first_set(values, spec["default"])


def _hub_host(role, get):
    given = get("%s_hub_host" % role)
    if given is not MISSING:
        return given
    group = (get("groups") or {}).get("hub") or []
    return group[0] if len(group) == 1 else ""


def _move_step(role, get):
    step = get(MOVE_STEP)
    return dict((step.get("roles") or {}).get(role) or {}) if isinstance(step, dict) else {}


def settings(role, get, hub_get, backend_request, served=None):
    """Every setting of ``role``: ``get(name)`` reads a variable of the play (MISSING when it has none),
    ``hub_get(host, name)`` one of the hub host; ``backend_request`` is the filter of that name."""
    moving = _move_step(role, get)
    found = {"hub_host": moving.get("hub_host") or _hub_host(role, get)}
    for name, spec in SETTINGS[role].items():
        own = get("%s_%s" % (role, name))
        if name in moving:
            found[name] = moving[name]
        elif own is not MISSING:
            found[name] = own
        elif name not in _WORKED_OUT:
            found[name] = _from_inventory(spec, get, hub_get, found["hub_host"])
    found.update(moving)
    for name in set(_BOOLEAN) & set(found):
        found[name] = as_bool(found[name])
    if "backends" not in found or "detect_backends" not in found:
        asked = get("fleetops_backends")
        survey = get("fleetops_survey_backends")
        request = backend_request([None if asked is MISSING else asked], None if survey is MISSING else survey,
                                  served=served)
        found.setdefault("backends", request["backends"])
        found.setdefault("detect_backends", request["detect"])
    lifetime = get("fleetops_kubefleet_token_lifetime")
    found["kubefleet_token_lifetime"] = "" if lifetime in (MISSING, None) else lifetime
    if role == "member_join":
        found.setdefault("fleet_token_ttl", token_ttl(found["wait_timeout"]))
        found.setdefault("rollback_wait_timeout", found["wait_timeout"])
        found["agent_chart_versions"] = {"rancher_fleet": found["fleet_agent_chart_version"],
                                         "kubefleet": found["kubefleet_agent_chart_version"]}
        found["agent_values"] = {"rancher_fleet": found["fleet_agent_values"], "kubefleet": found["kubefleet_agent_values"]}
        found["force"] = ["rancher_fleet"] if found["fleet_agent_force"] else []
        # What member_info compares the release's images with: only the ones set (unset is what the chart ships).
        found["agent_images"] = {"kubefleet": {"repository": found["kubefleet_agent_image_repository"],
                                               "tag": found["kubefleet_agent_image_tag"],
                                               "refresh_token_repository": found["kubefleet_refresh_token_image_repository"]}}
        secret = found["agent_secret_values"] or {}
        found.update(secret_values_rancher_fleet=secret.get("rancher_fleet"), secret_values_kubefleet=secret.get("kubefleet"))
        if found["kubefleet_quarantine"]:
            found["quarantine"] = "hold"
    if role == "member_leave":
        # The MemberCluster step waits for the hub's cleanup itself when no agent step follows to wait (the agents stay,
        # move_hub.yml), or when a forced leave must time out there to remove the finalizers (the member may be gone).
        found["kubefleet_leave_waits"] = found["keep_agents"] or as_bool(found["kubefleet_force"])
    return found


def with_state(role, found, state):
    """The settings that come from the member's state (what member_info or the lock read)."""
    state = state or {}
    found = dict(found, state_lock=state.get("lock") or {}, state_labels=state.get("labels"),
                 state_identity=state.get("identity") or {}, state_run_id=state.get("run_id"))
    if role == "member_join":
        found["token_name"] = found["fleet_token_name"] or "fleetops-join-%s" % (state.get("run_id"),)
        found["state_kubefleet_silent"] = silent_evidence(state, "kubefleet")
        found["state_rancher_fleet_silent"] = silent_evidence(state, "rancher_fleet")
    return found


def silent_evidence(state, manager):
    """Why member_info judged the manager's agent silent (its ``silent`` finding's evidence), or None: the agent step
    restarts it on this judgement rather than judge the heartbeat again after the member step changed its period."""
    found = ((state.get("managers") or {}).get(manager) or {}).get("findings") or []
    return findings.evidence([item for item in found if isinstance(item, dict)], "silent")


def module_args(wiring, found):
    """Each module's arguments (its module_defaults): the options ``wiring`` names, given the settings' values;
    options without a value are left to the module."""
    return {module: {option: found[setting] for option, setting in options.items() if found.get(setting) is not None}
            for module, options in wiring.items()}


def lift_quarantine(found, state):
    """Lift the KubeFleet member's quarantine after its steps: when this run quarantines it, or an earlier run left
    it quarantined (and the member's object is looked after in this run)."""
    kubefleet = (state.get("managers") or {}).get("kubefleet") or {}
    if not (kubefleet.get("steps") or {}).get("member_object"):
        return False
    return bool(found.get("kubefleet_quarantine") or (kubefleet.get("hub") or {}).get("quarantined", False))


LEAVE_WORKLOADS = ("keep", "remove")


def leave_task_files(found):
    """member_leave's task files in the order they run: KubeFleet first (its agent acknowledges the leave); for Rancher
    Fleet the agent before its Cluster (it cannot register again, and keeps the bundles' releases), or - when the
    workloads go - the Cluster first, so the agent removes its bundle deployments' releases before it is uninstalled."""
    backends = found.get("backends") or []
    files = ["kubefleet.yml"] if "kubefleet" in backends else []
    if "rancher_fleet" in backends:
        fleet = ["rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]
        files += fleet[::-1] if found.get("workloads") == "remove" else fleet
    return files


def _workloads_problem(role, found):
    if role != "member_leave" or found.get("workloads") in LEAVE_WORKLOADS:
        return None
    return "%s: %r is not one of %s. Set it to keep (the fleet's workloads stay on the member) or remove." % (
        words(role, "workloads"), found.get("workloads"), ", ".join(LEAVE_WORKLOADS))


def inventory_problem(role, found, state=None):
    """Why the member cannot go on (no hub, no agent chart for a manager it joins, its state unreadable or locked by
    another run), or None."""
    state = state or {}
    if state.get("error") is not None:
        return state["error"]
    if not (found["hub_host"] or found["hub_kubeconfig"] or found["hub_context"]):
        return INVENTORY_HINT[role]
    workloads = _workloads_problem(role, found)
    if workloads:
        return workloads
    managers = state.get("managers") or {}
    for manager, chart in (("rancher_fleet", "fleet_agent_chart_ref"), ("kubefleet", "kubefleet_agent_chart_ref")):
        if manager in managers and not found[chart]:
            return INVENTORY_HINT[role]
    return None
