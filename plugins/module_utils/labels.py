# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Labels: validation, the forms users give them in, reconciliation and the patch that applies it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Objects this collection creates carry this label.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fleetops.registration"
# The collection's own namespace on the hub: the KubeFleet member identities and the per-member lock Leases live there,
# so the hub credential's Roles there grant nothing of the fleet managers' own (docs/rbac.md). hub_prepare creates it.
HUB_NAMESPACE = "fleetops-system"

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PAIR = re.compile(r"[\s,]*([^=,\s]+)\s*=[ \t]*([^,\s]*)[ \t]*(?:[,\n]|$|(?=[^\s,]))")


def label_key_problem(key):
    """Return why ``key`` is not a valid label key, or None."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, sep, name = key.rpartition("/")
    if sep:
        if not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix):
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
        key = key.strip() if isinstance(key, str) else key
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


def parse_survey_labels(value, param="labels"):
    """Labels given as a mapping, JSON text (``{"env": "dev"}``) or ``key=value`` text (comma, space or line separated).

    An AWX survey hands labels over as text; an inventory as a mapping. Empty means no labels.
    Returns the validated labels (values as strings).
    """
    if value is None or isinstance(value, dict):
        return normalize_labels(value, param)
    if not isinstance(value, str):
        raise ParameterError(param, "expected a mapping or text, got %s" % type(value).__name__,
                             "Give a mapping, JSON text such as {\"env\": \"dev\"}, or env=dev,tier=web")
    text = value.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ParameterError(param, "is not valid JSON: %s" % exc, "Give a JSON object such as {\"env\": \"dev\"}, or env=dev,tier=web")
        if not isinstance(data, dict):
            raise ParameterError(param, "JSON text must be an object", "Give a JSON object such as {\"env\": \"dev\"}")
        return normalize_labels(data, param)
    labels = {}
    pos = 0
    while pos < len(text):
        match = _PAIR.match(text, pos)
        if not match or match.end() == pos:
            raise ParameterError(param, "%r is not key=value" % text[pos:].strip(" ,"),
                                 "Write labels as env=dev,tier=web (or as JSON or a mapping)")
        labels[match.group(1)] = match.group(2)
        pos = match.end()
    return normalize_labels(labels, param)


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


def label_changes(before, after):
    """What a label reconciliation changes: ``{added: {}, changed: {}, removed: []}``."""
    before = before or {}
    after = after or {}
    return {
        "added": dict((k, v) for k, v in after.items() if k not in before),
        "changed": dict((k, v) for k, v in after.items() if k in before and before[k] != v),
        "removed": sorted(k for k in before if k not in after),
    }


def labels_drift(current, desired, mode="merge", owned=None):
    """Whether reconciling ``desired`` into ``current`` would change anything (``desired`` None: labels unmanaged)."""
    if desired is None:
        return False
    return label_patch(current, reconcile_labels(current, desired, mode, owned)) is not None
