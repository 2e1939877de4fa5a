# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module's message in the words a role user wrote: the option it names, followed by the variable it came from.
Which variable that is comes from the role wiring table (plugin_utils/role_wiring.py), which also builds the steps'
arguments, so every option a role passes has its words."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.fleetops.registration.plugins.plugin_utils.role_wiring import SETTINGS, option_words

# An option, with an item's index or a key inside it (``taints[1]``, ``agent.tolerations``), as a message starts with it.
_LEADING_OPTION = re.compile(r"^(?P<option>[a-z_]+)(?P<index>\[\d+\])?(?P<key>\.[A-Za-z0-9_.-]+)?: ")


def inventory_terms(message, role, module=None):
    """``message`` with a leading ``option: `` (how the modules name what is wrong) followed by where a user of
    ``role`` set it, e.g. ``name (from fleetops_cluster_name, ...): 'Member_2' is not a valid name``. ``module``: the
    module that failed (a task's action), whose own options are looked up first.

    In a rescue, ``message`` may be ``ansible_failed_result`` (its ``msg``) and ``module`` ``ansible_failed_task`` (its
    ``action``)."""
    if role not in SETTINGS:
        raise AnsibleFilterError("inventory_terms: unknown role %r; use one of %s" % (role, ", ".join(sorted(SETTINGS))))
    if isinstance(message, Mapping):
        message = message.get("msg")
    if isinstance(module, Mapping):
        module = module.get("action")
    text = str(message or "")
    match = _LEADING_OPTION.match(text)
    source = option_words(role, module).get(match.group("option")) if match else None
    if not source:
        return text
    return "%s%s (from %s): %s" % (match.group("option"), match.group("key") or "", source, text[match.end():])
