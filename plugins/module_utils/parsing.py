# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers: names, base64, secret-safe values, merging.

Labels live in ``labels.py``, kubeconfig facts in ``kubeconfig.py``, times and
durations in ``times.py``. Nothing here talks to a cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import re

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import DNS_SUBDOMAIN

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

# libyaml's loader: a kubeconfig of a dozen clusters takes ~45 ms to parse in pure Python, ~4 ms in C.
_YAML_LOADER = None if yaml is None else (getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)

REDACTED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def load_yaml(stream):
    """``yaml.safe_load`` with the C loader where PyYAML has one (the same safe types either way)."""
    return yaml.load(stream, Loader=_YAML_LOADER)  # nosec B506 - a SafeLoader


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def validate_dns_label(value, param):
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
        )
    return value


def validate_dns_subdomain(value, param):
    if not isinstance(value, str) or len(value) > 253 or not DNS_SUBDOMAIN.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
        )
    return value


def b64(text):
    if isinstance(text, str):
        text = text.encode("utf-8")
    return base64.b64encode(text).decode("ascii")


def unb64(text, what="value"):
    try:
        return base64.b64decode(text).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(what, "is not base64-encoded UTF-8 text")


def deep_merge(base, override):
    """``override`` laid over a copy of ``base``: mappings merged recursively, everything else replaced."""
    result = copy.deepcopy(base) if base else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
