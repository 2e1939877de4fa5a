"""The AWX execution environment builds from registries only and installs the built collection with what it declares:
`ansible-builder create` and `ansible-builder introspect` (no container engine needed)."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from modrun import COLLECTIONS, REPO, collections_root

sys.path.insert(0, str(REPO / "lab"))
from fleetlab.build import VERSIONS  # noqa: E402  pylint: disable=wrong-import-position

EE_FILE = REPO / "extensions" / "awx" / "execution-environment.yml"


BUILDER = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
TARBALL = "fleetops-registration-%s.tar.gz" % VERSION


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """The build context, made as a user makes it: the built tarball next to the EE definition."""
    collections_root()
    definition = tmp_path_factory.mktemp("ee-definition")
    shutil.copy(EE_FILE, definition / EE_FILE.name)
    shutil.copy(REPO / ".cache" / "dist" / TARBALL, definition / TARBALL)
    directory = tmp_path_factory.mktemp("ee-context")
    proc = subprocess.run([BUILDER, "create", "-f", str(definition / EE_FILE.name), "-c", str(directory), "--output-filename",
                           "Containerfile"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, "ansible-builder create failed:\n%s%s" % (proc.stdout, proc.stderr)
    return directory


@pytest.fixture(scope="module")
def containerfile(context):
    return (context / "Containerfile").read_text()


def stage(text, name):
    """The lines of one build stage (FROM ... AS name up to the next FROM)."""
    match = re.search(r"^FROM \S+ AS %s\n(.*?)(?=^FROM |\Z)" % name, text, re.M | re.S)
    assert match, "no %s stage in the Containerfile" % name
    return match.group(1)


def test_helm_is_built_from_its_go_module_at_the_labs_version_in_the_builder_stage(containerfile):
    builder = stage(containerfile, "builder")
    assert "ARG HELM_VERSION=%s" % VERSIONS["helm"][1] in builder
    assert re.search(r'go install .*"helm\.sh/helm/v3/cmd/helm@\$HELM_VERSION"', builder)
    final = stage(containerfile, "final")
    assert "COPY --from=builder /opt/helm/bin/helm /usr/local/bin/helm" in final
    assert "golang" not in final, "the final image must not carry the Go toolchain"


def test_nothing_is_downloaded_from_a_release_page(containerfile):
    assert not re.search(r"\b(curl|wget)\b|ADD https?://|get\.helm\.sh|/releases/download/", containerfile)


def test_the_built_collection_is_installed_at_the_pinned_versions(context, containerfile):
    assert (context / "_build" / "collection" / TARBALL).is_file()
    assert "COPY _build/collection/%s /build/" % TARBALL in stage(containerfile, "galaxy")
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy["collections"] == [{"name": "/build/" + TARBALL, "type": "file"}]
    assert re.search(r"ansible-core==[0-9.]+ ansible-runner==[0-9.]+", containerfile)
    pinned = (context / "_build" / "requirements.txt").read_text().split()
    assert all("==" in requirement for requirement in pinned), pinned


def test_ansible_builder_finds_what_the_installed_collection_declares():
    """What ansible-builder adds for the collection when an EE installs it (meta/execution-environment.yml)."""
    proc = subprocess.run([BUILDER, "introspect", str(COLLECTIONS)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    found = yaml.safe_load(proc.stdout)
    ours = dict((kind, [line.split("#")[0].strip() for line in found[kind] if "from collection fleetops.registration" in line])
                for kind in ("python", "system"))
    assert "kubernetes>=24.2.0" in ours["python"]  # PyYAML comes with ansible-core; ansible-builder leaves it out
    assert set(ours["system"]) == {"tar [platform:rpm platform:dpkg]", "gzip [platform:rpm platform:dpkg]"}
