"""The AWX execution environment builds from registries only and installs the built collection with what it declares,
and so does docs/awx.md's variant with an exec plugin: `ansible-builder create` and `ansible-builder introspect` (no
container engine needed)."""

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


def create(tmp_path_factory, definition_text):
    """The build context of an EE definition, made as a user makes it: the built tarball next to the definition."""
    collections_root()
    definition = tmp_path_factory.mktemp("ee-definition")
    (definition / EE_FILE.name).write_text(definition_text)
    shutil.copy(REPO / ".cache" / "dist" / TARBALL, definition / TARBALL)
    directory = tmp_path_factory.mktemp("ee-context")
    proc = subprocess.run([BUILDER, "create", "-f", str(definition / EE_FILE.name), "-c", str(directory), "--output-filename",
                           "Containerfile"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, "ansible-builder create failed:\n%s%s" % (proc.stdout, proc.stderr)
    return directory


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return create(tmp_path_factory, EE_FILE.read_text())


AWX_DOC = REPO / "docs" / "awx.md"


def documented_exec_plugin_addition():
    """The lines docs/awx.md tells users to add to the definition for an exec plugin (its tested example)."""
    section = AWX_DOC.read_text().split("**Example, tested:", 1)[1]
    return yaml.safe_load(re.search(r"^```yaml\n(.*?)^```", section, re.M | re.S).group(1))


def with_addition(definition, addition):
    """The definition with the documented lines added: lists extended, mappings merged."""
    for key, value in addition.items():
        if isinstance(value, dict):
            with_addition(definition.setdefault(key, {}), value)
        elif isinstance(value, list):
            definition[key] = list(definition.get(key) or []) + value
        else:
            definition[key] = value
    return definition


@pytest.fixture(scope="module")
def containerfile(context):
    return (context / "Containerfile").read_text()


def stage(text, name):
    """The lines of one build stage (FROM ... AS name up to the next FROM)."""
    match = re.search(r"^FROM \S+ AS %s\n(.*?)(?=^FROM |\Z)" % name, text, re.M | re.S)
    assert match, "no %s stage in the Containerfile" % name
    return match.group(1)


def test_the_base_image_is_awx_ees_with_the_python_ansible_core_needs(containerfile):
    definition = yaml.safe_load(EE_FILE.read_text())
    base = definition["images"]["base_image"]["name"]
    assert base == "quay.io/centos/centos:stream9" and 'ARG EE_BASE_IMAGE="%s"' % base in containerfile
    assert "`%s`" % base in AWX_DOC.read_text(), "docs/awx.md must name the base image and say why"
    assert definition["dependencies"]["python_interpreter"]["python_path"] == "/usr/bin/python3.12"  # ansible-core >= 2.20
    core = re.search(r"ansible-core==(\d+)\.(\d+)", containerfile)
    assert core and (int(core.group(1)), int(core.group(2))) >= (2, 21)


def test_helm_is_a_pinned_build_verified_by_the_go_checksum_database(containerfile):
    builder = stage(containerfile, "builder")
    assert "ARG HELM_VERSION=%s" % VERSIONS["helm"][1] in builder
    assert re.search(r'GOSUMDB=sum\.golang\.org .*go install .*"helm\.sh/helm/v3/cmd/helm@\$HELM_VERSION"', builder)
    assert "GONOSUMDB" not in builder and "GOFLAGS=-insecure" not in builder and "GONOSUMCHECK" not in builder
    assert re.search(r'go version -m /opt/helm/bin/helm \| grep .*helm\.sh/helm/v3.*\$HELM_VERSION', builder)
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
    assert set(ours["system"]) == {"tar [platform:rpm platform:dpkg]", "gzip [platform:rpm platform:dpkg]",
                                   "ca-certificates [platform:rpm platform:dpkg]"}


def test_the_documented_exec_plugin_variant_builds(tmp_path_factory):
    """docs/awx.md's tested example: the definition with its lines added makes a context that installs the plugin."""
    addition = documented_exec_plugin_addition()
    assert addition == {"dependencies": {"python": [addition["dependencies"]["python"][0]]}}
    plugin = addition["dependencies"]["python"][0]
    assert re.match(r"^awscli==[0-9.]+$", plugin), plugin
    variant = with_addition(yaml.safe_load(EE_FILE.read_text()), addition)
    directory = create(tmp_path_factory, yaml.safe_dump(variant, sort_keys=False))
    requirements = (directory / "_build" / "requirements.txt").read_text().split()
    assert plugin in requirements and "kubernetes==37.0.2" in requirements
    assert "ARG HELM_VERSION=%s" % VERSIONS["helm"][1] in (directory / "Containerfile").read_text()
