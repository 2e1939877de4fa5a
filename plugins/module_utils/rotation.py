# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When an agent's credential is due for rotation: the one rule both fleet managers' ``decide`` ask (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Optional


def rotation_reasons(present: bool, accepted: Optional[bool], age: Optional[int], desired: Dict[str, Any], what: str) -> List[str]:
    """Why the credential ``what`` (e.g. "the member agent's token") is due: ``desired`` has ``rotate`` (now) and
    ``credential_max_age`` (seconds; 0 or None: never); ``age`` is in seconds, None when not known.

    A missing or rejected credential is not rotated: that is a re-registration, which ``decide`` finds first."""
    if not present or accepted is False:
        return []
    if desired.get("rotate"):
        return ["credential rotation was asked for"]
    max_age = desired.get("credential_max_age")
    if not max_age:
        return []
    if age is None:
        return ["%s has no recorded issue time, and credentials older than %ds are rotated" % (what, max_age)]
    if age > max_age:
        return ["%s was issued %ds ago, more than the credential max age (%ds)" % (what, age, max_age)]
    return []
