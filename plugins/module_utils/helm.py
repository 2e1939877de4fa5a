# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Helm CLI, called with argument lists.

The binary and its version are resolved once. Values reach Helm through its standard input (``--values -``),
never a file or ``--set`` on the command line, because agent values carry registration tokens: a module killed while
Helm runs leaves no copy of them behind. Credentials of a chart repository go into a 0600 repository config in the
task's directory, never into Helm's argv (which ``/proc`` shows to every user). Works with Helm 3 and Helm 4.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json
import os
import re
import shutil
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml
from ansible_collections.fleetops.registration.plugins.module_utils.errors import HelmError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.files import write_private_file
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml


# The name the collection gives a chart repository whose URL carries credentials, in its own repository config.
REPOSITORY_NAME = "fleetops-chart-repository"


def check_chart_ref(ref, param="chart_ref"):
    """Refuse a chart reference Helm would read as an option (``--post-renderer=...``) or that carries credentials."""
    if ref.startswith("-"):
        raise ParameterError(param, "%r begins with '-', so Helm would read it as an option, not as a chart" % ref,
                             "Give a chart path (./%s for a directory of that name), an oci:// reference, or a chart name "
                             "with chart_repo_url" % ref)
    if "://" in ref and urlsplit(ref).password is not None:
        raise ParameterError(param, "the chart reference holds a password, which would reach Helm's command line",
                             "Log in to the registry with helm registry login and give its config as helm_registry_config, "
                             "or put the credentials in chart_repo_url (kept off the command line)")


def check_repo_url(url, param="chart_repo_url"):
    """Refuse a chart repository that is no URL: ``user:password@host`` would reach Helm's command line as it is."""
    if url and "://" not in url:
        raise ParameterError(param, "it is not a URL (no scheme://)",
                             "Give the chart repository's URL, for example https://charts.example.com/fleet")


def split_url_credentials(url):
    """``(url without user:password, username, password)``; the credentials are None when the URL has none."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=netloc)), unquote(parts.username or ""), unquote(parts.password or "")


class ChartSource:
    """A chart given as a local path, a repository URL plus a name, or an OCI reference.

    A repository URL with ``user:password`` is kept without them (``repo_url``); the credentials (``repo_username``,
    ``repo_password``) reach Helm only through a private repository config (Helm.chart_args).
    """

    def __init__(self, ref, repo_url=None, version=None, param="chart_ref"):
        if not ref:
            raise ParameterError(param, "no chart given", "Give a local chart path, an oci:// reference, or a chart name with chart_repo_url")
        check_chart_ref(ref, param)
        check_repo_url(repo_url)
        self.ref = ref
        self.repo_url, self.repo_username, self.repo_password = split_url_credentials(repo_url) if repo_url else (None, None, None)
        self.version = version
        self.param = param
        self.local = not repo_url and not ref.startswith("oci://") and (os.path.isdir(ref) or ref.endswith(".tgz"))
        if not repo_url and not ref.startswith("oci://") and not self.local:
            raise ParameterError(param, "%s is neither a chart directory nor an oci:// reference" % ref,
                                 "Give an existing chart directory or .tgz, an oci:// reference, or set chart_repo_url")

    @property
    def repo_credentials(self):
        return self.repo_username is not None

    def args(self):
        """Helm's arguments naming the chart, when its repository needs no credentials (else Helm.chart_args)."""
        args = [self.ref]
        if self.repo_url:
            args += ["--repo", self.repo_url]
        return args + self.version_args()

    def version_args(self):
        return ["--version", self.version] if self.version and not self.local else []

    def repository_config(self):
        """Helm's repository config (repositories.yaml) naming the repository and its credentials, as REPOSITORY_NAME."""
        entry = {"name": REPOSITORY_NAME, "url": self.repo_url, "username": self.repo_username, "password": self.repo_password}
        return {"apiVersion": "", "generated": "0001-01-01T00:00:00Z", "repositories": [entry]}

    def local_metadata(self):
        """Chart.yaml of a local chart directory (name, version), or None."""
        if not self.local or not os.path.isdir(self.ref):
            return None
        path = os.path.join(self.ref, "Chart.yaml")
        if not os.path.isfile(path):
            raise ParameterError(self.param, "%s has no Chart.yaml, so it is not a chart directory" % self.ref,
                                 "Point it at the chart's own directory (the one holding Chart.yaml)")
        with open(path) as handle:
            try:
                metadata = load_yaml(handle)
            except yaml.YAMLError:
                metadata = None
        if not isinstance(metadata, dict):
            raise ParameterError(self.param, "%s is not a valid Chart.yaml" % path, "Point it at a Helm chart directory")
        return metadata

    def local_values(self):
        """values.yaml of a local chart directory (the chart's defaults), or None (a remote or packaged chart)."""
        path = os.path.join(self.ref, "values.yaml") if self.local and os.path.isdir(self.ref) else None
        if not path or not os.path.isfile(path):
            return None
        with open(path) as handle:
            try:
                values = load_yaml(handle)
            except yaml.YAMLError:
                return None
        return values if isinstance(values, dict) else None

    def identity(self):
        """``(chart name, desired version)``: the one chart-version rule for every agent.

        The desired version is the one given (``chart_version``), else the local chart's own
        version; a local chart whose version differs from the given one is an error (Helm would
        install the local one whatever ``chart_version`` says). None when neither is known (a
        repository or OCI chart without a pinned version): the release's version is then not compared.
        """
        metadata = self.local_metadata()
        if metadata is not None:
            version = str(metadata.get("version") or "") or None
            if self.version and version and self.version != version:
                raise ParameterError("chart_version", "the local chart %s is version %s, not %s" % (self.ref, version, self.version),
                                     "Set chart_version to %s or drop it, or point chart_ref at the chart you want" % version)
            return metadata.get("name") or _ref_name(self.ref), version or self.version
        return _ref_name(self.ref), self.version or None


class Helm:
    """One Helm binary against one cluster (given as kubeconfig path + context)."""

    def __init__(self, run_command, binary, kubeconfig=None, context=None, env=None, secrets=(), connection_args=(), workdir=None):
        self._run_command = run_command
        self.workdir = workdir  # the task's private directory, for the files Helm must read (a repository config)
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.context = context
        self.connection_args = list(connection_args)  # e.g. --kube-as-user, from ConnectionSettings.helm_arguments()
        self.env = env or {}
        self.secrets = [s for s in secrets if s]
        self._version = None

    @classmethod
    def locate(cls, get_bin_path, helm_binary=None):
        if helm_binary:
            if not os.access(helm_binary, os.X_OK):
                raise ParameterError("helm_binary", "%s is not an executable file" % helm_binary)
            return helm_binary
        found = get_bin_path("helm") or shutil.which("helm")
        if not found:
            raise ParameterError("helm_binary", "the helm binary was not found on PATH",
                                 "Install Helm 3 or 4 on the host the task runs on, or set helm_binary")
        return found

    def _global_args(self):
        args = []
        if self.kubeconfig:
            args += ["--kubeconfig", self.kubeconfig]
        if self.context:
            args += ["--kube-context", self.context]
        return args + self.connection_args

    def run(self, args, check=True, data=None):
        """Helm with ``args``; ``data`` (text) goes to its standard input."""
        argv = [self.binary] + list(args) + self._global_args()
        stdin = {} if data is None else {"data": data}
        rc, out, err = self._run_command(argv, environ_update=self.env, **stdin)
        if check and rc != 0:
            raise HelmError("helm %s failed (rc=%d): %s" % (args[0], rc, self.scrub(err).strip()[-2000:]),
                            "Read Helm's message above; the release was left as Helm left it and a re-run retries")
        return rc, out, err

    def scrub(self, text):
        for secret in self.secrets:
            text = text.replace(secret, "********")
        return text

    @property
    def version(self):
        """Helm's version as a tuple of ints, asked once."""
        if self._version is None:
            _rc, out, _err = self.run(["version", "--short"])
            match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out)
            if not match:
                raise HelmError("could not read the Helm version from %r" % out.strip())
            self._version = tuple(int(x) for x in match.groups())
        return self._version

    @property
    def runs_post_renderer_executables(self):
        """Whether ``--post-renderer`` takes an executable: Helm 3's does; Helm 4 takes only a post-renderer plugin's name."""
        return self.version[0] < 4

    def release(self, name, namespace):
        """The deployed release as ``{chart, version, app_version, status, revision}``, or None."""
        _rc, out, _err = self.run(["list", "--namespace", namespace, "--filter", "^%s$" % re.escape(name), "--all", "--output", "json"])
        for item in json.loads(out or "[]"):
            if item.get("name") == name:
                chart = item.get("chart", "")
                chart_name, chart_version = split_chart(chart)
                return {"name": name, "namespace": namespace, "chart": chart_name, "chart_version": chart_version,
                        "app_version": item.get("app_version"), "status": item.get("status"),
                        "revision": int(item.get("revision") or 0)}
        return None

    def chart_args(self, chart):
        """Helm's arguments naming ``chart``. A repository whose URL carries credentials becomes an entry of a
        repository config written 0600 into the task's directory, its index fetched with ``helm repo update``, so the
        password never reaches Helm's argv."""
        if not chart.repo_credentials:
            return chart.args()
        if not self.workdir:
            raise HelmError("no private directory for the chart repository's credentials")
        self.secrets.extend(s for s in (chart.repo_password, quote_userinfo(chart.repo_password)) if s)
        config = write_private_file(os.path.join(self.workdir, "repositories.yaml"), yaml.safe_dump(chart.repository_config()))
        self.run(["repo", "update", REPOSITORY_NAME, "--repository-config", config])
        return ["%s/%s" % (REPOSITORY_NAME, chart.ref), "--repository-config", config] + chart.version_args()

    def upgrade_install(self, name, chart, namespace, values, create_namespace=True, wait=False, timeout=300,
                        dry_run=False, post_renderer=()):
        """``helm upgrade --install`` with ``values`` given on Helm's standard input; ``post_renderer``: the executable
        and its arguments, when the collection post-renders the chart."""
        args = ["upgrade", name] + self.chart_args(chart) + ["--install", "--namespace", namespace, "--values", "-"]
        if post_renderer:
            args += ["--post-renderer", post_renderer[0]]
            for arg in post_renderer[1:]:
                args += ["--post-renderer-args", arg]
        if create_namespace:
            args.append("--create-namespace")
        if wait:
            args += ["--wait", "--timeout", "%ds" % max(1, int(timeout))]
        if dry_run:
            args.append("--dry-run=server" if self.version >= (3, 13, 0) else "--dry-run")
        self.run(args, data=yaml.safe_dump(values))

    # Helm carries out a stored release record's hooks as instructions, and the record is a Secret anyone who may
    # write Secrets in its namespace can plant: with the member's admin credential, a planted pre-delete or
    # pre-rollback hook (a Job, a ClusterRoleBinding) would run. The agent charts have no hooks, so rollbacks and
    # uninstalls run none.
    NO_HOOKS = "--no-hooks"

    def rollback(self, name, namespace, revision):
        """``helm rollback``: a new revision with the chart and values of ``revision`` (Helm keeps the history)."""
        self.run(["rollback", name, str(int(revision)), "--namespace", namespace, self.NO_HOOKS])

    def uninstall(self, name, namespace, wait=False, timeout=300):
        args = ["uninstall", name, "--namespace", namespace, self.NO_HOOKS]
        if wait:
            args += ["--wait", "--timeout", "%ds" % max(1, int(timeout))]
        self.run(args)


def quote_userinfo(text):
    """``text`` as it appears percent-encoded in a URL's user information (how Helm may print it in an error)."""
    return quote(text or "", safe="")


def _ref_name(ref):
    """The chart name a reference points at: ``oci://r/charts/fleet-agent:1`` or ``./fleet-agent-0.16.0.tgz`` -> ``fleet-agent``."""
    name = ref.rstrip("/").rsplit("/", 1)[-1]
    if name.endswith(".tgz"):
        return split_chart(name[:-4])[0]
    return name.split(":")[0].split("@")[0]


HELM_STORAGE_PREFIX = "sh.helm.release.v1."
_GZIP_MAGIC = b"\x1f\x8b\x08"


def decode_release(data):
    """Helm's storage payload (the Secret's ``release`` key, base64 of base64(gzip(JSON))) as a dict."""
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:3] == _GZIP_MAGIC:
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def encode_release(payload):
    """The inverse of decode_release: the Secret data value Helm's storage driver writes for ``payload``."""
    raw = gzip.compress(json.dumps(payload, separators=(",", ":")).encode("utf-8"), mtime=0)
    return base64.b64encode(base64.b64encode(raw)).decode("ascii")


def release_from_storage(payload, namespace):
    """The release fields the collection uses, from a decoded Helm storage payload."""
    info = payload.get("info") or {}
    metadata = (payload.get("chart") or {}).get("metadata") or {}
    return {
        "name": payload.get("name"),
        "namespace": payload.get("namespace") or namespace,
        "revision": int(payload.get("version") or 0),
        "status": info.get("status"),
        "chart": metadata.get("name"),
        "chart_version": metadata.get("version"),
        "app_version": metadata.get("appVersion"),
        "values": payload.get("config") or {},
        "updated": info.get("last_deployed"),
    }


def _decode_secret(secret, namespace, name):
    data = (secret.get("data") or {}).get("release")
    if not data:
        return None
    try:
        payload = decode_release(data)
    except (ValueError, TypeError, OSError) as exc:
        raise HelmError("cannot decode Helm's record of release %s/%s (Secret %s): %s" % (
            namespace, name, secret["metadata"]["name"], exc), "Inspect it with helm history %s -n %s" % (name, namespace))
    return release_from_storage(payload, namespace)


def storage_revision(secret):
    """``(release name, revision)`` from a Helm storage Secret's labels; the revision is None when unreadable."""
    labels = (secret.get("metadata") or {}).get("labels") or {}
    try:
        return labels.get("name"), int(labels.get("version") or 0)
    except ValueError:
        return labels.get("name"), None


def read_releases(kube, namespace, selector="owner=helm"):
    """``{release name: release}`` (each at its newest revision) from Helm's storage Secrets, in one LIST."""
    return releases_of(kube.list(SECRET, namespace, label_selector=selector), namespace)


def helm_storage(secrets):
    """The Secrets of ``secrets`` that are Helm's storage (label owner=helm): what read_releases' LIST selects."""
    return [secret for secret in secrets if ((secret.get("metadata") or {}).get("labels") or {}).get("owner") == "helm"]


def releases_of(secrets, namespace):
    """``{release name: release}`` (each at its newest revision) from Helm's storage Secrets of ``namespace``."""
    newest = {}
    for secret in secrets:
        name, revision = storage_revision(secret)
        if name and revision is not None and (name not in newest or revision > newest[name][0]):
            newest[name] = (revision, secret)
    releases = {}
    for name, (_revision, secret) in newest.items():
        release = _decode_secret(secret, namespace, name)
        if release is not None:
            releases[name] = release
    return releases


def check_storage_driver(environ=None):
    """Refuse a Helm storage driver other than Secrets: releases are read from Helm's storage Secrets (read_release),
    so with E(HELM_DRIVER)=configmap a release Helm made would look absent and be installed again."""
    driver = (os.environ if environ is None else environ).get("HELM_DRIVER", "")
    if driver.lower() not in ("", "secret", "secrets"):
        raise ParameterError("HELM_DRIVER", "Helm's storage driver %r is not supported; the collection reads Helm's "
                             "releases from their storage Secrets" % driver,
                             "Unset HELM_DRIVER (or set it to secret) for these tasks")


def read_release(kube, name, namespace):
    """The newest revision of release ``name`` from Helm's own storage Secrets (one LIST, no helm process), or None.

    Returns ``{name, namespace, revision, status, chart, chart_version, app_version, values, updated}``.
    ``values`` are the user-supplied values and may carry secrets: the caller hides them.
    """
    return read_releases(kube, namespace, release_selector(name)).get(name)


def read_release_history(kube, name, namespace):
    """``{revision: release}`` of every revision Helm keeps of release ``name`` (one LIST, no helm process), each as
    read_release returns it; {} when there is none."""
    history = {}
    for secret in kube.list(SECRET, namespace, label_selector=release_selector(name)):
        secret_name, revision = storage_revision(secret)
        if secret_name == name and revision is not None:
            release = _decode_secret(secret, namespace, name)
            if release is not None:
                history[revision] = release
    return history


def release_selector(name):
    check_storage_driver()
    if not _RELEASE_NAME.match(name or "") or len(name) > 53:
        # It goes into a label selector: "x,owner!=helm" would select other Secrets.
        raise ParameterError("release_name", "%r is not a valid Helm release name" % (name,),
                             "Use at most 53 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")
    return "owner=helm,name=%s" % name


_RELEASE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def release_view(release):
    """A release without its values (safe to return): name, namespace, revision, status, chart, versions, updated."""
    if not release:
        return None
    return dict((k, v) for k, v in release.items() if k != "values")


class ReleasePlan:
    """What Helm must do to a release: ``action`` (none, install, upgrade, rollback) and ``reasons`` (plain sentences, no values).

    The one install/upgrade decision for every agent, and the one check-mode strategy: check mode
    reports the plan as the predicted change, with no ``helm --dry-run``, so it works on fresh targets.
    """

    NONE = "none"
    INSTALL = "install"
    UPGRADE = "upgrade"
    ROLLBACK = "rollback"

    def __init__(self, action, reasons=None):
        self.action = action
        self.reasons = list(reasons or [])

    @property
    def changes(self):
        return self.action != self.NONE

    def __repr__(self):
        return "ReleasePlan(%r, %r)" % (self.action, self.reasons)

    @classmethod
    def decide(cls, release, chart_name, chart_version, desired_values):
        """From the live release (``read_release``'s dict or None) and what is wanted."""
        if release is None:
            return cls(cls.INSTALL, ["the release is not installed"])
        status = release.get("status")
        if status == "uninstalled":
            return cls(cls.INSTALL, ["the release was uninstalled (its history was kept)"])
        reasons = []
        if status != "deployed":
            reasons.append("the release status is %s, not deployed" % (status or "unknown"))
        if chart_name and release.get("chart") and release.get("chart") != chart_name:
            reasons.append("the release runs chart %s, not %s" % (release.get("chart"), chart_name))
        if chart_version and release.get("chart_version") != chart_version:
            reasons.append("chart version %s -> %s" % (release.get("chart_version"), chart_version))
        if values_differ(release.get("values"), desired_values):
            reasons.append("values differ")
        return cls(cls.UPGRADE if reasons else cls.NONE, reasons)

    @classmethod
    def rollback(cls, history, revision):
        """Rolling the release back to ``revision`` (option ``rollback_to_revision``), from ``history``
        (read_release_history's ``{revision: release}``): none when the newest revision is deployed and already runs
        that revision's chart, version and values (so a re-run changes nothing)."""
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
            raise ParameterError("rollback_to_revision", "%r is not a release revision" % (revision,),
                                 "Give the revision (1 or more) the agent release ran before, e.g. member_info's release.revision")
        current = history[max(history)] if history else None
        if current is None or current.get("status") == "uninstalled":
            raise ParameterError("rollback_to_revision", "the release is not installed, so there is nothing to roll back",
                                 "Install the agent first (the module without rollback_to_revision)")
        target = history.get(revision)
        if target is None:
            raise ParameterError("rollback_to_revision", "the release has no revision %d; Helm keeps revisions %s" % (
                revision, ", ".join(str(r) for r in sorted(history))), "Give one of the revisions Helm keeps (helm history)")
        reasons = []
        if current.get("status") != "deployed":
            reasons.append("the release status is %s, not deployed" % (current.get("status") or "unknown"))
        if (current.get("chart"), current.get("chart_version")) != (target.get("chart"), target.get("chart_version")):
            reasons.append("chart %s %s -> %s %s (revision %d)" % (current.get("chart"), current.get("chart_version"),
                                                                   target.get("chart"), target.get("chart_version"), revision))
        if values_differ(current.get("values"), target.get("values")):
            reasons.append("values differ from revision %d's" % revision)
        return cls(cls.ROLLBACK if reasons else cls.NONE, reasons)


def split_chart(text):
    """``fleet-agent-0.16.0-rc.1`` -> ``("fleet-agent", "0.16.0-rc.1")``: the version starts at the first ``-<digits>.<digits>``."""
    match = re.match(r"^(.*?)-(v?\d+\.\d+.*)$", text or "")
    if not match:
        return text or "", ""
    return match.group(1), match.group(2)


def values_differ(live, desired):
    """Whether a release's user values differ from ``desired`` (compared as JSON data)."""
    return json.loads(json.dumps(live or {}, sort_keys=True)) != json.loads(json.dumps(desired or {}, sort_keys=True))
