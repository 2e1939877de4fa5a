#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubefleet_member_agent
short_description: Install or remove the KubeFleet member agent on a member cluster
version_added: 0.1.0
description:
  - Acts on the member cluster (the usual Kubernetes options) and, optionally, reads the hub (the C(hub_*) options).
  - Writes the Secret C(hub-kubeconfig-secret) holding the identity token, then installs or upgrades the C(member-agent)
    Helm chart with the hub's URL and CA, the member's name and the agent namespace. The chart's refresh-token sidecar
    hands the token to the agent.
  - The token is O(token), or read from the hub's identity Secret (M(fleetops.registration.kubefleet_member_identity)).
  - The hub CA is O(hub_api_server_ca), else O(hub_ca_cert), else read from the hub kubeconfig whether it holds it
    inline (C(certificate-authority-data)) or names a file (C(certificate-authority)); KubeFleet's C(join.sh) only
    handles the first.
  - Before changing anything, a preflight check reaches the hub at O(hub_api_server_url) with that CA and token, so an
    unreachable hub, a wrong CA or a dead token fail the task instead of a crash-looping agent.
  - Idempotent (an upgrade only when chart, version or values differ). The chart is a local path, a repository or an
    OCI registry's, at a pinned version.
  - With hub access and O(wait=true), waits until the hub reports the MemberCluster C(Joined) with a heartbeat, after an
    upgrade once the new pods rolled out (the old agent reports to the hub until then).
  - O(rollback_to_revision) rolls the release back (Helm's rollback), as C(fleetops.registration.upgrade_agents) does.
  - O(state=absent) uninstalls the release (which removes O(agent_namespace) with the agent), deletes the Secret, and
    removes O(release_namespace) when the module created it; nothing of the collection's stays on the member.
  - The images are the chart's own unless the image options are set, so use the chart of the hub's KubeFleet release
    (C(oci://ghcr.io/kubefleet-dev/kubefleet/charts/member-agent) at the hub-agent chart's version).
  - Tested with go.goms.io/fleet v0.14.0's member-agent chart and agents, O(image_tag=v0.14.0) (the chart's is C(main)).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.k8s_auth.HUB
  - fleetops.registration.wait
  - fleetops.registration.helm
  - fleetops.registration.agent_setting
  - fleetops.registration.agent_setting.SILENCE
  - fleetops.registration.controller_run
attributes:
  check_mode:
    description: The Secret is written as a server-side dry run; the Helm change is predicted from the release's chart,
      version and values, without running Helm's upgrade. When the MemberCluster or the identity token does not exist
      yet (an earlier task of the same check run only dry-ran it), the module warns and predicts the join instead of
      failing, and skips the preflight.
    support: full
  diff_mode:
    description: Shows the Secret (token hidden) and the release's chart, version and values before and after.
    support: full
options:
  name:
    description:
      - Name of the member cluster, as the MemberCluster on the hub is named.
    type: str
    required: true
    aliases: [member_name]
  token:
    description:
      - The identity token the member agent authenticates to the hub with.
      - Without it the token is read from the hub, which needs a hub connection (O(hub_kubeconfig), O(hub_context) or
        O(hub_host)).
    type: str
  hub_api_server_url:
    description:
      - URL of the hub's API server as the member agent reaches it.
      - Defaults to O(hub_host), else the server of the hub kubeconfig's context.
      - The same option as in M(fleetops.registration.fleet_agent), M(fleetops.registration.fleet_cluster) and
        M(fleetops.registration.member_info); the roles take it from the hub host's C(fleetops_api_server_url).
      - The alias O(hub_url) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [hub_url]
  hub_api_server_ca:
    description:
      - PEM text, or the path of a PEM file, of the CA that signed the hub API server's certificate; only its
        certificates are passed on.
      - Defaults to the contents of O(hub_ca_cert), else the CA of the hub kubeconfig's cluster; the roles take it from
        the hub host's C(fleetops_ca_file).
      - The alias O(hub_ca_pem) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [hub_ca_pem]
  hub_insecure_skip_tls_verify:
    description:
      - Let the member agent skip verifying the hub's certificate. For tests only.
    type: bool
    default: false
  identity_namespace:
    description:
      - Hub namespace of the identity ServiceAccount and its token Secret (earlier versions' default was C(fleet-system)).
    type: str
    default: fleetops-system
  service_account_name:
    description:
      - The identity ServiceAccount. Defaults to C(<name>-hub-cluster-access).
    type: str
  token_secret_name:
    description:
      - The identity's first token Secret on the hub. Defaults to C(<service_account_name>-token).
      - The token given to the agent is the identity's current one - the newer of this Secret and
        C(<token_secret_name>-2), where M(fleetops.registration.kubefleet_member_identity) issues the token of a
        rotation. The member's copy records when the hub issued it (annotation C(fleetops.registration/token-issued)),
        which M(fleetops.registration.member_info) reads as the credential's age. A new token restarts the agent.
    type: str
  secret_name:
    description:
      - Name of the member Secret that holds the token for the agent.
    type: str
    default: hub-kubeconfig-secret
  secret_namespace:
    description:
      - Namespace of that Secret on the member, a namespace of its own so that nobody who may read the Secrets of
        ordinary workloads (in C(default)) reads the member's hub credential. It must differ from O(agent_namespace).
      - When it does not exist, the module creates it, labelled C(app.kubernetes.io/managed-by=fleetops.registration),
        and O(state=absent) removes it again when it holds no other Secret.
      - An agent installed with its token elsewhere (C(default), as earlier versions of this collection put it) is
        moved on the next run - the Secret written here, the release upgraded to read it, the old Secret removed -
        provided the old Secret carries the collection's label.
    type: str
    default: fleet-hub-credentials
  release_name:
    description:
      - Name of the Helm release.
    type: str
    default: member-agent
  release_namespace:
    description:
      - Namespace that holds Helm's records of the release. Every record holds the agent's values (O(secret_values)
        included), so by default they sit beside the token in O(secret_namespace), not in C(default), where whoever may
        read or create the Secrets of ordinary workloads could read them or plant one.
      - It must differ from O(agent_namespace), which the chart creates itself.
      - When it does not exist, the module creates it, labelled C(app.kubernetes.io/managed-by=fleetops.registration),
        and O(state=absent) removes it again (see O(keep_release_namespace)).
      - Records in C(default) (earlier versions, KubeFleet's C(join.sh)) are moved on the next run without a Helm run,
        provided each lists only the chart's objects; a run that stopped halfway is finished by the next one.
    type: str
    default: fleet-hub-credentials
  keep_release_namespace:
    description:
      - With O(state=absent), keep O(release_namespace) even when this module created it.
      - By default the leave leaves nothing of the collection's on the member, so such a namespace is removed, unless
        other Helm releases keep their records in it.
    type: bool
    default: false
  workloads:
    description:
      - With O(state=absent), what happens to the objects KubeFleet applied on the member (the C(AppliedWork) objects
        the member agent recorded, and what each of them owns).
      - V(keep) leaves them in place, managed by no hub, and returns them in RV(workloads); each loses its C(AppliedWork)
        owner reference first, as the chart's uninstall deletes the C(AppliedWork) CRD and the garbage collector would
        delete what they own.
      - V(remove) deletes each C(AppliedWork) after the uninstall and waits (within O(wait_timeout)) until the garbage
        collector has deleted what it owned. Make the member leave first, so that no hub places them again.
      - In check mode both report what they would keep or remove.
    type: str
    choices: [keep, remove]
    default: keep
  agent_namespace:
    description:
      - Namespace the chart creates for the agent (the chart's C(namespace) value).
    type: str
    default: fleet-system
  chart_ref:
    description:
      - The member-agent chart. Required with O(state=present), unless O(rollback_to_revision) is given.
      - May not begin with C(-) (Helm would read it as an option) nor hold a password.
  chart_version:
    description:
      - Required for a chart from a repository or OCI registry. For a local chart it is read from C(Chart.yaml) and,
        if given, must match.
  image_repository:
    description:
      - Image of the member agent. Not set, the chart's own applies (C(ghcr.io/kubefleet-dev/kubefleet/member-agent) or
        Azure/fleet's C(ghcr.io/azure/fleet/member-agent)). Set it for a mirror on air-gapped sites.
    type: str
  image_tag:
    description:
      - Tag of the member agent image (also of the refresh-token image unless O(refresh_token_image_tag) is set). Not
        set, the chart's own applies - the KubeFleet project's charts run their release's images; Azure/fleet's chart
        in its repository defaults to the moving tag C(main), so set the hub's version (the tag of the hub agent's image)
        with that chart.
      - The agent should run the hub's KubeFleet version; M(fleetops.registration.member_info) warns when the agent's
        image tag and the hub agent's differ.
    type: str
  refresh_token_image_repository:
    description:
      - Image of the refresh-token sidecar. Not set, the chart's own applies.
    type: str
  refresh_token_image_tag:
    description:
      - Tag of the refresh-token image. Defaults to O(image_tag) when that is set, else the chart's own.
    type: str
  image_pull_policy:
    description:
      - Pull policy of both images. Not set, the chart's own applies.
    type: str
    choices: [Always, IfNotPresent, Never]
  log_verbosity:
    description:
      - The agents' klog verbosity (the chart's C(logVerbosity)).
    type: int
  values:
    description:
      - Further chart values (for example C(resources), C(tolerations), C(propertyProvider)). The values set from the
        other options take precedence.
      - Shown in the output and the diff, except the parts that look like credentials; put secrets in O(secret_values).
    type: dict
    default: {}
  secret_values:
    description:
      - Chart values that hold credentials (a proxy's password, a registry login), merged over O(values) before the
        chart gets them. Never logged or returned; every value in it is masked in the output, the diff and the
        returned RV(chart_values).
      - Use it for anything secret in the chart's values. Credential-shaped parts of O(values) (URL passwords, values
        of keys named like C(password), C(token) or C(secret)) are masked too, but the rest of O(values) is shown.
    type: dict
  preflight:
    description:
      - Whether to check, before changing anything, that the hub at O(hub_api_server_url) answers over TLS verified with the CA
        and accepts the token (a C(SelfSubjectReview)).
      - The check runs where the task runs; it stands in for the member's own network path to the hub.
    type: bool
    default: true
  finish_leave:
    description:
      - Only let the agent acknowledge its MemberCluster's leave (deleted on the hub, kept until the agent marks it
        left), then wait until the hub lets it go; nothing is installed. A deleted agent Deployment is made again from
        its own release (C(helm rollback) to the newest revision), a scaled-to-0 agent gets its replica back, one that
        has not acknowledged within 20 s is restarted. The workloads stay. Without a leave it does nothing.
      - The task then returns only RV(repaired), RV(reasons) and RV(left).
    type: bool
    default: false
  rollback_to_revision:
    description:
      - Roll the release back to this earlier revision of it (C(helm rollback)) instead of installing or upgrading it;
        a new revision with that revision's chart, version and values, none when the newest already runs them.
      - The chart options, O(values) and the image options are ignored, and the token Secret is left as it is.
      - Record the revision before a change from RV(release) or M(fleetops.registration.member_info)'s member view; Helm
        must still keep it (C(helm history)). In check mode the rollback is predicted from Helm's stored revisions.
        Only with O(state=present).
    type: int
  wait:
    description:
      - With hub access and O(state=present), whether to wait until the MemberCluster is C(Joined) with a member agent
        heartbeat (after an upgrade or a rollback, newer than the one before it and after the Deployment rolled out).
        With O(state=absent), whether to wait until the agent namespace is gone. Without hub access nothing is waited for.
  state:
    description:
      - V(present) installs or upgrades the agent; V(absent) uninstalls it and deletes the token Secret.
      - Make the cluster leave first (M(fleetops.registration.kubefleet_member_cluster) O(state=absent)). With the
        hub connection, V(absent) first lets the agent acknowledge a leave in progress, as O(finish_leave) does.
    type: str
    choices: [present, absent]
    default: present
notes:
  - The token never appears on a command line, in logs, diffs or results; Helm gets values through a private file.
  - When the token in the Secret changes, the agent Deployment is restarted, because the refresh-token sidecar only
    re-reads the Secret every few hours.
  - A re-run repairs a broken member. A missing or outdated token Secret is rewritten (and the agent restarted), a
    missing, failed or outdated release is installed or upgraded; RV(reasons) says why. A task that changed the member
    and then failed reports C(changed=true) and names what it did.
seealso:
  - module: fleetops.registration.kubefleet_member_identity
  - module: fleetops.registration.kubefleet_member_cluster
'''

EXAMPLES = r'''
- name: Install the KubeFleet project's member agent of the hub's release on east-1 (token, URL and CA from the hub)
  fleetops.registration.kubefleet_member_agent:
    kubeconfig: ~/.kube/east-1.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    name: east-1
    chart_ref: oci://ghcr.io/kubefleet-dev/kubefleet/charts/member-agent
    chart_version: 0.3.1   # the hub-agent chart's version: KubeFleet v0.3.1

- name: Azure/fleet's chart from its repository (a checkout at the hub's tag); its image tag defaults to main
  fleetops.registration.kubefleet_member_agent:
    kubeconfig: ~/.kube/east-1.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    name: east-1
    chart_ref: /opt/fleet-v0.14.0/charts/member-agent
    image_tag: v0.14.0

- name: Air-gapped site, chart and images from a local registry
  fleetops.registration.kubefleet_member_agent:
    context: east-1
    hub_kubeconfig: ~/.kube/hub.yaml
    name: east-1
    hub_api_server_url: https://hub.internal:6443
    chart_ref: oci://registry.internal/charts/member-agent
    chart_version: 0.1.0
    image_repository: registry.internal/fleet/member-agent
    refresh_token_image_repository: registry.internal/fleet/refresh-token
    image_tag: v0.14.0

- name: Install with a token handed over from an earlier task
  fleetops.registration.kubefleet_member_agent:
    context: east-1
    name: east-1
    token: "{{ identity.token }}"
    hub_api_server_url: https://hub.example.com:6443
    hub_api_server_ca: "{{ lookup('file', 'hub-ca.pem') }}"
    chart_ref: /opt/charts/member-agent

- name: Roll the agent back to the revision it ran before an upgrade that did not come back healthy
  fleetops.registration.kubefleet_member_agent:
    context: east-1
    hub_kubeconfig: ~/.kube/hub.yaml
    name: east-1
    rollback_to_revision: "{{ agent_before.release.revision }}"
    wait_timeout: 120

- name: Remove the agent once the hub has let the cluster go (waits for a leave in progress, restarting a stuck agent)
  fleetops.registration.kubefleet_member_agent:
    context: east-1
    hub_kubeconfig: ~/.kube/hub.yaml
    name: east-1
    state: absent
'''

RETURN = r'''
repaired:
  description:
    - How the agent Deployment was rolled out again after Helm, null when it served - its replica restored when scaled
      to 0 (the chart sets none), or a rollout restart when the agent is silent or has no available replica, unless this
      run rolled new pods out. A repair is a change; the module then waits for the rollout and a contact made after it.
      With O(state=absent), the repair that let the agent acknowledge its leave.
  returned: unless O(rollback_to_revision)
  type: str
  sample: "the agent Deployment was scaled to 0 replicas: its replica was restored"
agent_setting:
  description:
    - What the O(agent) setting found on the agent Deployment after Helm - C(drift), the parts it did not carry, in
      sentences - and whether the Deployment was C(patched) (in check mode - would be).
  returned: when state is present
  type: dict
  sample: {"drift": ["container member-agent's environment lacks or differs in HTTPS_PROXY"], "patched": true}
left:
  description: The member whose MemberCluster the hub let go (null when it was not leaving).
  returned: with O(finish_leave) or O(state=absent)
  type: str
release:
  description: The Helm release after the task (null after an uninstall).
  returned: unless O(finish_leave)
  type: dict
  sample: {name: member-agent, namespace: fleet-hub-credentials, chart: member-agent, chart_version: 0.1.0, status: deployed, revision: 1}
action:
  description: With O(rollback_to_revision), what was done to the release (V(rollback) or V(none)).
  returned: with O(rollback_to_revision)
  type: str
  sample: rollback
rolled_back_from:
  description: With O(rollback_to_revision), the release as it was before the rollback (null when nothing changed).
  returned: with O(rollback_to_revision)
  type: dict
  sample: {name: member-agent, namespace: fleet-hub-credentials, chart: member-agent, chart_version: 0.1.0, status: deployed, revision: 3}
chart_values:
  description: The chart values the release has (no secrets in them).
  returned: with O(state=present), without O(rollback_to_revision)
  type: dict
chart:
  description: Name and version of the chart.
  returned: with O(state=present)
  type: dict
  sample: {name: member-agent, version: 0.1.0}
secret:
  description: Where the token Secret is on the member.
  returned: unless O(finish_leave)
  type: dict
  sample: {name: hub-kubeconfig-secret, namespace: fleet-hub-credentials}
removed_secrets:
  description: Token Secrets (C(namespace/name)) removed because the agent now reads its token from O(secret_namespace).
  returned: with O(state=present)
  type: list
  elements: str
  sample: [default/hub-kubeconfig-secret]
hub_url:
  description: The hub URL the agent uses.
  returned: with O(state=present)
  type: str
preflight:
  description: What the preflight check saw (null when skipped).
  returned: with O(state=present)
  type: dict
  sample: {hub_url: "https://hub.example.com:6443", username: "system:serviceaccount:fleet-system:east-1-hub-cluster-access"}
reasons:
  description: Why the task changed the member (the token Secret, the release), in plain sentences without values; empty
    when nothing changed.
  returned: with O(state=present)
  type: list
  elements: str
  sample: ["the release's values differ from the options"]
agent_restarted:
  description: Whether the agent Deployment was restarted to pick up a new token.
  returned: with O(state=present)
  type: bool
released_leases:
  description:
    - Holder identities of the agent's leader-election Leases (in C(kube-system) on the member) deleted while waiting
      for the join, because every member-agent pod is newer than the holder's acquisition - an agent uninstalled
      earlier, for instance by a leave. The new agent would otherwise wait a lease duration (15 s) for that holder.
      Only the version read is deleted, so a Lease renewed or taken meanwhile stays.
  returned: with O(state=present)
  type: list
  elements: str
  sample: ["vm_2e75b954-e9cb-4fcd-b86a-e432d9322b56"]
member:
  description: The MemberCluster summary once joined (see M(fleetops.registration.kubefleet_member_cluster_info)).
  returned: with hub access and O(wait=true)
  type: dict
removed_namespaces:
  description: Namespaces the module had created on the member and removed with O(state=absent).
  returned: with O(state=absent)
  type: list
  elements: str
  sample: [member-agent-release]
removed_leases:
  description:
    - The agent's leader-election Leases in C(kube-system) that O(state=absent) removed once no agent pod was left to hold
      them (they are not in a namespace the leave deletes).
  returned: with O(state=absent)
  type: list
  elements: str
  sample: [136224848560.member.fleet.azure.com, 136224848560.hub.fleet.azure.com]
workloads:
  description:
    - What KubeFleet had applied on the member when O(state=absent) ran, and what became of it - C(action) is
      O(workloads); C(applied_works) lists each C(AppliedWork) with the objects it applied (C(Kind namespace/name)).
  returned: with O(state=absent)
  type: dict
  sample: {"action": "keep", "applied_works": [{"name": "web-work", "resources": ["Namespace web", "ConfigMap web/web"]}]}
diff:
  description: Secret (token hidden) and release before and after.
  returned: in diff mode
  type: dict
'''

from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.agent import MemberAgent
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    DEFAULT_HUB_SECRET_NAMESPACE, IDENTITY_NAMESPACE, KUBEFLEET_SYSTEM_NAMESPACE,
)
from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AGENT, AUTH, HELM, HUB_AUTH, SILENCE, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    return dict(
        name=dict(type="str", required=True, aliases=["member_name"]),
        token=dict(type="str", no_log=True),
        **hub_endpoint.options(url_aliases=["hub_url"], ca_aliases=["hub_ca_pem"]),
        hub_insecure_skip_tls_verify=dict(type="bool", default=False),
        identity_namespace=dict(type="str", default=IDENTITY_NAMESPACE),
        service_account_name=dict(type="str"),
        token_secret_name=dict(type="str", no_log=False),
        secret_name=dict(type="str", default="hub-kubeconfig-secret", no_log=False),
        secret_namespace=dict(type="str", default=DEFAULT_HUB_SECRET_NAMESPACE, no_log=False),
        release_name=dict(type="str", default="member-agent"),
        release_namespace=dict(type="str", default="fleet-hub-credentials"),
        keep_release_namespace=dict(type="bool", default=False),
        workloads=dict(type="str", choices=["keep", "remove"], default="keep"),
        agent_namespace=dict(type="str", default=KUBEFLEET_SYSTEM_NAMESPACE),
        image_repository=dict(type="str"),
        image_tag=dict(type="str"),
        refresh_token_image_repository=dict(type="str", no_log=False),
        refresh_token_image_tag=dict(type="str", no_log=False),
        image_pull_policy=dict(type="str", choices=["Always", "IfNotPresent", "Never"]),
        log_verbosity=dict(type="int"),
        values=dict(type="dict", default={}),
        secret_values=dict(type="dict", no_log=True),
        preflight=dict(type="bool", default=True),
        finish_leave=dict(type="bool", default=False),
        rollback_to_revision=dict(type="int"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, HUB_AUTH, WAIT, HELM, AGENT, SILENCE, argument_spec()),
                required_if=[("state", "present", ["chart_ref", "rollback_to_revision"], True)])


def run(module):
    return MemberAgent(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
