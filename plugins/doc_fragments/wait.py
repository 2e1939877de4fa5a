# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  wait:
    description:
      - Whether to wait for the condition the module documents before returning.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds all of the task's waits may take together.
    type: int
    default: 300
  wait_sleep:
    description:
      - Seconds between checks while waiting, at most. The first checks of each wait come sooner (after 0.25 s, then
        0.25 s longer each time, up to this).
    type: int
    default: 2
  member_lock:
    description:
      - The lock this run holds on the member, as M(fleetops.registration.member_lock) returns it (the C(lock) of the
        member's entry). When it was taken O(wait_timeout) seconds ago or more, the module renews it on the hub before
        it acts (one request), so a long run keeps the member; if another run has taken it over meanwhile, the module
        fails before it changes anything.
      - The roles pass it; leave it unset otherwise.
    type: dict
'''
