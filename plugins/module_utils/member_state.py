# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""member_info: one member's state in every fleet manager, read from the hub and from the member in one process.

The roles call it once per member and guard each seed step with the action it returns, so a healthy member
costs one module process and a few GETs, and a broken one (agent gone, credential rejected, silent) is
repaired by the same plain re-run that joined it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import secrets
import string
import threading
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.fleetops.registration.plugins.module_utils import (
    agent_settings, agent_versions, cluster_identity, diagnosis, hub_endpoint, registry, silence)
from ansible_collections.fleetops.registration.plugins.module_utils.module import connection_key
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ApiNotServed, FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import parse_survey_labels
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import deep_merge
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import expiry_warning
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_duration, parse_time

RUN_ID_ALPHABET = string.ascii_lowercase + string.digits
RUN_ID_LENGTH = 10


def new_run_id():
    """A random name part for what this run creates on the hub (e.g. its registration token)."""
    return "".join(secrets.choice(RUN_ID_ALPHABET) for dummy in range(RUN_ID_LENGTH))


def same_connection(params):
    """Whether the member options and the hub options name the same cluster connection (an inventory mistake)."""
    def connection(prefix):
        return tuple(params.get(prefix + key) or None for key in ("kubeconfig", "context", "host"))
    return connection("") == connection("hub_")


def check_distinct_connections(params):
    if same_connection(params):
        raise ParameterError(
            "hub_kubeconfig", "the member and the hub resolve to the same connection (kubeconfig %s, context %s)"
            % (params.get("kubeconfig") or "default", params.get("context") or "current"),
            hint="Give the member and the hub their own kubeconfig/context (inventory: fleetops_kubeconfig and fleetops_context "
                 "on every host, or member_join_hub_kubeconfig/member_join_hub_context)")


def desired_for(manager, params):
    """What the inventory wants of the member in ``manager`` (the ``desired`` argument of ``decide``): the part every
    manager judges, and the manager's own (``FleetManager.desired``)."""
    name, force = manager.name, params.get("force") or []
    return dict({
        "labels": params.get("labels") or {},
        "labels_mode": params.get("labels_mode") or "merge",
        "stale_after": params.get("stale_after"),
        "chart_version": (params.get("agent_chart_versions") or {}).get(name) or None,
        "values": deep_merge((params.get("agent_values") or {}).get(name), (params.get("agent_secret_values") or {}).get(name)),
        "images": dict((key, value) for key, value in ((params.get("agent_images") or {}).get(name) or {}).items() if value),
        "force": name in force,
        "rotate": bool(params.get("rotate_credentials")),
        "agent": agent_settings.validate(params.get("agent")),
        "credential_max_age": int(parse_duration(params["credential_max_age"], "credential_max_age")) if params.get("credential_max_age") else None,
    }, **manager.desired(params))


def summarize(states):
    """The module result's per-manager part from ``MemberState`` objects."""
    return {
        "managers": dict((state.manager, state.as_dict()) for state in states),
        "actions": dict((state.manager, state.action) for state in states),
        "pending": [state.manager for state in states if state.action != "none"],
        "healthy": all(state.healthy for state in states),
    }


class MemberInfo:
    """Read the hub's and the member's view of one member for each chosen manager, and decide.

    ``params`` is one item of ``members`` (validated, task options merged in); None means the module's own options.
    """

    def __init__(self, module, params=None):
        self.module = module
        self.item = params is not None
        self.params = module.params if params is None else params
        self.backends = list(dict.fromkeys(self.params.get("backends") or []))
        for name in self.backends:
            registry.manager(name)
        # With detect_backends, the other managers too, where the hub serves their API (a member that names none).
        self.candidates = self.backends + ([name for name in registry.MANAGERS if name not in self.backends]
                                           if self.params.get("detect_backends") else [])
        for name in (self.params.get("force") or []):
            registry.manager(name, param="force")
        check_distinct_connections(self.params)
        hub_endpoint.check_options(self.params)
        self._identity = None
        self._identity_lock = threading.Lock()
        self.rebuilt = []
        self.params["labels"] = parse_survey_labels(self.params.get("labels"), "labels")
        hidden = agent_settings.credential_values(agent_settings.validate(self.params.get("agent")))
        if hidden:  # a proxy URL with a password in the agent's environment
            module.hide(*hidden)

    @property
    def name(self):
        return self.params["name"]

    def hub(self):
        return self.module.kube("hub_", self.params if self.item else None)

    def member(self):
        return self.module.kube("", self.params if self.item else None)

    def hub_reads(self):
        """``(manager, namespace)`` of each hub LIST this member's state needs."""
        return [(name, self.params.get("fleet_namespace")) for name in self.candidates]

    def state(self, name, listed=None):
        """``listed``: ``{member name: hub object}`` of manager ``name`` already read for the batch."""
        manager = registry.manager(name)
        manager.check_member_name(self.name)  # before a request: a bad name must not read as "not a member yet"
        hub = self.hub()
        if listed is None:
            listed = manager.read_hub(hub, names=[self.name], namespace=self.params.get("fleet_namespace"))
        hub_object = listed.get(self.name)
        hub_view = manager.hub_view(hub_object) if hub_object is not None else None
        member_view = dict(manager.member_view(self.member(), hub, self.params), workloads=self.running(manager))
        state = manager.decide(self.name, hub_view, member_view, desired_for(manager, self.params))
        hub_object, hub_view, state = self.wait_for_contact(manager, hub, hub_view, member_view, state, hub_object)
        self.warn_of_expiry(manager, member_view)
        agent_versions.warn_of_skew(self.module, manager, hub, member_view, self.name, connection_key(self.params, "hub_"))
        if cluster_identity.replaced(cluster_identity.recorded_identity(hub_object), self.identity()):
            self.rebuilt.append(name)
        state = cluster_identity.judge(state, hub_object, self.identity(), self.params.get("replace_rebuilt"))
        state.diagnosis = diagnosis.diagnose(manager, self.member(), state)
        return state

    def running(self, manager):
        """What the manager's agent runs on the member (``FleetManager.running``); None where the credential may not
        read it (a view role without Helm's records or AppliedWorks)."""
        try:
            return manager.running(self.member())
        except ApiError as exc:
            if exc.status == 403:
                return None
            raise

    def wait_for_contact(self, manager, hub, hub_view, member_view, state, hub_object):
        """Hear from an agent whose last contact leaves its health in doubt, then judge the member again:
        ``(hub object, hub view, state)``. A member judged silent, and for nothing else, is given its manager's contact
        period; one judged healthy whose agent has missed its contact (``FleetManager.overdue``) is given until it
        would be judged silent, and is judged again then (and repaired without a further wait). Either is given longer
        while its agent runs on the member (``FleetManager.reconnect_grace``). silence.py says why."""
        overdue = not silence.repairs(state.findings)
        if overdue:
            grace = manager.overdue(hub_view, self.params.get("stale_after"))
        else:
            grace = manager.contact(hub_view)[1] if silence.silent_only(state.findings) else None
        if grace is None:
            return hub_object, hub_view, state
        grace = max(grace, manager.reconnect_grace(self.member(), hub_view) or 0)
        newer = self.heard_from(manager, hub, hub_view, grace)
        if newer is None and overdue:
            newer = manager.newest_contact(hub, self.name, self.read_member_object(manager, hub))
        if newer is None:
            return hub_object, hub_view, state
        hub_view = manager.hub_view(newer)
        return newer, hub_view, manager.decide(self.name, hub_view, member_view, desired_for(manager, self.params))

    def read_member_object(self, manager, hub):
        resource = manager.member_resource
        fleet_namespace = self.params.get("fleet_namespace") if resource.namespaced else None
        return hub.get(resource, self.name, fleet_namespace)

    def heard_from(self, manager, hub, hub_view, grace):
        """The member's hub object once its agent contacted the hub after ``hub_view`` was read, or None after
        ``grace`` seconds (a read every 2 s; the batch's members wait side by side)."""
        return silence.heard_from(lambda: manager.newest_contact(hub, self.name, self.read_member_object(manager, hub)),
                                  lambda obj: manager.contact(manager.hub_view(obj))[0], manager.contact(hub_view)[0], grace)

    def warn_of_expiry(self, manager, member_view):
        """Warn (and say in the member view's ``credential.warning``) when the agent's credential expires soon and was
        not renewed: scheduled runs have stopped or failed."""
        credential = (member_view or {}).get("credential")
        if not isinstance(credential, dict) or not credential.get("present"):
            return
        warning = expiry_warning(parse_time(credential.get("issued")), parse_time(credential.get("expires")))
        credential["warning"] = warning
        if warning:
            self.module.warn("%s member %s: %s" % (manager.title, self.name, warning))

    def identity(self):
        """The member cluster's identity (read once, whichever manager's read asks first)."""
        with self._identity_lock:
            if self._identity is None:
                ca_pem = self.module.settings("", self.params if self.item else None).server_and_ca()[1]
                self._identity = cluster_identity.read_identity(self.member(), ca_pem)
        return self._identity

    @property
    def known_identity(self):
        """The identity if it was read (None otherwise), without reading it."""
        return self._identity

    def run(self, listed=None):
        """``listed``: ``{manager name: {member name: hub object} or the error of that LIST}`` the batch read (each
        manager reads its own when None). A manager found by detection whose API the hub does not serve is left out."""
        states, unserved = [], []
        # The managers' reads and the identity's run side by side: a member's chain of requests is one manager's, not
        # all of them in a row (on a 50 ms link each request is 50 ms).
        with ThreadPoolExecutor(max_workers=len(self.candidates) + 1) as pool:
            identity = pool.submit(self.identity)
            reads = [(name, pool.submit(self._read_state, name, listed)) for name in self.candidates]
        for name, read in reads:  # a manager's error first, as when they ran in a row
            try:
                states.append(read.result())
            except ApiNotServed as exc:
                if name in self.backends:
                    raise ApiNotServed(exc.msg, status=404, reason="ApiNotServed", hint=(
                        "Install %s on the hub, or leave %s out of backends (with the roles: the member's fleetops_backends "
                        "or the survey's fleetops_survey_backends; unset, a member joins what the hub serves)"
                        % (registry.manager(name).title, name)))
                unserved.append(name)
        if self.candidates and not states:
            raise ApiNotServed("the hub serves no fleet manager's API (%s)" % ", ".join(unserved),
                               hint="Point hub_kubeconfig/hub_context at the fleet manager's hub, or install a fleet manager there")
        identity.result()
        return dict(changed=False, name=self.name, run_id=new_run_id(), labels=self.params.get("labels") or {},
                    backends=[state.manager for state in states], unserved=unserved, identity=self.identity(),
                    rebuilt=[name for name in self.candidates if name in self.rebuilt], **summarize(states))

    def _read_state(self, name, listed):
        """Manager ``name``'s state (``listed``: as run's); raises what state raises, or the batch's LIST error."""
        hub_objects = None if listed is None else listed[name]
        if isinstance(hub_objects, FleetOpsError):
            raise hub_objects
        return self.state(name, hub_objects)


def member_info_argument_spec():
    """The shared options, and each manager's own (``FleetManager.desired_options``)."""
    spec = dict(
        name=dict(type="str"),
        members=dict(type="list", elements="dict"),
        backends=dict(type="list", elements="str", default=list(registry.NAMES)),
        detect_backends=dict(type="bool", default=False),
        labels=dict(type="raw", default={}),
        labels_mode=dict(type="str", choices=["merge", "replace"], default="merge"),
        stale_after=dict(type="int"),
        **hub_endpoint.options(url_aliases=["hub_url"]),
        agent_chart_versions=dict(type="dict", default={}),
        agent_values=dict(type="dict", default={}),
        agent_images=dict(type="dict", default={}),
        agent_secret_values=dict(type="dict", no_log=True),
        force=dict(type="list", elements="str", default=[]),
        replace_rebuilt=dict(type="bool", default=False),
        credential_max_age=dict(type="str", no_log=False),
        rotate_credentials=dict(type="bool", default=False),
        agent=dict(type="dict"),
    )
    for manager in registry.MANAGERS.values():
        spec.update(manager.desired_options)
    return spec
