# -*- coding: utf-8 -*-
"""agent_flow: what both agent modules share (the hub's endpoint as the agent is told it, the lease-releasing poll)."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import agent_flow
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ParameterError


class _Module:
    def __init__(self, connection=None, **params):
        self.params = params
        self.connection = connection
        self.reads = 0

    def settings(self, prefix):
        assert prefix == "hub_"
        module = self

        class _Settings:
            def server_and_ca(self):
                module.reads += 1
                return module.connection

        return _Settings()


def test_endpoint_order_parameter_then_token_then_hub_connection():
    module = _Module(("https://c", "C"), hub_kubeconfig="hub.yaml")

    def endpoint(url, from_values, ca=None):
        return agent_flow.hub_endpoint(module, [(url, "parameter"), (from_values, "token")], [(ca, "parameter")], "api_server_url")

    assert endpoint("https://a", "https://b", "A") == (("https://a", "parameter"), ("A", "parameter"))
    assert module.reads == 0  # the hub's connection is read only when something is missing
    assert endpoint(None, "https://b")[0] == ("https://b", "token")
    assert endpoint("", "") == (("https://c", "hub_kubeconfig"), ("C", "hub_kubeconfig"))


def test_endpoint_without_a_hub_connection_may_stay_unknown():
    assert agent_flow.hub_endpoint(_Module(), [(None, "parameter")], [(None, "parameter")], "hub_url") == ((None, None), (None, None))


def test_endpoint_url_must_be_https():
    with pytest.raises(ParameterError) as err:
        agent_flow.hub_endpoint(_Module(), [("http://hub", "parameter")], [], "hub_url")
    assert err.value.param == "hub_url"


def test_lease_releasing_poll_collects_releases_and_stops_after_a_failure():
    answers = [["old-agent"], [], ApiError("forbidden", status=403), ["never"]]

    def release():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    poll = agent_flow.LeaseReleasingPoll(lambda: "member", release)
    assert [poll() for dummy in range(4)] == ["member"] * 4
    assert poll.released == ["old-agent"] and not poll.enabled and answers == [["never"]]
    off = agent_flow.LeaseReleasingPoll(lambda: "member", release, enabled=False)
    assert off() == "member" and answers == [["never"]]
