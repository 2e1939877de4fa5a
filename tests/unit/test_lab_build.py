"""The lab's build layer: pins agree with the go.mod files, warm caches build nothing, failures say why."""

import os
import re
import stat

import pytest

from fleetlab import build


def _go_mod(component):
    return (build.GOMOD_DIR / component / 'go.mod').read_text(encoding='utf-8')


@pytest.mark.parametrize('component', sorted(build.VERSIONS))
def test_go_mod_requires_the_pinned_version(component):
    module, version = build.VERSIONS[component]
    text = _go_mod(component)
    assert re.search(r'^\s*(require\s+)?{0} {1}(\s|$)'.format(re.escape(module), re.escape(version)), text, re.M)
    assert (build.GOMOD_DIR / component / 'go.sum').is_file()


@pytest.mark.parametrize('name', sorted(build.BINARIES))
def test_every_binary_is_a_tool_of_its_module(name):
    binary = build.BINARIES[name]
    assert re.search(r'^\s*(tool\s+)?{0}$'.format(re.escape(binary.package)), _go_mod(binary.component), re.M)


def test_kubernetes_staging_modules_are_replaced_at_the_matching_minor():
    text = _go_mod('kubernetes')
    replaced = dict(re.findall(r'^\s*(k8s\.io/[\w-]+) => k8s\.io/[\w-]+ (v\S+)$', text, re.M))
    assert len(replaced) >= 31
    assert set(replaced.values()) == {'v0.34.10'}


def test_kubernetes_binaries_report_the_pinned_version():
    for name in ('kube-apiserver', 'kube-controller-manager', 'kubectl'):
        argv = build.build_command(build.BINARIES[name], '/tmp/out')
        ldflags = argv[argv.index('-ldflags') + 1]
        assert '-X k8s.io/component-base/version.gitVersion=v1.34.10' in ldflags
        assert '-X k8s.io/component-base/version.gitMinor=34' in ldflags
        assert '-X k8s.io/client-go/pkg/version.gitMajor=1' in ldflags
        assert argv[-1] == build.BINARIES[name].package


def test_image_table_names_built_binaries():
    assert set(build.IMAGE_BINARIES.values()) <= set(build.BINARIES)
    assert build.IMAGE_BINARIES['rancher/fleet-agent'] == 'fleetagent'


def _fake_cache(tmp_path, monkeypatch, names):
    monkeypatch.setenv('FLEETOPS_CACHE', str(tmp_path))
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    for name in names:
        path = bindir / build.BINARIES[name].filename
        path.write_text('#!/bin/sh\n', encoding='utf-8')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_warm_cache_needs_no_go(tmp_path, monkeypatch):
    _fake_cache(tmp_path, monkeypatch, build.BINARIES)
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    paths = build.ensure_binaries(log=pytest.fail)
    assert list(paths) == list(build.BINARIES)
    assert paths['etcd'] == tmp_path / 'bin' / 'etcd-v3.6.14'
    assert build.missing_binaries() == []


def test_missing_binary_without_go_says_how_to_get_go(tmp_path, monkeypatch):
    _fake_cache(tmp_path, monkeypatch, ['etcd'])
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    assert build.ensure_binaries(['etcd'], log=pytest.fail) == {'etcd': tmp_path / 'bin' / 'etcd-v3.6.14'}
    assert build.missing_binaries(['etcd', 'helm']) == ['helm']
    with pytest.raises(build.BuildError, match='no `go` on PATH.*install Go >= 1.24'):
        build.ensure_binaries(['etcd', 'helm'], log=lambda msg: None)


def test_non_executable_file_is_not_a_cached_binary(tmp_path, monkeypatch):
    _fake_cache(tmp_path, monkeypatch, [])
    (tmp_path / 'bin' / 'helm-v3.21.4').write_text('', encoding='utf-8')
    assert build.missing_binaries(['helm']) == ['helm']


def test_unknown_binary_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv('FLEETOPS_CACHE', str(tmp_path))
    with pytest.raises(build.BuildError, match="unknown lab binary 'kubelet'"):
        build.ensure_binaries(['kubelet'])


def test_old_go_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / 'go'
    fake.write_text('#!/bin/sh\necho go1.19.8\n', encoding='utf-8')
    fake.chmod(0o755)
    monkeypatch.setenv('PATH', str(tmp_path) + os.pathsep + os.environ.get('PATH', ''))
    with pytest.raises(build.BuildError, match='go1.19.8; the lab needs Go >= 1.24'):
        build._go()  # pylint: disable=protected-access


def test_go_failures_tell_the_proxy_from_the_compiler():
    proxy = build._go_failure('downloading x', 'go: x@v1: reading https://proxy.golang.org/x/@v/v1.zip: 403 Forbidden',  # pylint: disable=protected-access
                              {'GOPROXY': 'https://proxy.example'})
    assert 'https://proxy.example' in str(proxy) and '403 Forbidden' in str(proxy)
    compile_error = build._go_failure('building y', 'lots\n' * 100 + './main.go:3:1: syntax error', {})  # pylint: disable=protected-access
    assert 'the build failed' in str(compile_error) and 'GOPROXY' not in str(compile_error)
    assert str(compile_error).count('lots') < 100 and 'syntax error' in str(compile_error)


def test_kubefleet_crds_split_hub_and_member(tmp_path, monkeypatch):
    bases = tmp_path / 'config' / 'crd' / 'bases'
    bases.mkdir(parents=True)
    for name in ('cluster.kubernetes-fleet.io_memberclusters.yaml', 'placement.kubernetes-fleet.io_appliedworks.yaml',
                 'placement.kubernetes-fleet.io_works.yaml', 'multicluster.x-k8s.io_appliedworks.yaml'):
        (bases / name).write_text('kind: CustomResourceDefinition\n', encoding='utf-8')
    monkeypatch.setattr(build, 'component_dir', lambda component: tmp_path)
    hub = [p.name for p in build.kubefleet_crds('hub')]
    member = [p.name for p in build.kubefleet_crds('member')]
    assert hub == ['cluster.kubernetes-fleet.io_memberclusters.yaml', 'placement.kubernetes-fleet.io_works.yaml']
    assert member == ['multicluster.x-k8s.io_appliedworks.yaml', 'placement.kubernetes-fleet.io_appliedworks.yaml']
    with pytest.raises(build.BuildError):
        build.kubefleet_crds('spoke')


def test_unknown_chart_is_refused():
    with pytest.raises(build.BuildError, match='unknown fleet chart'):
        build.fleet_chart('rancher')
