#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: hub_move
short_description: The steps of the playbook move_hub (internal to it)
version_added: 0.1.0
description:
  - Used by the playbook C(fleetops.registration.move_hub); not a stable interface of its own.
  - V(guard) fails the member, before anything is changed, when the new hub would not place what its agents serve
    from the old hub now (M(fleetops.registration.hub_move_info) with C(guard)) - re-pointed, Fleet's agent would
    remove such a workload, KubeFleet's would leave it unmanaged. The message names each workload, what the new hub
    lacks, and the fixes. With C(fleetops_allow_workload_removal) true it warns instead, and V(summary) names those
    workloads per member.
  - V(read) finds the hub the member moves from (the single host of the group C(hub)) and the one it moves to (the
    extra var C(fleetops_new_hub), else the single host of the group C(new_hub)), reads where the member's move stands
    with M(fleetops.registration.hub_move_info), and returns what the roles C(member_join) and C(member_leave) get for
    the move - registered as C(fleetops_hub_move), their settings read it - member_join joins the new hub in the fleet
    managers the member is in, member_leave leaves the old hub hub-side only (its agents stay, they serve the new hub).
  - V(check) waits until the new hub has taken the member over (M(fleetops.registration.hub_move_info) with C(wait)),
    within C(fleetops_move_wait_timeout), else C(member_join_wait_timeout), seconds.
  - V(back) gives the roles the other direction - member_join joins the old hub again, member_leave leaves the new hub,
    hub-side only.
  - V(failed) notes why the move (or the move back) failed, from C(ansible_failed_result); V(moved_back) notes that the
    move back worked; V(stop) fails the member with both.
  - V(summary) (once per batch) says for every member of the play C(moved), C(moved back), C(failed) or C(untouched),
    and adds it to the job's statistics (C(fleetops_moves)).
  - With the extra var C(fleetops_old_hub_lost) true (an evacuation from a hub that cannot be reached), V(guard),
    V(read) and V(check) do not read the old hub - what runs on the member, read from it with
    M(fleetops.registration.member_info), stands for what the old hub had of it (M(fleetops.registration.hub_move_info)'s
    C(old_hub_lost)) - V(read) leaves nothing to member_leave (RV(leaving) false), V(back) fails (there is no way back),
    and V(summary) names per member what stays on the old hub.
  - Runs on the controller; only V(guard), V(read) and V(check) read the hubs (and, in an evacuation, the member), and
    nothing is changed.
author:
  - fleetops.registration contributors (@fleetops)
attributes:
  check_mode:
    support: full
    description: Reads only; in check mode V(check) does not wait (nothing was joined).
  diff_mode:
    support: none
    description: Changes nothing.
options:
  step:
    description: The step of the move.
    type: str
    required: true
    choices: [guard, read, back, check, failed, moved_back, stop, summary]
seealso:
  - module: fleetops.registration.hub_move_info
'''

EXAMPLES = r'''
- name: Find the hubs and where the member's move stands
  fleetops.registration.hub_move:
    step: read
  register: fleetops_hub_move
'''

RETURN = r'''
before:
  description: Where the member's move stood before this run (M(fleetops.registration.hub_move_info)'s result).
  returned: with O(step=read) or O(step=back)
  type: dict
old_hub:
  description: The hub the member moves from - C(host), C(kubeconfig), C(context).
  returned: with O(step=read) or O(step=back)
  type: dict
new_hub:
  description: The hub the member moves to - C(host), C(kubeconfig), C(context).
  returned: with O(step=read) or O(step=back)
  type: dict
roles:
  description: What the roles C(member_join) and C(member_leave) get for this direction of the move, by role.
  returned: with O(step=read) or O(step=back)
  type: dict
leaving:
  description: Whether the member leaves the old hub in any fleet manager (member_leave runs only then).
  returned: with O(step=read)
  type: bool
settled:
  description: Whether the new hub has taken the member over.
  returned: with O(step=check)
  type: bool
unplaced:
  description: What the new hub would not place on the member - C(manager), C(name), C(why).
  returned: with O(step=guard)
  type: list
  elements: dict
removal_allowed:
  description: Whether C(fleetops_allow_workload_removal) lets the move go on although RV(unplaced) is not empty.
  returned: with O(step=guard), when RV(unplaced) is not empty
  type: bool
results:
  description: Per member of the play C(outcome) (C(moved), C(moved back), C(failed), C(untouched)), C(changed), C(line),
    and in an evacuation C(left_on_old_hub) (the fleet managers whose objects of the member stay on the old hub).
  returned: with O(step=summary)
  type: dict
lines:
  description: Per member of the play its C(line).
  returned: with O(step=summary)
  type: dict
'''
