# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the agent modules of every fleet manager share (fleet_agent, kubefleet_member_agent): whether the task reaches
the hub itself, the wait for the agent to report in, the agent setting and the rollback. The hub's URL and CA as the
agent is told them are hub_endpoint's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, Optional

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import rollout_problem
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan, read_release_history, release_view
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import check_rollback, check_upgrade
from ansible_collections.fleetops.registration.plugins.module_utils.hub_endpoint import hub_connected
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT


class AgentFlow:
    """Mixin of an agent module's Runner."""

    @property
    def hub_configured(self):
        """Whether the task reaches the hub itself (hub_endpoint.hub_connected: hub_context alone is enough)."""
        return hub_connected(self.params)

    def waits_for_agent(self) -> bool:
        """``wait`` asks for the hub to see the agent; only a real run that reaches the hub can watch for it."""
        return bool(self.params.get("wait") and not self.check_mode and self.hub_configured)

    def wait_rolled_out(self, namespace: str, name: str) -> None:
        """Wait until the agent Deployment serves its current pod template (diagnosis.rollout_problem says nothing).

        After an upgrade the agent of the old pod template keeps running (and reporting to the hub) until the new pods
        are available, so the hub's word alone does not prove the new agent works: a new image that cannot be pulled
        would pass unnoticed."""
        def done(deployment):
            return deployment is not None and rollout_problem(deployment) is None

        try:
            self.module.waiter.until(lambda: self.kube.get(DEPLOYMENT, name, namespace), done,
                                     "the agent Deployment %s/%s on the member to roll out its new pods" % (namespace, name),
                                     "Look at the new agent pods (kubectl -n %s describe pod): an image that cannot be pulled, a "
                                     "crash; roll back with rollback_to_revision or fix the values and re-run" % namespace)
        except WaitTimeout as exc:
            problem = rollout_problem(exc.last) if exc.last else "the Deployment does not exist"
            exc.msg += " (%s)" % problem
            raise

    # -- the agent setting ------------------------------------------------------------------------------------------

    def agent_setting(self):
        """The ``agent`` option, validated; values that may hold a credential are masked in the output."""
        setting = agent_settings.validate(self.params.get("agent"))
        self.module.hide(*agent_settings.credential_values(setting))
        return setting

    def reconcile_agent_setting(self, namespace: str, name: str, setting: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        """Patch the agent Deployment where it does not carry ``setting`` (what the chart lacks, or a change made to it
        since): ``{drift: [why], patched: bool}``; a server-side dry run in check mode. Nothing when the Deployment does
        not exist (check mode before an install)."""
        deployment = self.module.kube().get(DEPLOYMENT, name, namespace) if setting else None
        reasons = agent_settings.drift(setting, agent_settings.pod_view(deployment))
        patch = agent_settings.deployment_patch(setting, deployment, agent_settings.KEYS) if reasons else None
        if patch:
            self.module.kube().patch(DEPLOYMENT, name, patch, namespace, dry_run=self.check_mode, strategic=True)
        return {"drift": reasons, "patched": bool(patch)}

    def check_release_records(self, action: str) -> None:
        """Before Helm upgrades the release (``action``, a ReleasePlan action): every record Helm would act on lists
        only what the agent chart makes (helm_records), else nothing is changed. Check mode predicts the refusal."""
        if action == ReleasePlan.UPGRADE:
            name, namespace = self.release_location()
            check_upgrade(self.kube, name, namespace, self.release_objects())

    # -- rollback_to_revision: each agent runner supplies release_location, release_objects, agent_contact and
    # wait_after_rollback ----

    def hide_release_values(self, releases: Iterable[Optional[Dict[str, Any]]]) -> None:
        """Mark secrets in the releases' values (Rancher Fleet's hold the registration token); none by default."""

    def check_rollback_target(self, target: Dict[str, Any]) -> None:
        """Refuse a revision (read from the member's Helm history, so evidence) that would make the agent send its
        credential somewhere the collection does not configure; none by default."""

    def rollback(self) -> Dict[str, Any]:
        """Helm's rollback of the agent release to ``rollback_to_revision`` (a new revision with that one's chart and
        values; nothing when the release already runs them), then the same wait for the agent as after an upgrade."""
        revision = self.params["rollback_to_revision"]
        name, namespace = self.release_location()
        history = read_release_history(self.kube, name, namespace)
        plan = ReleasePlan.rollback(history, revision)
        current = history[max(history)]
        self.hide_release_values(history.values())
        if plan.changes:
            self.check_rollback_target(history[revision])
            check_rollback(self.kube, name, namespace, self.release_objects(), revision)
        contact = self.agent_contact(history[revision]) if self.waits_for_agent() else None
        release = current
        if plan.changes and self.check_mode:
            release = dict(current, revision=current["revision"] + 1, chart_version=history[revision].get("chart_version"),
                           status="deployed (predicted)")
        elif plan.changes:
            self.module.helm().rollback(name, namespace, revision)
            release = read_release_history(self.kube, name, namespace).get(current["revision"] + 1) or current
        result = {"changed": plan.changes, "action": plan.action, "reasons": plan.reasons, "release": release_view(release),
                  "rolled_back_from": release_view(current) if plan.changes else None}
        if self.waits_for_agent():
            result.update(self.wait_after_rollback(plan, history[revision], contact))
        before = {"revision": current["revision"], "chart_version": current.get("chart_version"), "status": current.get("status")}
        after = {"revision": release["revision"], "chart_version": release.get("chart_version"), "status": release.get("status")}
        return self.finish(result, before, after)


class LeaseReleasingPoll:
    """``fetch()`` (the hub's view of the agent), after ``release()`` released the leader-election Lease(s) whose
    holder is gone and returned their holders (leases.py).

    An agent that stopped (uninstalled, or replaced as Fleet does with the bootstrap agent) does not release its Lease,
    and the new agent would wait a whole lease duration for it. Checked at every poll, not once: on a member that was
    joined before, the first departed holder is the earlier agent's, and another's departure can come later. Best
    effort: after a failure (e.g. no RBAC on Leases) it stops, and the agent's own lease expiry applies.
    """

    def __init__(self, fetch, release, enabled=True):
        self.fetch = fetch
        self.release = release
        self.enabled = enabled
        self.released = []

    def __call__(self):
        if self.enabled:
            try:
                self.released.extend(self.release())
            except FleetOpsError:
                self.enabled = False
        return self.fetch()
