# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubefleet_member_identity: the hub ServiceAccount and long-lived token Secret a member agent authenticates with."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, FleetOpsError, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    NAMESPACE, SECRET, SERVICE_ACCOUNT, clean,
)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds, parse_duration
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import PREDICATES
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    MEMBER_CLUSTER, default_service_account, default_token_secret, validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity_move import remove_moved_identity
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    desired_service_account, desired_token_secret, identity_subject, same_identity, secret_token, token_secret_problem,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens


class MemberIdentity(Runner):
    """The hub-side ServiceAccount and its token Secret."""

    def __init__(self, module):
        super().__init__(module)
        self.name = validate_member_name(self.params["name"])
        self.namespace = self.params["namespace"]
        self.sa_name = self.params["service_account_name"] or default_service_account(self.name)
        self.secret_name = self.params["token_secret_name"] or default_token_secret(self.sa_name)
        validate_dns_subdomain(self.sa_name, "service_account_name")
        validate_dns_subdomain(self.secret_name, "token_secret_name")
        self.slots = tokens.slots(self.secret_name)

    def _identity(self):
        return identity_subject("ServiceAccount", self.sa_name, self.namespace)

    def _read(self):
        """``(ServiceAccount, [Secret of each token slot or None])``."""
        if self.kube.get(NAMESPACE, self.namespace) is None:
            raise ParameterError("namespace", "namespace %s does not exist on the hub" % self.namespace,
                                 "Run the hub role (hub_prepare creates it) or apply extensions/rbac/hub.yml, "
                                 "or name an existing namespace")
        sa = self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace)
        secrets = [self.kube.get(SECRET, name, self.namespace) for name in self.slots]
        for name, secret in zip(self.slots, secrets):
            problem = token_secret_problem(secret, self.sa_name) if secret is not None else None
            if problem:
                raise ParameterError("token_secret_name", "Secret %s/%s cannot be used: %s" % (self.namespace, name, problem),
                                     "Name another Secret with token_secret_name, or remove that one")
        return sa, secrets

    def _rotation_due(self, current):
        """Why a new token is issued now (None: not now)."""
        if self.params["rotate"]:
            return "rotate"
        max_age = parse_duration(self.params["token_max_age"], "token_max_age") if self.params["token_max_age"] else 0
        age = age_seconds(tokens.issued(current))
        if max_age and age is not None and age > max_age:
            return "the current token is %ds old, more than token_max_age (%ds)" % (age, max_age)
        return None

    def present(self):
        sa, secrets = self._read()
        sa_after, created_sa = self._ensure_service_account(sa)
        current = tokens.current(secrets)
        due = self._rotation_due(current) if current is not None else None
        name = self.slots[0] if current is None else tokens.free_slot(self.slots, secrets) if due else None
        created_name = None
        if name is not None:
            current, created_name = self._create_secret(name, created_sa), name
        current_name = current["metadata"]["name"]
        token = secret_token(current)
        if not self.check_mode and not token and self.params["wait"]:
            try:
                current = self._wait_for_token(current_name)
            except FleetOpsError as exc:
                raise self._roll_back(exc, created_sa, created_name)
            token = secret_token(current)
        if token and not self.params["return_token"]:
            # Hidden values are masked everywhere in the result, so a token that was asked for cannot be hidden.
            self.module.hide(token, (current.get("data") or {}).get("token"))
        revoked = self._revoke_older(secrets, current_name, token) if self.params["revoke_previous"] else []
        if self.params["revoke_previous"] and (token or self.check_mode):
            moved, denied = remove_moved_identity(self.kube, self.kube.get(MEMBER_CLUSTER, self.name), self.sa_name,
                                                  self.namespace, self.check_mode)
            revoked += [moved] if moved else []
            if denied:
                self.warn(denied)
        result = {
            "changed": created_sa or bool(created_name) or bool(revoked),
            "identity": self._identity(),
            "service_account": {"name": self.sa_name, "namespace": self.namespace,
                                "uid": ((sa_after or {}).get("metadata") or {}).get("uid")},
            "token_secret": {"name": current_name, "namespace": self.namespace, "token_ready": bool(token),
                             "issued": tokens.issued(current)},
            "rotated": bool(created_name) and any(secret is not None for secret in secrets),
            "revoked": revoked,
        }
        if self.params["return_token"]:
            result["token"] = token
        before = {"service_account": clean(sa), "token_secrets": [clean(x, hide_data=True) for x in secrets if x is not None]}
        after_secrets = [x for x in secrets if x is not None and x["metadata"]["name"] not in revoked + [current_name]] + [current]
        after = {"service_account": clean(sa_after), "token_secrets": [clean(x, hide_data=True) for x in after_secrets]}
        return self.finish(result, before, after)

    def _revoke_older(self, secrets, current_name, token):
        """Delete the token Secrets older than the current one (revoking their tokens), once the current one is filled."""
        if not token and not self.check_mode:
            return []
        revoked = []
        for secret in tokens.older(secrets):
            name = secret["metadata"]["name"]
            if name != current_name:
                self.kube.delete(SECRET, name, self.namespace, dry_run=self.check_mode)
                revoked.append(name)
        return revoked

    def _ensure_service_account(self, sa):
        if sa is not None:
            return sa, False
        if not self.params["create_service_account"]:
            self.warn("ServiceAccount %s/%s does not exist and create_service_account is false; "
                      "kube-controller-manager will not fill a token for it" % (self.namespace, self.sa_name))
            return None, False
        created = self.kube.create(SERVICE_ACCOUNT, desired_service_account(self.sa_name, self.namespace),
                                   self.namespace, dry_run=self.check_mode)
        return created, True

    def _create_secret(self, name, created_sa):
        desired = desired_token_secret(name, self.namespace, self.sa_name)
        if self.check_mode and created_sa:
            # The dry-run ServiceAccount does not exist, so predict the Secret rather than dry-run it.
            return dict(desired, apiVersion="v1", kind="Secret")
        return self.kube.create(SECRET, desired, self.namespace, dry_run=self.check_mode)

    def _wait_for_token(self, secret_name):
        what = "kube-controller-manager to fill the token of Secret %s/%s" % (self.namespace, secret_name)

        def fetch():
            return self.kube.get(SECRET, secret_name, self.namespace)

        def done(obj):
            return obj is None or PREDICATES["service_account_token"](obj)

        try:
            secret = self.module.waiter.until(fetch, done, what, self._token_hint())
        except WaitTimeout as exc:
            raise WaitTimeout("the token Secret %s/%s was never filled: %s" % (self.namespace, secret_name, exc.msg),
                              self._token_hint(), last=None)
        if secret is None:
            raise ApiError(
                "the token Secret %s/%s was deleted before it was filled: kube-controller-manager removes "
                "service-account-token Secrets whose ServiceAccount %s does not exist" % (self.namespace, secret_name, self.sa_name),
                hint="Create the ServiceAccount, or set create_service_account: true",
            )
        return secret

    def _token_hint(self):
        if self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace) is None:
            return ("ServiceAccount %s/%s does not exist, so no token will ever be written; create it or set "
                    "create_service_account: true" % (self.namespace, self.sa_name))
        return ("Check that kube-controller-manager runs the serviceaccount-token controller "
                "(--service-account-private-key-file), or raise wait_timeout")

    def _roll_back(self, exc, created_sa, created_secret_name):
        """Remove what this run created, so a failed join leaves nothing half-made; return ``exc`` to raise.

        When the removal itself fails, ``exc`` says what stays (and reports changed=true).
        """
        made = [(SECRET, created_secret_name, bool(created_secret_name)), (SERVICE_ACCOUNT, self.sa_name, created_sa)]
        left = []
        for resource, name, created in made:
            if not created:
                continue
            try:
                self.kube.delete(resource, name, self.namespace)
            except FleetOpsError:
                left.append("%s %s/%s" % (resource.kind, self.namespace, name))
        if left:
            return self.changed_before_failure(exc, "created %s and could not remove it; delete it by hand or re-run" % " and ".join(left))
        return exc

    def _still_named(self):
        """Whether a MemberCluster that is not leaving still names this identity."""
        member = self.kube.get(MEMBER_CLUSTER, self.name)
        return member is not None and not (member.get("metadata") or {}).get("deletionTimestamp") \
            and same_identity((member.get("spec") or {}).get("identity"), self._identity())

    def absent(self):
        still_named = self._still_named()
        if still_named and not self.check_mode:
            # Not in check mode: a check run of the leave only dry-ran the MemberCluster's delete an earlier task
            # predicted, so the MemberCluster is still here; the result's member_cluster_names_identity says it.
            self.warn("MemberCluster %s still names this identity; its member agent loses access to the hub. "
                      "Remove the MemberCluster first (kubefleet_member_cluster state=absent)" % self.name)
        secrets = [secret for secret in (self.kube.get(SECRET, name, self.namespace) for name in self.slots) if secret is not None]
        sa = self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace) if self.params["create_service_account"] else None
        for secret in secrets:
            self.kube.delete(SECRET, secret["metadata"]["name"], self.namespace, dry_run=self.check_mode)
        if sa is not None:
            self.kube.delete(SERVICE_ACCOUNT, self.sa_name, self.namespace, dry_run=self.check_mode)
        moved, denied = (None, None) if still_named else remove_moved_identity(
            self.kube, self.kube.get(MEMBER_CLUSTER, self.name), self.sa_name, self.namespace, self.check_mode)
        if denied:
            self.warn(denied)
        before = {"service_account": clean(sa), "token_secrets": [clean(secret, hide_data=True) for secret in secrets]}
        result = {
            "changed": bool(secrets) or sa is not None or bool(moved),
            "identity": self._identity(),
            "service_account": {"name": self.sa_name, "namespace": self.namespace, "uid": None},
            "token_secret": {"name": self.secret_name, "namespace": self.namespace, "token_ready": False, "issued": None},
            "rotated": False,
            "revoked": [secret["metadata"]["name"] for secret in secrets] + ([moved] if moved else []),
            "member_cluster_names_identity": still_named,
        }
        return self.finish(result, before, {"service_account": {}, "token_secrets": []})
