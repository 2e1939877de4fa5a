# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Labels as inventories and AWX surveys give them: a mapping, JSON text, or ``key=value`` text."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import parse_survey_labels


def survey_labels(value):
    """The labels as a validated mapping of keys to string values (keys of a mapping are trimmed first)."""
    if isinstance(value, dict):
        value = dict((str(key).strip(), item) for key, item in value.items())
    try:
        return parse_survey_labels(value, "labels")
    except FleetOpsError as exc:
        raise AnsibleFilterError(exc.message())


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"survey_labels": survey_labels}
