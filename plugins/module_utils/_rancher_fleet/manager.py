# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet as a fleet manager: reads the hub's Cluster and the member itself; ``judge.py`` is its rule table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.agent_versions import release_version
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager, object_key
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET
from ansible_collections.fleetops.registration.plugins.module_utils import member_lock
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_settings, cluster_namespace, judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import member as member_side
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import views, workload_guard, workloads
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_NAMESPACE, AGENT_POD_SELECTOR, API_VERSION, CLUSTER, TOKEN,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import left_tokens, token_runs, validate_name

# Fleet's agent reports once this long after its start (ClusterRegisterDelay), then at every check-in interval.
FIRST_CHECKIN_SECONDS = 15


class RancherFleet(FleetManager):
    name = "rancher_fleet"
    title = "Rancher Fleet"
    group_version = API_VERSION
    join_results = views.JOIN_RESULTS
    leave_results = views.LEAVE_RESULTS
    summary_shape = views.SUMMARY_SHAPE
    member_resource = CLUSTER
    hub_resources = ("clusters", "clusterregistrationtokens", "clusterregistrations")
    controller = ("cattle-fleet-system", "fleet-controller")
    install_hint = ("Install Rancher Fleet on the hub: helm install fleet-crd then fleet (charts from "
                    "https://rancher.github.io/fleet-helm-charts/) into cattle-fleet-system")
    version_fix = ("set fleetops_fleet_agent_chart_version to the fleet-agent chart of the hub's Fleet release %(hub)s "
                   "(helm list -n cattle-fleet-system on the hub) and re-run join_cluster.yml")
    first_credential = ("bootstrap_missing", ())  # the join's registration token is new in every join
    rollback_result = "member_join_fleet_rollback"

    def read_hub(self, hub, names=None, namespace=None, label_selector=None):
        """``{Cluster name: Cluster}`` in ``namespace`` (all namespaces when None), ONE LIST; only ``names`` when given.

        When any is found, Fleet's cluster namespaces are listed once too, and each Cluster carries the problem its
        own has (``views.NAMESPACE_PROBLEM``), so a Cluster Fleet cannot grant an agent is not judged joinable.
        """
        wanted = set(names) if names is not None else None
        found = {}
        for obj in hub.list(CLUSTER, namespace, label_selector=label_selector):
            name = (obj.get("metadata") or {}).get("name")
            if wanted is None or name in wanted:
                found[name] = obj
        fleet_namespaces = cluster_namespace.namespace_index(hub) if found else None
        if fleet_namespaces is not None:
            for obj in found.values():
                meta = obj.get("metadata") or {}
                own = fleet_namespaces.of(meta.get("namespace"), meta.get("name"), cluster_namespace.expected_namespace(obj))
                obj[views.NAMESPACE_PROBLEM] = cluster_namespace.problem(obj, own)
        return found

    def hub_view(self, hub_object, now=None):
        return views.hub_view(hub_object, now)

    def member_view(self, member, hub, params):
        """From the member: the agent release, its Deployment, its credential and whether the hub accepts it.

        The credential is checked only when it names the hub URL the collection gives the agent
        (``member.expected_endpoint``), with the CA from there, through ``hub_proxy``; one that names another server is
        reported (``judge.py``: wrong_hub), its token sent nowhere. ``params``: the options (``check_credential``, default
        True). Never returns values, the token or the kubeconfig.
        """
        params = params or {}
        facts = member_side.read_member(member, namespace_object=False, secrets_optional=True)
        check, expected_url = None, None
        endpoint = member_side.credential_endpoint(facts["credential"])
        if endpoint is not None and params.get("check_credential", True):
            expected, unknown = member_side.expected_endpoint(params, hub)
            expected_url = expected[0] if expected else None
            if expected is None:
                check = {"accepted": None, "user": None, "error": unknown}
            elif member_side.same_server(endpoint[0], expected[0]):
                check = member_side.check_credential(expected[0], expected[1], endpoint[1], proxy=params.get("hub_proxy"))
        return member_side.member_view(facts, check, expected_url)

    def agent_version(self, member_view):
        """The fleet-agent release's app version, else the Fleet release its chart version names."""
        release = member_view.get("release") or {}
        return release_version(release.get("app_version")) or release_version(release.get("chart_version"))

    def running(self, member):
        """The bundles whose releases Fleet's agent deployed on the member (its Helm records in every namespace)."""
        return workloads.running(member)

    def contact(self, hub_view):
        """The last check-in. An agent checks in 15 s after it starts (Fleet's ClusterRegisterDelay), then every
        agentCheckinInterval (15 min by default): the wait covers a starting agent's first check-in; one whose first
        failed (the hub was away) is restarted rather than waited for."""
        return hub_view.get("last_seen"), FIRST_CHECKIN_SECONDS + 5

    def placements(self, hub, hub_object, name):
        return workloads.placements(hub, hub_object)

    def unplaced(self, hub, name, served, labels, namespace=None):
        return workload_guard.hub_unplaced(hub, namespace, [item["bundle"] for item in served], name, labels)

    def rollback_context(self, hub_view):
        """The Cluster's agent fields: what Fleet deploys an agent it manages from, and so what goes back."""
        return {"agent_fields": hub_view.get("agent_fields")}

    desired_options = dict(fleet_namespace=dict(type="str", default="fleet-default"))

    def desired(self, params):
        """The Cluster's namespace."""
        return {"namespace": params.get("fleet_namespace")}

    def judge(self, hub_view, member_view, desired):
        return judge.judge(hub_view, member_view, desired)

    def status_row(self, hub_view, cause):
        return views.status_row(hub_view, cause)

    def host_view(self, hub_object, now, member_url=None):
        return views.host_view(hub_object, now, member_url)

    def host_variables(self, host_view):
        return views.host_variables(host_view)

    def storable(self, hub_object):
        return agent_settings.without_env_values(hub_object)

    def member_urls(self, hub, hub_objects):
        """The API server URLs of imported members, from each Cluster's kubeConfigSecret (never more of it)."""
        urls, problems = {}, []
        for obj in hub_objects:
            metadata = obj.get("metadata") or {}
            secret_name = (obj.get("spec") or {}).get("kubeConfigSecret")
            if not secret_name:
                continue
            try:
                url = views.member_url_from_secret(hub.get(SECRET, secret_name, metadata.get("namespace")))
            except ApiError as exc:
                problems.append("no member URL for %s: %s" % (metadata.get("name"), exc.msg))
                continue
            if url:
                urls[object_key(obj)] = url
        return urls, problems

    def agent_workload(self, member_view):
        return (AGENT_NAMESPACE, AGENT_POD_SELECTOR) if (member_view or {}).get("deployment") else None

    def leave_summary(self, results):
        return views.leave_summary(results)

    def check_member_name(self, name, param="name"):
        validate_name(name, param)

    def tidy_hub(self, hub, namespace, dry_run=False):
        """The collection's registration tokens in ``namespace`` whose runs are over, deleted: expired ones, and those
        made under a member lock their run no longer holds (a run that failed before its revoke step, and its member
        needs no step now, so no later run of it would remove them)."""
        tokens = hub.list(TOKEN, namespace, label_selector="%s=%s" % (MANAGED_BY_LABEL, MANAGED_BY))
        removed = []
        for name, reason in left_tokens(tokens, member_lock.runs_over(hub, set(token_runs(tokens).values()))):
            hub.delete(TOKEN, name, namespace, dry_run=dry_run)
            removed.append({"name": name, "reason": reason})
        return removed


MANAGER = RancherFleet()
