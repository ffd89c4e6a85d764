"""pytest hooks for every Python test under tests/ (ctest runs each file with G4V_PYTHON -m pytest:
tests/CMakeLists.txt, g4v_add_py_test).

  --arg=VALUE   (repeatable) the test's arguments from CMake (fixture folders, helper binaries);
                tests read them with pyutil.arg(i)
  check()       pyutil.check records a failure and goes on, so one test reports every check it
                makes; a test that recorded a failure fails here even if it returned normally
  no test run   a session in which nothing passed fails: exit 77 when tests were skipped (CTest
                counts it as skipped where the test sets SKIP_RETURN_CODE 77, as a failure
                elsewhere), 5 when nothing was collected
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyutil  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--arg", action="append", default=[],
                     help="an argument for the test (pyutil.arg(i)); repeat for more")


def pytest_configure(config):
    pyutil.ARGS[:] = config.getoption("arg")


def pytest_runtest_setup(item):
    del pyutil.failures[:]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.passed and pyutil.failures:
        rep.outcome = "failed"
        rep.longrepr = "%d check(s) failed:\n  %s" % (len(pyutil.failures),
                                                      "\n  ".join(pyutil.failures))


def pytest_sessionfinish(session, exitstatus):
    # pytest's status 5 covers "collected nothing"; a run where every test was skipped, which
    # pytest reports as success, exits 77 (skipped for CTest only where the test allows it).
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep is not None and exitstatus == 0 and not rep.stats.get("passed"):
        session.exitstatus = 77 if rep.stats.get("skipped") else 5
