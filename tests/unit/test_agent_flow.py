# -*- coding: utf-8 -*-
"""agent_flow: what both agent modules share (the lease-releasing poll); the hub's endpoint is test_hub_endpoint's."""

from __future__ import absolute_import, division, print_function

from ansible_collections.fleetops.registration.plugins.module_utils import agent_flow
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError


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
