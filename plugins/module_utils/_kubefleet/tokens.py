# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rotating a member identity's token without the member dropping out (pure rules).

A member agent holds a non-expiring service-account token. A rotation issues a second token Secret for the same
ServiceAccount, swaps the new token into the member's Secret, waits for a heartbeat the agent made with it, and only
then deletes the older Secret, which revokes its token. The identity has two token Secret names ("slots"), the one it
was created with and that name with ``-2``: every name is known in advance, so no credential needs to list Secrets,
and at most two tokens are valid at once. The newest filled slot is the current token.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time

SECOND_SLOT_SUFFIX = "-2"
# On the member's copy of the token: when the hub issued it, and from which Secret (never the token itself).
ISSUED_ANNOTATION = "fleetops.registration/token-issued"
SOURCE_ANNOTATION = "fleetops.registration/token-secret"


def slots(base):
    """The two token Secret names of an identity whose first token Secret is ``base``."""
    if base.endswith(SECOND_SLOT_SUFFIX):
        raise ParameterError("token_secret_name", "%s ends with %s, which names the identity's second token Secret" % (base, SECOND_SLOT_SUFFIX),
                             "Name the first token Secret (without %s)" % SECOND_SLOT_SUFFIX)
    second = base + SECOND_SLOT_SUFFIX
    if len(second) > 253:
        raise ParameterError("token_secret_name", "is too long to name a second token Secret for rotation (%s)" % second,
                             "Use a name of at most %d characters" % (253 - len(SECOND_SLOT_SUFFIX)))
    return base, second


def _created(secret):
    return parse_time(((secret or {}).get("metadata") or {}).get("creationTimestamp"))


def newest_first(secrets):
    """The existing Secrets of ``secrets`` (None for a missing slot), newest first (a tie: the second slot first)."""
    present = [(index, secret) for index, secret in enumerate(secrets) if secret is not None]
    present.sort(key=lambda pair: (_created(pair[1]) is not None, _created(pair[1]) or 0, pair[0]), reverse=True)
    return [secret for _index, secret in present]


def current(secrets):
    """The identity's current token Secret: the newest one (None when neither slot exists)."""
    ordered = newest_first(secrets)
    return ordered[0] if ordered else None


def older(secrets):
    """The token Secrets a finished rotation revokes: all but the newest."""
    return newest_first(secrets)[1:]


def free_slot(names, secrets):
    """The slot name a rotation issues the new token in: the one that does not exist (None while both do, which
    means a rotation is under way and its newest token is reused)."""
    for name, secret in zip(names, secrets):
        if secret is None:
            return name
    return None


def issued(secret):
    """When the current token Secret was created (its creationTimestamp), for the member's copy."""
    return ((secret or {}).get("metadata") or {}).get("creationTimestamp")
