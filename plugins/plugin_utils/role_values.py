# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's values checked before any cluster is read: every setting with a format (names, labels, URLs, paths,
namespaces, durations, charts...) by the rule of the module that takes it later, each error in the inventory's words.

A check runs the module's own validator (``module_utils``: the one owner of each rule) on the value the role would
pass it, converted as the module's argument spec converts it, and words the module's message with ``inventory_terms``:
the option the role wires the setting to (plugin_utils/role_wiring.py), followed by the inventory variable and the role
variable it came from, e.g. ``name (from fleetops_cluster_name, or the inventory host name (member_join_cluster_name)):
'Member_2' is not a valid name``. Files (a kubeconfig and its context, the hub CA, a local chart, the values file's
directory) are checked only where the modules would read them on this machine (``local_files``: a local connection).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleError
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.common.validation import check_type_dict, check_type_int, check_type_list, check_type_str

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings, hub_endpoint, registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ChartSource, check_chart_ref, check_repo_url
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings
from ansible_collections.fleetops.registration.plugins.module_utils.labels import parse_survey_labels
from ansible_collections.fleetops.registration.plugins.module_utils.masking import invocation_secrets
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import validate_dns_label
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_duration
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import validate_heartbeat
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import normalize_taints
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.tokens import allowed_lifetime
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import (
    validate_client_id, validate_max_ttl, validate_name, validate_ttl)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.token import check_values_dest
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_spec, role_wiring

# How the module's argument spec converts an option before its rules see it.
_CONVERT = {"str": lambda value: check_type_str(value, allow_conversion=True), "int": check_type_int,
            "dict": check_type_dict, "list": check_type_list, "raw": lambda value: value}
_BLANK = (None, "")


def _value(found, setting, kind="str"):
    """The setting as the module receives it (None when blank: the role leaves the option to the module)."""
    value = found.get(setting)
    return None if value in _BLANK else _CONVERT[kind](value)


def member_name(found, setting, option, local_files=True):  # pylint: disable=unused-argument
    """The member's name, by each fleet manager's own rule (``check_member_name``): every manager the member names
    must take it; a member that names none joins what the hub serves, so at least one manager must."""
    name = _value(found, setting)
    named = [registry.manager(manager) for manager in found.get("backends") or []]
    for manager in named:
        manager.check_member_name(name, option)
    if named:
        return
    refused = []
    for manager in registry.MANAGERS.values():
        try:
            manager.check_member_name(name, option)
            return
        except ParameterError as exc:
            refused.append(exc)
    raise refused[0]


def connection(found, setting, option, local_files=True):
    """A kubeconfig (a path or a mapping) and its context (``setting`` is ``kubeconfig`` or ``hub_kubeconfig``), read as
    every module reads them (the context's server and CA, without connecting); the hub's only when the inventory names
    one. The options the error names are ``option`` and its context."""
    prefix = setting[:-len("kubeconfig")]
    kubeconfig, context = found.get(setting), _value(found, prefix + "context")
    if not local_files or (prefix and kubeconfig in _BLANK and context is None):
        return
    option_prefix = option[:-len("kubeconfig")]
    params = {option_prefix + "kubeconfig": None if kubeconfig in _BLANK else kubeconfig, option_prefix + "context": context}
    ConnectionSettings(params, option_prefix, label="hub" if prefix else "member").server_and_ca()


def hub_address(found, setting, option, local_files=True):  # pylint: disable=unused-argument
    """The hub's URL as the agents reach it (https://), or its CA (PEM text or a file), by the agent modules' rule."""
    url = _value(found, setting) if setting == "hub_api_server_url" else None
    ca = _value(found, setting) if setting == "hub_ca_file" and local_files else None
    hub_endpoint.check_options({hub_endpoint.URL: url, hub_endpoint.CA: ca})


def chart(manager):
    """An agent chart: its reference, repository URL and version; with local files, as the agent module builds it (a
    local chart's directory and version too)."""
    def check(found, setting, option, local_files=True):  # pylint: disable=unused-argument
        ref, repo_url = _value(found, manager + "_chart_ref"), _value(found, manager + "_chart_repo_url")
        if ref is None:
            check_repo_url(repo_url)
        elif local_files:
            ChartSource(ref, repo_url, _value(found, manager + "_chart_version"), option).identity()
        else:
            check_chart_ref(ref, option)
            check_repo_url(repo_url)
    return check


def simple(rule, kind="str", files=False):
    """A check of one setting by ``rule(value, option)``, when it is set; ``files``: it reads a file."""
    def check(found, setting, option, local_files=True):
        value = _value(found, setting, kind)
        if value is not None and (local_files or not files):
            rule(value, option)
    return check


def fleet_token_ttl(found, setting, option, local_files=True):  # pylint: disable=unused-argument
    """The run's registration token TTL, within the ceiling the inventory sets (fleetops_fleet_token_max_ttl)."""
    value = _value(found, setting)
    if value is not None:
        validate_ttl(value, option, _value(found, "fleet_token_max_ttl"))


def kubefleet_token_lifetime(found, setting, option, local_files=True):  # pylint: disable=unused-argument
    """A KubeFleet token lifetime; ``never`` only with fleetops_allow_non_expiring_token."""
    value = _value(found, setting)
    if value is not None:
        allowed_lifetime(value, bool(found.get("allow_non_expiring_token")), option)


# Each setting with a format, and its check (the module option it is wired to is the one its error names).
CHECKS = {
    "cluster_name": member_name,
    "labels": simple(parse_survey_labels, "raw"),
    "kubeconfig": connection,
    "hub_kubeconfig": connection,
    "hub_api_server_url": hub_address,
    "hub_ca_file": hub_address,
    "fleet_namespace": simple(validate_dns_label),
    "kubefleet_identity_namespace": simple(validate_dns_label),
    "lock_namespace": simple(validate_dns_label),
    "agent": simple(agent_settings.validate, "dict"),
    "credential_max_age": simple(parse_duration),
    "kubefleet_token_lifetime": kubefleet_token_lifetime,
    "kubefleet_heartbeat_period_seconds": simple(validate_heartbeat, "int"),
    "kubefleet_taints": simple(normalize_taints, "list"),
    "fleet_client_id": simple(validate_client_id),
    "fleet_token_ttl": fleet_token_ttl,
    "fleet_token_max_ttl": simple(validate_max_ttl),
    "fleet_token_name": simple(validate_name),
    "fleet_values_dest": simple(lambda path, option: check_values_dest(path), files=True),
    "fleet_agent_chart_ref": chart("fleet_agent"),
    "kubefleet_agent_chart_ref": chart("kubefleet_agent"),
}


def wired_option(role, setting):
    """``(module, option)``: the module option ``role`` gives ``setting`` (its own request's first), whose words
    ``inventory_terms`` finds; ``(None, <role variable>)`` for a setting the role passes no module through the table."""
    request = "member_info" if role == "member_join" else "member_lock"
    modules = [request] + [module for module in role_wiring.MODULE_ARGS[role] if module != request]
    for module in modules:
        for option, wired in role_wiring.MODULE_ARGS[role][module].items():
            if role_wiring.DERIVED.get(wired, wired) == setting:
                return module, option
    return None, "%s_%s" % (role, setting)


def used(role, setting):
    """Whether ``role`` uses ``setting`` (a role variable of its own, or wired to one of its steps' options)."""
    return setting in role_wiring.SETTINGS[role] or wired_option(role, setting)[0] is not None


def problems(role, found, local_files=True):
    """The inventory's words for each value of ``found`` (role_wiring.settings) that a module would refuse."""
    said = []
    for setting, check in CHECKS.items():
        if not used(role, setting):
            continue
        module, option = wired_option(role, setting)
        try:
            check(found, setting, option, local_files)
        except FleetOpsError as exc:
            said.append(inventory_terms(exc.message(), role, module))
        except (TypeError, ValueError) as exc:  # a value of another type than the option takes
            said.append(inventory_terms("%s: %s" % (option, exc), role, module))
    return said


def _strings(value):
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return [str(value)] if value not in _BLANK and not isinstance(value, bool) else []


def masked(message, found):
    """``message`` without the credentials ``found`` holds: as the modules mask their options (URL passwords, secret
    keys and flags, kubeconfig mappings' credentials), and every secret chart value."""
    secrets = set(invocation_secrets(found)) | set(_strings(found.get("agent_secret_values")))
    return remove_values(message, secrets)


def refusal(role, found, state=None, local_files=True):
    """Why ``role`` refuses the member before it reads any cluster - its values a module would refuse, or what the
    inventory lacks (role_wiring.inventory_problem) - in the inventory's words; None when nothing is wrong."""
    said = problems(role, found, local_files)
    problem = role_wiring.inventory_problem(role, found, state)
    if problem:
        said.append(problem)
    return masked("\n".join(said), found) if said else None


def host_refusal(role, get, hub_get, local_files=True, entry="main"):
    """``refusal`` of one host whose variables ``get`` reads (role_wiring.settings' getters), after its role variables'
    check against the role's argument spec (role_spec.variable_errors)."""
    errors = role_spec.variable_errors(role, entry, get, role_wiring.MISSING)
    if errors:
        return errors
    try:
        found = role_wiring.settings(role, get, hub_get, backend_request)
    except AnsibleError as exc:  # a fleet manager the inventory names that the collection does not know
        return getattr(exc, "message", None) or str(exc)
    return refusal(role, found, local_files=local_files)


def host_getter(role, task_vars, template=lambda value: value):
    """For each host, a getter of its variables as ``role`` would see them in a play that does not run it: the host's
    own (``hostvars``: inventory and extra vars), else the role's fixed defaults (``template``d); its name, and
    ``groups`` from the running task's ``task_vars``."""
    hostvars = task_vars.get("hostvars") or {}
    defaults = role_spec.role_defaults(role)

    def getter(host):
        variables = hostvars[host] if host in hostvars else {}
        read = {}

        def get(name):
            if name == "groups":
                return task_vars.get(name, role_wiring.MISSING)
            if name == "inventory_hostname":
                return host
            if name not in read:
                if name in variables:
                    read[name] = variables[name]
                elif name in defaults:
                    read[name] = template(defaults[name])
                else:
                    return role_wiring.MISSING
            return read[name]
        return get
    return getter


def play_refusals(role, hosts, getters, hub_get, local_files=True):
    """``{host: why}`` of each host of ``hosts`` that ``role`` refuses (``getters(host)``: its variables' getter, as
    host_getter's); empty when it takes every one."""
    refused = {}
    for host in hosts:
        why = host_refusal(role, getters(host), hub_get, local_files)
        if why:
            refused[host] = why
    return refused


def play_refusal(refused):
    """play_refusals' ``refused`` as one message, a line per problem, each naming its host; None when empty."""
    said = ["%s: %s" % (host, line) for host, why in refused.items() for line in why.splitlines()]
    return "\n".join(said) if said else None


def play_stops(refused, hosts, stop_on_any):
    """Whether the play stops before it reads any cluster: when it refuses every host (nothing could be done), or any
    one with ``stop_on_any`` (move_hub.yml: a move is all or nothing). Otherwise each refused host fails alone at its
    role's first task, before its own clusters are read, and the others go on."""
    return bool(refused) and (stop_on_any or set(hosts) <= set(refused))
