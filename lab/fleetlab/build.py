"""Build the lab's binaries from pinned Go modules, and find charts and CRDs in the module cache.

Every upstream has its own Go module directory under ``lab/gomod/<component>`` (``go.mod`` pins
the version and mirrors the upstream's ``replace`` directives; they conflict if merged). Binaries
are built there by package path with ``go build`` and cached outside the repository in
``${FLEETOPS_CACHE:-~/.cache/fleetops}/bin/<name>-<version>``, so a warm machine builds nothing.

Charts and CRDs are read from the module zips the Go client downloads (``go mod download -json``):
chart repositories on the web are out of reach, and nothing fetched is copied into this repository.

Substitutions (the module proxy serves only some versions, see lab/README.md): Rancher Fleet is
``github.com/rancher/fleet v0.16.0`` (v0.16.1 is refused) and KubeFleet is ``go.goms.io/fleet
v0.14.0`` (the project KubeFleet was forked from; every ``kubefleet-dev/kubefleet`` version is
refused). Both keep the APIs the collection drives (fleet.cattle.io/v1alpha1,
cluster.kubernetes-fleet.io/v1beta1).
"""

import contextlib
import fcntl
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
GOMOD_DIR = REPO_ROOT / 'lab' / 'gomod'

MIN_GO = (1, 24)
TAIL_LINES = 40

# component -> (module path, version); each component is one directory under lab/gomod.
VERSIONS = {
    'etcd': ('go.etcd.io/etcd/server/v3', 'v3.6.14'),
    'kubernetes': ('k8s.io/kubernetes', 'v1.34.10'),
    'helm': ('helm.sh/helm/v3', 'v3.21.4'),
    'fleet': ('github.com/rancher/fleet', 'v0.16.0'),
    'kubefleet': ('go.goms.io/fleet', 'v0.14.0'),
}

# Commit of each tag, as the module proxy's .info reports it; only stamped into version strings.
_FLEET_COMMIT = 'c1a43250'


def _x(pkg, **values):
    """``-X pkg.name=value`` linker flags."""
    return tuple('-X {0}.{1}={2}'.format(pkg, name, value) for name, value in values.items())


def _k8s_version_flags(version):
    major, minor = version.lstrip('v').split('.')[:2]
    flags = ()
    for pkg in ('k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'):
        flags += _x(pkg, gitVersion=version, gitMajor=major, gitMinor=minor, gitTreeState='clean')
    return flags


@dataclass(frozen=True)
class Binary:
    """One program built from a component's module directory."""

    name: str
    component: str
    package: str
    ldflags: tuple = field(default=())

    @property
    def version(self):
        """The component's pinned version."""
        return VERSIONS[self.component][1]

    @property
    def filename(self):
        """File name in the cache: ``<name>-<version>``."""
        return '{0}-{1}'.format(self.name, self.version)


_K8S = VERSIONS['kubernetes'][1]
_HELM_X = (_x('helm.sh/helm/v3/internal/version', version=VERSIONS['helm'][1], gitTreeState='clean')
           # helm's Makefile derives these from its k8s.io/client-go (v0.36): the default KubeVersion of `helm template`.
           + _x('helm.sh/helm/v3/pkg/lint/rules', k8sVersionMajor='1', k8sVersionMinor='36')
           + _x('helm.sh/helm/v3/pkg/chartutil', k8sVersionMajor='1', k8sVersionMinor='36'))
_FLEET_X = _x('github.com/rancher/fleet/pkg/version', Version=VERSIONS['fleet'][1], GitCommit=_FLEET_COMMIT)

# In build priority order: the lab needs etcd and the control plane first.
BINARIES = {b.name: b for b in (
    Binary('etcd', 'etcd', 'go.etcd.io/etcd/server/v3'),
    Binary('kube-apiserver', 'kubernetes', 'k8s.io/kubernetes/cmd/kube-apiserver', _k8s_version_flags(_K8S)),
    Binary('kube-controller-manager', 'kubernetes', 'k8s.io/kubernetes/cmd/kube-controller-manager', _k8s_version_flags(_K8S)),
    Binary('helm', 'helm', 'helm.sh/helm/v3/cmd/helm', _HELM_X),
    Binary('kubectl', 'kubernetes', 'k8s.io/kubernetes/cmd/kubectl', _k8s_version_flags(_K8S)),
    Binary('fleetcontroller', 'fleet', 'github.com/rancher/fleet/cmd/fleetcontroller', _FLEET_X),
    Binary('fleetagent', 'fleet', 'github.com/rancher/fleet/cmd/fleetagent', _FLEET_X),
    Binary('hubagent', 'kubefleet', 'go.goms.io/fleet/cmd/hubagent'),
    Binary('memberagent', 'kubefleet', 'go.goms.io/fleet/cmd/memberagent'),
    Binary('authtoken', 'kubefleet', 'go.goms.io/fleet/cmd/authtoken'),
)}

# Container image repository, as the charts render it by default -> binary that realises it.
# rancher/fleet runs fleetcontroller (plus `cleanup`, `agentmanagement`, `gitjob`, `helmops` subcommands
# in further Deployments); KubeFleet's member-agent Deployment has the refresh-token sidecar (authtoken).
IMAGE_BINARIES = {
    'rancher/fleet': 'fleetcontroller',
    'rancher/fleet-agent': 'fleetagent',
    'ghcr.io/azure/fleet/hub-agent': 'hubagent',
    'ghcr.io/azure/fleet/member-agent': 'memberagent',
    'ghcr.io/azure/fleet/refresh-token': 'authtoken',
}

FLEET_CHARTS = ('fleet-crd', 'fleet', 'fleet-agent')
KUBEFLEET_CHARTS = ('hub-agent', 'member-agent')
# CRDs that belong on member clusters (the work applier's records); every other file in
# config/crd/bases goes on the hub.
KUBEFLEET_MEMBER_CRDS = ('placement.kubernetes-fleet.io_appliedworks.yaml', 'multicluster.x-k8s.io_appliedworks.yaml')

_NETWORK_ERROR = re.compile(r'403 Forbidden|404 Not Found|410 Gone|not available|dial tcp|no such host|connection refused|'
                            r'i/o timeout|TLS handshake|unrecognized import path|verifying .*: |'
                            r'reading https?://|GOPROXY|GOFLAGS=-mod=mod|missing go.sum entry|cannot find module')


class BuildError(RuntimeError):
    """A binary, chart or module could not be provided; the message says what to do."""


def cache_dir():
    """``${FLEETOPS_CACHE:-~/.cache/fleetops}`` (not created)."""
    override = os.environ.get('FLEETOPS_CACHE')
    return pathlib.Path(override).expanduser() if override else pathlib.Path.home() / '.cache' / 'fleetops'


def bin_dir():
    """Where built binaries are cached."""
    return cache_dir() / 'bin'


def binary_path(name):
    """Cache path of a binary (it may not exist yet)."""
    return bin_dir() / _binary(name).filename


def _binary(name):
    try:
        return BINARIES[name]
    except KeyError:
        raise BuildError('unknown lab binary {0!r}; known: {1}'.format(name, ', '.join(BINARIES))) from None


def missing_binaries(names=None):
    """Names (of ``names``, default all) whose binary is not in the cache yet."""
    return [name for name in (names or list(BINARIES)) if not _usable(binary_path(name))]


def _usable(path):
    return path.is_file() and os.access(path, os.X_OK)


def _tail(text, lines=TAIL_LINES):
    return '\n'.join(text.strip().splitlines()[-lines:])


def _go():
    """Path of the go command, checked to be new enough."""
    go = shutil.which('go')
    if not go:
        raise BuildError('no `go` on PATH: install Go >= {0}.{1} (Debian/Ubuntu golang-go is usually older; the Go toolchain '
                         'from the module proxy or your distribution backports will do) or put it on PATH'.format(*MIN_GO))
    try:
        out = subprocess.run([go, 'env', 'GOVERSION'], capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError('`{0} env GOVERSION` failed: {1}'.format(go, exc)) from exc
    match = re.match(r'go(\d+)\.(\d+)', out)
    if not match or (int(match.group(1)), int(match.group(2))) < MIN_GO:
        raise BuildError('{0} is {1}; the lab needs Go >= {2}.{3} (go.mod `tool` directives)'.format(go, out or 'unknown', *MIN_GO))
    return go


def _go_env(base=None):
    env = dict(os.environ if base is None else base)
    env['CGO_ENABLED'] = '0'
    env['GOFLAGS'] = '-trimpath -buildvcs=false -mod=readonly'
    return env


def _go_failure(what, output, env):
    """A BuildError for a failed go command, telling network trouble from compile errors."""
    tail = _tail(output)
    if _NETWORK_ERROR.search(output):
        hint = ('a module could not be fetched: check the module proxy (GOPROXY={0!r}); versions the proxy refuses '
                'cannot be used (see lab/README.md)'.format(env.get('GOPROXY') or _goenv('GOPROXY')))
    else:
        hint = 'the build failed'
    return BuildError('{0}: {1}\n--- go output (tail) ---\n{2}'.format(what, hint, tail))


def _goenv(name):
    try:
        return subprocess.run(['go', 'env', name], capture_output=True, text=True, check=False, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ''


@contextlib.contextmanager
def _build_lock():
    """Serialise builds across processes (2 cores: parallel go builds only thrash)."""
    bin_dir().mkdir(parents=True, exist_ok=True)
    with open(bin_dir() / '.build.lock', 'a', encoding='utf-8') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_command(binary, output):
    """The argument list that builds ``binary`` into ``output`` (run in its module directory)."""
    ldflags = ' '.join(('-s', '-w') + binary.ldflags)
    return ['go', 'build', '-p', str(max(1, os.cpu_count() or 1)), '-ldflags', ldflags, '-o', str(output), binary.package]


def _build_one(binary, go, log):
    target = bin_dir() / binary.filename
    workdir = GOMOD_DIR / binary.component
    if not (workdir / 'go.mod').is_file():
        raise BuildError('{0} is missing: the module directory for {1}'.format(workdir / 'go.mod', binary.component))
    tmp = target.with_name('.{0}.tmp{1}'.format(target.name, os.getpid()))
    argv = build_command(binary, tmp)
    argv[0] = go
    env = _go_env()
    log('building {0} {1} ({2}) ...'.format(binary.name, binary.version, binary.package))
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    except OSError as exc:
        raise BuildError('could not run {0}: {1}'.format(go, exc)) from exc
    seconds = time.monotonic() - started
    if proc.returncode != 0 or not tmp.is_file():
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _go_failure('building {0} {1} in {2}'.format(binary.name, binary.version, workdir), proc.stdout, env)
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)
    _record_time(binary.name, seconds)
    log('built {0} in {1:.0f}s -> {2}'.format(binary.name, seconds, target))
    return seconds


def _record_time(name, seconds):
    """Keep the last cold build time per binary (bench/lab_up.py reports them)."""
    path = bin_dir() / 'build-times.json'
    try:
        times = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        times = {}
    times[name] = {'version': BINARIES[name].version, 'seconds': round(seconds, 1), 'at': int(time.time())}
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(json.dumps(times, indent=2, sort_keys=True) + '\n', encoding='utf-8')
    os.replace(tmp, path)


def recorded_build_times():
    """``{name: {"version", "seconds", "at"}}`` of the last cold builds on this machine."""
    try:
        return json.loads((bin_dir() / 'build-times.json').read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return {}


def ensure_binaries(names=None, log=print, timings=None):
    """Build what is missing of ``names`` (default: all) and return ``{name: path}``.

    A no-op on a warm cache (``go`` is not even needed then). ``timings``, if a dict, receives
    ``{name: seconds}`` for each binary built by this call. Raises BuildError with the reason.
    """
    wanted = list(names) if names else list(BINARIES)
    for name in wanted:
        _binary(name)
    result = {name: binary_path(name) for name in wanted}
    if not missing_binaries(wanted):
        return result
    go = _go()
    with _build_lock():
        for name in wanted:
            if _usable(result[name]):  # another process may have built it meanwhile
                continue
            seconds = _build_one(BINARIES[name], go, log)
            if timings is not None:
                timings[name] = seconds
    return result


_MODULE_DIRS = {}


def module_dir(module, version):
    """Directory of ``module@version`` in the Go module cache (downloaded with ``go mod download``)."""
    key = (module, version)
    if key in _MODULE_DIRS and _MODULE_DIRS[key].is_dir():
        return _MODULE_DIRS[key]
    go = _go()
    env = _go_env()
    with tempfile.TemporaryDirectory(prefix='fleetlab-mod-') as scratch:  # outside any go.mod
        try:
            proc = subprocess.run([go, 'mod', 'download', '-json', '{0}@{1}'.format(module, version)], cwd=scratch, env=env,
                                  capture_output=True, text=True, check=False, timeout=1800)
        except (OSError, subprocess.SubprocessError) as exc:
            raise BuildError('go mod download {0}@{1}: {2}'.format(module, version, exc)) from exc
    try:
        info = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        info = {}
    if proc.returncode != 0 or info.get('Error') or not info.get('Dir'):
        raise _go_failure('downloading module {0}@{1}'.format(module, version), '\n'.join(
            filter(None, [info.get('Error', ''), proc.stderr, '' if info else proc.stdout])), env)
    path = pathlib.Path(info['Dir'])
    _MODULE_DIRS[key] = path
    return path


def component_dir(component):
    """Module cache directory of a pinned component (``fleet``, ``kubefleet``, ...)."""
    module, version = VERSIONS[component]
    return module_dir(module, version)


def _chart(component, name, known):
    if name not in known:
        raise BuildError('unknown {0} chart {1!r}; known: {2}'.format(component, name, ', '.join(known)))
    path = component_dir(component) / 'charts' / name
    if not (path / 'Chart.yaml').is_file():
        raise BuildError('{0} has no Chart.yaml'.format(path))
    return path


def fleet_chart(name):
    """``charts/<name>`` of Rancher Fleet (``fleet-crd``, ``fleet``, ``fleet-agent``)."""
    return _chart('fleet', name, FLEET_CHARTS)


def kubefleet_chart(name):
    """``charts/<name>`` of KubeFleet (``hub-agent``, ``member-agent``).

    The module zip drops the charts' ``crdbases`` symlink, so these charts install no CRDs: apply
    ``kubefleet_crds()`` first.
    """
    return _chart('kubefleet', name, KUBEFLEET_CHARTS)


def kubefleet_crds(side):
    """KubeFleet CRD files for a cluster role: ``hub`` (all but the member ones) or ``member``."""
    if side not in ('hub', 'member'):
        raise BuildError('kubefleet_crds side must be "hub" or "member", not {0!r}'.format(side))
    files = sorted((component_dir('kubefleet') / 'config' / 'crd' / 'bases').glob('*.yaml'))
    if not files:
        raise BuildError('no CRDs in config/crd/bases of go.goms.io/fleet {0}'.format(VERSIONS['kubefleet'][1]))
    return [f for f in files if (f.name in KUBEFLEET_MEMBER_CRDS) == (side == 'member')]


def main(argv=None):
    """``python -m fleetlab build [NAME...]``: build what is missing, print each path and its build time."""
    names = list(argv if argv is not None else sys.argv[1:]) or None
    timings = {}
    started = time.monotonic()
    try:
        paths = ensure_binaries(names, log=lambda msg: print(msg, file=sys.stderr, flush=True), timings=timings)
    except BuildError as exc:
        print('fleetlab build: {0}'.format(exc), file=sys.stderr)
        return 1
    for name, path in paths.items():
        took = '{0:.0f}s'.format(timings[name]) if name in timings else 'cached'
        print('{0:<24} {1:>7}  {2}'.format(name, took, path))
    print('total {0:.0f}s, built {1} of {2}'.format(time.monotonic() - started, len(timings), len(paths)))
    return 0
