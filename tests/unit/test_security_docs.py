# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/security.md pairs every claim with the test that proves it: each paragraph and bullet of its claims names
a test, and every test and test file it names exists (a renamed or deleted test fails here, not in a reader's trust)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "security.md")
TEST = re.compile(r"\btest_[a-z0-9_]+\b")
# Sections that are claims; a block that only introduces a list, or sums up the page, names no test.
CLAIM_SECTIONS = ("The credentials", "What each side", "What is logged", "What is stored")
NOT_CLAIMS = ("**A member** - ", "Nothing else is kept on the controller")


def _test_sources():
    sources = {}
    for base, _dirs, files in os.walk(os.path.join(ROOT, "tests")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(base, name), encoding="utf-8") as handle:
                    sources[os.path.relpath(os.path.join(base, name), ROOT)] = handle.read()
    return sources


def _blocks():
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    for section in text.split("\n## ")[1:]:
        title, _nl, body = section.partition("\n")
        if title.startswith(CLAIM_SECTIONS):
            for block in re.split(r"\n(?=- )|\n\n", body):
                block = block.strip()
                if block and not block.startswith("|") and not block.lstrip("- ").startswith(NOT_CLAIMS):
                    yield title, block


def test_every_claim_of_the_security_page_names_a_test():
    unproved = [(title, block[:90]) for title, block in _blocks() if not TEST.search(block) and "tests/" not in block]
    assert unproved == []


def test_every_test_the_security_page_names_exists():
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    sources = _test_sources()
    everything = "\n".join(sources.values())
    missing_files = [path for path in re.findall(r"tests/[a-z_/]+\.py", text) if path not in sources]
    missing_tests = [name for name in sorted(set(TEST.findall(text)))
                     if not name.endswith("_py") and not re.search(r"def %s\b" % name, everything)
                     and not any(path.endswith("/%s.py" % name) for path in sources)]
    assert missing_files == [] and missing_tests == []
