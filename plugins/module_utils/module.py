# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module base: auth options injected, clients handed out, errors reported in one place."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import shutil
import traceback
from typing import Any, Callable, Dict

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.parameters import remove_values

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import Helm, check_storage_driver
from ansible_collections.fleetops.registration.plugins.module_utils.files import private_tempdir
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import AUTH_KEYS, ConnectionSettings
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient
from ansible_collections.fleetops.registration.plugins.module_utils.masking import invocation_secrets, result_secrets, secret_value_paths
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import renew, renewal_due
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import REDACTED, credential_parts, deep_merge
from ansible_collections.fleetops.registration.plugins.module_utils._deps import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import Waiter


def unset_empty_strings(params, spec):
    """An empty string given for an optional option means "not set": its default applies.

    Role defaults, AWX surveys and ``module_defaults`` pass ``""`` for an option nobody filled in, so tasks need no
    ``default(omit, true)`` on every line.
    """
    for name, option in spec.items():
        if params.get(name) == "" and not option.get("required"):
            params[name] = option.get("default")


def values_with_secrets(params):
    """A chart's values from the options: ``values`` with ``secret_values`` (no_log, masked everywhere) merged over it."""
    return deep_merge(params.get("values") or {}, params.get("secret_values") or {})


def drop_blank_mappings(params, spec):
    """A blank mapping option ("" from a survey or module_defaults) fails validation as "dictionary requested" before
    unset_empty_strings could treat it as not set: drop it first."""
    for name, option in spec.items():
        if option.get("type") == "dict" and params.get(name) == "":
            del params[name]


def connection_key(params, prefix=""):
    """What identifies one connection among a batch's items: its auth options (a kubeconfig mapping as JSON)."""
    return (prefix,) + tuple(json.dumps(params.get(prefix + key), sort_keys=True, default=str) for key in AUTH_KEYS)


class FleetClients:
    """What a run of a module needs beyond its options: its clients, built once per connection, the lock it renews,
    its Helm runner, and the secrets it finds at run time (masked in all it returns). FleetModule has it in a module
    process; the in-controller run of a module (plugin_utils/controller_run.py) has it in the controller's.

    The class using it has ``params``, ``check_mode``, ``argument_spec``, ``tmpdir``, ``no_log_values``, ``_clients``
    (a dict), ``_waiter`` and ``_helm`` (None), and AnsibleModule's ``get_bin_path`` and ``run_command``.
    """

    def settings(self, prefix="", params=None):
        label = {"hub_": "hub", "old_hub_": "old hub"}.get(prefix, "cluster")
        return ConnectionSettings(self.params if params is None else params, prefix, label=label)

    def kube(self, prefix="", params=None):
        """A KubeClient for the target cluster, or for the hub with ``prefix='hub_'``; built once.

        ``params`` (one item of a batch, e.g. member_info's ``members``) gives the connection options instead of the
        module's; items naming the same connection share one client.
        """
        key = prefix if params is None else connection_key(params, prefix)
        if key not in self._clients:
            settings = self.settings(prefix, params)
            hint = "Check %skubeconfig, %scontext and %shost (and the certificate options): the %s API server must be reachable from " \
                   "where the task runs" % (prefix, prefix, prefix, settings.label)
            configuration = settings.client_configuration(tmpdir=lambda: self.tmpdir)
            self._clients[key] = (KubeClient(configuration, label=settings.label, hint=hint), settings)
        return self._clients[key][0]

    def use_client(self, kube, prefix=""):
        """Hand out ``kube`` (a wrapper of the client kube() built, e.g. batch.ListedReads) from now on."""
        self.kube(prefix)
        self._clients[prefix] = (kube, self._clients[prefix][1])

    def _forget_listed(self):
        for kube, _settings in self._clients.values():
            if hasattr(kube, "forget"):
                kube.forget()

    @property
    def waiter(self):
        if self._waiter is None:
            self._waiter = Waiter(self.params.get("wait_timeout") or 300, self.params.get("wait_sleep") or 2,
                                  on_wait=self._forget_listed, after_wait=self._lock_after_wait)
        return self._waiter

    def keep_member_lock(self):
        """Renew the run's lock of the member (option ``member_lock``) when it is due, before the module acts; on the
        hub, which is the ``hub_`` connection for a module that has one."""
        lock = self.params.get("member_lock")
        if lock and not self.check_mode and renewal_due(lock, self.params.get("wait_timeout") or 300):
            renew(self._lock_client(lock), lock)

    def _lock_after_wait(self):
        """After a wait, before the module acts on what it waited for: renew the lock, or stop if another run took it."""
        lock = self.params.get("member_lock")
        if lock and not self.check_mode:
            renew(self._lock_client(lock), lock, after_wait=True)

    def _lock_client(self, lock):
        if not all(isinstance(lock.get(key), str) and lock[key] for key in ("namespace", "name", "holder")):
            raise ParameterError("member_lock", "needs namespace, name and holder",
                                 "Pass the lock member_lock returned for the member (its entry's lock), or leave it unset")
        prefix = "hub_" if "hub_kubeconfig" in self.argument_spec else ""
        if prefix and not any(self.params.get(prefix + key) for key in ("kubeconfig", "context", "host")):
            raise ParameterError("member_lock", "the lock is on the hub, and no hub connection is given",
                                 "Give hub_kubeconfig/hub_context (or hub_host) with member_lock, or leave member_lock unset")
        return self.kube(prefix)

    def helm(self, secrets=()):
        """A Helm runner against the target cluster, with the same credentials as kube()."""
        if self._helm is None:
            settings = self.settings()
            configuration = settings.client_configuration(tmpdir=lambda: self.tmpdir)
            kubeconfig, context = settings.helm_kubeconfig(configuration, self.tmpdir)
            binary = Helm.locate(self.get_bin_path, self.params.get("helm_binary"))
            check_storage_driver()
            # The user's Helm configuration (registry logins, repositories) stays; the cache is the task's own.
            env = {"HELM_CACHE_HOME": self.tmpdir + "/cache"}
            for option, variable in (("helm_registry_config", "HELM_REGISTRY_CONFIG"), ("helm_repository_config", "HELM_REPOSITORY_CONFIG")):
                if self.params.get(option):
                    env[variable] = self.params[option]
            if settings.proxy:
                env["HTTPS_PROXY"] = settings.proxy
            if settings.no_proxy:
                env["NO_PROXY"] = env["no_proxy"] = settings.no_proxy
            self._helm = Helm(self.run_command, binary, kubeconfig, context, env=env, connection_args=settings.helm_arguments(),
                              workdir=self.tmpdir)
        self._helm.secrets.extend(s for s in secrets if s)
        return self._helm

    def hide(self, *values):
        """Mark values found at run time (tokens, values.yaml) so Ansible masks them everywhere. A value already masked
        (a diff's ``VALUE_SPECIFIED_IN_NO_LOG_PARAMETER (changed)``, a URL's ``********``) is no secret of its own."""
        for value in values:
            if value and not (isinstance(value, str) and (REDACTED in value or "********" in value)):
                self.no_log_values.add(value)


class FleetModule(FleetClients, AnsibleModule):
    """AnsibleModule plus the collection's shared options and clients.

    ``argument_spec`` is built with ``argspec.merge(AUTH, HUB_AUTH, WAIT, HELM, own_options)``; the target's auth
    options are always there.
    """

    def __init__(self, argument_spec, **kwargs):
        spec = merge(AUTH, argument_spec)
        kwargs.setdefault("supports_check_mode", True)
        super().__init__(argument_spec=spec, **kwargs)
        unset_empty_strings(self.params, spec)
        if not HAS_KUBERNETES:
            self.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))
        self._clients = {}
        self._helm = None
        # Not AnsibleModule's ``_tmpdir``: that one is the task's directory (``_ansible_tmpdir``), which
        # fail_json during argument validation would otherwise delete as if it were ours.
        self._fleet_tmpdir = None
        self._waiter = None
        # Again here: AnsibleModule skips _log_invocation for a no_log task, whose registered result still holds them.
        self._hide_invocation_secrets()

    def _load_params(self):
        super()._load_params()
        drop_blank_mappings(self.params, getattr(self, "argument_spec", None) or {})

    def _hide_invocation_secrets(self):
        secret_options = [name for name, option in (getattr(self, "argument_spec", None) or {}).items() if option.get("no_log")]
        self.hide(*invocation_secrets(getattr(self, "params", None) or {}, secret_options))

    def _log_invocation(self):
        # AnsibleModule logs its invocation (syslog, journald) from its __init__: hide credentials first.
        self._hide_invocation_secrets()
        super()._log_invocation()

    @property
    def tmpdir(self):
        if self._fleet_tmpdir is None:
            # Inside the task's directory, which Ansible removes after the task even when the module was killed
            # (a task timeout, a cancelled job): inline client keys are written here and must not outlive the task.
            self._fleet_tmpdir = private_tempdir(super().tmpdir)
        return self._fleet_tmpdir

    def warn(self, warning, **kwargs):
        # ansible-core 2.19 returns a warning as an object that its masking of the result does not enter: mask the text.
        self.hide(*credential_parts(warning))
        super().warn(remove_values(warning, self.no_log_values), **kwargs)

    def exit_json(self, **kwargs):
        self.hide(*result_secrets(kwargs, secret_value_paths(self.params)))
        if self._fleet_tmpdir:
            shutil.rmtree(self._fleet_tmpdir, ignore_errors=True)
        super().exit_json(**kwargs)

    def fail_json(self, msg, **kwargs):
        # Also before the invocation was logged: a failed argument validation returns the arguments as given.
        self._hide_invocation_secrets()
        self.hide(*result_secrets(dict(kwargs, msg=msg), secret_value_paths(getattr(self, "params", None) or {})))
        if isinstance(kwargs.get("exception"), BaseException):
            # ansible-core 2.19 returns an exception object as a structure its masking of the result does not enter.
            exc = kwargs["exception"]
            kwargs["exception"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if getattr(self, "_fleet_tmpdir", None):
            shutil.rmtree(self._fleet_tmpdir, ignore_errors=True)
        super().fail_json(msg=msg, **kwargs)


class Runner:
    """Base of one module's logic: the module's params, modes and clients in one place.

    ("Backend" is reserved for fleet managers; see fleet_managers.py.)
    """

    def __init__(self, module, params=None):
        self.module = module
        self.params = module.params if params is None else params
        self.check_mode = module.check_mode
        self.diff_mode = getattr(module, "_diff", False)

    @property
    def kube(self):
        """The cluster the module acts on, connected on first use (so bad input fails before any connection)."""
        return self.module.kube()

    def warn(self, text):
        self.module.warn(text)

    def run(self):
        """``present()`` or ``absent()``, as ``state`` asks."""
        if self.params.get("state") == "absent":
            return self.absent()
        return self.present()

    def present(self):
        raise NotImplementedError

    def absent(self):
        raise NotImplementedError

    def assume_created_earlier(self, missing: str) -> None:
        """Check mode on a fresh target: an input an earlier task of the same run only dry-ran.

        The module predicts its own change and says so, instead of failing; a real run still fails without it.
        """
        self.warn("check mode: %s; assuming an earlier task creates it (a real run fails without it)" % missing)

    @staticmethod
    def failed_after_change(exc: FleetOpsError, note: str = "", changed: bool = True) -> FleetOpsError:
        """``exc`` with ``changed`` in its details (fail_json reports it) and ``note`` added to its message."""
        exc.details["changed"] = changed
        exc.msg += note
        return exc

    def changed_before_failure(self, exc: FleetOpsError, what: str) -> FleetOpsError:
        """``exc`` marked as a failure after a change, naming what this run already did, and left. Raise the result."""
        exc.msg = exc.msg.rstrip(".")
        return self.failed_after_change(exc, "; this run already %s" % what)

    def finish(self, result: Dict[str, Any], before: Any = None, after: Any = None) -> Dict[str, Any]:
        """``result`` with ``diff`` added in diff mode: the one way a module reports its diff."""
        if self.diff_mode and (before is not None or after is not None):
            result["diff"] = {"before": before or {}, "after": after or {}}
        return result


def run_action(module, action: Callable[[Any], Dict[str, Any]]) -> Dict[str, Any]:
    """``action(module)``'s result, or a failure's (``failed``, ``msg`` and the error's details) when it raised.

    An error's details go into the failure, so a runner that changed something before it failed raises with
    ``changed=True`` (and names what it left in the message).
    """
    try:
        module.keep_member_lock()
        return action(module)
    except FleetOpsError as exc:
        details = dict((k, v) for k, v in exc.details.items() if v is not None)
        return dict(details, failed=True, msg=exc.message())
    except Exception as exc:  # pylint: disable=broad-except
        return dict(failed=True, msg="unexpected error: %s" % exc, exception=traceback.format_exc())


def run_module(module: FleetModule, action: Callable[[Any], Dict[str, Any]]) -> None:
    """Run ``action(module)`` and exit with its result dict, or fail_json with a FleetOpsError's message and details."""
    result = run_action(module, action)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)
