# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every fleet manager implements, and the one registry that names them.

A fleet manager ("backend" in user-facing variables: ``fleetops_backends: [rancher_fleet, kubefleet]``)
is one private package under ``module_utils`` (``_rancher_fleet``, ``_kubefleet``) whose ``manager``
module defines a ``FleetManager`` subclass. ``hub_prepare``, ``member_info`` and the status playbook only
talk to this interface through ``registry.py`` (static imports: AnsiballZ bundles only what is imported
by name), so a third manager is one package plus one line in the registry.

The member's state is judged from both sides:

- ``read_hub`` lists the manager's member objects on the hub once per batch (one LIST per resource);
- ``hub_view`` turns one hub object into the plain facts the hub knows (labels, last check-in...);
- ``member_view`` asks the member cluster what it knows (agent release, agent credential, and
  whether the hub still accepts that credential);
- ``judge`` is pure: the manager's ONE rule table (``_<manager>/judge.py``) turns both views and what the inventory
  wants into findings ``[{cause, evidence, action, fix}]``;
- ``decide`` (shared, not overridden) makes a ``MemberState`` of the findings: the action, the reasons and ``healthy``
  come from ``findings.py``, the same for every manager; the roles guard their steps with the action.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.fleetops.registration.plugins.module_utils import findings as judged
from ansible_collections.fleetops.registration.plugins.module_utils.findings import ACTIONS
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient

View = Dict[str, Any]  # a plain-facts mapping (hub view, member view, host view, status row)
Finding = Dict[str, str]
__all__ = ["ACTIONS", "STEPS", "STEP_NAMES", "MemberState", "FleetManager", "object_key", "removed_text"]

# Which of a join's steps each action needs: the hub-side member object (with its labels), the member's hub identity
# (KubeFleet: a new token in a rotation; Rancher Fleet: a registration token), removing the agent's credential so it
# registers again (Rancher Fleet: one the hub no longer accepts, or one a rotation replaces), the agent itself, and
# revoking the credential a rotation replaced once the agent has checked in with the new one (KubeFleet; Fleet deletes
# the old registration itself when it grants the new one). ``new_token``: the identity issues a new token (KubeFleet);
# ``revoke_at_once``: it revokes the identity's older tokens right away, as no agent of the member holds one.
# ``finish_leave``: before the member object is made again, what lets its deletion finish (the manager's leave_steps).
STEP_NAMES = ("member_object", "identity", "new_token", "reset_credential", "agent", "revoke_previous", "revoke_at_once",
              "finish_leave")
STEPS = {
    "none": (),
    "relabel": ("member_object",),
    "reconfigure": ("member_object", "agent"),
    "rotate": ("member_object", "identity", "new_token", "reset_credential", "agent", "revoke_previous"),
    "upgrade": ("member_object", "agent"),
    "install": ("member_object", "agent"),
    # KubeFleet: a new token too (the old one may have expired or leaked), the old one revoked after the heartbeat.
    "reregister": ("member_object", "identity", "new_token", "reset_credential", "agent", "revoke_previous"),
    "join": ("member_object", "identity", "agent"),
}


class MemberState:
    """The member as one manager sees it: both views, its findings, and what follows from them (``findings.py``): the
    action it needs, the reasons, whether it is healthy. A state made from an action alone (no findings) is judged as
    one finding with that action."""

    def __init__(self, manager: str, name: str, hub: Optional[View], member: Optional[View], action: str = "none",
                 reasons: Optional[Iterable[str]] = None, findings: Optional[List[Finding]] = None,
                 first_credential: Tuple[Optional[str], Tuple[str, ...]] = (None, ()), leave_steps: Tuple[str, ...] = ()) -> None:
        self.manager = manager
        self.first_credential = first_credential  # the manager's FleetManager.first_credential
        self.leave_steps = leave_steps  # and its leave_steps
        self.name = name
        self.hub = hub
        self.member = member or {}
        if action not in ACTIONS:
            raise ValueError("unknown member action %r" % action)
        self.action = action
        self.reasons = list(reasons or [])
        self.findings = list(findings) if findings is not None else (
            [] if action == "none" else [{"cause": None, "evidence": "; ".join(self.reasons), "action": action, "fix": ""}])
        self.diagnosis = []  # diagnosis.diagnose's presentation, root cause first (set by member_info for an unhealthy member)

    @classmethod
    def judged(cls, manager: str, name: str, hub: Optional[View], member: Optional[View], found: List[Finding],
               first_credential: Tuple[Optional[str], Tuple[str, ...]] = (None, ()), leave_steps: Tuple[str, ...] = ()) -> "MemberState":
        """The state the findings make: the most urgent action, the reasons a re-run acts on."""
        return cls(manager, name, hub, member, judged.pick_action(found), judged.reasons(found), found, first_credential, leave_steps)

    def rejudged(self, found: List[Finding]) -> "MemberState":
        """The state ``found`` makes of the same member in the same manager."""
        return MemberState.judged(self.manager, self.name, self.hub, self.member, found, self.first_credential, self.leave_steps)

    @property
    def healthy(self) -> bool:
        return judged.healthy(self.findings)

    def as_dict(self) -> View:
        return {
            "manager": self.manager,
            "name": self.name,
            "hub": self.hub,
            "member": self.member,
            "healthy": self.healthy,
            "action": self.action,
            "reasons": self.reasons,
            "diagnosis": self.diagnosis,
            "findings": [item for item in self.findings if item.get("cause")],
            "steps": dict((step, step in self.steps) for step in STEP_NAMES),
        }

    @property
    def steps(self) -> Tuple[str, ...]:
        """The steps of the action, after the manager's ``leave_steps`` when the member object is still being deleted."""
        leaving = any(item.get("cause") == "leaving" for item in self.findings)
        return (self.leave_steps if leaving else ()) + self._action_steps()

    def _action_steps(self) -> Tuple[str, ...]:
        """A join whose agent must register again too (registered with another hub: a move to a new hub, playbook
        move_hub) takes the re-registration's steps as well, unless all the member lacks is a first credential (the
        manager's ``first_credential``)."""
        again = set(item.get("cause") for item in self.findings if item.get("action") == "reregister")
        if self.action != "join" or not again:
            return STEPS[self.action]
        cause, first_credential_steps = self.first_credential
        if again == {cause}:
            return STEPS["join"] + first_credential_steps
        return tuple(dict.fromkeys(STEPS["join"] + STEPS["reregister"]))


def object_key(obj: Optional[View]) -> str:
    """``namespace/name`` of an API object (``None/name`` for a cluster-scoped one)."""
    metadata = (obj or {}).get("metadata") or {}
    return "%s/%s" % (metadata.get("namespace"), metadata.get("name"))


def removed_text(pairs: Iterable[Tuple[str, Any]]) -> str:
    """What a leave removed, from ``(what, done)`` pairs, for its summary line."""
    return ", ".join(name for name, done in pairs if done) or "nothing left to remove"


class FleetManager:
    """The interface. Subclasses set the class attributes and implement every method."""

    name = None            # as users write it in fleetops_backends
    title = None           # as users read it in messages
    group_version = None   # the API group version of its hub objects
    member_resource = None  # the k8s_client.Resource of its member object on the hub (one per member)
    hub_resources = ()     # plural resource names the collection uses on the hub
    controller = None      # (namespace, Deployment name) of its usual hub controller
    install_hint = None    # how to get the API served, for a preflight failure
    # The names the member_join role registers (hub-side member object, agent, and any step before the member object
    # is made again: finish_leave) and the member_leave role registers
    # ({step: name}) this manager's step results under, and how filter/summaries.py words its part of a join summary.
    join_results = ()
    leave_results = {}
    summary_shape = None
    version_fix = None     # how to run the hub's release of the agent (%(hub)s: that release), for agent_versions' warning
    # A join whose only re-registration finding is this cause (the member holds no credential at all) gives it one with
    # the join's own steps and these: nothing on the member to reset, no agent of it to keep joined until a new token works.
    first_credential = (None, ())
    # Steps before a join's own while the member object is still being deleted (finding ``leaving``): what lets the
    # deletion finish where the manager waits on the agent for it.
    leave_steps = ()
    rollback_result = None  # the name the member_join role registers this manager's agent rollback under (tasks_from: rollback)

    def read_hub(self, hub: KubeClient, names: Optional[Iterable[str]] = None, namespace: Optional[str] = None,
                 label_selector: Optional[str] = None) -> Dict[str, View]:
        """``{member name: hub object}`` for the named members (all when None), in as few LISTs as possible.

        ``namespace`` matters to managers with namespaced member objects (Rancher Fleet); ``label_selector`` is a
        Kubernetes label selector string passed to the LIST.
        """
        raise NotImplementedError

    def hub_view(self, hub_object: Optional[View], now: Any = None) -> Optional[View]:
        """The plain facts the hub knows of one member (``None`` when the hub has no object for it)."""
        raise NotImplementedError

    def member_view(self, member: KubeClient, hub: KubeClient, params: View) -> View:
        """What the member cluster knows: agent release, credential, and whether the hub accepts that credential.

        ``member`` and ``hub`` are KubeClients (the controller's own view of each); ``params`` the calling
        module's parameters. The credential check authenticates as the agent would, with the agent's own
        URL, CA and token, and asks the hub who it is (SelfSubjectReview).
        """
        raise NotImplementedError

    def running(self, member: KubeClient) -> List[View]:
        """``[{placement, record, ...}]``: the placed workloads this manager's agent manages on the member now, read from
        the member alone (one read), sorted: ``placement`` the hub object that places it, ``record`` what the agent
        keeps of it on the member. What a re-point or re-registration must find placed again, and what member_info
        reports (also when the hub is gone)."""
        raise NotImplementedError

    def agent_version(self, member_view: View) -> Optional[str]:
        """The release the member's agent runs or was installed at, as ``member_view`` shows it (agent_versions'
        ``release_version``); None when unknown."""
        raise NotImplementedError

    def placements(self, hub: KubeClient, hub_object: View, name: str) -> List[View]:
        """``[{name, applied, message, ...}]``: what ``hub`` places on the member ``name`` (its ``hub_object``), each
        applied there or not (hub_move_info)."""
        raise NotImplementedError

    def unplaced(self, hub: KubeClient, name: str, served: List[View], labels: View, namespace: Optional[str] = None) -> List[View]:
        """placement_guard's ``[{manager, name, why}]``: each of ``served`` (another hub's ``placements`` of the member)
        that ``hub`` would not place on the member ``name`` carrying ``labels`` (``namespace``: the member object's)."""
        raise NotImplementedError

    def contact(self, hub_view: View) -> Tuple[Optional[str], Optional[float]]:
        """``(the hub's record of the agent's last contact, seconds within which a live agent contacts it again)``:
        member_info gives an agent judged silent that long to be heard from before it re-registers it (silence.py).
        ``(None, None)`` by default: silence is not waited out."""
        return None, None

    def newest_contact(self, hub: KubeClient, name: str, hub_object: Optional[View]) -> Optional[View]:
        """``hub_object`` (the member's, as read) with the newest record of the agent's contact the hub keeps, where the
        manager keeps another (read only while member_info waits to hear from an agent); ``hub_object`` by default."""
        return hub_object

    def overdue(self, hub_view: View, stale_after: Optional[int] = None) -> Optional[float]:
        """Seconds until a member whose agent has missed its contact (not heard from within ``contact``'s period) is
        judged silent; None when it is not overdue, or the manager keeps no such period (the default). member_info
        waits that long for a contact before it calls the member healthy (silence.py)."""
        return None

    def reconnect_grace(self, member: KubeClient, hub_view: View) -> Optional[float]:
        """Seconds more than ``contact``'s period or ``overdue`` that member_info waits for an agent that runs on
        ``member`` but is not heard from on the hub (it may still be reconnecting after a hub outage); None when the
        agent does not run, or the manager cannot tell (the default): then only those waits apply (silence.py)."""
        return None

    def status_columns(self, hub: KubeClient, hub_objects: Dict[str, View]) -> Dict[str, View]:
        """``{member: {column: value}}``: this manager's own columns of fleet_status's rows, from its members' hub
        objects (``read_hub``'s); a column that is a mapping with a ``warning`` is warned of. None by default."""
        return {}

    def rollback_context(self, hub_view: View) -> View:
        """What, beside the agent release, a rollback of this manager's agent returns to, from the member's hub view
        before the run (filter ``waves``); nothing by default."""
        return {}

    # member_info's options for this manager's own part of what the inventory wants (``desired`` reads them): an
    # argument spec, merged into the shared one.
    desired_options: Dict[str, Dict[str, Any]] = {}

    def desired(self, params: View) -> View:
        """This manager's own part of what the inventory wants of a member (beside the shared part, member_state's
        ``desired_for``), from the calling module's ``params``; values are checked here, whatever the member's state."""
        raise NotImplementedError

    def judge(self, hub_view: Optional[View], member_view: Optional[View], desired: Optional[View]) -> List[Finding]:
        """Pure: the findings of the manager's rule table, root cause first. ``member_view`` None or {}: the member was
        not read (only the hub's rows can fire); ``desired`` what the inventory wants (``stale_after``, ``now``...)."""
        raise NotImplementedError

    def decide(self, name: str, hub_view: Optional[View], member_view: Optional[View], desired: Optional[View]) -> MemberState:
        """Pure: a ``MemberState`` of the findings (the same algorithm for every manager; not overridden)."""
        found = self.judge(hub_view, member_view, dict(desired or {}, name=name))
        return MemberState.judged(self.name, name, hub_view, member_view, found, self.first_credential, self.leave_steps)

    def hub_findings(self, hub_view: Optional[View], stale_after: Optional[int] = None, now: Any = None) -> List[Finding]:
        """Pure: the findings of the hub view alone (``fleet_status``, the inventory plugin)."""
        return self.judge(hub_view, None, {"stale_after": stale_after, "now": now})

    def check_member_name(self, name: str, param: str = "name") -> None:
        """Raise ParameterError naming ``param`` when ``name`` cannot name a member in this manager."""
        raise NotImplementedError

    def agent_workload(self, member_view: Optional[View]) -> Optional[Tuple[str, str]]:
        """``(namespace, pod label selector)`` of the agent's pods on the member, None when it has no Deployment."""
        raise NotImplementedError

    def tidy_hub(self, hub: KubeClient, namespace: Optional[str], dry_run: bool = False) -> List[Dict[str, str]]:
        """Remove what the collection left on the hub that can no longer serve (``hub_prepare`` with ``tidy``).

        Returns ``[{name, reason}]`` of what was (or, with ``dry_run``, would be) removed; a manager that leaves
        nothing behind keeps this default.
        """
        return []

    def host_view(self, hub_object: View, now: Any, member_url: Optional[str] = None) -> View:
        """The ``fleet_members`` inventory's view of one member (its ``fleetops_<manager>`` host variable): at least
        ``manager``, ``name``, ``labels``, ``last_seen``, ``heartbeat_age_seconds``, ``joined``, ``leaving`` and
        ``identity``: the hub's facts (what the member's health is, the inventory asks the rule table)."""
        raise NotImplementedError

    def host_variables(self, host_view: View) -> View:
        """Host variables only this manager sets, from its host view."""
        return {}

    def member_urls(self, hub: KubeClient, hub_objects: Iterable[View]) -> Tuple[Dict[str, str], List[str]]:
        """``({namespace/name: member API server URL}, [problems])`` the hub knows for some members (imported ones)."""
        return {}, []

    def storable(self, hub_object: View) -> View:
        """The member object as a store outside the hub (the inventory plugin's cache) may keep it: without the fields
        that may carry a secret (none by default)."""
        return hub_object

    def leave_summary(self, results: Dict[str, View]) -> Tuple[View, str]:
        """``(summary, line)`` of one member's leave from the role's step results (``leave_results``)."""
        raise NotImplementedError

    def status_row(self, hub_view: Optional[View], cause: Optional[str]) -> Optional[View]:
        """One member's cell of the fleet status table (``fleet_status``, ``cluster_status``) from a hub view and the
        status cause of its findings (``findings.status_cause``: leaving, silent... or None).

        Keys every manager returns: ``state`` (the manager's word for ``cause``, or for a member in contact or
        waiting: checked-in, waiting, joined, leaving...), ``last_contact_age_seconds`` (int or None) and ``labels``;
        more keys may follow (``fleet_status`` adds ``healthy`` and ``diagnosis``).
        """
        raise NotImplementedError
