"""Pod spec -> host process: the pod's files.

A ``PodSandbox`` is the host-side stand-in for what a kubelet and a container runtime set up for a
pod: a private directory with a kubeconfig for the pod's own cluster that authenticates with a
TokenRequest token for the pod's ServiceAccount (re-minted at 60 % of its lifetime), the pod's
volumes (emptyDir; secret and configMap items 0600; projected service-account tokens, configMaps
and downwardAPI; hostPath becomes an empty directory), and per container a root directory in which
every ``mountPath`` is a symlink to its volume (``subPath`` honoured). ``container_config`` turns a
container into (argv, env, cwd) with ``podspec``'s pure rules.
"""

import base64
import logging
import os
import shutil
import time
from pathlib import Path

import yaml

from fleetlab import podspec
from fleetlab.kubeapi import TOKEN_SECONDS
from fleetlab.paths import write_private
from fleetlab.podspec import NotReadyYet

LOG = logging.getLogger('fleetlab.runner')


class PodSandbox:
    """The pod directory, credentials, volumes and container roots of one realised pod."""

    def __init__(self, api, cluster, pod, directory):
        self.api = api
        self.cluster = cluster
        self.pod = pod                 # replaced by the runner with the latest version
        self.dir = directory
        self.namespace = pod['metadata']['namespace']
        self.name = pod['metadata']['name']
        self.tokens = {}               # (audience, targets, seconds) -> (issued, expiry)
        self.prepared = False
        self.last_volume_refresh = 0.0

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

    def refresh(self):
        """Prepare if needed, rewrite volumes once a minute, re-mint tokens that age (NotReadyYet if blocked)."""
        self.prepare()
        if time.time() - self.last_volume_refresh > 60:
            self.materialise_volumes()
        self.refresh_tokens()

    def remove(self):
        """Delete the pod directory."""
        shutil.rmtree(self.dir, ignore_errors=True)

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

    # --- volumes ---------------------------------------------------------------------------------
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
                self._write_items(target, self.secret_data(src.get('secretName'), src.get('optional')), src.get('items'))
            elif 'configMap' in volume:
                src = volume['configMap']
                self._write_items(target, self.configmap_data(src.get('name'), src.get('optional')), src.get('items'))
            elif 'projected' in volume:
                for source in volume['projected'].get('sources') or []:
                    self._write_projection(target, source)
            elif 'downwardAPI' in volume:
                self._write_downward(target, volume['downwardAPI'])
            elif 'hostPath' in volume:
                LOG.warning('%s %s: hostPath volume %s is an empty directory in the lab', self.cluster, self.label(), volume['name'])
        self.last_volume_refresh = time.time()

    def secret_data(self, name, optional):
        """``{key: bytes}`` of a Secret in the pod's namespace ({} if optional and absent)."""
        secret = self.api.secret(self.namespace, name) if name else None
        if secret is None:
            if optional:
                return {}
            raise NotReadyYet('secret "%s" not found' % name)
        return {k: base64.b64decode(v) for k, v in (secret.get('data') or {}).items()}

    def configmap_data(self, name, optional):
        """``{key: bytes}`` of a ConfigMap in the pod's namespace ({} if optional and absent)."""
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

    def _write_downward(self, target, source):
        for item in source.get('items') or []:
            if 'fieldRef' in item:
                write_private(target / item['path'], podspec.field_value(self.pod, item['fieldRef']['fieldPath']))

    def _write_projection(self, target, source):
        if 'serviceAccountToken' in source:
            src = source['serviceAccountToken']
            path = target / src['path']
            key = (src.get('audience') or '', (str(path),), int(src.get('expirationSeconds') or TOKEN_SECONDS))
            if key not in self.tokens:
                self._write_token(key[0], [path], key[2])
        elif 'secret' in source:
            src = source['secret']
            self._write_items(target, self.secret_data(src.get('name'), src.get('optional')), src.get('items'))
        elif 'configMap' in source:
            src = source['configMap']
            self._write_items(target, self.configmap_data(src.get('name'), src.get('optional')), src.get('items'))
        elif 'downwardAPI' in source:
            self._write_downward(target, source['downwardAPI'])

    # --- containers --------------------------------------------------------------------------
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
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.exists():
                shutil.rmtree(link)
            link.symlink_to(source)
            result.append((mount_path, str(link)))
        result.sort(key=lambda pair: len(pair[0]), reverse=True)
        return result

    def container_config(self, container, binary_name, binary_path):
        """(argv, env, cwd) of a container's host process; NotReadyYet while a Secret/ConfigMap is missing."""
        env = podspec.container_env(self.pod, container, self.secret_data, self.configmap_data)
        argv = podspec.host_argv(container, env, binary_path, binary_name)
        mounts = self.mounts(container)
        root = self.container_root(container)
        argv = [argv[0]] + [podspec.rewrite_paths(a, mounts) for a in argv[1:]]
        tmp = root / 'tmp'
        tmp.mkdir(parents=True, exist_ok=True)
        env = podspec.host_env(env, mounts, binary_name, {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': str(root), 'HOSTNAME': self.name,
            'TMPDIR': str(tmp), 'KUBECONFIG': str(self.dir / 'kubeconfig')})
        workdir = container.get('workingDir')
        cwd = root / workdir.lstrip('/') if workdir else root
        cwd.mkdir(parents=True, exist_ok=True)
        return argv, env, cwd
