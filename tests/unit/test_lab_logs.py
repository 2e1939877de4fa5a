"""A failed lab test's evidence: logs copied out of the lab, the explaining logs chosen, tokens cut from the report."""

import os
import stat
import time

import lab_logs


def _lab(tmp_path):
    logs = tmp_path / "lab" / "logs"
    (logs / "member1").mkdir(parents=True)
    (logs / "hub").mkdir()
    (logs / "hub-apiserver.log").write_text("apiserver line\n")
    agent = logs / "member1" / "cattle-fleet-system.fleet-agent-abc.fleet-agent.log"
    agent.write_text("".join("line %d\n" % i for i in range(40)) + 'Waiting for secret token: "abcdefghijklmnop"\n')
    old = logs / "hub" / "cattle-fleet-system.fleet-controller-x.fleet-agentmanagement.log"
    old.write_text("from an earlier test\n")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    return tmp_path / "lab", agent


def test_report_keeps_the_logs_and_shows_the_last_lines_of_agents_written_during_the_test(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETOPS_TEST_FAILURES", str(tmp_path / "kept"))
    lab_root, agent = _lab(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "run-1.log").write_text("PLAY RECAP\n")
    text = lab_logs.report("tests/faults/test_faults.py::test_x[a b]", lab_root, time.time() - 60, runs)
    kept = tmp_path / "kept" / "tests_faults_test_faults.py_test_x_a_b"
    assert "lab logs kept in %s" % kept in text
    assert (kept / "lab-logs" / "member1" / agent.name).read_text() == agent.read_text()
    assert (kept / "lab-logs" / "hub-apiserver.log").exists() and (kept / "run-1.log").read_text() == "PLAY RECAP\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert "line 39" in text and "line 20" not in text, "only the last lines"
    assert "fleet-agentmanagement" not in text, "a log not written during the test explains nothing"
    assert "abcdefghijklmnop" not in text and "<redacted>" in text


def test_redact_cuts_jwts_and_token_values():
    jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6.eyJpc3MiOiJrdWJlcm5ldGVzL3Nl.c2lnbmF0dXJl"
    assert jwt not in lab_logs.redact("Authorization: Bearer " + jwt)
    assert lab_logs.redact("token=supersecretvalue1 next") == "token=<redacted> next"
    assert lab_logs.redact("no secrets here") == "no secrets here"


def test_keep_since_copies_only_the_logs_written_since_then(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETOPS_TEST_FAILURES", str(tmp_path / "kept"))
    lab_root, agent = _lab(tmp_path)
    kept = lab_logs.keep("seed-1-round-2", lab_root, since=time.time() - 60)
    assert (kept / "lab-logs" / "member1" / agent.name).exists()
    assert not (kept / "lab-logs" / "hub" / "cattle-fleet-system.fleet-controller-x.fleet-agentmanagement.log").exists()
