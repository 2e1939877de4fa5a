# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Labels as inventories and AWX surveys give them: a mapping, JSON text, or ``key=value`` text."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible.errors import AnsibleFilterError

_PAIR = re.compile(r"^\s*([^=,\s]+)\s*=\s*([^,\s]*)\s*$")


def survey_labels(value):
    """A mapping of label keys to values from a mapping, JSON object text, or ``k=v, k2=v2`` text.

    Keys are trimmed strings; values are left as given (the modules validate and stringify them).
    """
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict((str(key).strip(), item) for key, item in value.items())
    text = str(value).strip()
    if not text:
        return {}
    if text.startswith(("{", "[")):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise AnsibleFilterError("labels: %r is not a JSON object (%s); give a mapping, JSON or key=value text" % (text, exc))
        if not isinstance(parsed, dict):
            raise AnsibleFilterError("labels: JSON text must be a JSON object of label keys to values")
        return survey_labels(parsed)
    labels = {}
    for part in re.split(r"[,\n]", text):
        if not part.strip():
            continue
        match = _PAIR.match(part)
        if not match:
            raise AnsibleFilterError("labels: %r is not key=value; write labels as key=value pairs separated by commas, "
                                     "e.g. env=prod, region=eu" % part.strip())
        labels[match.group(1)] = match.group(2)
    return labels


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"survey_labels": survey_labels}
