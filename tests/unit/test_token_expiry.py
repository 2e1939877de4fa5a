# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet member tokens that expire: the lifetime asked for, the one a token got (read from its JWT), when a re-run
renews it, when member_info warns, and which existing ServiceAccounts and Secrets the identity may use."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import jwt_claims, token_expiry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import FleetStatus
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import expiry_plan, expiry_warning, renewal_reasons
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens
from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
DAY = datetime.timedelta(days=1)
THIRTY_DAYS = 30 * 86400
OURS = {"app.kubernetes.io/managed-by": "fleetops.registration"}


def jwt(**claims):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return "%s.%s.signature" % (part({"alg": "ES256"}), part(claims))


def stamp(moment):
    return int(moment.timestamp())


@pytest.mark.parametrize("value, seconds", [
    (None, THIRTY_DAYS), ("", THIRTY_DAYS), ("720h", THIRTY_DAYS), ("168h", 7 * 86400), ("10m", 600), ("never", None), ("Never", None),
])
def test_the_lifetime_asked_for(value, seconds):
    assert tokens.lifetime_seconds(value) == seconds


@pytest.mark.parametrize("value, fragment", [("0", "0 is not never"), ("5m", "10 minutes"), ("a month", "duration"), ("-1h", "0 is not never")])
def test_a_lifetime_that_is_no_lifetime_names_the_option_and_the_inventory_variable(value, fragment):
    with pytest.raises(ParameterError) as caught:
        tokens.lifetime_seconds(value, "kubefleet_token_lifetime")
    text = "%s %s" % (caught.value.msg, caught.value.hint)
    assert text.startswith("kubefleet_token_lifetime: ") and fragment in text
    if fragment != "duration":
        assert "fleetops_kubefleet_token_lifetime" in text and "never" in text


def test_the_lifetime_a_token_got_is_read_from_its_claims_never_assumed():
    issued, expires = NOW, NOW + datetime.timedelta(hours=1)  # asked for 30 days, the API server capped it at an hour
    token = jwt(iat=stamp(issued), exp=stamp(expires), sub="system:serviceaccount:fleet-system:east-1-hub-cluster-access")
    assert tokens.token_window(token) == (issued, expires)
    assert token_expiry(token) == "2026-11-21T11:00:00Z"
    assert expiry_plan(issued, expires, THIRTY_DAYS)["lifetime"] == 3600
    legacy = jwt(iss="kubernetes/serviceaccount", sub="system:serviceaccount:fleet-system:x")
    assert tokens.token_window(legacy) == (None, None) and token_expiry(legacy) is None
    for junk in (None, "", "opaque-token", "a.b.c", "a.%s.c" % base64.urlsafe_b64encode(b"[1]").decode()):
        assert jwt_claims(junk) == {} and tokens.token_window(junk) == (None, None)


def test_renewal_after_half_and_warning_after_three_quarters_of_the_lifetime_it_got():
    issued, expires = NOW - 10 * DAY, NOW + 20 * DAY
    plan = expiry_plan(issued, expires)
    assert plan == {"lifetime": THIRTY_DAYS, "renew_at": NOW + 5 * DAY, "warn_at": NOW + 12.5 * DAY}
    assert renewal_reasons(issued, expires, THIRTY_DAYS, now=NOW) == []
    assert expiry_warning(issued, expires, now=NOW) is None
    due = renewal_reasons(issued, expires, THIRTY_DAYS, now=NOW + 5 * DAY)
    assert len(due) == 1 and "renewed after half their lifetime" in due[0] and "2026-12-11T10:00:00Z" in due[0]
    assert expiry_warning(issued, expires, now=NOW + 12 * DAY) is None
    warning = expiry_warning(issued, expires, now=NOW + 13 * DAY)
    assert "expires at 2026-12-11T10:00:00Z (in 7d)" in warning and "join_cluster.yml" in warning and "loses the hub" in warning
    assert "(in 5h)" in expiry_warning(issued, expires, now=expires - datetime.timedelta(hours=5))
    assert "(in 1m)" in expiry_warning(issued, expires, now=expires - datetime.timedelta(seconds=30))
    assert expiry_warning(issued, expires, now=expires) is None  # expired: the diagnosis token_expired says it


def test_a_legacy_token_is_migrated_unless_never_is_asked_for_and_a_shorter_lifetime_is_honoured():
    assert "never expires" in renewal_reasons(NOW - 400 * DAY, None, THIRTY_DAYS, now=NOW)[0]
    assert renewal_reasons(NOW - 400 * DAY, None, None, now=NOW) == []
    fresh = (NOW, NOW + 30 * DAY)
    assert "later than the token lifetime asked for (600s)" in renewal_reasons(*fresh, wanted=600, now=NOW)[0]
    assert renewal_reasons(*fresh, wanted=None, now=NOW) == []  # never asked for: an expiring token lives on until renewal
    # the issue time unknown (a member copy without it): the lifetime asked for stands in
    assert renewal_reasons(None, NOW + 20 * DAY, THIRTY_DAYS, now=NOW) == []
    assert renewal_reasons(None, NOW + 10 * DAY, THIRTY_DAYS, now=NOW)


def credential(issued, expires, **changes):
    view = {"name": "hub-kubeconfig-secret", "namespace": "fleet-hub-credentials", "present": True, "accepted": True,
            "username": None, "problem": None, "issued": issued, "expires": expires}
    view.update(changes)
    return view


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("issued_days_ago, lifetime_days, wanted, action", [
    (1, 30, None, "none"),                 # fresh
    (16, 30, None, "rotate"),              # past half its lifetime
    (400, None, None, "rotate"),           # legacy, an expiring one is asked for (the default): migrated
    (400, None, "never", "none"),          # legacy asked for
    (1, 30, "10m", "rotate"),              # outlives a lifetime made shorter
])
def test_decide_rotates_a_legacy_or_near_expiry_credential(issued_days_ago, lifetime_days, wanted, action):
    now = datetime.datetime.now(UTC)
    issued = now - issued_days_ago * DAY
    expires = issued + lifetime_days * DAY if lifetime_days else None
    member = {"release": {"status": "deployed"}, "deployment": {"present": True},
              "credential": credential(_iso(issued), _iso(expires) if expires else None)}
    hub = MANAGER.hub_view({"metadata": {"name": "east-1"}, "spec": {"heartbeatPeriodSeconds": 60}, "status": {
        "conditions": [{"type": "ReadyToJoin", "status": "True"}, {"type": "Joined", "status": "True"}],
        "agentStatus": [{"type": "MemberAgent", "lastReceivedHeartbeat": _iso(now),
                         "conditions": [{"type": "Joined", "status": "True"}, {"type": "Healthy", "status": "True"}]}]}}, now)
    state = MANAGER.decide("east-1", hub, member, {"token_lifetime": wanted})
    assert state.action == action, state.reasons
    assert state.healthy
    rejected = dict(member, credential=credential(_iso(issued), _iso(expires) if expires else None, accepted=False))
    assert MANAGER.decide("east-1", hub, rejected, {"token_lifetime": wanted}).action == "reregister"
    with pytest.raises(ParameterError, match="kubefleet_token_lifetime"):
        MANAGER.decide("east-1", hub, member, {"token_lifetime": "0"})


def test_the_identity_adopts_only_what_the_collection_made():
    fix = "Name another ServiceAccount"
    assert tokens.adoption_problem(None, "ServiceAccount", "service_account_name", fix) is None
    ours = {"metadata": {"name": "east-1-hub-cluster-access", "namespace": "fleet-system", "labels": dict(OURS)}}
    assert tokens.adoption_problem(ours, "ServiceAccount", "service_account_name", fix) is None
    for labels in (None, {}, {"app.kubernetes.io/managed-by": "Helm"}):
        foreign = {"metadata": {"name": "fleet-hub-agent", "namespace": "fleet-system", "labels": labels}}
        error = tokens.adoption_problem(foreign, "ServiceAccount", "service_account_name", fix)
        assert isinstance(error, ParameterError)
        text = "%s %s" % (error.msg, error.hint)
        assert text.startswith("service_account_name: ServiceAccount fleet-system/fleet-hub-agent exists but was not created by this "
                               "collection") and "app.kubernetes.io/managed-by=fleetops.registration" in text and fix in text


def test_a_time_bound_token_is_requested_bound_to_the_secret_that_holds_it():
    holder = tokens.desired_holder("east-1-hub-cluster-access-token", "fleet-system", "east-1-hub-cluster-access")
    assert holder["type"] == "Opaque" and "data" not in holder
    assert holder["metadata"]["labels"] == OURS
    assert holder["metadata"]["annotations"] == {tokens.SERVICE_ACCOUNT_ANNOTATION: "east-1-hub-cluster-access"}
    created = dict(holder, metadata=dict(holder["metadata"], uid="u-1"))
    assert tokens.token_request(THIRTY_DAYS, created) == {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": THIRTY_DAYS,
                 "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "east-1-hub-cluster-access-token", "uid": "u-1"}}}
    assert tokens.is_legacy({"type": "kubernetes.io/service-account-token"}) and not tokens.is_legacy(holder)


def _holder(name, sa, created, expires=None, legacy=False):
    annotations = {"kubernetes.io/service-account.name": sa} if legacy else {tokens.SERVICE_ACCOUNT_ANNOTATION: sa}
    if expires:
        annotations[tokens.EXPIRES_ANNOTATION] = expires
    return {"type": "kubernetes.io/service-account-token" if legacy else "Opaque",
            "metadata": {"name": name, "creationTimestamp": created, "annotations": annotations, "labels": dict(OURS)}}


def test_the_hub_side_credential_of_a_member_is_its_newest_token_secret():
    secrets = [
        _holder("a-token", "a", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
        _holder("a-token-2", "a", "2026-11-16T00:00:00Z", "2026-12-16T00:00:00Z"),
        _holder("b-token", "b", "2025-01-01T00:00:00Z", legacy=True),
        _holder("c-token", "other", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
    ]
    assert tokens.hub_credential(secrets, "a") == {"secret": "a-token-2", "issued": "2026-11-16T00:00:00Z", "expires": "2026-12-16T00:00:00Z"}
    assert tokens.hub_credential(secrets, "b") == {"secret": "b-token", "issued": "2025-01-01T00:00:00Z", "expires": None}
    assert tokens.hub_credential(secrets, "c") is None and tokens.hub_credential([], "a") is None


class _Hub:
    def __init__(self, secrets, status=None):
        self.secrets, self.status, self.listed = secrets, status, []

    def list(self, resource, namespace=None, label_selector=None):
        self.listed.append((resource.plural, namespace, label_selector))
        if self.status:
            raise ApiError("forbidden", status=self.status)
        return self.secrets


class _Module:
    def __init__(self):
        self.params, self.warnings = {}, []

    def warn(self, text):
        self.warnings.append(text)


def test_fleet_status_warns_of_a_hub_token_overdue_for_renewal_and_shows_none_where_it_may_not_list():
    now = datetime.datetime.now(UTC)
    identity = {"kind": "ServiceAccount", "name": "a", "namespace": "fleet-system"}
    found = {"east-1": {"spec": {"identity": identity}}, "west-2": {"spec": {"identity": dict(identity, name="w")}}}
    overdue = _holder("a-token", "a", _iso(now - 24.5 * DAY), _iso(now + 5.5 * DAY))
    fresh = _holder("w-token", "w", _iso(now - DAY), _iso(now + 29 * DAY))
    module, rows = _Module(), {"east-1": {}, "west-2": {}}
    hub = _Hub([overdue, fresh])
    FleetStatus(module).add_columns(KUBEFLEET, hub, found, rows)
    assert hub.listed == [("secrets", "fleet-system", "app.kubernetes.io/managed-by=fleetops.registration")]
    assert rows["east-1"]["credential"]["expires"] == _iso(now + 5.5 * DAY) and "(in 5d)" in rows["east-1"]["credential"]["warning"]
    assert rows["west-2"]["credential"]["warning"] is None
    assert len(module.warnings) == 1 and module.warnings[0].startswith("KubeFleet member east-1: the member agent's token expires at")
    for status in (403, 404):
        rows = {"east-1": {}, "west-2": {}}
        FleetStatus(_Module()).add_columns(KUBEFLEET, _Hub([], status), found, rows)
        assert rows == {"east-1": {}, "west-2": {}}
    with pytest.raises(ApiError):
        FleetStatus(_Module()).add_columns(KUBEFLEET, _Hub([], 500), found, {"east-1": {}, "west-2": {}})


def test_a_token_that_never_expires_is_issued_only_when_acknowledged():
    with pytest.raises(ParameterError) as err:
        tokens.allowed_lifetime("never", False)
    assert err.value.param == "token_lifetime" and "does not expire" in err.value.msg
    assert "allow_non_expiring_token: true" in err.value.hint and "fleetops_allow_non_expiring_token" in err.value.hint
    assert tokens.allowed_lifetime("never", True) is None
    assert tokens.allowed_lifetime("1h", False) == 3600
