# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubefleet_member_identity: the hub ServiceAccount and the token Secret a member agent authenticates with (a
time-bound token by default, renewed by a re-run; a legacy non-expiring one only with ``token_lifetime: never``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, FleetOpsError, LockLost, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    NAMESPACE, SECRET, SERVICE_ACCOUNT, clean,
)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64, validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds, format_time, parse_duration
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import PREDICATES
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    MEMBER_CLUSTER, default_service_account, default_token_secret, validate_member_name,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity_move import remove_moved_identity
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import (
    desired_service_account, desired_token_secret, identity_subject, same_identity, secret_token, token_secret_problem,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import renewal_reasons
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
        self.lifetime = tokens.allowed_lifetime(self.params["token_lifetime"], self.params["allow_non_expiring_token"])
        self.namespace_missing = False  # check mode on a hub whose namespace an earlier task only dry-ran

    def _identity(self):
        return identity_subject("ServiceAccount", self.sa_name, self.namespace)

    def _read(self):
        """``(ServiceAccount, [Secret of each token slot or None])``; refuses what the collection did not make."""
        if self.kube.get(NAMESPACE, self.namespace) is None:
            if self.check_mode:
                # A fresh hub in check mode: the hub role's hub_prepare only dry-ran the namespace's creation.
                self.assume_created_earlier("namespace %s does not exist on the hub yet (hub_prepare creates it)" % self.namespace)
                self.namespace_missing = True
                return None, [None for _name in self.slots]
            raise ParameterError("namespace", "namespace %s does not exist on the hub" % self.namespace,
                                 "Run the hub role (hub_prepare creates it) or apply extensions/rbac/hub.yml, "
                                 "or name an existing namespace")
        sa = self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace)
        if self.params["create_service_account"]:
            problem = tokens.adoption_problem(sa, "ServiceAccount", "service_account_name", (
                "Name a ServiceAccount this collection creates (service_account_name; by default <name>-hub-cluster-access), "
                "delete that one if it is a leftover, or set create_service_account: false to issue tokens for a "
                "ServiceAccount managed elsewhere on purpose"))
            if problem:
                raise problem
        secrets = [self._usable(name, self.kube.get(SECRET, name, self.namespace)) for name in self.slots]
        return sa, secrets

    def _usable(self, name, secret):
        """A token slot's Secret, checked; None for a holder whose token was never stored (a run killed between its
        two requests), which is removed (in check mode only ignored)."""
        if secret is None:
            return None
        fix = "Name another Secret with token_secret_name, or delete that one if it is a leftover"
        problem = tokens.adoption_problem(secret, "Secret", "token_secret_name", fix)
        if problem:
            raise problem
        if secret.get("type") == tokens.HOLDER_TYPE:
            owner = ((secret.get("metadata") or {}).get("annotations") or {}).get(tokens.SERVICE_ACCOUNT_ANNOTATION)
            reason = None if owner == self.sa_name else "it holds the token of ServiceAccount %r, not %r" % (owner, self.sa_name)
        else:
            reason = token_secret_problem(secret, self.sa_name)
        if reason:
            raise ParameterError("token_secret_name", "Secret %s/%s cannot be used: %s" % (self.namespace, name, reason), fix)
        if secret.get("type") == tokens.HOLDER_TYPE and not secret_token(secret):
            self.kube.delete(SECRET, name, self.namespace, dry_run=self.check_mode)
            return None
        return secret

    def _rotation_due(self, current):
        """Why a new token is issued now (None: not now)."""
        if self.params["rotate"]:
            return "rotate"
        max_age = parse_duration(self.params["token_max_age"], "token_max_age") if self.params["token_max_age"] else 0
        age = age_seconds(tokens.issued(current))
        if max_age and age is not None and age > max_age:
            return "the current token is %ds old, more than token_max_age (%ds)" % (age, max_age)
        expiring = self._expiry_reasons(current)
        return expiring[0] if expiring else None

    def _expiry_reasons(self, current):
        """Why the current token is renewed by its lifetime (legacy while an expiring one is asked for, half its
        lifetime gone, or outliving a shorter lifetime); none for a legacy token still being filled."""
        token = secret_token(current)
        if not token:
            return []
        issued, expires = tokens.token_window(token)
        return renewal_reasons(issued, expires, self.lifetime, what="the current token")

    def _slot_for_new_token(self, secrets, current):
        """``(slot name or None, [names revoked to make room])``: where a new token goes now."""
        if current is None:
            return self.slots[0], []
        if not self._rotation_due(current):
            return None, []
        name = tokens.free_slot(self.slots, secrets)
        if name is not None or not self._expiry_reasons(current):
            return name, []  # None: a rotation is under way and its newer token is still good, so it is reused
        # Both names taken and the newer token is itself due: the older one (older still) makes room.
        older = tokens.older(secrets)[0]["metadata"]["name"]
        self.kube.delete(SECRET, older, self.namespace, dry_run=self.check_mode)
        return older, [older]

    def present(self):
        sa, secrets = self._read()
        sa_after, created_sa = self._ensure_service_account(sa)
        current = tokens.current(secrets)
        name, made_room = self._slot_for_new_token(secrets, current)
        found, secrets = secrets, [None if secret is not None and secret["metadata"]["name"] in made_room else secret for secret in secrets]
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
        revoked = made_room + (self._revoke_older(secrets, current_name, token) if self.params["revoke_previous"] else [])
        if self.params["revoke_previous"] and (token or self.check_mode):
            revoked += self._remove_moved()
        result = {
            "changed": created_sa or bool(created_name) or bool(revoked),
            "identity": self._identity(),
            "service_account": {"name": self.sa_name, "namespace": self.namespace,
                                "uid": ((sa_after or {}).get("metadata") or {}).get("uid")},
            "token_secret": {"name": current_name, "namespace": self.namespace, "token_ready": bool(token),
                             "issued": tokens.issued(current), "expires": _expires(token)},
            "rotated": bool(created_name) and (bool(made_room) or any(secret is not None for secret in secrets)),
            "revoked": revoked,
            "previous": [secret["metadata"]["name"] for secret in secrets
                         if secret is not None and secret["metadata"]["name"] not in revoked + [current_name]],
        }
        if self.params["return_token"]:
            result["token"] = token
        before = {"service_account": clean(sa), "token_secrets": [clean(x, hide_data=True) for x in found if x is not None]}
        after_secrets = [x for x in secrets if x is not None and x["metadata"]["name"] not in revoked + [current_name]] + [current]
        after = {"service_account": clean(sa_after), "token_secrets": [clean(x, hide_data=True) for x in after_secrets]}
        return self.finish(result, before, after)

    def _remove_moved(self):
        """The identity the member moved away from, removed once its MemberCluster names this one. Before there is a
        MemberCluster (a first join revoking the identity's older tokens at once) no identity has moved away yet."""
        member_cluster = self.kube.get(MEMBER_CLUSTER, self.name)
        if member_cluster is None:
            return []
        moved, denied = remove_moved_identity(self.kube, member_cluster, self.sa_name, self.namespace, self.check_mode)
        if denied:
            self.warn(denied)
        return [moved] if moved else []

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
        desired = desired_service_account(self.sa_name, self.namespace)
        if self.namespace_missing:  # no dry run can create in a namespace that does not exist: predict it
            return dict(desired, apiVersion="v1", kind="ServiceAccount"), True
        return self.kube.create(SERVICE_ACCOUNT, desired, self.namespace, dry_run=self.check_mode), True

    def _create_secret(self, name, created_sa):
        if self.lifetime is None:
            desired = desired_token_secret(name, self.namespace, self.sa_name)
        else:
            desired = tokens.desired_holder(name, self.namespace, self.sa_name)
        if self.check_mode and created_sa:
            # The dry-run ServiceAccount does not exist, so predict the Secret rather than dry-run it.
            return dict(desired, apiVersion="v1", kind="Secret")
        secret = self.kube.create(SECRET, desired, self.namespace, dry_run=self.check_mode)
        if self.lifetime is None or self.check_mode:
            return secret
        try:
            return self._issue(secret)
        except FleetOpsError as exc:
            raise self._roll_back(exc, created_sa, name)

    def _issue(self, holder):
        """Request a token living ``token_lifetime``, bound to ``holder``, and store it there with its expiry."""
        name = holder["metadata"]["name"]
        if self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace) is None:
            raise ApiError("ServiceAccount %s/%s does not exist, so no token can be issued for it" % (self.namespace, self.sa_name),
                           hint="Create the ServiceAccount, or set create_service_account: true")
        answer = self.kube.request("POST", SERVICE_ACCOUNT.path(self.namespace, self.sa_name, "token"),
                                   body=tokens.token_request(self.lifetime, holder)) or {}
        token = (answer.get("status") or {}).get("token")
        if not token:
            raise ApiError("the hub answered the TokenRequest for ServiceAccount %s/%s without a token" % (self.namespace, self.sa_name))
        encoded = b64(token)
        if not self.params["return_token"]:
            self.module.hide(token, encoded)  # at once: an error below must not show it either
        # The expiry the API server granted (it may cap the lifetime asked for), never the one asked for.
        expires = _expires(token) or (answer.get("status") or {}).get("expirationTimestamp")
        patch = {"metadata": {"annotations": {tokens.EXPIRES_ANNOTATION: expires}}, "data": {"token": encoded}}
        return self.kube.patch(SECRET, name, patch, self.namespace)

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
        if isinstance(exc, LockLost):
            # The run that took the member over may already use them: theirs now, to keep or remove.
            kept = ["%s %s/%s" % (resource.kind, self.namespace, name) for resource, name, created in made if created]
            return self.changed_before_failure(exc, "created %s, left to that run" % " and ".join(kept)) if kept else exc
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
        foreign = [obj for obj in secrets + [sa] if obj is not None and not tokens.made_by_collection(obj)]
        for obj in foreign:
            self.warn("%s %s/%s was not created by this collection and is left alone" % (
                obj.get("kind") or "Object", self.namespace, obj["metadata"]["name"]))
        secrets = [secret for secret in secrets if secret not in foreign]
        sa = None if sa in foreign else sa
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
            "token_secret": {"name": self.secret_name, "namespace": self.namespace, "token_ready": False, "issued": None,
                             "expires": None},
            "rotated": False,
            "previous": [],
            "revoked": [secret["metadata"]["name"] for secret in secrets] + ([moved] if moved else []),
            "member_cluster_names_identity": still_named,
        }
        return self.finish(result, before, {"service_account": {}, "token_secrets": []})


def _expires(token):
    """When ``token`` expires (RFC 3339), read from the token itself; None for one that never does."""
    expires = tokens.token_window(token)[1] if token else None
    return format_time(expires) if expires else None
