# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the agent modules of every fleet manager share (fleet_agent, kubefleet_member_agent): the hub's URL and CA as
the agent is told them, whether the task reaches the hub itself, and the wait for the agent to report in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, Optional, Tuple

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError

Sourced = Tuple[Optional[str], Optional[str]]  # (value, the option or connection it came from)
HUB_CONNECTION = "hub_kubeconfig"


def hub_configured(params: Dict[str, Any]) -> bool:
    """Whether the task reaches the hub itself (hub_kubeconfig or hub_host)."""
    return bool(params.get("hub_kubeconfig") or params.get("hub_host"))


def first_given(candidates: Iterable[Sourced]) -> Sourced:
    """``(value, source)`` of the first of ``(value, source)`` pairs that has a value, else ``(None, None)``."""
    for value, source in candidates:
        if value:
            return value, source
    return None, None


def hub_endpoint(module: Any, urls: Iterable[Sourced], cas: Iterable[Sourced], url_option: str) -> Tuple[Sourced, Sourced]:
    """``((url, source), (ca_pem, source))`` the agent is given.

    Each is the first of ``urls`` / ``cas`` (``(value, source)`` pairs, in order of precedence) that is set, else the
    hub connection's server or CA (source ``hub_kubeconfig``), read only when needed. Either may stay None; a URL, once
    known, must be https:// (``url_option`` names the option to fix).
    """
    url, ca = first_given(urls), first_given(cas)
    if hub_configured(module.params) and not (url[0] and ca[0]):
        server, connection_ca = module.settings("hub_").server_and_ca()
        url = url if url[0] else first_given([(server, HUB_CONNECTION)])
        ca = ca if ca[0] else first_given([(connection_ca, HUB_CONNECTION)])
    if url[0] and not url[0].startswith("https://"):
        raise ParameterError(url_option, "%r is not an https:// URL" % url[0], "Give the hub API server's https:// URL as the member reaches it")
    return url, ca


class AgentFlow:
    """Mixin of an agent module's Runner."""

    @property
    def hub_configured(self):
        return hub_configured(self.params)

    def waits_for_agent(self) -> bool:
        """``wait`` asks for the hub to see the agent; only a real run that reaches the hub can watch for it."""
        return bool(self.params.get("wait") and not self.check_mode and self.hub_configured)


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
