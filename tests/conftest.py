"""pytest hooks for every Python test under tests/ (ctest runs each file with G4V_PYTHON -m pytest:
tests/CMakeLists.txt, g4v_add_py_test).

  --arg=VALUE   (repeatable) the test's arguments from CMake (fixture folders, helper binaries);
                tests read them with pyutil.arg(i)
  check()       pyutil.check records a failure and goes on, so one test reports every check it
                makes; a test that recorded a failure fails here even if it returned normally
  no test run   a session in which nothing passed fails (exit 5), so a file that collects nothing,
                or skips everything, cannot pass under ctest
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
    # pytest's status 5 covers "collected nothing"; this also catches a run where every test
    # was skipped, which pytest reports as success.
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep is not None and exitstatus == 0 and not rep.stats.get("passed"):
        session.exitstatus = 5
