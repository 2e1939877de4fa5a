# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's variables checked against its argument spec (``meta/argument_specs.yml``) by the role's own first task.

Ansible checks them when it includes a role, with a task of its own: on a batch of members that is a worker process
per member and play (~30 ms each on 2 CPUs), for a check that takes well under a millisecond. ``step_args`` with
``validate`` makes the same check, with the same spec, the same validator and the same message, inside the task the
member runs anyway; ``join_cluster.yml`` imports the role with ``rolespec_validate: false`` so it is made once. A play
that includes the role the ordinary way gets Ansible's check and this one, which then finds nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPTIONS = {}
_DEFAULTS = {}


def role_options(role, entry="main"):
    """The options of ``role``'s entry point ``entry`` in its meta/argument_specs.yml."""
    key = (role, entry)
    if key not in _OPTIONS:
        with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as handle:
            specs = yaml.load(handle, Loader=_LOADER)["argument_specs"]
        _OPTIONS[key] = (specs.get(entry) or {}).get("options") or {}
    return _OPTIONS[key]


def role_defaults(role):
    """The fixed defaults of ``role`` (its defaults/main.yml), which a play that does not run the role lacks: the values
    the role's own tasks would see for role variables nobody set."""
    if role not in _DEFAULTS:
        with open(os.path.join(ROLES, role, "defaults", "main.yml")) as handle:
            _DEFAULTS[role] = yaml.load(handle, Loader=_LOADER) or {}
    return _DEFAULTS[role]


def variable_errors(role, entry, get, missing):
    """Ansible's message for the role variables that do not fit the spec (``get(name)`` reads one, ``missing`` when the
    play has none), or None. Values of options the spec marks no_log are masked in it."""
    spec = role_options(role, entry)
    provided = {}
    for name in spec:
        value = get(name)
        if value is not missing:
            provided[name] = value
    checked = ArgumentSpecValidator(spec).validate(provided)
    if not checked.error_messages:
        return None
    message = "Validation of arguments failed:\n%s" % "\n".join(checked.error_messages)
    return remove_values(message, getattr(checked, "_no_log_values", set()))
