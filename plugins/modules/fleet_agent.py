#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fleet_agent
short_description: Install, upgrade or remove the Rancher Fleet agent on a downstream cluster
version_added: 0.1.0
description:
  - Installs the C(fleet-agent) Helm chart on the downstream cluster the Kubernetes options point at, as release
    C(fleet-agent) in namespace C(cattle-fleet-system) (the only place the chart works; anything else is refused before
    Helm runs), so the agent registers with the Fleet manager (agent-initiated registration).
  - The registration values come from a ClusterRegistrationToken, read from the hub (O(token_name), O(token_namespace) and
    the C(hub_*) options) or from a values file (O(values_file), as written by
    M(fleetops.registration.fleet_registration_token)).
  - The hub's C(apiServerURL) and C(apiServerCA) are, in this order, O(hub_api_server_url)/O(hub_api_server_ca), the token's
    values, or the hub connection (O(hub_host) or the server of the hub kubeconfig; O(hub_ca_cert) or the kubeconfig's CA, inline
    C(certificate-authority-data) or the C(certificate-authority) file it names). A missing CA is the usual cause of
    C(x509 - certificate signed by unknown authority) (fleet#687).
  - Idempotent without the helm-diff plugin - the release is read from Helm's own records on the cluster (no helm process),
    its user values and chart version are compared with the desired ones, and Helm runs only when they differ, when the
    release is not C(deployed), or when the member is broken - the agent Deployment is gone, or the agent has neither its hub
    credential nor a bootstrap Secret to register with (Helm then recreates what its manifest holds).
  - The desired chart version is O(chart_version), else the version of a local chart; a local chart whose version differs
    from O(chart_version) is refused. A repository or OCI chart without O(chart_version) is installed at its latest version,
    and an installed release's version is then not compared.
  - B(Preflight) (O(preflight), on by default) - before Helm runs, the module connects to the hub's C(apiServerURL) with the
    C(apiServerCA) and the registration token the agent will get, and asks the hub who the token is (a SelfSubjectReview).
    A URL that does not answer, a CA that does not verify the hub, or a token the hub refuses fails the task naming the
    option to fix, with nothing installed. A token read from the hub (O(token_name)) must also exist and not be expired
    (Fleet deletes expired tokens).
  - B(Truthful failures) - a task that changed the release and then failed reports C(changed=true) and says what it left.
    A fresh install whose agent never checks in within O(wait_timeout) is uninstalled again, unless
    O(keep_failed_install=true).
  - The registration token travels to Helm in a C(0600) values file, never on a command line, and never appears in the
    result, a log or the diff.
  - With Fleet's C(manageAgent) on (its default), Fleet adopts a registered agent as its own release C(fleet-agent-<cluster>)
    and upgrades it itself. The module then leaves the agent alone (it warns instead of fighting Fleet over the objects).
  - When the hub (given by the C(hub_*) options) already has the Cluster of the agent's client ID (predefined with
    M(fleetops.registration.fleet_cluster), or joined before) and
    Fleet's agent bundle C(fleet-agent-<cluster>) for it, the chart's agent Deployment is installed with the Deployment
    spec that bundle holds (a Helm post-renderer), so Fleet's adoption replaces no pod and the agent that registered
    checks in one C(agentCheckinInterval) later. Not when that pod needs what only the adoption creates (image pull
    secrets, a priority class) or lacks the chart's proxy variables, and not with Helm 4 (whose C(--post-renderer) takes
    only a plugin); then, or without the bundle (or C(get) on it), the chart's Deployment is installed and the adoption
    replaces its pod (see O(release_departed_lease)). RV(fleet_spec_installed).
  - O(rollback_to_revision) rolls the release back to an earlier revision (Helm's rollback) and waits for the agent's
    check-in as after an upgrade; the playbook C(fleetops.registration.upgrade_agents) uses it for a member whose new
    agent does not come back.
  - C(state=absent) uninstalls the release (and Fleet's C(fleet-agent-<cluster>) release, if any) and deletes the agent's hub
    credential Secret C(fleet-agent) that the agent wrote itself (Helm would leave it behind). It then deletes the namespace
    C(cattle-fleet-system) when this module created it, or when nothing of value is left in it (no other workloads,
    volume claims, Secrets or ConfigMaps than the agent's own), unless O(keep_namespace=true); otherwise it warns naming
    what it kept the namespace for. The Cluster on the hub is removed with M(fleetops.registration.fleet_cluster).
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
    support: full
    description:
      - Predicts from the plan (the release as Helm recorded it against the desired chart and values), without running Helm,
        so it works on a fresh member.
      - When the token's values do not exist yet (a O(token_name) or O(values_file) an earlier task would create, but
        it ran in check mode too), the install is predicted with a warning instead of failing.
  diff_mode:
    support: full
    description: Shows the chart version, the release status and the values with the registration token redacted.
options:
  state:
    description:
      - Whether the agent should be installed.
    type: str
    choices: [present, absent]
    default: present
  release_name:
    description:
      - Must be C(fleet-agent); the chart refuses any other release name. Present only to fail clearly when set otherwise.
    type: str
    default: fleet-agent
  release_namespace:
    description:
      - Must be C(cattle-fleet-system); the chart refuses any other namespace. Present only to fail clearly when set otherwise.
    type: str
    default: cattle-fleet-system
  token_name:
    description:
      - Name of the ClusterRegistrationToken whose values to use, read from the hub. Needs O(token_namespace) and
        a hub connection (O(hub_kubeconfig), O(hub_context) or O(hub_host)).
      - Mutually exclusive with O(values_file).
    type: str
  token_namespace:
    description:
      - Namespace of O(token_name) on the hub; the cluster registers into this namespace.
    type: str
  values_file:
    description:
      - Path of a values.yaml obtained from a registration token's Secret (its C(values) key).
    type: path
  hub_api_server_url:
    description:
      - The hub API server URL the agent connects to (C(https://...)), overriding the token's and the hub connection's.
      - The same option as in M(fleetops.registration.kubefleet_member_agent), M(fleetops.registration.fleet_cluster)
        and M(fleetops.registration.member_info); the roles take it from the hub host's C(fleetops_api_server_url).
      - The aliases O(api_server_url) and O(hub_url) are deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [api_server_url, hub_url]
  hub_api_server_ca:
    description:
      - PEM text, or the path of a PEM file, of the CA that signed the hub API server's certificate, overriding the
        token's, O(hub_ca_cert) and the hub kubeconfig's; the roles take it from the hub host's C(fleetops_ca_file).
      - Unset everywhere means the system trust store (only for hubs with publicly trusted certificates).
      - The alias O(api_server_ca) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [api_server_ca]
  labels:
    description:
      - Labels the hub puts on the Cluster it creates at registration (C(labels.KEY) values, set as strings like
        C(--set-string) does). The agent cannot change them later; use M(fleetops.registration.fleet_cluster) for that.
    type: dict
  client_id:
    description:
      - Client ID to register with, to claim a Cluster predefined with M(fleetops.registration.fleet_cluster).
      - Without it, the agent uses the UID of the cluster's C(kube-system) namespace.
    type: str
  values:
    description:
      - Further chart values (image, proxy, C(noProxy), tolerations, C(agentTLSMode)...), for example to point the image at a
        mirror in an air-gapped site. The token's values and the options above take precedence; the token cannot be set here.
      - Shown in the output and the diff, except the parts that look like credentials (the password of a C(proxy) URL,
        values of keys named like C(password) or C(token)); put secrets in O(secret_values).
    type: dict
  secret_values:
    description:
      - Chart values that hold credentials (a C(proxy) URL with a password, a private registry's login), merged over
        O(values) before the chart gets them. Never logged or returned; every value in it is masked in the output and
        the diff.
    type: dict
  wait:
    description:
      - With hub access (O(hub_kubeconfig), O(hub_context) or O(hub_host)) and O(state=present), wait until the hub sees the agent - a
        Cluster with the agent's client ID (O(client_id), else the C(kube-system) UID) in the token's namespace with
        C(status.agent.lastSeen) set. Without hub access nothing is waited for, as with
        M(fleetops.registration.kubefleet_member_agent).
      - When the task installed or upgraded the agent, only a check-in newer than the previous agent's last one counts,
        so a re-registration is not reported done on the old agent's word.
      - Helm itself does not wait for the Deployment; the check-in on the hub is the signal that registration worked.
      - With O(state=absent), wait until the deleted namespace C(cattle-fleet-system) is gone (the role C(member_leave) does).
      - The default was V(false) in earlier versions; set O(wait=false) explicitly to keep that behaviour.
    type: bool
    default: true
  preflight:
    description:
      - Before Helm runs, check the hub as the agent will see it (URL, CA and registration token, see above).
      - Turn it off only when the member reaches the hub by a way the host running the task does not.
    type: bool
    default: true
  keep_failed_install:
    description:
      - Keep a release this task installed even when its agent never checked in within O(wait_timeout) (to debug it).
      - By default such a fresh install is uninstalled again, so a failed join leaves nothing on the member.
    type: bool
    default: false
  release_departed_lease:
    description:
      - While O(wait) waits for the check-in after this task installed or upgraded the agent, delete the agent's
        leader-election Lease (C(cattle-fleet-system/fleet-agent)) once its holder is gone, that is when every
        C(app=fleet-agent) pod was created after the holder acquired the Lease (3 s of clock skew allowed).
      - Fleet adopts the agent it registered (as its release C(fleet-agent-<cluster>)); when the chart's Deployment was
        installed (see RV(fleet_spec_installed)), the adoption replaces its pod right after registration, and Fleet's agent
        does not release the Lease when it stops, so the adopted agent would wait a whole lease duration (30 s, then up
        to one retry period) for a holder that no longer exists. Only the version
        of the Lease that was read is deleted; one renewed or taken meanwhile stays.
      - Needs C(get), C(list) and C(delete) on Leases and Pods in that namespace; without them the agent's own lease
        expiry applies, as with V(false).
    type: bool
    default: true
  rollback_to_revision:
    description:
      - Roll the release back to this earlier revision of it (C(helm rollback)) instead of installing or upgrading it;
        Helm makes a new revision with that revision's chart, version and values (its registration values included).
        Nothing changes when the newest revision is deployed and already runs them, so a re-run is idempotent.
      - O(token_name), O(values_file), the chart options and O(values) are not needed and are ignored.
      - Record the revision before a change from the release's C(revision) (RV(release), or
        M(fleetops.registration.member_info)'s member view); the revision must be one Helm still keeps (C(helm history)).
      - In check mode the rollback is predicted from Helm's stored revisions, without running Helm.
      - Only with O(state=present). While Fleet manages the agent itself (C(manageAgent)), Fleet would redeploy its own
        version over a Helm rollback, so the Cluster's agent fields go back instead (O(previous_agent_fields)) and the
        module waits until Fleet has redeployed the agent with them and the agent checked in.
    type: int
  previous_agent_fields:
    description:
      - With O(rollback_to_revision) on an agent Fleet manages, the Cluster's agent fields before the change being rolled
        back, as M(fleetops.registration.member_info) read them (the Rancher Fleet hub view's C(agent_fields);
        environment values as fingerprints). M(fleetops.registration.fleet_cluster) records on the Cluster the fields a
        change replaces (annotation C(fleetops.io/agent-fields-before)); they are written back when they lead to these,
        nothing changes when the Cluster still has them, and the module fails naming the fix when neither holds.
    type: dict
  rotate_credential:
    description:
      - With O(state=present), register the running agent again with the token of O(token_name) (or O(values_file))
        without uninstalling it, so it gets a new hub credential (a rotation, or a credential the hub no longer accepts).
      - The old agent keeps checking in while the new token is put on the member (the bootstrap Secret
        C(fleet-agent-bootstrap)); then, right after one of its check-ins when waiting for it keeps the gap shorter, its
        credential Secret C(fleet-agent), its leader Lease and its pods are deleted and the Deployment's new pod registers.
        Fleet's agent registers only once it holds the leader Lease and checks in first 15 s after registering, so the
        member goes about 20 s without a check-in (see the collection's docs/day2.md).
      - Only when the agent's credential is for the hub of the new token and the release that installed it gave it the
        client ID the new registration uses; the agent reads its client ID only when it is installed. Otherwise (a move
        to another hub, another client ID) the agent is uninstalled and installed again, as at a first join.
      - Needs C(delete) on Pods in C(cattle-fleet-system) on the member.
      - Needs O(wait) and hub access; succeeds only when the hub saw a check-in after the switch by an agent holding a
        credential made after it. Fleet deletes the older registrations of the client ID, and their credential, when it
        grants the new one.
      - While Fleet manages the agent (its release C(fleet-agent-<cluster>)), Helm is not run; otherwise the release is
        upgraded with the new token's values first.
    type: bool
    default: false
  allow_workload_removal:
    description:
      - Before the agent registers with a hub (a first install, a re-install for another hub or client ID, a credential
        rotation, an upgrade to another hub URL or CA), the bundles Fleet's agent deployed on the member (Helm releases
        annotated C(fleet.cattle.io/bundle-id)) must be placed by that hub - a C(Bundle) of the same name in the
        Cluster's namespace whose targets select the Cluster (its name and labels on the hub), by Fleet's matching.
        Registered, the agent uninstalls every release its hub does not place. A bundle the hub lacks fails the task
        before anything on the member changes, naming it.
      - V(true) goes on anyway, with a warning and RV(workloads_removed) - the agent then removes those releases.
      - For the bundles the hub places, the task also waits (within O(wait_timeout)) until the hub has made their
        C(BundleDeployments) for the predefined Cluster (O(client_id)) before it installs or re-points the agent, whose
        first clean-up removes the release of a bundle it finds none of; a timeout fails naming them, nothing changed.
      - Needs C(list) on Secrets in every namespace of the member, and on the hub C(get) on C(bundles) (and C(list) on
        C(clustergroups) when a target names one) in the Cluster's namespace and C(list) on C(bundledeployments).
    type: bool
    default: false
  keep_namespace:
    description:
      - With O(state=absent), keep the namespace C(cattle-fleet-system) even when nothing of value is left in it.
    type: bool
    default: false
  workloads:
    description:
      - With O(state=absent), what happens to the Helm releases Fleet's agent deployed for its bundle deployments (charts
        annotated C(fleet.cattle.io/bundle-id)), read on the member before the agent goes.
      - V(keep) leaves them in place, no longer managed by any hub, and returns them in RV(workloads).
      - V(remove) waits (within O(wait_timeout)) until the agent has uninstalled them before the agent itself is
        uninstalled. The agent does so when their BundleDeployments go, so delete the member's Cluster first
        (M(fleetops.registration.fleet_cluster) with O(state=absent); the C(member_leave) role does this in that order).
        Fleet leaves the namespaces it created for them.
      - In check mode both report the releases they would keep or wait for.
    type: str
    choices: [keep, remove]
    default: keep
  chart_ref:
    description:
      - Required with state C(present). For example C(fleet-agent) with O(chart_repo_url=https://rancher.github.io/fleet-helm-charts/),
        an C(oci://) mirror, or a local copy of the chart (such as C(charts/fleet-agent) of the C(github.com/rancher/fleet)
        Go module).
      - May not begin with C(-) (Helm would read it as an option) nor hold a password.
notes:
  - A re-run repairs a member whose release was uninstalled or failed, or whose agent Deployment is gone. A member whose
    credential Secret was deleted or is refused by the hub needs a new registration (a new token and
    O(rotate_credential=true)), which the C(member_join) role does when the C(member_info) decision says C(reregister)
    or C(rotate).
  - A registered agent keeps its own hub credential and does not re-register when upgraded; the registration token only
    matters for the first registration (and after the credential is removed with C(state=absent)).
seealso:
  - module: fleetops.registration.fleet_registration_token
  - module: fleetops.registration.fleet_cluster
'''

EXAMPLES = r'''
- name: Roll the agent back to the revision it ran before an upgrade whose agent did not check in
  fleetops.registration.fleet_agent:
    kubeconfig: ~/.kube/edge-01.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    rollback_to_revision: 2

- name: Register a cluster with labels, values read from the hub
  fleetops.registration.fleet_agent:
    kubeconfig: ~/.kube/edge-01.yaml
    hub_kubeconfig: ~/.kube/hub.yaml
    token_name: new-token
    token_namespace: clusters
    labels:
      env: dev
      example: true
    chart_ref: fleet-agent
    chart_repo_url: https://rancher.github.io/fleet-helm-charts/
    chart_version: 0.16.0
    wait: true

- name: Claim a predefined cluster, values from a file, chart from an OCI mirror
  fleetops.registration.fleet_agent:
    context: edge-02
    values_file: /root/fleet/values.yaml
    client_id: "{{ edge.client_id }}"
    hub_api_server_url: https://hub.example.com:6443
    hub_api_server_ca: /etc/pki/hub-ca.pem
    chart_ref: oci://registry.example.com/charts/fleet-agent
    chart_version: 0.16.0
    values:
      image:
        repository: registry.example.com/rancher/fleet-agent
        tag: v0.16.0

- name: Remove the agent and its hub credential
  fleetops.registration.fleet_agent:
    context: edge-02
    state: absent
'''

RETURN = r'''
repaired:
  description:
    - How the agent Deployment was rolled out again after Helm, null when it served - its replica restored when it was
      scaled to 0 (the chart sets none, so Helm alone never restores it), or a rollout restart when the agent is silent
      (its Cluster's last check-in is older than an hour) or has no available replica, unless this run already rolled out new pods. A repair counts as a change,
      and the module then waits for the rollout and for a contact with the hub made after it.
  returned: when state is present
  type: str
  sample: "the agent Deployment was scaled to 0 replicas: its replica was restored"
agent_setting:
  description:
    - What the O(agent) setting found on the agent Deployment after Helm - C(drift), the parts it did not carry, in
      sentences - and whether the Deployment was C(patched) (in check mode - would be).
  returned: when state is present
  type: dict
  sample: {"drift": ["container fleet-agent's environment lacks or differs in HTTPS_PROXY"], "patched": true}
release:
  description: The Helm release after the run (name, namespace, chart, chart_version, app_version, status, revision).
  returned: always
  type: dict
  sample: {"name": "fleet-agent", "namespace": "cattle-fleet-system", "chart": "fleet-agent", "chart_version": "0.16.0",
           "status": "deployed", "revision": 1}
chart_version:
  description: The chart version the release should have.
  returned: when state is present
  type: str
action:
  description: What Helm did, or would do in check mode - C(none), C(install), C(upgrade) or (with O(rollback_to_revision))
    C(rollback), or for an agent Fleet manages C(restore_cluster_agent_fields).
  returned: when state is present
  type: str
  sample: upgrade
rolled_back_from:
  description: With O(rollback_to_revision), the release as it was before the rollback (null when nothing changed).
  returned: with O(rollback_to_revision)
  type: dict
  sample: {"name": "fleet-agent", "namespace": "cattle-fleet-system", "chart": "fleet-agent", "chart_version": "0.16.1",
           "status": "deployed", "revision": 3}
restored_agent_fields:
  description: With O(rollback_to_revision) on an agent Fleet manages, the Cluster's agent fields written back (empty when
    the Cluster still had them).
  returned: with O(rollback_to_revision) on an agent Fleet manages
  type: list
  elements: str
  sample: ["privateRepoURL"]
preflight_user:
  description: The user the hub saw for the registration token in the preflight (null when the hub does not tell).
  returned: when the preflight ran and the hub told
  type: str
  sample: system:serviceaccount:clusters:import-token-x
rotation:
  description: With O(rotate_credential), the agent's check-in interval (seconds) the switch was timed by and whether it
    waited for the old agent's next check-in.
  returned: when rotate_credential is true and the agent registered again
  type: dict
  sample: {"checkin_interval": 15.0, "waited_for_checkin": true}
removed_namespace:
  description: Whether the namespace C(cattle-fleet-system) was (or in check mode would be) deleted.
  returned: when state is absent
  type: bool
namespace_kept_for:
  description: Why C(cattle-fleet-system) was kept (the objects found in it, or C(keep_namespace)).
  returned: when state is absent
  type: list
  elements: str
  sample: ["ConfigMap site-settings"]
workloads_removed:
  description:
    - With O(allow_workload_removal), the bundles on the member the hub does not place - C(manager), C(name)
      (C(namespace/bundle) on the hub) and C(why) - which the agent removes once registered.
  returned: when the agent registers with a hub that does not place every bundle on the member
  type: list
  elements: dict
reasons:
  description: Why Helm ran (empty when nothing changed).
  returned: when state is present
  type: list
  elements: str
  sample: ["the agent Deployment fleet-agent is missing"]
chart_values:
  description: The chart values given to Helm, with the registration token redacted.
  returned: when state is present
  type: dict
sources:
  description: Where C(apiServerURL) and C(apiServerCA) came from (C(parameter), C(token) or C(hub_kubeconfig)).
  returned: when state is present
  type: dict
  sample: {"api_server_url": "token", "api_server_ca": "hub_kubeconfig"}
cluster:
  description: The Cluster the hub bound the agent to, as M(fleetops.registration.fleet_cluster_info) describes it.
  returned: when wait is true, the hub is reachable (hub_kubeconfig, hub_context or hub_host) and state is present
  type: dict
released_lease:
  description: The holder identity of the departed agent whose Lease O(release_departed_lease) deleted (the last one,
    when the wait released more than one - an earlier join's agent, then the bootstrap agent), or null.
  returned: when wait is true, the hub is reachable (hub_kubeconfig, hub_context or hub_host) and state is present
  type: str
  sample: fleet-agent-6b8464b499-lvc22-1
fleet_spec_installed:
  description: Whether this run installed the agent Deployment with the spec of Fleet's agent bundle C(fleet-agent-<cluster>),
    so that Fleet's adoption replaces no pod; false when Helm did not run or installed the chart's Deployment.
  returned: when state is present, without O(rollback_to_revision)
  type: bool
  sample: true
fleet_managed_releases:
  description: Releases Fleet created to manage the agent itself (C(fleet-agent-<cluster>)); removed too with state C(absent).
  returned: always
  type: list
  elements: str
  sample: ["fleet-agent-cluster-ede2ae4bad0a"]
removed_credential:
  description: Whether the agent's credential Secret C(fleet-agent) was deleted.
  returned: when state is absent
  type: bool
workloads:
  description:
    - The releases of Fleet's bundle deployments on the member when O(state=absent) began (C(namespace/name (bundle b))),
      their namespaces, and C(action) (O(workloads)) - kept, or waited for until the agent had removed them.
  returned: when state is absent
  type: dict
  sample: {"action": "keep", "releases": ["web/web (bundle web)"], "namespaces": ["web"]}
'''

from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AGENT, AUTH, HELM, HUB_AUTH, SILENCE, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent import AgentRunner


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        release_name=dict(type="str", default="fleet-agent"),
        release_namespace=dict(type="str", default="cattle-fleet-system"),
        token_name=dict(type="str", no_log=False),
        token_namespace=dict(type="str", no_log=False),
        values_file=dict(type="path"),
        **hub_endpoint.options(url_aliases=["api_server_url", "hub_url"], ca_aliases=["api_server_ca"]),
        labels=dict(type="dict"),
        client_id=dict(type="str"),
        values=dict(type="dict"),
        secret_values=dict(type="dict", no_log=True),
        preflight=dict(type="bool", default=True),
        keep_failed_install=dict(type="bool", default=False),
        release_departed_lease=dict(type="bool", default=True),
        keep_namespace=dict(type="bool", default=False),
        rotate_credential=dict(type="bool", default=False),
        allow_workload_removal=dict(type="bool", default=False),
        workloads=dict(type="str", choices=["keep", "remove"], default="keep"),
        rollback_to_revision=dict(type="int"),
        previous_agent_fields=dict(type="dict"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(
        argument_spec=merge(AUTH, HUB_AUTH, WAIT, HELM, AGENT, SILENCE, argument_spec()),
        mutually_exclusive=[("token_name", "values_file")],
        required_by={"token_name": ("token_namespace",)},
        required_if=[("state", "present", ("token_name", "values_file", "rollback_to_revision"), True)],
    )


def run(module):
    return AgentRunner(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
