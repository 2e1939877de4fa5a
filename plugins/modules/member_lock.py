#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: member_lock
short_description: Take or release the hub lock of the members a run is about to change
version_added: 0.1.0
description:
  - One C(coordination.k8s.io/v1) Lease per member on the hub (C(fleetops-member-<name>) in O(lock_namespace)) says
    which run is changing that member. Two runs for the same member - an AWX job launched twice, a schedule that
    overlaps a manual run, a workflow that retries - would otherwise both register it and undo each other's steps.
  - With O(state=present), takes the lock of every member of O(states) (the C(members) result of
    M(fleetops.registration.member_info)) that needs a step, in one process. A member another run holds is waited
    for, side by side with the others, within O(wait_timeout); once this run holds its lock, that member's state is
    read again (the other run has usually done the work), and a member that no longer needs a step is released at
    once. Past O(wait_timeout) the member's entry holds C(error) naming the other run, since when it holds the lock
    and when the lock expires; the other members go on.
  - A lock lives O(lock_duration) seconds. A run that dies releases nothing, so the lock also names the controller
    process that holds it - host name, boot id, PID namespace, process id and start time of the C(ansible-playbook)
    process (the topmost ancestor of the module process that runs C(ansible-playbook); the parent process when none
    does), and the AWX job id from the C(JOB_ID) environment variable AWX sets on a job.
  - A run on the same controller (same host name, boot id and PID namespace) takes over at once a lock whose holder
    process no longer runs, and reads the member again. A lock held from another controller (or another AWX job's
    container) is waited for until its holder releases it or it expires, unless O(lock_takeover) is set. The run
    warns about every lock it took over from another run, naming that run.
  - With O(state=absent), releases the locks O(states) (this module's own RV(members) result) says this run holds.
    A lock another run took over is left alone.
  - The role C(member_join) takes the locks after its batch read and releases them at the end, also on failure; the
    role C(member_leave) locks each member it removes the same way.
    Members that need no step take no lock, so a re-run that changes nothing sends no request for it. Check mode
    takes no lock.
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.k8s_auth.HUB
  - fleetops.registration.controller_run
attributes:
  check_mode:
    support: full
    description: Takes and releases no lock, and returns O(states) as given.
  diff_mode:
    support: none
    description: A lock is not part of the member's configuration.
options:
  state:
    description:
      - C(present) takes the locks, C(absent) releases them.
    type: str
    choices: [present, absent]
    default: present
  members:
    description:
      - The members, each a mapping of M(fleetops.registration.member_info) options (the same items that module read),
        for the hub connection and for the second read of a member whose lock had to be waited for.
    type: list
    elements: dict
    required: true
  states:
    description:
      - With O(state=present), the C(members) result of M(fleetops.registration.member_info) - a member with
        C(pending) steps is locked under its C(run_id).
      - Without it, every member of O(members) is locked (as the role C(member_leave) does) and none is read again
        (there is no state to renew).
      - With O(state=absent), the RV(members) result of this module's O(state=present) task; required then.
    type: dict
  lock_namespace:
    description:
      - The hub namespace of the lock Leases. It must exist; M(fleetops.registration.hub_prepare) (the role
        C(fleetops.registration.hub)) and C(extensions/rbac/hub.yml) create the default, the collection's own namespace.
      - A Lease there with a lock's name but without the collection's labels is refused, not waited for; a lock counts
        as expired a day after it was last renewed at the latest, whatever its C(leaseDurationSeconds) says.
    type: str
    default: fleetops-system
  lock_duration:
    description:
      - Seconds a lock lives after it was taken; a run that died leaves it to expire.
      - Default - three times O(wait_timeout), the lifetime of the role C(member_join)'s registration token (a join's
        token, install and check-in waits each take up to O(wait_timeout)).
    type: int
  run_by:
    description:
      - Who runs this run, written on the lock for whoever waits for it (for example C(AWX job 42)).
      - Default - C(AWX job <id>) when the C(JOB_ID) environment variable (which AWX sets on a job) is set, else the
        controller's user and host name.
    type: str
  lock_takeover:
    description:
      - Take over the lock of a member another run holds without waiting for it, whoever holds it. For a run known to
        be dead that held the lock from another controller (an AWX job whose container is gone, a controller that
        was replaced); a run that still changes the member fails its next step when it finds its lock taken.
      - The roles set it from C(member_join_lock_takeover) and C(member_leave_lock_takeover).
      - A Lease with a lock's name but without the collection's labels is still refused.
    type: bool
    default: false
  read_again:
    description:
      - Members this task already found held by another run in an earlier call - read again once their lock is taken, as
        a member waited for in this call is. The task's action sets it when it waits in steps; there is no need to give it.
    type: list
    elements: str
    default: []
  wait_timeout:
    description:
      - Seconds to wait, for all the members together, for locks other runs hold. The task waits in steps (five seconds,
        then thirty) and after each prints a line naming the run that holds each member still waited for and the
        seconds left.
    type: int
    default: 300
  wait_step:
    description:
      - Seconds this call waits at most for locks other runs hold, when less than O(wait_timeout) (which still sets
        how long a lock lives). The task's action sets it when it waits in steps; there is no need to give it.
    type: int
  wait_sleep:
    description:
      - Seconds between attempts while waiting.
    type: int
    default: 2
notes:
  - The hub credential needs C(get), C(create), C(update), C(patch) and C(delete) on C(leases) in O(lock_namespace)
    (C(extensions/rbac/hub.yml)).
seealso:
  - module: fleetops.registration.member_info
'''

EXAMPLES = r'''
- name: Read the members' states
  fleetops.registration.member_info:
    members: "{{ member_requests }}"
  register: batch

- name: Lock the members this run changes (waiting for another run that changes them)
  fleetops.registration.member_lock:
    members: "{{ member_requests }}"
    states: "{{ batch.members }}"
    run_by: "nightly schedule"
    # -e takeover=true: take over the locks of a run that died on another controller instead of waiting for them
    lock_takeover: "{{ takeover | default(false) }}"
  register: locks

- name: Release them
  fleetops.registration.member_lock:
    state: absent
    members: "{{ member_requests }}"
    states: "{{ locks.members }}"
'''

RETURN = r'''
members:
  description:
    - With O(state=present), O(states) with the members read again after their wait, each locked member with C(lock)
      (the Lease's C(namespace) and C(name), the C(holder) - the member's C(run_id) - and the C(version) this run wrote,
      which the release deletes in one request), and a member whose lock could not be taken with C(error).
  returned: state=present
  type: dict
  sample: {"edge-07": {"name": "edge-07", "pending": ["kubefleet"], "run_id": "k3v9x0a7qp",
           "lock": {"namespace": "fleetops-system", "name": "fleetops-member-edge-07", "holder": "k3v9x0a7qp",
                    "version": "48213"}}}
locked:
  description: The members this run now holds the lock of.
  returned: state=present
  type: list
  elements: str
  sample: ["edge-07"]
waited:
  description: The members whose lock another run held first (their state was read again), including those taken over.
  returned: state=present
  type: list
  elements: str
  sample: []
held:
  description:
    - The members another run still held when the wait ended, each with that lock - C(holder) (its run id), C(by) (who
      runs it), C(process) (its controller process - C(host), C(boot_id), C(pid_namespace), C(pid), C(started) and the
      AWX C(job); null when the lock does not say), C(since) and C(expires).
  returned: state=present
  type: dict
  sample: {}
took_over:
  description:
    - The members whose lock this run took from another run that held it - its process no longer ran on this
      controller, or O(lock_takeover) was set. A warning names each run taken over.
  returned: state=present
  type: list
  elements: str
  sample: []
released:
  description: The members whose lock this task released.
  returned: state=absent
  type: list
  elements: str
  sample: ["edge-07"]
'''

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock_batch import lock_members, release_members
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import DEFAULT_NAMESPACE


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        members=dict(type="list", elements="dict", required=True),
        states=dict(type="dict"),
        lock_namespace=dict(type="str", default=DEFAULT_NAMESPACE),
        lock_duration=dict(type="int"),
        run_by=dict(type="str"),
        lock_takeover=dict(type="bool", default=False),
        read_again=dict(type="list", elements="str", default=[]),
        wait_step=dict(type="int"),
        wait_timeout=dict(type="int", default=300),
        wait_sleep=dict(type="int", default=2),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, HUB_AUTH, argument_spec()), required_if=[("state", "absent", ["states"])])


def run(module):
    return lock_members(module) if module.params["state"] == "present" else release_members(module)


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
