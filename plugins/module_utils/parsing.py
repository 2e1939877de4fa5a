# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers: durations, labels, kubeconfig facts, secret-safe values.

Nothing here talks to a cluster, so all of it is unit tested directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import os
import re

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

REDACTED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"

_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3,
    "s": 1.0, "m": 60.0, "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def parse_duration(text, param="ttl"):
    """Parse a Go duration string (``240h``, ``1h30m``, ``90s``, ``0``) into seconds.

    Kubernetes' metav1.Duration uses Go's syntax, so that is what is accepted;
    an int is taken as seconds. Raises ParameterError naming ``param``.
    """
    if isinstance(text, bool):
        raise ParameterError(param, "expected a duration such as 240h, 1h30m or 90s, got %r" % (text,))
    if isinstance(text, (int, float)):
        return float(text)
    raw = str(text).strip()
    if raw in ("0", "+0", "-0"):
        return 0.0
    sign = 1.0
    body = raw
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    total = 0.0
    pos = 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if not match:
            raise ParameterError(
                param, "%r is not a duration" % raw,
                "Use Go duration syntax: a number and a unit (h, m, s, ms), e.g. 240h, 1h30m or 90s",
            )
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not body:
        raise ParameterError(param, "empty duration", "Use e.g. 240h, 1h30m or 90s")
    return sign * total


def format_duration(seconds):
    """Render seconds the way Go prints a Duration (``240h0m0s``), which the API echoes back."""
    seconds = int(round(seconds))
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%s%dh%dm%ds" % (sign, hours, minutes, secs)
    if minutes:
        return "%s%dm%ds" % (sign, minutes, secs)
    return "%s%ds" % (sign, secs)


_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def label_key_problem(key):
    """Return why ``key`` is not a valid label key, or None."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, sep, name = key.rpartition("/")
    if sep:
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            return "the prefix %r must be a DNS subdomain (lower case, at most 253 characters)" % prefix
    if len(name) > 63 or not _LABEL_NAME.match(name):
        return ("the name part %r must be at most 63 characters of letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit" % name)
    return None


def label_value_problem(value):
    """Return why ``value`` is not a valid label value, or None."""
    if value == "":
        return None
    if len(value) > 63 or not _LABEL_NAME.match(value):
        return ("the value %r must be at most 63 characters of letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit" % value)
    return None


def normalize_labels(labels, param="labels"):
    """Validate a label dict and return it with every value as a string.

    Values are stringified the way ``--set-string`` would (``true`` -> ``"true"``),
    because YAML booleans and numbers are the usual way inventories go wrong here.
    """
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        raise ParameterError(param, "expected a mapping of label keys to values, got %s" % type(labels).__name__)
    result = {}
    for key, value in labels.items():
        problem = label_key_problem(key)
        if problem:
            raise ParameterError(param, "invalid label key %r: %s" % (key, problem), "Fix or remove that label")
        if isinstance(value, bool):
            value = "true" if value else "false"
        value = "" if value is None else str(value)
        problem = label_value_problem(value)
        if problem:
            raise ParameterError(param, "invalid value for label %r: %s" % (key, problem), "Fix or quote that value")
        result[key] = value
    return result


def reconcile_labels(current, desired, mode="merge", owned=None):
    """Return the labels an object should end up with.

    ``merge`` keeps labels not named in ``desired``; ``replace`` makes the result
    exactly ``desired``, except labels listed in ``owned`` prefixes (set by
    controllers, e.g. ``fleet.cattle.io/``), which are always kept.
    """
    current = dict(current or {})
    if mode == "merge":
        result = dict(current)
        result.update(desired)
        return result
    if mode != "replace":
        raise ParameterError("labels_mode", "must be merge or replace, got %r" % mode)
    result = dict(desired)
    for key, value in current.items():
        if owned and any(key.startswith(prefix) for prefix in owned):
            result.setdefault(key, value)
    return result


def label_patch(current, result):
    """A JSON merge patch for ``metadata.labels`` that turns ``current`` into ``result`` (None if equal)."""
    current = current or {}
    patch = {}
    for key, value in result.items():
        if current.get(key) != value:
            patch[key] = value
    for key in current:
        if key not in result:
            patch[key] = None
    return patch or None


def validate_dns_label(value, param):
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
        )
    return value


def validate_dns_subdomain(value, param):
    if not isinstance(value, str) or len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ParameterError(
            param, "%r is not a valid name" % (value,),
            "Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
        )
    return value


def load_kubeconfig(source, param="kubeconfig"):
    """Load a kubeconfig given as a path or a dict; return ``(dict, base_dir)``."""
    if isinstance(source, dict):
        return source, os.getcwd()
    if not source:
        raise ParameterError(param, "no kubeconfig given")
    path = os.path.expanduser(str(source))
    if not os.path.isfile(path):
        raise ParameterError(param, "kubeconfig file %s does not exist" % path, "Give the path of a readable kubeconfig file")
    with open(path) as handle:
        try:
            data = yaml.safe_load(handle)
        except yaml.YAMLError:
            raise ParameterError(param, "%s is not valid YAML" % path)
    if not isinstance(data, dict):
        raise ParameterError(param, "%s is not a kubeconfig" % path)
    return data, os.path.dirname(os.path.abspath(path))


def _named(items, name, what, param):
    for item in items or []:
        if item.get("name") == name:
            return item.get(what) or {}
    raise ParameterError(param, "kubeconfig has no %s named %r" % (what, name), "Check the context name and the kubeconfig")


def kubeconfig_cluster(config, context=None, param="kubeconfig"):
    """The ``cluster`` entry the given (or current) context points at."""
    ctx_name = context or config.get("current-context")
    if not ctx_name:
        raise ParameterError(param, "kubeconfig has no current-context", "Name a context")
    ctx = _named(config.get("contexts"), ctx_name, "context", param)
    return _named(config.get("clusters"), ctx.get("cluster"), "cluster", param)


def kubeconfig_server(config, context=None, param="kubeconfig"):
    server = kubeconfig_cluster(config, context, param).get("server")
    if not server:
        raise ParameterError(param, "the kubeconfig's cluster has no server URL")
    return server


def kubeconfig_ca_pem(config, context=None, base_dir=None, param="kubeconfig"):
    """The CA (PEM text) that the context's cluster trusts.

    Inline ``certificate-authority-data`` or the file ``certificate-authority``
    names (relative to the kubeconfig's directory): the case KubeFleet's join
    script gets wrong by reading only the inline form. None when the kubeconfig
    trusts the system roots.
    """
    cluster = kubeconfig_cluster(config, context, param)
    data = cluster.get("certificate-authority-data")
    if data:
        try:
            pem = base64.b64decode(data).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise ParameterError(param, "certificate-authority-data is not base64 PEM")
        return _check_pem(pem, param)
    path = cluster.get("certificate-authority")
    if path:
        if not os.path.isabs(path) and base_dir:
            path = os.path.join(base_dir, path)
        if not os.path.isfile(path):
            raise ParameterError(param, "certificate-authority file %s does not exist" % path)
        with open(path) as handle:
            return _check_pem(handle.read(), param)
    return None


def _check_pem(pem, param):
    if "-----BEGIN CERTIFICATE-----" not in pem:
        raise ParameterError(param, "the CA is not a PEM certificate", "Give the PEM text of the hub's CA")
    return pem


def b64(text):
    if isinstance(text, str):
        text = text.encode("utf-8")
    return base64.b64encode(text).decode("ascii")


def unb64(text, what="value"):
    try:
        return base64.b64decode(text).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(what, "is not base64-encoded UTF-8 text")


def redact(data, keys):
    """A copy of nested dicts/lists with the values of ``keys`` replaced by a marker."""
    if isinstance(data, dict):
        return dict((k, REDACTED if k in keys and v not in (None, "") else redact(v, keys)) for k, v in data.items())
    if isinstance(data, list):
        return [redact(v, keys) for v in data]
    return data


def deep_merge(base, override):
    """``override`` laid over a copy of ``base``: mappings merged recursively, everything else replaced."""
    result = copy.deepcopy(base) if base else {}
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def read_pem(value, param, hint="Give the hub CA as PEM text or the path of a PEM file"):
    """A PEM certificate given inline or as the path of a PEM file; None when not given."""
    if value is None or value == "":
        return None
    text = value
    if "-----BEGIN" not in value:
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            raise ParameterError(param, "is neither PEM text nor an existing file", hint)
        with open(path) as handle:
            text = handle.read()
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ParameterError(param, "is not a PEM certificate", hint)
    return text
