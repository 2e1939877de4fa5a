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
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import kubeconfig_secrets
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import renew, renewal_due
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import REDACTED, credential_parts, deep_merge, secret_strings
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


def invocation_secrets(params, secret_options=()):
    """Credentials inside options that are not secret as a whole, found before anything logs them: in any option, URL
    passwords with or without a scheme (``proxy``, a chart's ``proxy`` value, ``agent.env``), tokens and secret flags;
    in its mappings, values under secret keys (chart ``values``); every kubeconfig mapping's credentials
    (kubeconfig#782 in kubernetes.core), wherever it is nested; and in a list of items (member_info's ``members``) a
    secret option (``secret_options``), which the module refuses there but was given."""
    found = []
    for value in params.values():
        if value is None or isinstance(value, (bool, int, float)):
            continue
        found.extend(secret_strings(value))
        found.extend(_nested_kubeconfig_secrets(value))
        for item in value if isinstance(value, list) else []:
            if isinstance(item, dict):
                found.extend(leaf for key in set(secret_options) | set(SECRET_VALUES_OPTIONS) for leaf in _leaves(item.get(key)))
    return list(dict.fromkeys(found))


# The options that hold secret chart values (no_log), also as items of a list (the roles' requests to member_info and
# member_lock, whose own spec may lack them).
SECRET_VALUES_OPTIONS = ("secret_values", "agent_secret_values")


def secret_value_paths(params):
    """The key paths the secret chart values name (``secret_values``; ``agent_secret_values`` per fleet manager, also in
    ``members`` items): whatever a chart's values hold there is secret, also an older value read from a release."""
    mappings = [params.get("secret_values")] + list((params.get("agent_secret_values") or {}).values())
    for item in params.get("members") or []:
        if isinstance(item, dict) and isinstance(item.get("agent_secret_values"), dict):
            mappings.extend(item["agent_secret_values"].values())
    return set(path for mapping in mappings for path in _paths(mapping))


def _paths(mapping, prefix=()):
    if not isinstance(mapping, dict):
        return []
    found = []
    for key, value in mapping.items():
        found.extend(_paths(value, prefix + (key,)) if isinstance(value, dict) and value else [prefix + (key,)])
    return found


def _values_mappings(value):
    """Every chart values mapping inside a result (a mapping under a key named ``values``)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "values" and isinstance(item, dict):
                found.append(item)
            found.extend(_values_mappings(item))
    elif isinstance(value, list):
        found.extend(mapping for item in value for mapping in _values_mappings(item))
    return found


def _at(mapping, path):
    for key in path:
        if not isinstance(mapping, dict) or key not in mapping:
            return None
        mapping = mapping[key]
    return mapping


def _leaves(value):
    """The strings of a secret option's value, as Ansible masks a no_log option (a mapping's every value)."""
    if isinstance(value, str):
        return [value] if value else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [leaf for item in items for leaf in _leaves(item)]


def _nested_kubeconfig_secrets(value):
    if isinstance(value, dict):
        found = kubeconfig_secrets(value) if ("users" in value or "clusters" in value) else []
        return found + [secret for item in value.values() for secret in _nested_kubeconfig_secrets(item)]
    if isinstance(value, list):
        return [secret for item in value for secret in _nested_kubeconfig_secrets(item)]
    return []


def result_secrets(result, secret_paths=()):
    """Credentials in what a module returns that it did not get as options (a release's values read from the member, a
    proxy URL in an error): URL passwords anywhere; in the message, also tokens and secret flags; in a diff and in chart
    values, anything credential-shaped (parsing.secret_strings), and in chart values what lies at ``secret_paths``
    (secret_value_paths: an older secret value in a release). Tokens a module returns when asked (``return_token``,
    ``return_values`` - text, not a values mapping) stay."""
    found = secret_strings(dict((k, v) for k, v in result.items() if k != "diff"), urls_only=True) + \
        credential_parts(result.get("msg")) + secret_strings(result.get("diff")) + _nested_kubeconfig_secrets(result.get("diff"))
    for values in _values_mappings(result):
        found.extend(secret_strings(values))
        found.extend(leaf for path in secret_paths for leaf in _leaves(_at(values, path)))
    return found


def values_with_secrets(params):
    """A chart's values from the options: ``values`` with ``secret_values`` (no_log, masked everywhere) merged over it."""
    return deep_merge(params.get("values") or {}, params.get("secret_values") or {})


def connection_key(params, prefix=""):
    """What identifies one connection among a batch's items: its auth options (a kubeconfig mapping as JSON)."""
    return (prefix,) + tuple(json.dumps(params.get(prefix + key), sort_keys=True, default=str) for key in AUTH_KEYS)


class FleetModule(AnsibleModule):
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
        # A blank mapping option ("" from a survey or module_defaults) would fail validation as "dictionary requested"
        # before unset_empty_strings could treat it as not set: drop it first.
        super()._load_params()
        for name, option in (getattr(self, "argument_spec", None) or {}).items():
            if option.get("type") == "dict" and self.params.get(name) == "":
                del self.params[name]

    def _hide_invocation_secrets(self):
        secret_options = [name for name, option in (getattr(self, "argument_spec", None) or {}).items() if option.get("no_log")]
        self.hide(*invocation_secrets(getattr(self, "params", None) or {}, secret_options))

    def _log_invocation(self):
        # AnsibleModule logs its invocation (syslog, journald) from its __init__: hide credentials first.
        self._hide_invocation_secrets()
        super()._log_invocation()

    def settings(self, prefix="", params=None):
        return ConnectionSettings(self.params if params is None else params, prefix, label="hub" if prefix == "hub_" else "cluster")

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
    def tmpdir(self):
        if self._fleet_tmpdir is None:
            # Inside the task's directory, which Ansible removes after the task even when the module was killed
            # (a task timeout, a cancelled job): inline client keys are written here and must not outlive the task.
            self._fleet_tmpdir = private_tempdir(super().tmpdir)
        return self._fleet_tmpdir

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
            self._helm = Helm(self.run_command, binary, kubeconfig, context, env=env, connection_args=settings.helm_arguments())
        self._helm.secrets.extend(s for s in secrets if s)
        return self._helm

    @property
    def waiter(self):
        if self._waiter is None:
            self._waiter = Waiter(self.params.get("wait_timeout") or 300, self.params.get("wait_sleep") or 2,
                                  on_wait=self._forget_listed)
        return self._waiter

    def keep_member_lock(self):
        """Renew the run's lock of the member (option ``member_lock``) when it is due, before the module acts; on the
        hub, which is the ``hub_`` connection for a module that has one."""
        lock = self.params.get("member_lock")
        if not lock or self.check_mode or not renewal_due(lock, self.params.get("wait_timeout") or 300):
            return
        if not all(isinstance(lock.get(key), str) and lock[key] for key in ("namespace", "name", "holder")):
            raise ParameterError("member_lock", "needs namespace, name and holder",
                                 "Pass the lock member_lock returned for the member (its entry's lock), or leave it unset")
        prefix = "hub_" if "hub_kubeconfig" in self.argument_spec else ""
        if prefix and not any(self.params.get(prefix + key) for key in ("kubeconfig", "context", "host")):
            raise ParameterError("member_lock", "the lock is on the hub, and no hub connection is given",
                                 "Give hub_kubeconfig/hub_context (or hub_host) with member_lock, or leave member_lock unset")
        renew(self.kube(prefix), lock)

    def hide(self, *values):
        """Mark values found at run time (tokens, values.yaml) so Ansible masks them everywhere. A value already masked
        (a diff's ``VALUE_SPECIFIED_IN_NO_LOG_PARAMETER (changed)``, a URL's ``********``) is no secret of its own."""
        for value in values:
            if value and not (isinstance(value, str) and (REDACTED in value or "********" in value)):
                self.no_log_values.add(value)

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


def run_module(module: AnsibleModule, action: Callable[[Any], Dict[str, Any]]) -> None:
    """Run ``action(module)`` and exit with its result dict; turn FleetOpsError into fail_json.

    An error's details go into the failure result, so a runner that changed something before it
    failed raises with ``changed=True`` (and names what it left in the message).
    """
    try:
        if isinstance(module, FleetModule):
            module.keep_member_lock()
        result = action(module)
    except FleetOpsError as exc:
        details = dict((k, v) for k, v in exc.details.items() if v is not None)
        module.fail_json(msg=exc.message(), **details)
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="unexpected error: %s" % exc, exception=traceback.format_exc())
    module.exit_json(**result)
