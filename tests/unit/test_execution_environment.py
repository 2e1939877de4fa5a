"""The AWX execution environment builds from registries only: `ansible-builder create` (no container engine needed)."""

import os
import re
import subprocess
import sys

import pytest

from modrun import REPO

sys.path.insert(0, str(REPO / "lab"))
from fleetlab.build import VERSIONS  # noqa: E402  pylint: disable=wrong-import-position

EE_FILE = REPO / "extensions" / "awx" / "execution-environment.yml"


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ee-context")
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    proc = subprocess.run([builder, "create", "-f", str(EE_FILE), "-c", str(directory), "--output-filename", "Containerfile"],
                          capture_output=True, text=True, timeout=300, check=False)
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


def test_the_roles_python_requirements_reach_the_image(context, containerfile):
    assert "ansible-core>=2.16 ansible-runner" in containerfile
    requirements = (context / "_build" / "requirements.txt").read_text().split()
    assert "kubernetes>=24.2.0" in requirements and "PyYAML>=5.1" in requirements
