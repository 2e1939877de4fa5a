# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  agent:
    description:
      - The agent setting, the same for every fleet manager (the roles pass the inventory's C(fleetops_agent)) - where
        the agent's pods run, what they may use, their environment and where their images come from.
      - Only the keys given are managed; an empty value (V([]), V({}), V("")) asks for nothing more of that key.
      - Where the chart renders a key it goes into the chart values; the rest is patched onto the agent Deployment after
        Helm (a strategic merge patch), and a later run repairs a Deployment that was changed since.
      - Rancher Fleet deploys the agent it adopted (C(manageAgent)) again from the C(Cluster)'s agent fields, so
        M(fleetops.registration.fleet_cluster) writes the setting there too; Fleet has no per-Cluster field for
        O(agent.image_pull_secrets) and O(agent.priority_class_name), which its modules therefore skip with a warning,
        and it takes O(agent.node_selector) as required node affinity.
      - Environment values that hold a URL with a user and password are masked in the module's output.
    type: dict
    suboptions:
      tolerations:
        description: Tolerations added to the agent's pods, as the pod spec writes them.
        type: list
        elements: dict
      node_selector:
        description: Node labels the agent's nodes must carry.
        type: dict
      affinity:
        description: The agent pods' affinity (C(nodeAffinity), C(podAffinity), C(podAntiAffinity)), replacing the chart's.
        type: dict
      resources:
        description: Resource C(requests) and C(limits) of the agent's containers.
        type: dict
      env:
        description:
          - Environment variables of the agent's containers, a mapping of names to values (C(HTTPS_PROXY),
            C(NO_PROXY)...).
          - A proxy URL's password (with or without the scheme, C(user:secret@proxy:3128)) and the value of a variable
            named like a credential (C(API_TOKEN), C(DB_PASSWORD)) are masked in output, syslog and job events.
          - With Rancher Fleet the values are kept on the member only, in the Secret
            C(cattle-fleet-system/fleetops-agent-env-<digest>) that M(fleetops.registration.fleet_agent) writes before
            Helm (M(fleetops.registration.fleet_cluster) through O(fleetops.registration.fleet_cluster#module:cluster_kubeconfig)
            for a manager-initiated registration); the C(Cluster)'s C(spec.agentEnvVars) on the hub names that Secret
            and key. A later run keeps the newest earlier Secret (for a rollback) and removes older ones.
        type: dict
      image_registry:
        description:
          - A registry (C(host[:port][/path])) the agent images are pulled from instead of their own registry, such
            as a mirror; the image's path and tag stay.
        type: str
      image_pull_secrets:
        description: Secrets of the agent's namespace on the member that hold the registry's credentials (KubeFleet only).
        type: list
        elements: str
      priority_class_name:
        description: A PriorityClass for the agent's pods (KubeFleet only).
        type: str
'''

    # The agent steps of fleet_agent and kubefleet_member_agent: member_info's judgement handed on (argspec.SILENCE).
    SILENCE = r'''
options:
  silent:
    description:
      - Why M(fleetops.registration.member_info) judged the agent silent (its finding C(silent)); the agent is restarted
        unless this step rolls new pods out anyway. The roles pass it, so the restart follows the inventory's
        C(stale_after).
      - Unset, the step judges the fleet manager's object on the hub (its last check-in or heartbeat) itself, by the
        same rule table with the manager's own bound.
    type: str
'''
