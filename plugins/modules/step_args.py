#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: step_args
short_description: Work out a role's settings and each of its steps' module arguments (internal to the roles)
version_added: 0.1.0
description:
  - Used by the roles C(member_join) and C(member_leave); not a stable interface of its own.
  - Each setting of the role is its role variable when the play has one (set by the user, or a fixed default of the
    role), else the first of its inventory variables that is set and not blank, else its default - one table in the
    collection (C(plugin_utils/role_wiring.py)) says which, and which module option each step gives it. The roles'
    internal filter C(inventory_terms) names the variables behind a module's option from the same table.
  - Runs on the controller only; reads variables and changes nothing.
author:
  - fleetops.registration contributors (@fleetops)
attributes:
  check_mode:
    support: full
    description: Works the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
options:
  role:
    description: The role whose settings and steps to work out.
    type: str
    required: true
    choices: [member_join, member_leave]
  entry:
    description: The role's entry point; V(rollback) works out only the arguments of the agents' rollback.
    type: str
    choices: [main, rollback]
    default: main
  states:
    description:
      - What member_info (or the lock, which reads a member again) returned for each member of the batch, by name.
      - Given, the result also has the steps' module arguments, read from this member's state.
    type: dict
  states_from:
    description:
      - The name of the variable holding this play batch's registered C(member_info) result, whose C(members) are then
        O(states).
      - Read as it is stored rather than templated for every member as O(states) would be; a batch's states are large,
        and templating them again for each host took most of this task's time.
    type: str
  served:
    description: The fleet managers the hub serves (for a member that names none; C(member_leave)).
    type: list
    elements: str
  set_facts:
    description:
      - Set the role's facts for this host instead of leaving that to C(set_fact) tasks (a task less per host).
      - With O(states) or O(states_from) and O(role=member_join), C(member_join_releases_before), and for a member that is RV(done) also C(member_join_summary)
        and its entry of the job's statistics C(fleetops_members), as C(ansible.builtin.set_stats) would add it.
      - RV(request) is never set as a fact, as it holds the inventory's secret values and before ansible-core 2.21 an
        action's facts go to the fact cache; the roles read it from the registered result.
    type: bool
    default: false
  validate:
    description:
      - First check the role's variables against its argument spec (C(meta/argument_specs.yml), entry point O(entry))
        as Ansible does when it includes a role, and fail with Ansible's message if they do not fit.
      - For plays that import the role with C(rolespec_validate=false) (C(join_cluster.yml)) so that a member is not
        charged a task of its own for the check.
      - Then, for the entry point V(main), check every setting with a format (the member's name, labels, kubeconfig and
        context, the hub's URL and CA, namespaces, durations, the taints, the agent setting, the agent charts, the Fleet
        client ID and token) by the rule of the module that takes it, and that the hub is named (and for
        C(member_leave) that C(member_leave_workloads) is V(keep) or V(remove)), and fail naming each variable, its value
        and the fix - before any cluster is read. Files (a kubeconfig, the hub CA, a local chart) are checked only over
        a local connection, where the modules read them.
    type: bool
    default: false
  all_hosts:
    description:
      - Check, as O(validate) does, the variables of every host of the play (C(ansible_play_hosts_all)) instead of
        working out this host's settings; with C(run_once), one task for the whole play. Each host's variables are its
        own (inventory and extra vars), else the role's fixed defaults.
      - Fails naming each host refused, and why, when every host is refused (nothing could be done, so nothing is read)
        or, with O(stop_on_any_refusal), when any one is. Otherwise it warns naming them, and each then fails alone at its
        role's first task (O(validate)), before its own clusters are read, and the other hosts go on.
      - For playbooks that read clusters before the role runs (C(join_cluster.yml) and C(move_hub.yml) prepare a hub
        first). Returns no settings.
    type: bool
    default: false
  stop_on_any_refusal:
    description:
      - With O(all_hosts), fail when any host is refused (C(move_hub.yml), where a move is all or nothing).
    type: bool
    default: false
  locks:
    description:
      - The result of this run's C(member_lock) task, skipped or not. Its C(members) (the states read again under the
        lock) replace O(states); while it C(locked) any member, no member is RV(done).
    type: dict
    default: {}
  locks_from:
    description:
      - The name of the variable holding this run's registered C(member_lock) result, read like O(states_from); it is
        then O(locks).
    type: str
'''

EXAMPLES = r'''
- name: Work out the member's settings and what member_info is asked about it
  fleetops.registration.step_args:
    role: member_join
  register: member_join__wiring

- name: Check every member's values before any cluster is read (a play on the group members)
  fleetops.registration.step_args:
    role: member_join
    all_hosts: true
  run_once: true
'''

RETURN = r'''
refused:
  description: With O(all_hosts), the hosts refused (the message or the warning says why).
  returned: when O(all_hosts)
  type: list
  elements: str
settings:
  description: Each setting of the role by name (without the role's prefix), as the role's steps use it.
  returned: unless O(all_hosts)
  type: dict
task_files:
  description:
    - C(member_leave) only - its task files in the order they run (which fleet managers, and for Rancher Fleet the
      agent or the C(Cluster) first, by C(member_leave_workloads)).
  returned: when O(role=member_leave), unless O(all_hosts)
  type: list
  elements: str
request:
  description: What C(member_info) (C(member_join)) or C(member_lock) (C(member_leave)) is asked about this member.
  returned: unless O(entry=rollback) or O(all_hosts)
  type: dict
state:
  description: This member's entry of O(states).
  returned: when O(states) or O(states_from) is given
  type: dict
args:
  description:
    - Per module (its short name), the arguments every step that runs it gets (the C(module_defaults) of the role's
      block).
  returned: when O(states) or O(states_from) is given, or O(entry=rollback)
  type: dict
done:
  description:
    - Whether the member needs nothing more of this run (C(member_join)) - no step, no problem, no lock taken - so the
      role can end for it.
  returned: when O(states) or O(states_from), and O(set_facts), are given and O(role=member_join)
  type: bool
lift_quarantine:
  description: Whether the KubeFleet member's quarantine is lifted after its steps (C(member_join)).
  returned: when O(states) or O(states_from) is given
  type: bool
agents:
  description:
    - Whether the leave uninstalls the member's agents (C(member_leave)) - false with C(member_leave_keep_agents), for
      agents that serve another hub now.
  returned: with O(role=member_leave), unless O(entry=rollback) or O(all_hosts)
  type: bool
identity:
  description: Whether the leave deletes the member's KubeFleet hub identity (C(member_leave_kubefleet_remove_identity)).
  returned: with O(role=member_leave), unless O(entry=rollback) or O(all_hosts)
  type: bool
problem:
  description:
    - Why the member cannot go on - no hub; with the states, also no agent chart for a fleet manager it joins, its
      state unreadable or its lock held by another run. Empty when it can go on.
  returned: unless O(entry=rollback) or O(all_hosts)
  type: str
'''
