"""The agent runner: a minimal kubelet for the images the lab can build.

The lab has no kubelet, no scheduler and no container engine, so a Pod stays Pending forever.
The runner (one background process for all lab clusters) watches every cluster's Pods. A Pod that
is not bound to a node and whose every container image repository is in
``build.IMAGE_BINARIES`` is *realised*: each container runs as a host process of the matching
locally built binary, the way a kubelet would run it:

- argv: ``[binary] + command[1:] + args`` (the binary stands in for the image's entrypoint or for
  ``command[0]``), with ``$(VAR)`` references expanded as Kubernetes does;
- env: the container's ``env`` and ``envFrom``; ``valueFrom`` ``fieldRef`` (metadata.name,
  metadata.namespace, metadata.uid, labels/annotations, spec.serviceAccountName, spec.nodeName,
  status.hostIP/podIP), ``secretKeyRef``, ``configMapKeyRef`` and ``resourceFieldRef`` are
  resolved; ``HOSTNAME`` is the pod name, ``HOME`` the container's root directory;
- ``KUBECONFIG`` names a per-pod kubeconfig for the pod's own cluster that authenticates with a
  token minted by TokenRequest for the pod's ServiceAccount (bound to the Pod, so it dies with it),
  refreshed before expiry through ``tokenFile``: the process has exactly the rights its chart
  grants;
- volumes are materialised under the pod directory (emptyDir; secret and configMap items with
  mode 0600; projected service-account tokens, configMaps and downwardAPI; hostPath becomes an
  empty directory). Each container gets a root directory in which every ``mountPath`` is a
  symlink to its volume (``subPath`` honoured); args and env values that name a mount path (such
  as ``CONFIG_PATH=/config/token``) are rewritten to the host path, ``TMPDIR`` points at the
  container's ``/tmp``;
- several agents share one host, so per-binary ``HOST_SETTINGS`` turn metrics, health-probe and
  pprof listeners off (port 0) and make implicit default paths explicit so they get mapped.

Pod status: once every container has run for a moment the runner writes the Pod's status through
the ``pods/status`` subresource like a kubelet (phase Running, conditions Initialized,
ContainersReady and Ready, containerStatuses). The real ReplicaSet and Deployment controllers then
compute ``readyReplicas``/``availableReplicas``, so ``helm --wait`` and readiness checks behave as
on a real cluster. A container that exits is restarted with back-off (restartCount, lastState and
Ready=False are reported meanwhile).

Lifecycle follows the Pod: ``helm upgrade`` that changes the pod template rolls out a new Pod
(new processes with the new env) and the old Pod's deletion stops the old ones; deleting the
Deployment or uninstalling the release deletes its Pods (garbage collection) and stops them.
Logs go to ``.lab/logs/<cluster>/<namespace>.<pod>.<container>.log``.
"""

import base64
import calendar
import json
import logging
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import yaml

from fleetlab import processes
from fleetlab import state as labstate
from fleetlab.paths import LabPaths, write_private

LOG = logging.getLogger('fleetlab.runner')

# lifetime of minted tokens (the API server's minimum is 600 s); re-minted at 60 % of it
TOKEN_SECONDS = max(600, int(os.environ.get('FLEETOPS_LAB_TOKEN_SECONDS', '3600')))
READY_AFTER = 1.0
MAX_BACKOFF = 60.0
STOP_GRACE = 10.0
SHUTDOWN_GRACE = 3.0   # runner shutdown (lab down): KubeFleet's hubagent ignores SIGTERM

# Host-process adjustments per binary (name as in build.ensure_binaries):
#   env:        set (overrides the container's value)
#   env_default: set only when the container does not set it
#   flags:      replace or append --flag=value
#   path_flags: append --flag=<default path> when absent, so the mount mapping applies to it
HOST_SETTINGS = {
    'fleetcontroller': {'env': {'FLEET_METRICS_BIND_ADDRESS': '0', 'FLEET_HEALTHPROBE_BIND_ADDRESS': '0',
                                'GITOPS_METRICS_BIND_ADDRESS': '0', 'HELMOPS_METRICS_BIND_ADDRESS': '0'}},
    'fleetagent': {'env': {'FLEET_AGENT_METRICS_BIND_ADDRESS': '0', 'FLEET_AGENT_PROBE_BIND_ADDRESS': '0',
                           'FLEET_AGENT_PPROF_DISABLED': 'true'},
                   'env_default': {'CHECKIN_INTERVAL': os.environ.get('FLEETOPS_LAB_CHECKIN_INTERVAL', '15s')}},
    'hubagent': {'flags': {'--metrics-bind-address': '0', '--health-probe-bind-address': '0'}},
    'memberagent': {'flags': {'--metrics-bind-address': '0', '--health-probe-bind-address': '0',
                              '--hub-metrics-bind-address': '0', '--hub-health-probe-bind-address': '0'}},
    'authtoken': {'path_flags': {'--file-path': '/config/token'}},
}


def image_repository(image):
    """Repository part of an image reference, normalised (no tag/digest, no docker.io/library)."""
    ref = image.split('@', 1)[0]
    slash = ref.rfind('/')
    colon = ref.rfind(':')
    if colon > slash:
        ref = ref[:colon]
    for prefix in ('docker.io/library/', 'docker.io/', 'index.docker.io/'):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    return ref


def lookup_binary(image, image_binaries):
    """Binary name for an image (None if unknown); tolerates a registry prefix on either side."""
    repo = image_repository(image)
    table = {image_repository(key): value for key, value in image_binaries.items()}
    if repo in table:
        return table[repo]
    for key, value in table.items():
        if repo.endswith('/' + key) or key.endswith('/' + repo):
            return value
    return None


_VAR_REF = re.compile(r'\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)')


def expand(value, env):
    """Kubernetes ``$(VAR)`` expansion: defined vars are substituted, ``$$`` escapes, others stay."""
    def repl(match):
        if match.group(0) == '$$':
            return '$'
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _VAR_REF.sub(repl, value)


def rewrite_paths(value, mounts):
    """Replace mount paths (at a path boundary) in ``value`` by their host paths."""
    for mount_path, host_path in mounts:
        pattern = r'(?:(?<=^)|(?<=[=:,\s]))' + re.escape(mount_path.rstrip('/')) + r'(?=$|[/\s,:;])'
        value = re.sub(pattern, lambda _m, hp=host_path: hp, value)
    return value


def apply_flags(argv, flags):
    """Drop existing ``--flag``/``-flag`` (with ``=value`` or a separate value) and append ``--flag=value``."""
    result = list(argv)
    for flag, value in flags.items():
        bare = flag.lstrip('-')
        cleaned = [result[0]]
        skip = False
        for arg in result[1:]:
            if skip:
                skip = False
                continue
            name = arg.split('=', 1)[0].lstrip('-') if arg.startswith('-') else None
            if name == bare:
                if '=' not in arg:
                    skip = True
                continue
            cleaned.append(arg)
        result = cleaned + ['%s=%s' % (flag, value)]
    return result


def has_flag(argv, flag):
    """True if ``flag`` is given in ``argv``."""
    bare = flag.lstrip('-')
    return any(arg.startswith('-') and arg.split('=', 1)[0].lstrip('-') == bare for arg in argv[1:])


def quantity(text):
    """Parse a Kubernetes resource quantity to a float."""
    suffixes = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60,
                'n': 1e-9, 'u': 1e-6, 'm': 1e-3, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18}
    text = str(text)
    for suffix in sorted(suffixes, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * suffixes[suffix]
    return float(text)


def now_rfc3339():
    """Current UTC time as Kubernetes writes it."""
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


class NotReadyYet(Exception):
    """A container cannot be configured yet (missing Secret/ConfigMap key): retried later."""


class ClusterAPI:
    """Small raw-JSON client for one cluster (admin credentials), built on the kubernetes client."""

    def __init__(self, name, kubeconfig, context):
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel
        self.name = name
        self._client_mod = client
        self.api_client = config.new_client_from_config(config_file=str(kubeconfig), context=context)
        self.core = client.CoreV1Api(self.api_client)
        conf = self.api_client.configuration
        self.url = conf.host
        with open(kubeconfig, encoding='utf-8') as handle:
            kc = yaml.safe_load(handle)
        cluster_name = next(c['context']['cluster'] for c in kc['contexts'] if c['name'] == context)
        self.ca_data = next(c['cluster']['certificate-authority-data'] for c in kc['clusters'] if c['name'] == cluster_name)

    @staticmethod
    def _json(resp):
        return json.loads(resp.data)

    def list_pods(self):
        """All pods (raw dict list response)."""
        return self._json(self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=30))

    def watch_pods(self, resource_version, timeout=240):
        """Raw streaming watch response of all pods."""
        return self.core.list_pod_for_all_namespaces(watch=True, resource_version=resource_version, allow_watch_bookmarks=True,
                                                     timeout_seconds=timeout, _preload_content=False,
                                                     _request_timeout=(10, timeout + 30))

    def secret(self, namespace, name):
        """Secret as dict, None if absent."""
        return self._get(self.core.read_namespaced_secret, name, namespace)

    def configmap(self, namespace, name):
        """ConfigMap as dict, None if absent."""
        return self._get(self.core.read_namespaced_config_map, name, namespace)

    def _get(self, func, name, namespace):
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            return self._json(func(name, namespace, _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def token(self, pod, audiences=None, seconds=TOKEN_SECONDS):
        """(token, expiry epoch) minted by TokenRequest for the pod's ServiceAccount, bound to the pod."""
        meta = pod['metadata']
        body = {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
                'spec': {'audiences': list(audiences or []), 'expirationSeconds': seconds,
                         'boundObjectRef': {'apiVersion': 'v1', 'kind': 'Pod', 'name': meta['name'], 'uid': meta['uid']}}}
        sa_name = pod['spec'].get('serviceAccountName') or 'default'
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            resp = self._json(self.core.create_namespaced_service_account_token(sa_name, meta['namespace'], body,
                                                                                _preload_content=False, _request_timeout=30))
        except ApiException as exc:
            if exc.status in (403, 404):
                raise NotReadyYet('token for serviceaccount "%s": %s' % (sa_name, exc.reason)) from exc
            raise
        expiry = time.time() + seconds
        stamp = resp.get('status', {}).get('expirationTimestamp')
        if stamp:
            expiry = calendar.timegm(time.strptime(stamp, '%Y-%m-%dT%H:%M:%SZ'))
        return resp['status']['token'], expiry

    def patch_pod_status(self, namespace, name, status):
        """Strategic-merge patch of the pod's status subresource (404 ignored)."""
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel
        try:
            self.core.patch_namespaced_pod_status(name, namespace, {'status': status}, _preload_content=False, _request_timeout=30)
        except ApiException as exc:
            if exc.status != 404:
                raise


class ContainerRun:
    """One container realised as a host process."""

    def __init__(self, spec, binary_name, binary_path):
        self.spec = spec
        self.name = spec['name']
        self.binary_name = binary_name
        self.binary_path = binary_path
        self.proc = None
        self.entry = None
        self.started_at = None
        self.started_rfc = None
        self.restarts = 0
        self.next_start = 0.0
        self.backoff = 1.0
        self.last_exit = None
        self.waiting_reason = None
        self.waiting_message = None

    def running(self):
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None


class PodRun:
    """A realised pod: its directory, credentials, volumes and container processes."""

    def __init__(self, runner, cluster, pod, containers):
        self.runner = runner
        self.cluster = cluster
        self.pod = pod
        meta = pod['metadata']
        self.namespace = meta['namespace']
        self.name = meta['name']
        self.uid = meta['uid']
        self.dir = runner.paths.pods / cluster / ('%s_%s' % (self.namespace, self.name))
        self.containers = containers
        self.tokens = {}        # audience key -> (path list, expiry)
        self.prepared = False
        self.reported = None    # last status signature written
        self.last_volume_refresh = 0.0
        self.lock = threading.Lock()   # supervise (main loop) vs stop (deletion thread)
        self.stopped = False
        self.retry_at = 0.0     # after a missing Secret/ConfigMap/ServiceAccount, retry later

    @property
    def api(self):
        """Admin API of the pod's cluster."""
        return self.runner.apis[self.cluster]

    def label(self):
        """namespace/pod."""
        return '%s/%s' % (self.namespace, self.name)

    # --- preparation -------------------------------------------------------------------------
    def prepare(self):
        """Create the pod directory, token, kubeconfig and volumes (idempotent)."""
        if self.prepared:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self._write_token('', [self.dir / 'token'])
        kubeconfig = {'apiVersion': 'v1', 'kind': 'Config',
                      'clusters': [{'name': self.cluster, 'cluster': {'server': self.api.url,
                                                                      'certificate-authority-data': self.api.ca_data}}],
                      'users': [{'name': 'pod', 'user': {'tokenFile': str(self.dir / 'token')}}],
                      'contexts': [{'name': self.cluster, 'context': {'cluster': self.cluster, 'user': 'pod',
                                                                      'namespace': self.namespace}}],
                      'current-context': self.cluster}
        write_private(self.dir / 'kubeconfig', yaml.safe_dump(kubeconfig))
        self.materialise_volumes()
        self.prepared = True

    def _write_token(self, audience, targets, seconds=TOKEN_SECONDS):
        audiences = [audience] if audience else []
        token, expiry = self.api.token(self.pod, audiences, seconds)
        for target in targets:
            write_private(target, token)
        issued = time.time()
        self.tokens[(audience, tuple(str(t) for t in targets), seconds)] = (issued, expiry)

    def refresh_tokens(self):
        """Re-mint tokens past 60% of their lifetime."""
        for (audience, targets, seconds), (issued, expiry) in list(self.tokens.items()):
            if time.time() > issued + 0.6 * (expiry - issued):
                LOG.info('%s %s: refreshing token', self.cluster, self.label())
                self._write_token(audience, [Path(t) for t in targets], seconds)

    def volume_dir(self, name):
        """Host directory of a pod volume."""
        return self.dir / 'volumes' / name

    def materialise_volumes(self):
        """Write every volume's content (secrets/configmaps/projections are rewritten each call)."""
        for volume in self.pod['spec'].get('volumes') or []:
            target = self.volume_dir(volume['name'])
            target.mkdir(parents=True, exist_ok=True)
            if 'secret' in volume:
                src = volume['secret']
                self._write_items(target, self._secret_data(src.get('secretName'), src.get('optional')), src.get('items'))
            elif 'configMap' in volume:
                src = volume['configMap']
                self._write_items(target, self._configmap_data(src.get('name'), src.get('optional')), src.get('items'))
            elif 'projected' in volume:
                for source in volume['projected'].get('sources') or []:
                    self._write_projection(target, source)
            elif 'downwardAPI' in volume:
                for item in volume['downwardAPI'].get('items') or []:
                    if 'fieldRef' in item:
                        write_private(target / item['path'], self.field(item['fieldRef']['fieldPath']))
            elif 'hostPath' in volume:
                LOG.warning('%s %s: hostPath volume %s is an empty directory in the lab', self.cluster, self.label(), volume['name'])
        self.last_volume_refresh = time.time()

    def _secret_data(self, name, optional):
        secret = self.api.secret(self.namespace, name) if name else None
        if secret is None:
            if optional:
                return {}
            raise NotReadyYet('secret "%s" not found' % name)
        return {k: base64.b64decode(v) for k, v in (secret.get('data') or {}).items()}

    def _configmap_data(self, name, optional):
        cm = self.api.configmap(self.namespace, name) if name else None
        if cm is None:
            if optional:
                return {}
            raise NotReadyYet('configmap "%s" not found' % name)
        data = {k: v.encode() for k, v in (cm.get('data') or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (cm.get('binaryData') or {}).items()})
        return data

    @staticmethod
    def _write_items(target, data, items):
        if items:
            for item in items:
                if item['key'] in data:
                    write_private(target / item['path'], data[item['key']])
        else:
            for key, value in data.items():
                write_private(target / key, value)

    def _write_projection(self, target, source):
        if 'serviceAccountToken' in source:
            src = source['serviceAccountToken']
            path = target / src['path']
            key = (src.get('audience') or '', (str(path),), int(src.get('expirationSeconds') or TOKEN_SECONDS))
            if key not in self.tokens:
                self._write_token(key[0], [path], key[2])
        elif 'secret' in source:
            src = source['secret']
            self._write_items(target, self._secret_data(src.get('name'), src.get('optional')), src.get('items'))
        elif 'configMap' in source:
            src = source['configMap']
            self._write_items(target, self._configmap_data(src.get('name'), src.get('optional')), src.get('items'))
        elif 'downwardAPI' in source:
            for item in source['downwardAPI'].get('items') or []:
                if 'fieldRef' in item:
                    write_private(target / item['path'], self.field(item['fieldRef']['fieldPath']))

    # --- container configuration ---------------------------------------------------------------
    def field(self, path):
        """Value of a downward-API fieldRef."""
        meta = self.pod['metadata']
        match = re.match(r"metadata\.(labels|annotations)\['(.*)'\]$", path)
        if match:
            return (meta.get(match.group(1)) or {}).get(match.group(2), '')
        values = {'metadata.name': meta['name'], 'metadata.namespace': meta['namespace'], 'metadata.uid': meta['uid'],
                  'spec.serviceAccountName': self.pod['spec'].get('serviceAccountName') or 'default',
                  'spec.nodeName': self.pod['spec'].get('nodeName') or '',
                  'status.hostIP': '127.0.0.1', 'status.hostIPs': '127.0.0.1',
                  'status.podIP': '127.0.0.1', 'status.podIPs': '127.0.0.1'}
        if path == 'metadata.labels':
            return '\n'.join('%s="%s"' % kv for kv in sorted((meta.get('labels') or {}).items()))
        if path == 'metadata.annotations':
            return '\n'.join('%s="%s"' % kv for kv in sorted((meta.get('annotations') or {}).items()))
        return values.get(path, '')

    @staticmethod
    def resource_field(container, ref):
        """Value of a resourceFieldRef (limits fall back to a generous host value)."""
        kind, _sep, resource = ref['resource'].partition('.')
        section = (container.get('resources') or {}).get(kind) or {}
        raw = section.get(resource)
        divisor = quantity(ref.get('divisor') or '1')
        if raw is None:
            raw = os.cpu_count() if resource == 'cpu' else 8 * 2 ** 30
        return str(int(math.ceil(quantity(raw) / divisor)))

    def container_root(self, container):
        """Per-container root directory in which mount paths are symlinks to volumes."""
        return self.dir / 'root' / container['name']

    def mounts(self, container):
        """[(mountPath, host path)] longest first; creates the root directory symlinks."""
        root = self.container_root(container)
        root.mkdir(parents=True, exist_ok=True)
        result = []
        for mount in container.get('volumeMounts') or []:
            mount_path = mount['mountPath'].rstrip('/') or '/'
            if mount_path == '/':
                continue
            source = self.volume_dir(mount['name'])
            if mount.get('subPath'):
                source = source / mount['subPath']
                if not source.exists():
                    source.mkdir(parents=True, exist_ok=True)
            link = root / mount_path.lstrip('/')
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                if link.is_symlink() or link.is_file():
                    link.unlink()
                else:
                    shutil.rmtree(link)
            link.symlink_to(source)
            result.append((mount_path, str(link)))
        result.sort(key=lambda pair: len(pair[0]), reverse=True)
        return result

    def build(self, run):
        """(argv, env) for a container."""
        container = run.spec
        env = {}
        for source in container.get('envFrom') or []:
            prefix = source.get('prefix') or ''
            if 'configMapRef' in source:
                ref = source['configMapRef']
                data = self._configmap_data(ref.get('name'), ref.get('optional'))
            else:
                ref = source.get('secretRef') or {}
                data = self._secret_data(ref.get('name'), ref.get('optional'))
            for key, value in data.items():
                env[prefix + key] = value.decode(errors='replace')
        for item in container.get('env') or []:
            if 'valueFrom' not in item:
                env[item['name']] = expand(item.get('value') or '', env)
                continue
            value_from = item['valueFrom']
            if 'fieldRef' in value_from:
                env[item['name']] = self.field(value_from['fieldRef']['fieldPath'])
            elif 'resourceFieldRef' in value_from:
                env[item['name']] = self.resource_field(container, value_from['resourceFieldRef'])
            elif 'secretKeyRef' in value_from:
                ref = value_from['secretKeyRef']
                data = self._secret_data(ref['name'], ref.get('optional'))
                if ref['key'] in data:
                    env[item['name']] = data[ref['key']].decode(errors='replace')
                elif not ref.get('optional'):
                    raise NotReadyYet('key "%s" not in secret "%s"' % (ref['key'], ref['name']))
            elif 'configMapKeyRef' in value_from:
                ref = value_from['configMapKeyRef']
                data = self._configmap_data(ref['name'], ref.get('optional'))
                if ref['key'] in data:
                    env[item['name']] = data[ref['key']].decode(errors='replace')
                elif not ref.get('optional'):
                    raise NotReadyYet('key "%s" not in configmap "%s"' % (ref['key'], ref['name']))

        command = [expand(c, env) for c in container.get('command') or []]
        args = [expand(a, env) for a in container.get('args') or []]
        argv = [str(run.binary_path)] + command[1:] + args

        settings = HOST_SETTINGS.get(run.binary_name, {})
        for flag, default in settings.get('path_flags', {}).items():
            if not has_flag(argv, flag):
                argv.append('%s=%s' % (flag, default))
        argv = apply_flags(argv, settings.get('flags', {}))

        mounts = self.mounts(container)
        root = self.container_root(container)
        argv = [argv[0]] + [rewrite_paths(a, mounts) for a in argv[1:]]
        env = {k: rewrite_paths(v, mounts) for k, v in env.items()}
        for key, value in settings.get('env_default', {}).items():
            env.setdefault(key, value)
        env.update(settings.get('env', {}))
        tmp = root / 'tmp'
        tmp.mkdir(parents=True, exist_ok=True)
        env.update({'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': str(root), 'HOSTNAME': self.name,
                    'TMPDIR': str(tmp), 'KUBECONFIG': str(self.dir / 'kubeconfig')})
        workdir = container.get('workingDir')
        cwd = root / workdir.lstrip('/') if workdir else root
        cwd.mkdir(parents=True, exist_ok=True)
        return argv, env, cwd

    # --- process control ---------------------------------------------------------------------------
    def log_path(self, run):
        """Log file of a container."""
        return self.runner.paths.logs / self.cluster / ('%s.%s.%s.log' % (self.namespace, self.name, run.name))

    def start(self, run):
        """Start one container's process."""
        try:
            argv, env, cwd = self.build(run)
        except NotReadyYet as exc:
            run.waiting_reason, run.waiting_message = 'CreateContainerConfigError', str(exc)
            run.next_start = time.monotonic() + 5
            return
        log = self.log_path(run)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, 'ab') as handle:
            handle.write(('--- %s starting %s (restart %d)\n' % (now_rfc3339(), run.binary_name, run.restarts)).encode())
        run.proc = processes.spawn('%s %s/%s' % (self.cluster, self.label(), run.name), argv, log, env=env, cwd=str(cwd))
        run.entry = processes.record('%s/%s/%s' % (self.namespace, self.name, run.name), run.proc, binary=run.binary_name,
                                     namespace=self.namespace, pod=self.name, container=run.name, log=str(log))
        run.started_at = time.monotonic()
        run.started_rfc = now_rfc3339()
        run.waiting_reason = run.waiting_message = None
        LOG.info('%s %s: started container %s (%s) pid %d', self.cluster, self.label(), run.name, run.binary_name, run.proc.pid)

    def supervise(self):
        """Start, restart and report; returns True if the set of processes changed."""
        with self.lock:
            if self.stopped:
                return False
            return self._supervise()

    def _supervise(self):
        changed = False
        if time.monotonic() < self.retry_at:
            return False
        try:
            self.prepare()
            if time.time() - self.last_volume_refresh > 60:
                self.materialise_volumes()
            self.refresh_tokens()
        except NotReadyYet as exc:
            if not self.prepared:
                for run in self.containers:
                    run.waiting_reason, run.waiting_message = 'ContainerCreating', str(exc)
            LOG.info('%s %s: waiting: %s', self.cluster, self.label(), exc)
            self.retry_at = time.monotonic() + 5
            self.report()
            return False
        for run in self.containers:
            if run.proc is not None and run.proc.poll() is not None:
                code = run.proc.returncode
                LOG.warning('%s %s: container %s exited with %s (log %s)', self.cluster, self.label(), run.name, code, self.log_path(run))
                processes.stop(run.entry, grace=1)
                run.last_exit = {'exitCode': code if code >= 0 else 128 - code, 'finishedAt': now_rfc3339(),
                                 'startedAt': run.started_rfc, 'reason': 'Completed' if code == 0 else 'Error'}
                ran = time.monotonic() - (run.started_at or 0)
                run.backoff = 1.0 if ran > 120 else min(run.backoff * 2, MAX_BACKOFF)
                run.next_start = time.monotonic() + run.backoff
                run.restarts += 1
                run.proc = run.entry = None
                run.waiting_reason, run.waiting_message = 'CrashLoopBackOff', 'back-off %ds restarting failed container' % run.backoff
                changed = True
            if run.proc is None and time.monotonic() >= run.next_start:
                self.start(run)
                changed = changed or run.proc is not None
        self.report()
        return changed

    def status(self):
        """Pod status as a kubelet would report it."""
        statuses = []
        all_ready = True
        for run in self.containers:
            ready = run.running() and time.monotonic() - run.started_at >= READY_AFTER
            all_ready = all_ready and ready
            entry = {'name': run.name, 'image': run.spec.get('image', ''), 'imageID': '', 'restartCount': run.restarts,
                     'ready': ready, 'started': run.running()}
            if run.running():
                entry['state'] = {'running': {'startedAt': run.started_rfc}}
            else:
                entry['state'] = {'waiting': {'reason': run.waiting_reason or 'ContainerCreating',
                                              'message': run.waiting_message or ''}}
            if run.last_exit:
                entry['lastState'] = {'terminated': run.last_exit}
            statuses.append(entry)
        flag = 'True' if all_ready else 'False'
        conditions = [{'type': 'Initialized', 'status': 'True'},
                      {'type': 'ContainersReady', 'status': flag},
                      {'type': 'Ready', 'status': flag}]
        return {'phase': 'Running' if any(r.started_at for r in self.containers) else 'Pending',
                'conditions': conditions, 'containerStatuses': statuses}

    def report(self):
        """Write the pod status when it changed."""
        status = self.status()
        signature = json.dumps(status, sort_keys=True)
        if signature == self.reported:
            return
        stamp = now_rfc3339()
        for cond in status['conditions']:
            cond['lastTransitionTime'] = stamp
            cond['lastProbeTime'] = None
        if self.reported is None:
            status['startTime'] = stamp
        try:
            self.api.patch_pod_status(self.namespace, self.name, status)
            self.reported = signature
        except Exception as exc:  # pylint: disable=broad-except
            LOG.warning('%s %s: status update failed: %s', self.cluster, self.label(), exc)

    def stop(self, grace=STOP_GRACE):
        """Stop every container and remove the pod directory (no restart after this)."""
        with self.lock:
            self.stopped = True
            self._stop(grace)

    def _stop(self, grace):
        entries = [run.entry for run in self.containers if run.entry]
        for entry in entries:
            LOG.info('%s %s: stopping %s pid %d', self.cluster, self.label(), entry['name'], entry['pid'])
        processes.stop_many(entries, grace=grace)
        for run in self.containers:
            run.proc = run.entry = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Runner:
    """Supervises realised pods of every lab cluster."""

    def __init__(self, paths, clusters, kubeconfig, image_binaries, binaries):
        self.paths = paths
        self.clusters = clusters
        self.kubeconfig = kubeconfig
        self.image_binaries = image_binaries
        self.binaries = binaries
        self.apis = {name: ClusterAPI(name, kubeconfig, name) for name in clusters}
        self.lock = threading.Lock()
        self.pods = {}         # (cluster, uid) -> PodRun
        self.seen = {}         # (cluster, uid) -> pod dict (latest)
        self.stopping = threading.Event()
        self.ignored = set()

    def eligible(self, pod):
        """ContainerRuns for a pod the runner can realise, else None."""
        spec = pod.get('spec') or {}
        meta = pod['metadata']
        if spec.get('nodeName') or meta.get('deletionTimestamp'):
            return None
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            return None
        if spec.get('initContainers'):
            return None
        runs = []
        for container in spec.get('containers') or []:
            name = lookup_binary(container.get('image', ''), self.image_binaries)
            if not name or name not in self.binaries:
                return None
            runs.append(ContainerRun(container, name, self.binaries[name]))
        return runs or None

    def on_pod(self, cluster, pod):
        """Watch event: pod added or modified."""
        key = (cluster, pod['metadata']['uid'])
        with self.lock:
            self.seen[key] = pod
            current = self.pods.get(key)
            if current is not None:
                current.pod = pod
                if pod['metadata'].get('deletionTimestamp'):
                    self.pods.pop(key)
                    self._stop_later(current, pod)
                return
            runs = self.eligible(pod)
            if runs:
                LOG.info('%s %s/%s: realising pod (%s)', cluster, pod['metadata']['namespace'], pod['metadata']['name'],
                         ', '.join('%s=%s' % (r.name, r.binary_name) for r in runs))
                self.pods[key] = PodRun(self, cluster, pod, runs)

    def on_pod_gone(self, cluster, uid):
        """Watch event: pod deleted."""
        key = (cluster, uid)
        with self.lock:
            self.seen.pop(key, None)
            current = self.pods.pop(key, None)
        if current is not None:
            self._stop_later(current, current.pod)

    def _stop_later(self, podrun, pod):
        grace = pod['spec'].get('terminationGracePeriodSeconds')
        grace = STOP_GRACE if grace is None else min(float(grace), STOP_GRACE)
        threading.Thread(target=self._stop_and_record, args=(podrun, grace), daemon=True).start()

    def _stop_and_record(self, podrun, grace):
        podrun.stop(grace)
        self.record_state()

    def resync(self, cluster, pods):
        """After a (re)list: forget pods that no longer exist."""
        uids = {p['metadata']['uid'] for p in pods}
        with self.lock:
            gone = [key for key in list(self.seen) if key[0] == cluster and key[1] not in uids]
        for key in gone:
            self.on_pod_gone(*key)
        for pod in pods:
            self.on_pod(cluster, pod)

    def watch_cluster(self, cluster):
        """Thread: list+watch the cluster's pods until stopped."""
        api = self.apis[cluster]
        while not self.stopping.is_set():
            try:
                listing = api.list_pods()
                items = listing.get('items') or []
                for item in items:
                    item.setdefault('kind', 'Pod')
                self.resync(cluster, items)
                version = listing['metadata']['resourceVersion']
                while not self.stopping.is_set():
                    version = self._watch_once(cluster, api, version)
                    if version is None:
                        break
            except Exception as exc:  # pylint: disable=broad-except
                if not self.stopping.is_set():
                    LOG.warning('%s: pod watch failed (%s); relisting', cluster, exc)
                    self.stopping.wait(2)

    def _watch_once(self, cluster, api, version):
        resp = api.watch_pods(version)
        try:
            buffer = b''
            for chunk in resp.stream(4096, decode_content=False):
                if self.stopping.is_set():
                    return None
                buffer += chunk
                while b'\n' in buffer:
                    line, buffer = buffer.split(b'\n', 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get('object') or {}
                    kind = event.get('type')
                    if kind == 'ERROR':
                        return None  # expired resource version: relist
                    version = (obj.get('metadata') or {}).get('resourceVersion', version)
                    if kind == 'BOOKMARK':
                        continue
                    if kind == 'DELETED':
                        self.on_pod_gone(cluster, obj['metadata']['uid'])
                    else:
                        self.on_pod(cluster, obj)
        finally:
            resp.release_conn()
        return version

    def record_state(self):
        """Write the agent processes per cluster into state.json."""
        with self.lock:
            agents = {name: [] for name in self.clusters}
            for (cluster, _uid), podrun in self.pods.items():
                for run in podrun.containers:
                    if run.entry:
                        agents[cluster].append(dict(run.entry))

        def apply(current):
            for name, cluster in current.get('clusters', {}).items():
                cluster['agents'] = agents.get(name, [])
        labstate.update(self.paths, apply)

    def run(self):
        """Main loop (returns when stopped by SIGTERM/SIGINT)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        self.kill_stale()
        for cluster in self.clusters:
            threading.Thread(target=self.watch_cluster, args=(cluster,), daemon=True, name='watch-%s' % cluster).start()
        LOG.info('runner watching %s', ', '.join(self.clusters))
        while not self.stopping.is_set():
            changed = False
            with self.lock:
                current = list(self.pods.values())
            for podrun in current:
                try:
                    changed = podrun.supervise() or changed
                except Exception as exc:  # pylint: disable=broad-except
                    LOG.warning('%s %s: %s', podrun.cluster, podrun.label(), exc)
            if changed:
                self.record_state()
            self.stopping.wait(0.5)
        LOG.info('runner stopping')
        with self.lock:
            current = list(self.pods.values())
            self.pods.clear()
        threads = [threading.Thread(target=p.stop, args=(SHUTDOWN_GRACE,)) for p in current]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.record_state()

    def kill_stale(self):
        """Stop agent processes a previous runner left behind (recorded in state.json)."""
        current = labstate.load(self.paths) or {}
        for cluster in current.get('clusters', {}).values():
            for entry in cluster.get('agents', []):
                if processes.alive(entry):
                    LOG.warning('stopping stale agent process %s (pid %d)', entry['name'], entry['pid'])
                    processes.stop(entry, grace=2)
        shutil.rmtree(self.paths.pods, ignore_errors=True)
        self.record_state()


def main(paths=None):
    """Entry point of ``python -m fleetlab runner``."""
    paths = paths or LabPaths()
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(message)s', stream=sys.stderr)
    current = labstate.load(paths)
    if not current:
        LOG.error('no lab state in %s', paths.root)
        return 1
    runner = Runner(paths, list(current['clusters']), paths.kubeconfig, current['image_binaries'], current['binaries'])
    runner.run()
    return 0
