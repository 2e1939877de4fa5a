"""One etcd for the lab; per cluster a kube-apiserver and a kube-controller-manager.

Every cluster keeps its data under its own ``--etcd-prefix`` in the shared etcd, has its own CA,
serving certificate, admin client certificate (``O=system:masters``) and service-account key.
"""

import base64
import http.client
import json
import os
import shlex
import ssl

import yaml

from fleetlab import processes
from fleetlab.paths import write_private
from fleetlab.pki import ClusterPKI

SERVICE_CIDR = '10.0.0.0/24'

# Go runtime settings for the control-plane processes: a lower GC target keeps their resident
# memory down (several API servers share one small machine). Measured 2026-11-21, hub + 2 members
# with controllers: hub kube-apiserver 309 MiB with GOGC=50 vs 419 MiB with the default 100;
# start-up time unchanged (11.6 s vs 14.1 s).
GO_ENV = {'GOGC': '50'}


def go_env(paths):
    """Environment for a Go control-plane process (temporary files inside the lab directory)."""
    tmp = paths.work / 'tmp'
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(GO_ENV)
    env['TMPDIR'] = str(tmp)
    return env


class Etcd:
    """The lab's single etcd."""

    def __init__(self, paths, binary, client_port, peer_port):
        self.paths = paths
        self.binary = binary
        self.client_port = client_port
        self.peer_port = peer_port
        self.url = 'http://127.0.0.1:%d' % client_port
        self.log = paths.log('etcd')

    def argv(self):
        """Command line."""
        peer = 'http://127.0.0.1:%d' % self.peer_port
        return [str(self.binary), '--name=lab', '--data-dir=%s' % self.paths.etcd_data,
                '--listen-client-urls=%s' % self.url, '--advertise-client-urls=%s' % self.url,
                '--listen-peer-urls=%s' % peer, '--initial-advertise-peer-urls=%s' % peer,
                '--initial-cluster=lab=%s' % peer, '--initial-cluster-state=new',
                '--unsafe-no-fsync', '--quota-backend-bytes=2147483648', '--snapshot-count=10000',
                '--log-level=warn']

    def start(self):
        """Start etcd (returns the Popen)."""
        self.paths.etcd_data.mkdir(parents=True, exist_ok=True)
        os.chmod(self.paths.etcd_data, 0o700)
        return processes.spawn('etcd', self.argv(), self.log, env=go_env(self.paths), cwd=str(self.paths.root))

    def healthy(self):
        """True when etcd answers /health with health true."""
        try:
            conn = http.client.HTTPConnection('127.0.0.1', self.client_port, timeout=2)
            conn.request('GET', '/health')
            body = conn.getresponse().read()
            conn.close()
            return json.loads(body).get('health') == 'true'
        except (OSError, ValueError, http.client.HTTPException):
            return False


class Cluster:
    """A lab cluster: names, ports, PKI and the command lines of its control plane."""

    def __init__(self, paths, name, role, port, etcd_url, binaries):
        self.paths = paths
        self.name = name
        self.role = role
        self.port = port
        self.etcd_url = etcd_url
        self.binaries = binaries
        self.url = 'https://127.0.0.1:%d' % port
        self.pki = ClusterPKI(paths.pki_dir(name), name)
        self.admin_kubeconfig = paths.pki_dir(name) / 'admin.kubeconfig'
        self.apiserver_log = paths.log('%s-kube-apiserver' % name)
        self.kcm_log = paths.log('%s-kube-controller-manager' % name)

    @property
    def etcd_prefix(self):
        """Key prefix of this cluster in the shared etcd."""
        return '/fleetops-lab/%s' % self.name

    def prepare(self):
        """Create PKI and the admin kubeconfig used by the controller manager."""
        self.pki.create()
        write_private(self.admin_kubeconfig, yaml.safe_dump(kubeconfig([self])))

    def apiserver_argv(self):
        """kube-apiserver command line."""
        pki = self.pki
        return [str(self.binaries['kube-apiserver']),
                '--etcd-servers=%s' % self.etcd_url, '--etcd-prefix=%s' % self.etcd_prefix,
                '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', '--secure-port=%d' % self.port,
                '--cert-dir=%s' % pki.dir,
                '--tls-cert-file=%s' % pki.serving_cert, '--tls-private-key-file=%s' % pki.serving_key,
                '--client-ca-file=%s' % pki.ca_cert,
                '--authorization-mode=RBAC',
                '--service-account-issuer=%s' % self.url,
                '--service-account-key-file=%s' % pki.sa_pub,
                '--service-account-signing-key-file=%s' % pki.sa_key,
                '--service-cluster-ip-range=%s' % SERVICE_CIDR,
                '--allow-privileged=true',
                '--profiling=false',
                # the master endpoints reconciler cannot publish a loopback address; nothing in the lab
                # reaches the API through the in-cluster `kubernetes` Service
                '--endpoint-reconciler-type=none',
                '--v=1'] + shlex.split(os.environ.get('FLEETOPS_LAB_APISERVER_ARGS', ''))

    def kcm_argv(self):
        """kube-controller-manager command line (no serving port: --secure-port=0)."""
        pki = self.pki
        return [str(self.binaries['kube-controller-manager']),
                '--kubeconfig=%s' % self.admin_kubeconfig,
                '--service-account-private-key-file=%s' % pki.sa_key,
                '--root-ca-file=%s' % pki.ca_cert,
                '--cluster-name=%s' % self.name,
                '--leader-elect=false', '--bind-address=127.0.0.1', '--secure-port=0',
                '--profiling=false',
                '--v=1']

    def start_apiserver(self):
        """Start kube-apiserver (returns the Popen)."""
        return processes.spawn('%s kube-apiserver' % self.name, self.apiserver_argv(), self.apiserver_log, env=go_env(self.paths),
                               cwd=str(self.paths.root))

    def start_kcm(self):
        """Start kube-controller-manager (returns the Popen)."""
        return processes.spawn('%s kube-controller-manager' % self.name, self.kcm_argv(), self.kcm_log, env=go_env(self.paths),
                               cwd=str(self.paths.root))

    def _ssl(self):
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return ctx

    def get(self, path, timeout=3):
        """GET ``path`` as admin: (status, body bytes); (0, b'') if the server is unreachable."""
        try:
            conn = http.client.HTTPSConnection('127.0.0.1', self.port, timeout=timeout, context=self._ssl())
            conn.request('GET', path)
            resp = conn.getresponse()
            result = (resp.status, resp.read())
            conn.close()
            return result
        except (OSError, http.client.HTTPException):
            return (0, b'')

    def apiserver_ready(self):
        """True when /readyz answers ok."""
        return self.get('/readyz')[0] == 200

    def kcm_ready(self):
        """True when the controller manager did its first work: the default ServiceAccount exists."""
        return self.get('/api/v1/namespaces/default/serviceaccounts/default')[0] == 200

    def ca_pem(self):
        """The cluster CA certificate (PEM text)."""
        return self.pki.ca_cert.read_text()


def kubeconfig(clusters, admin=True):
    """A kubeconfig dict with one context per cluster (named after it), admin client certs inline."""
    config = {'apiVersion': 'v1', 'kind': 'Config', 'preferences': {}, 'clusters': [], 'users': [], 'contexts': []}
    for cluster in clusters:
        config['clusters'].append({'name': cluster.name, 'cluster': {
            'server': cluster.url,
            'certificate-authority-data': base64.b64encode(cluster.pki.ca_cert.read_bytes()).decode()}})
        if admin:
            config['users'].append({'name': '%s-admin' % cluster.name, 'user': {
                'client-certificate-data': base64.b64encode(cluster.pki.admin_cert.read_bytes()).decode(),
                'client-key-data': base64.b64encode(cluster.pki.admin_key.read_bytes()).decode()}})
        config['contexts'].append({'name': cluster.name, 'context': {'cluster': cluster.name, 'user': '%s-admin' % cluster.name}})
    config['current-context'] = clusters[0].name if clusters else ''
    return config
