"""An agent judged silent is given its manager's contact period to be heard from (silence.py): after a hub outage every
agent's last contact is old, and a run right after it must not re-register every member's agent."""

from ansible_collections.fleetops.registration.plugins.module_utils import silence
from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET, RANCHER_FLEET


def _finding(cause, action="reregister"):
    return {"cause": cause, "evidence": cause, "action": action, "fix": ""}


def test_only_a_re_registration_for_silence_alone_is_waited_out():
    assert silence.silent_only([_finding("silent"), _finding("labels_drift", "relabel")])
    assert not silence.silent_only([_finding("silent"), _finding("credential_rejected")])
    assert not silence.silent_only([_finding("agent_missing", "install")])
    assert not silence.silent_only([])


class Clock:
    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_the_wait_ends_at_the_first_newer_contact_and_gives_up_after_the_grace():
    clock = Clock()
    reads = iter([{"beat": "t0"}, {"beat": "t0"}, {"beat": "t1"}])
    heard = silence.heard_from(lambda: next(reads), lambda obj: obj["beat"], "t0", 65, clock=clock, sleep=clock.sleep)
    assert heard == {"beat": "t1"} and clock.slept == [2, 2]
    clock = Clock()
    assert silence.heard_from(lambda: {"beat": "t0"}, lambda obj: obj["beat"], "t0", 5, clock=clock, sleep=clock.sleep) is None
    assert clock.slept == [2, 2, 1] and clock.now == 5
    # an object gone, or with no contact recorded, is not a contact
    clock = Clock()
    assert silence.heard_from(lambda: None, lambda obj: obj["beat"], "t0", 3, clock=clock, sleep=clock.sleep) is None


def test_kubefleet_waits_one_heartbeat_period_and_rancher_fleet_does_not_wait():
    assert KUBEFLEET.contact({"heartbeat": "2026-11-28T10:00:00Z", "heartbeat_period_seconds": 10}) == ("2026-11-28T10:00:00Z", 15)
    assert KUBEFLEET.contact({"heartbeat": None}) == (None, 65)
    assert RANCHER_FLEET.contact({"last_seen": "2026-11-28T10:00:00Z"}) == (None, None)
