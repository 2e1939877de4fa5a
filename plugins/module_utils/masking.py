# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What FleetModule masks in a module's options and result: the credentials inside options that are not secret as a
whole, found before Ansible logs the invocation (syslog, journald) or returns it (``invocation.module_args``: ``-vvv``,
AWX job events), and those a result carries that were no option (a release's values read from the member).

The shapes are parsing.py's (URL passwords, secret keys, flags and variables, JSON Web Tokens) and kubeconfig.py's
(every credential of a kubeconfig mapping); this file walks options and results with them. Pure: no module, no client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import kubeconfig_secrets
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import credential_parts, secret_strings


def invocation_secrets(params, secret_options=()):
    """Credentials inside options that are not secret as a whole, found before anything logs them: in any option, URL
    passwords with or without a scheme (``proxy``, a chart's ``proxy`` value, ``agent.env``), tokens and secret flags;
    in its mappings, values under secret keys (chart ``values``); every kubeconfig mapping's credentials
    (kubeconfig#782 in kubernetes.core), wherever it is nested; and in a list of items (member_info's ``members``) a
    secret option (``secret_options``), which the module refuses there but was given."""
    found = []
    for value in params.values():
        if value is None or isinstance(value, (bool, int, float)):
            continue
        found.extend(secret_strings(value))
        found.extend(_nested_kubeconfig_secrets(value))
        for item in value if isinstance(value, list) else []:
            if isinstance(item, dict):
                found.extend(leaf for key in set(secret_options) | set(SECRET_VALUES_OPTIONS) for leaf in _leaves(item.get(key)))
    return list(dict.fromkeys(found))


# The options that hold secret chart values (no_log), also as items of a list (the roles' requests to member_info and
# member_lock, whose own spec may lack them).
SECRET_VALUES_OPTIONS = ("secret_values", "agent_secret_values")


def secret_value_paths(params):
    """The key paths the secret chart values name (``secret_values``; ``agent_secret_values`` per fleet manager, also in
    ``members`` items): whatever a chart's values hold there is secret, also an older value read from a release."""
    mappings = [params.get("secret_values")] + list((params.get("agent_secret_values") or {}).values())
    for item in params.get("members") or []:
        if isinstance(item, dict) and isinstance(item.get("agent_secret_values"), dict):
            mappings.extend(item["agent_secret_values"].values())
    return set(path for mapping in mappings for path in _paths(mapping))


def _paths(mapping, prefix=()):
    if not isinstance(mapping, dict):
        return []
    found = []
    for key, value in mapping.items():
        found.extend(_paths(value, prefix + (key,)) if isinstance(value, dict) and value else [prefix + (key,)])
    return found


# Where a result holds chart values: a release's ``values``, the agent modules' ``chart_values``.
VALUES_KEYS = ("values", "chart_values")


def _values_mappings(value):
    """Every chart values mapping inside a result (a mapping under a key in VALUES_KEYS)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in VALUES_KEYS and isinstance(item, dict):
                found.append(item)
            found.extend(_values_mappings(item))
    elif isinstance(value, list):
        found.extend(mapping for item in value for mapping in _values_mappings(item))
    return found


def _at(mapping, path):
    for key in path:
        if not isinstance(mapping, dict) or key not in mapping:
            return None
        mapping = mapping[key]
    return mapping


def _leaves(value):
    """The strings of a secret option's value, as Ansible masks a no_log option (a mapping's every value)."""
    if isinstance(value, str):
        return [value] if value else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [leaf for item in items for leaf in _leaves(item)]


def _nested_kubeconfig_secrets(value):
    if isinstance(value, dict):
        found = kubeconfig_secrets(value) if ("users" in value or "clusters" in value) else []
        return found + [secret for item in value.values() for secret in _nested_kubeconfig_secrets(item)]
    if isinstance(value, list):
        return [secret for item in value for secret in _nested_kubeconfig_secrets(item)]
    return []


def result_secrets(result, secret_paths=()):
    """Credentials in what a module returns that it did not get as options (a release's values read from the member, a
    proxy URL in an error): URL passwords anywhere; in the message, also tokens and secret flags; in a diff and in chart
    values, anything credential-shaped (parsing.secret_strings), and in chart values what lies at ``secret_paths``
    (secret_value_paths: an older secret value in a release). Tokens a module returns when asked (``return_token``,
    ``return_values`` - text, not a values mapping) stay."""
    found = secret_strings(dict((k, v) for k, v in result.items() if k != "diff"), urls_only=True) + \
        credential_parts(result.get("msg")) + secret_strings(result.get("diff")) + _nested_kubeconfig_secrets(result.get("diff"))
    for values in _values_mappings(result):
        found.extend(secret_strings(values))
        found.extend(leaf for path in secret_paths for leaf in _leaves(_at(values, path)))
    return found
