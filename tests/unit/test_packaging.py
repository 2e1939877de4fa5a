"""The collection as ansible-galaxy builds and installs it (tests/modrun.py installs it from the tarball)."""

import hashlib
import json
import posixpath
import re
import subprocess

import yaml

from modrun import INSTALLED, REPO, collections_root

SHIPPED = ("plugins", "roles", "playbooks", "meta", "docs", "changelogs")
NOT_SHIPPED = ("lab", "tests", "bench", "hack", ".ci", ".lab", ".venv", ".venv-oldest", ".cache", ".git", "Makefile",
               "requirements-dev.txt", "requirements-oldest.txt", "extensions/molecule", "changelogs/fragments")


def tracked(prefix):
    out = subprocess.run(["git", "ls-files", "--", prefix], cwd=str(REPO), capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_installed_copy_is_a_real_install_not_a_link():
    collections_root()
    assert not INSTALLED.is_symlink(), "the tests must use the installed tarball, not a link to the checkout"
    manifest = json.loads((INSTALLED / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["namespace"] == "fleetops" and manifest["collection_info"]["name"] == "registration"


def test_every_tracked_plugin_role_and_playbook_is_installed():
    collections_root()
    files = set(f["name"] for f in json.loads((INSTALLED / "FILES.json").read_text())["files"] if f["ftype"] == "file")
    for prefix in SHIPPED:
        missing = sorted(p for p in tracked(prefix) if p not in files and "__pycache__" not in p
                         and not any(p.startswith(n + "/") for n in NOT_SHIPPED))
        assert not missing, "build_ignore drops files users need: %s" % missing[:10]


def test_development_files_stay_out_and_the_tarball_is_small():
    collections_root()
    files = [f["name"] for f in json.loads((INSTALLED / "FILES.json").read_text())["files"]]
    leaked = sorted(f for f in files if any(f == p or f.startswith(p + "/") for p in NOT_SHIPPED))
    assert not leaked, "galaxy.yml build_ignore lets development files into the collection: %s" % leaked[:10]
    tarballs = list((REPO / ".cache" / "dist").glob("fleetops-registration-*.tar.gz"))
    assert len(tarballs) == 1
    assert tarballs[0].stat().st_size < 496 * 1024, "the collection tarball grew to %d bytes" % tarballs[0].stat().st_size


def test_test_modules_have_unique_basenames():
    # pytest imports test modules by basename (rootdir-relative, no packages): two of one name stop the whole run at
    # collection, as CI #2 and CI #10 of issue 19 found.
    names = sorted(path.name for path in (REPO / "tests").rglob("test_*.py") if "output" not in path.parts)
    assert sorted(set(names)) == names, [name for name in set(names) if names.count(name) > 1]


# sha256 of the GNU GPL version 3 text as the FSF publishes it (https://www.gnu.org/licenses/gpl-3.0.txt, Debian's
# /usr/share/common-licenses/GPL-3).
GPL3_SHA256 = "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"


def installed_files():
    collections_root()
    return set(f["name"] for f in json.loads((INSTALLED / "FILES.json").read_text())["files"] if f["ftype"] == "file")


def test_license_is_the_full_text_of_the_declared_license_in_the_repository_and_the_tarball():
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    assert galaxy["license"] == ["GPL-3.0-or-later"]
    assert hashlib.sha256((REPO / "LICENSE").read_bytes()).hexdigest() == GPL3_SHA256, \
        "LICENSE is not the GPL-3.0 text galaxy.yml declares (copy /usr/share/common-licenses/GPL-3)"
    assert "LICENSE" in installed_files(), "the built collection lacks LICENSE"
    assert (INSTALLED / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(text):
    """The targets of the Markdown links in ``text`` that point into the collection (not URLs, not anchors)."""
    return [target.split("#")[0] for target in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_every_relative_link_in_the_packaged_docs_resolves_inside_the_tarball():
    files = installed_files()
    pages = sorted(name for name in files if name.endswith(".md"))
    assert "README.md" in pages and "docs/awx.md" in pages
    broken = []
    for page in pages:
        for target in relative_links((INSTALLED / page).read_text()):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
            if resolved.startswith("../") or (resolved not in files and not any(f.startswith(resolved + "/") for f in files)):
                broken.append("%s -> %s" % (page, target))
    assert not broken, "links to files the collection tarball leaves out (or that do not exist): %s" % broken


def test_the_link_check_sees_a_link_to_a_file_left_out():
    assert relative_links("see [the lab](../lab/README.md#start), [x](https://example.com/a.md), [y](#top)") == \
        ["../lab/README.md"]
