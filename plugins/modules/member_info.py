#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: member_info
short_description: One member cluster's state in each fleet manager, judged from the hub and from the member
version_added: 0.1.0
description:
  - Reads, in one process, what the hub knows of a member (the Rancher Fleet C(Cluster), the KubeFleet C(MemberCluster))
    and what the member itself knows (the agent's Helm release, the agent's credential and whether the hub still accepts
    that credential, checked by authenticating with it and asking the hub who it is).
  - Returns, per fleet manager, the action the member needs and the reasons - C(none), C(join) (the hub has no member
    object, or the agent never checked in or joined), C(reregister) (the agent's credential is missing or rejected, or
    its check-in is older than O(stale_after)), C(install) (the agent release is missing or not deployed), C(upgrade)
    (the chart version or the values differ, or a KubeFleet agent's hub CA does not verify the hub), C(rotate) (a
    KubeFleet agent's token is due for rotation - O(rotate_credentials), O(credential_max_age), or by its lifetime
    (half of it gone, or a legacy token that never expires; see O(kubefleet_token_lifetime)); the member stays
    healthy), C(reconfigure) (the agent or the Rancher Fleet C(Cluster) does not carry the O(agent) setting; the member
    stays healthy), C(relabel) (only the labels drift, or the hub does not record the member's cluster identity yet).
  - The role C(member_join) calls it once per play batch (O(members)) and guards each member's steps with its result,
    so healthy members cost one task together, and a broken one is repaired by the same plain re-run.
  - Warns, with the fix, when a member's agent runs another release than its hub - KubeFleet - the member agent's
    image tag against the hub agent's (C(fleet-system/hub-agent)); Rancher Fleet - the C(fleet-agent) release's app
    version against the Fleet controller's image tag (C(cattle-fleet-system/fleet-controller)). Nothing is said unless
    both are release versions (not C(main), nor a chart built from source); the member's action is not changed.
  - Changes nothing. Never returns a token, values.yaml or kubeconfig.
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.read_only
  - fleetops.registration.k8s_auth.HUB
  - fleetops.registration.controller_run
options:
  name:
    description:
      - The member's name in the fleet managers (the Fleet C(Cluster) and the C(MemberCluster)).
      - Required unless O(members) is given.
    type: str
  members:
    description:
      - Read many members in one process instead of one. Each item is a mapping of this module's options for one
        member (O(name) required; any other option but O(members) - its connection, its hub connection, O(labels),
        O(force)...). The task's own options apply to every item that does not set them; an empty string counts as
        not set.
      - Per-member credentials come as kubeconfig files - an item cannot carry O(api_key), O(hub_api_key) or a
        kubeconfig mapping, because Ansible logs the items as given (set those on the task for all members instead).
      - The hub is listed once per hub connection and fleet manager for all the members, and the members are read up
        to 8 at a time. The role C(member_join) reads its whole play batch this way in one C(run_once) task.
      - A member whose state cannot be read does not stop the others - its entry in RV(members) holds C(error) and
        its name is in RV(unreadable). The task itself fails only for what concerns the whole batch, such as a name
        given twice.
      - The results are in RV(members); the single-member return values are then absent.
    type: list
    elements: dict
  backends:
    description:
      - The fleet managers to read the member's state in.
    type: list
    elements: str
    default: [kubefleet, rancher_fleet]
  detect_backends:
    description:
      - Also read the member's state in every other fleet manager whose API the hub serves (RV(backends) says which,
        RV(unserved) which not). A manager in O(backends) that the hub does not serve still fails. For a member that
        does not say which fleet managers it belongs to, on a hub that may run only one; costs no request more.
    type: bool
    default: false
  labels:
    description:
      - The labels the member should carry; drift gives the action C(relabel).
      - A mapping, or text as an AWX survey gives it - a JSON object or C(key=value) pairs separated by commas or blanks
        (as the filter P(fleetops.registration.survey_labels#filter) reads it). The result's RV(labels) is the mapping.
    type: raw
    default: {}
  labels_mode:
    description:
      - C(merge) only adds and updates O(labels); C(replace) also counts labels not in O(labels) as drift.
    type: str
    choices: [merge, replace]
    default: merge
  stale_after:
    description:
      - Seconds after the agent's last check-in (Rancher Fleet) or heartbeat (KubeFleet) after which a silent agent
        (the cause C(silent)) is restarted - and re-registered, unless it is a KubeFleet agent whose token the hub
        accepts - on top of the credential check.
      - Unset, each fleet manager's own rule applies - the same that M(fleetops.registration.fleet_status) and the
        inventory plugin apply - Rancher Fleet 3600 seconds after the last check-in, KubeFleet three
        C(heartbeatPeriodSeconds) after the last heartbeat. O(stale_after=0) turns Rancher Fleet's off.
      - A KubeFleet member whose only reason for a repair is silence is first given one C(heartbeatPeriodSeconds)
        (and 5 seconds) to be heard from, by a GET of its C(MemberCluster) every 2 seconds, and is judged again when a
        newer heartbeat comes. After a hub outage every agent's last heartbeat is old until its next one, and a run right
        after it would otherwise restart every member's agent.
      - A KubeFleet member judged healthy whose agent has missed a heartbeat (older than one period, 5% of it and 5
        seconds) is waited for the same way until it would be silent, and judged again then. While it waits, the heartbeat the
        member agent writes on its C(InternalMemberCluster) counts too (the hub agent copies it onto the
        C(MemberCluster) late after a hub outage); a credential that may not read it judges the C(MemberCluster)'s.
    type: int
  fleet_namespace:
    description:
      - The namespace of the member's Rancher Fleet C(Cluster) on the hub.
    type: str
    default: fleet-default
  identity_namespace:
    description:
      - The hub namespace where the member's KubeFleet identity belongs. A MemberCluster that names a ServiceAccount in
        another namespace (C(fleet-system), earlier versions' default) needs the action C(rotate), which moves it there.
      - Unset, the identity's namespace is not judged.
    type: str
  heartbeat_period_seconds:
    description:
      - The C(heartbeatPeriodSeconds) the member's KubeFleet C(MemberCluster) should have (as
        M(fleetops.registration.kubefleet_member_cluster) sets it). Another value is the finding C(spec_drift) (action
        C(relabel)). Unset, it is not judged.
    type: int
  taints:
    description:
      - The taints (C(key), C(value), C(effect)) the member's KubeFleet C(MemberCluster) should have (as
        M(fleetops.registration.kubefleet_member_cluster) sets them; the collection's quarantine taint is judged on its
        own). Others are the finding C(spec_drift) (action C(relabel)). Unset, they are not judged; V([]) means none.
    type: list
    elements: dict
  hub_api_server_url:
    description:
      - The hub API server URL as the member's agents reach it, when it differs from the hub connection's URL (and,
        for Rancher Fleet, from Fleet's configured C(apiServerURL)), as M(fleetops.registration.fleet_agent) and
        M(fleetops.registration.kubefleet_member_agent) give it to the agents under the same name.
      - The alias O(hub_url) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [hub_url]
  hub_api_server_ca:
    description:
      - PEM text, or the path of a PEM file, of the CA the agents trust for the hub, when it differs from Fleet's
        configured C(apiServerCA) (Rancher Fleet), O(hub_ca_cert) and the hub kubeconfig's CA.
      - What the agents on the member are told, where O(hub_ca_cert) is how the controller verifies the hub; the two differ
        when the agents reach the hub by another name or through another proxy than the controller does.
    type: str
  agent_chart_versions:
    description:
      - The agent chart version wanted per fleet manager, for example C(rancher_fleet=0.16.0); a release of
        another version gives the action C(upgrade).
    type: dict
    default: {}
  agent_values:
    description:
      - Extra chart values wanted per fleet manager; a release whose values lack them gives the action C(upgrade).
      - Shown in the output, except the parts that look like credentials; put secrets in O(agent_secret_values).
    type: dict
    default: {}
  agent_images:
    description:
      - The agent images wanted per fleet manager, as its agent module's image options set them; for C(kubefleet)
        C(repository), C(tag) and C(refresh_token_repository) (M(fleetops.registration.kubefleet_member_agent)'s
        O(fleetops.registration.kubefleet_member_agent#module:image_repository),
        O(fleetops.registration.kubefleet_member_agent#module:image_tag) and
        O(fleetops.registration.kubefleet_member_agent#module:refresh_token_image_repository)).
      - Only the images given are compared (one not given is whatever the chart ships); a release that runs another
        gives the action C(upgrade). The agent setting's C(image_registry) applies to the repositories as the agent
        module applies it.
    type: dict
    default: {}
  agent_secret_values:
    description:
      - Chart values that are secrets, per fleet manager (what the agent modules take as C(secret_values)), merged over
        O(agent_values) for the comparison. Never logged or returned; every value in it is masked in the output,
        including the release values the member view shows.
      - In a O(members) item too, where it is masked before the invocation is logged.
    type: dict
  force:
    description:
      - Fleet managers whose agent is reinstalled whatever its state (the action C(install) at least).
    type: list
    elements: str
    default: []
  replace_rebuilt:
    description:
      - What to do when the cluster behind the member is not the one that joined - its C(kube-system) Namespace UID
        differs from the one recorded on the member's hub object (a cluster rebuilt under the same name, or a
        kubeconfig that now reaches another cluster).
      - V(false) fails the member with what changed and how to proceed; V(true) gives the action C(reregister) (the
        role then revokes the old cluster's credentials and registers the new cluster).
      - The same C(kube-system) UID behind another API server CA than the recorded one (or none) is refused too, since
        another server can claim the UID but not the CA; V(true) records the new CA of an intended CA rotation. A member
        whose C(kube-system) Namespace UID cannot be read is always refused.
      - With O(members), two members that reach the same cluster are refused too (an C(error) each), and so is a
        member whose cluster the hub records for another member, whatever this says.
    type: bool
    default: false
  credential_max_age:
    description:
      - Rotate a KubeFleet member agent's token once it is older than this, a Go duration such as C(720h) - the action
        C(rotate). Its age is read from the member's copy of the token, which records when the hub issued it; a copy
        that does not record it (written by an older version of the collection) is rotated once.
      - Rancher Fleet agents keep the credential of their registration; RV(managers) reports its age
        (C(member.credential_age_seconds)) and rotates it the same way - the agent registers again with a fresh
        registration token, the C(Cluster) and its client ID stay (see C(docs/day2.md)).
    type: str
  rotate_credentials:
    description:
      - Rotate every KubeFleet member agent's token now (the action C(rotate)), whatever its age.
    type: bool
    default: false
  kubefleet_token_lifetime:
    description:
      - The lifetime KubeFleet member tokens are issued with (M(fleetops.registration.kubefleet_member_identity)'s
        O(fleetops.registration.kubefleet_member_identity#module:token_lifetime); V(never) for legacy tokens that do not
        expire). A token that expires is due for rotation (the action C(rotate)) once half of its lifetime (C(exp) minus
        the issue time the member's copy records) has passed, or when it outlives this lifetime; a token that never
        expires is due unless this is V(never).
      - Once three quarters of its lifetime have passed the module warns, and RV(managers) says so in
        C(member.credential.warning) - the renewal was missed, and the agent loses the hub when the token expires.
    type: str
    default: 720h
  agent:
    description:
      - The agent setting the member's agents should carry, as the agent modules' C(agent) option takes it
        (O(fleetops.registration.kubefleet_member_agent#module:agent)).
      - The running agent Deployment (and, for Rancher Fleet, the C(Cluster)'s agent fields) is compared with it; a
        difference gives the action C(reconfigure), which keeps the member healthy. Unset, nothing is compared.
    type: dict
seealso:
  - module: fleetops.registration.fleet_status_info
  - module: fleetops.registration.fleet_agent
  - module: fleetops.registration.kubefleet_member_agent
'''

EXAMPLES = r'''
- name: Read the member's state in both fleet managers
  fleetops.registration.member_info:
    kubeconfig: ~/.kube/edge-07.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    name: edge-07
    labels: {env: prod}
  register: member

- name: Read every member of the play batch in one process (the hub is listed once)
  fleetops.registration.member_info:
    hub_kubeconfig: ~/.kube/hub.yaml
    members: "{{ ansible_play_batch | map('extract', hostvars, 'member_request') | list }}"
  run_once: true
  register: batch

- name: Reinstall the Rancher Fleet agent only when the member needs it
  fleetops.registration.fleet_agent:
    kubeconfig: ~/.kube/edge-07.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    token_name: "fleetops-join-{{ member.run_id }}"
    chart_ref: /charts/fleet-agent
  when: member.actions.rancher_fleet in ['join', 'reregister', 'install', 'upgrade']
'''

RETURN = r'''
name:
  description: The member's name.
  returned: without O(members)
  type: str
members:
  description:
    - With O(members), per member name its result - the single-member return values (RV(name), RV(actions),
      RV(pending), RV(healthy), RV(managers), RV(labels), RV(run_id)) - or, when its state could not be read, C(name)
      and C(error) (what failed and what to do).
  returned: with O(members)
  type: dict
  sample:
    edge-07: {"name": "edge-07", "actions": {"kubefleet": "none"}, "pending": [], "healthy": true, "run_id": "k3v9x0a7qp"}
    edge-08: {"name": "edge-08", "error": "cannot reach the cluster API server. Check kubeconfig, context and host"}
unreadable:
  description: With O(members), the names of the members whose state could not be read.
  returned: with O(members)
  type: list
  elements: str
  sample: ["edge-08"]
changing:
  description: With O(members), the names of the readable members that need a step (a non-empty RV(pending)).
  returned: with O(members)
  type: list
  elements: str
  sample: ["edge-07"]
lock_needed:
  description: With O(members), whether the run locks members on the hub - RV(changing) is not empty, and the task does
    not run in check mode (which changes nothing).
  returned: with O(members)
  type: bool
backends:
  description: The fleet managers the member's state was read in - O(backends), and with O(detect_backends) those the
    hub serves too.
  returned: without O(members)
  type: list
  elements: str
  sample: ["rancher_fleet"]
unserved:
  description: With O(detect_backends), the fleet managers left out because the hub does not serve their API.
  returned: without O(members)
  type: list
  elements: str
  sample: ["kubefleet"]
actions:
  description: Per fleet manager, the action the member needs.
  returned: without O(members)
  type: dict
  sample: {"rancher_fleet": "none", "kubefleet": "reregister"}
pending:
  description: The fleet managers whose action is not C(none), in the order of O(backends); a role includes a
    manager's steps only for these, so a healthy member costs no further task.
  returned: without O(members)
  type: list
  elements: str
  sample: ["kubefleet"]
healthy:
  description:
    - Whether the member is healthy in every fleet manager read - no finding that needs a repair (only findings whose
      action is C(rotate), C(reconfigure) or C(relabel), or none). A finding with the action C(none) is a problem no
      re-run repairs (the hub reports the member unhealthy, the hub cannot be reached...), so the member is not healthy.
    - The same judgement gives M(fleetops.registration.fleet_status) its C(healthy) column and the inventory plugin
      its C(healthy) group.
  returned: without O(members)
  type: bool
managers:
  description:
    - Per fleet manager - C(hub) (what the hub knows, null when it has no object for the member), C(member) (what the
      member knows - agent release, credential present and accepted, the token's expiry and, for KubeFleet,
      C(credential.warning) once it is overdue for renewal), C(action), C(reasons),
      C(healthy), C(findings) and C(diagnosis).
    - C(member.workloads) is what the manager's agent runs on the member now, read from the member alone (so also when
      the hub lost it or is gone), one item per placed workload - C(placement) (Rancher Fleet the Bundle, KubeFleet the
      ClusterResourcePlacement) and C(record) (Rancher Fleet C(release <namespace>/<name>), the Helm release its agent
      deployed for the bundle; KubeFleet C(AppliedWork <name>), with C(objects), what it applied). Null when the
      credential may not read them (Helm's release records in every namespace; AppliedWorks). A re-point or
      re-registration of the agent requires its hub to place each of them.
    - C(member.unread) lists what the member credential may not read - C(secrets) with the member view role of
      C(extensions/rbac/member.yml), which reads no Secret. Then C(member.release) and C(member.credential) are null
      (not known, rather than missing), no finding is drawn from them, and the member is judged on the rest (the hub,
      the agent's Deployment, what it runs).
    - C(findings) is the judgement all of it comes from - each fleet manager's one rule table, a list of C(cause),
      C(evidence), C(action) (what a plain re-run does about it, C(none) when nothing does) and C(fix), root cause
      first. The member's C(action) is the most urgent finding's (in the order of RV(actions)' values C(join),
      C(reregister), C(install), C(upgrade), C(rotate), C(reconfigure), C(relabel)), C(reasons) are the evidence of
      the findings a re-run acts on, and C(healthy) is false when any finding's action is not C(rotate),
      C(reconfigure) or C(relabel).
    - C(diagnosis) names why a member is unhealthy, root cause first - the findings that make it so, one per cause,
      with what the agent's pods and events show added; each C(fix)'s last sentence says what a plain re-run does
      about it. Causes (docs/day2.md gives each one's action per fleet manager) - C(not_member), C(leaving),
      C(registration_gone), C(identity_gone), C(cluster_replaced), C(cluster_namespace), C(agent_missing),
      C(release_not_deployed), C(bootstrap_missing),
      C(credential_missing), C(credential_unusable), C(wrong_hub), C(token_expired), C(hub_ca_untrusted),
      C(hub_unreachable), C(credential_rejected), C(wrong_identity), C(not_joined), C(agent_config_drift),
      C(image_pull), C(unschedulable), C(pod_rejected), C(mount_failed), C(crash_loop), C(pending), C(agent_unavailable),
      C(not_rolled_out), C(hub_reports), C(never_checked_in), C(silent), C(forced), C(chart_version), C(values_drift), C(image_drift),
      C(rotation_due), C(identity_moves), C(release_records_move), C(settings_drift), C(labels_drift), C(spec_drift), C(quarantined), C(identity_unrecorded).
    - It is read from the agent's pods (container states), the Warning Events of its objects, the credential check made
      as the agent connects (its hub URL, CA and token - so from the controller, which may reach the hub by another
      route than the member), the token's C(exp), and the hub's conditions. The agent's pods and events are read only
      for a member that is not healthy or whose agent Deployment is not serving; empty for a healthy member.
  returned: without O(members)
  type: dict
  sample:
    kubefleet:
      action: reregister
      healthy: false
      reasons: ["the hub rejects the member agent's token in Secret fleet-hub-credentials/hub-kubeconfig-secret (Unauthorized)"]
      findings:
        - cause: token_expired
          evidence: the member agent's token in Secret fleet-hub-credentials/hub-kubeconfig-secret expired at 2026-11-21T09:00:00Z
          action: reregister
          fix: A re-run issues a new credential (...).
      diagnosis:
        - cause: token_expired
          evidence: the member agent's token in Secret fleet-hub-credentials/hub-kubeconfig-secret expired at 2026-11-21T09:00:00Z
          action: reregister
          fix: A re-run issues a new credential (...). A plain re-run registers the member again (action reregister).
      hub: {"joined": true, "heartbeat_age_seconds": 12}
      member: {"release": {"status": "deployed", "chart_version": "0.1.0"}, "credential": {"present": true, "accepted": false},
               "workloads": [{"placement": "web", "record": "AppliedWork web-work", "objects": ["Namespace web"]}]}
labels:
  description: The labels of O(labels) as a validated mapping with string values, for the steps that set them.
  returned: without O(members)
  type: dict
  sample: {"env": "prod"}
identity:
  description:
    - Which cluster the member is - the UID of its C(kube-system) Namespace and the SHA-256 fingerprint of the API
      server CA its connection trusts (null without one). The member's hub objects record it when it joins; a hub
      object that does not record it yet gives the action C(relabel).
  returned: without O(members)
  type: dict
  sample: {"uid": "6f1c2a9e-4b7d-4c1e-9a57-0d3e8f2b1c44", "ca_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
rebuilt:
  description: The fleet managers in which the member is re-registered because another cluster now answers to its name
    (only with O(replace_rebuilt)).
  returned: without O(members)
  type: list
  elements: str
  sample: ["kubefleet"]
run_id:
  description: A random name part for what this run creates on the hub for the member (e.g. its registration token).
  returned: without O(members)
  type: str
  sample: k3v9x0a7qp
'''

from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import read_members
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import MemberInfo, member_info_argument_spec
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    """The module's own options, kept in module_utils because each item of members is validated against them too."""
    return member_info_argument_spec()


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, HUB_AUTH, argument_spec()),
                required_one_of=[("name", "members")], mutually_exclusive=[("name", "members")])


def run(module):
    return read_members(module) if module.params["members"] is not None else MemberInfo(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
