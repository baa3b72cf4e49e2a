"""Shared fixtures: small sample episodes written once per session.

The suite keeps DDS to itself however it is started (`make test`, or a bare
`.venv/bin/python -m pytest`): before any test module imports rclpy,
discovery is kept on localhost (unless the caller chose a range) and the run
holds a ROS domain id no other run on this machine holds. Subprocesses inherit
both through os.environ.

Every Python process the suite starts reports a crash (SIGSEGV, SIGABRT, SIGBUS, SIGFPE,
SIGILL: signals nobody sent it on purpose) into a folder the run checks at its end: a
player that crashed fails the run even where its own test only looked at its output.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

from react_ros.ros import shm_ports
from react_ros.ros.isolation import RANGE_VAR, hold_domain, keep_discovery_local

# Each kind's tests and helpers live in test/kinds/<kind>/ (test/kinds/README.md). Their
# helper modules (<kind>_support) are imported by bare name by shared tests too, so
# every such folder is on the path before any test module is imported.
for _folder in sorted((Path(__file__).parent / 'kinds').iterdir()):
    if _folder.is_dir() and str(_folder) not in sys.path:
        sys.path.append(str(_folder))

UMI_SECONDS = 2.0
UMI_SIZE = (320, 200)


def pytest_configure(config: pytest.Config) -> None:
    # A hook, not a fixture: it runs before collection imports the test modules.
    keep_discovery_local()
    config._react_ros_domain = hold_domain()  # type: ignore[attr-defined]
    config._react_ros_crashes = report_crashes()  # type: ignore[attr-defined]
    # A port a process killed earlier (another run's, or a crash) left half-made hangs the
    # first participant that takes it (react_ros/ros/shm_ports.py): none is left to us.
    config._react_ros_half_made = [  # type: ignore[attr-defined]
        f'before the run: {p.path}' for p in shm_ports.clear_half_made_ports()]


CRASH_DIR_VAR = 'REACT_ROS_TEST_CRASH_DIR'
# Imported at start-up by every Python process of the run (PYTHONPATH): faulthandler writes
# the crash's stacks into <pid>.txt. A process started with PYTHONFAULTHANDLER already
# reports on its own stderr to the test that watches it.
_SITECUSTOMIZE = """\
import faulthandler, os, sys
_dir = os.environ.get('REACT_ROS_TEST_CRASH_DIR')
if _dir and not os.environ.get('PYTHONFAULTHANDLER'):
    _crash_report = open(os.path.join(_dir, f'{os.getpid()}.txt'), 'w')
    faulthandler.enable(_crash_report)
"""


def report_crashes() -> Path:
    """Make the run's Python subprocesses report crashes into the folder returned."""
    root = Path(tempfile.mkdtemp(prefix='react_ros_crashes_'))
    (root / 'site').mkdir()
    (root / 'site' / 'sitecustomize.py').write_text(_SITECUSTOMIZE)
    (root / 'reports').mkdir()
    os.environ['PYTHONPATH'] = os.pathsep.join(
        filter(None, [str(root / 'site'), os.environ.get('PYTHONPATH')]))
    os.environ[CRASH_DIR_VAR] = str(root / 'reports')
    return root


def crash_reports() -> dict[Path, str]:
    """The non-empty crash reports of the run so far."""
    found = {}
    for f in Path(os.environ[CRASH_DIR_VAR]).glob('*.txt'):
        text = f.read_text(errors='replace')
        if text:
            found[f] = text
    return found


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    crashes = crash_reports()
    for f, text in crashes.items():
        sys.stderr.write(f'\nprocess {f.stem} of this run crashed:\n{text[-3000:]}\n')
    if crashes:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    for line in session.config._react_ros_half_made:  # type: ignore[attr-defined]
        sys.stderr.write(f'\nhalf-made Fast DDS port cleared, {line}\n')
    shutil.rmtree(session.config._react_ros_crashes,  # type: ignore[attr-defined]
                  ignore_errors=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    lease = getattr(config, '_react_ros_domain', None)
    if lease is not None:
        lease.release()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # A process of this test killed while it created its DDS participant: the next
    # participant on that port would hang the run. Cleared now, and named at the end.
    for port in shm_ports.clear_half_made_ports():
        item.config._react_ros_half_made.append(  # type: ignore[attr-defined]
            f'after {item.nodeid}: {port.path}')
    # A library that leaves this process real-time (SVT-AV1 run as root did) makes every
    # later child inherit it, and busy children then starve the whole run: name the test.
    policy = os.sched_getscheduler(0)
    if policy != os.SCHED_OTHER:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        pytest.fail(f'{item.nodeid} left the test process with scheduling policy {policy} '
                    '(not SCHED_OTHER); restored', pytrace=False)


def pytest_report_header(config: pytest.Config) -> str:
    lease = config._react_ros_domain  # type: ignore[attr-defined]
    how = 'held by scripts/ros_env.sh' if lease.inherited else 'held by this run'
    return (f'ROS 2: ROS_DOMAIN_ID={lease.domain_id} ({how}), '
            f'{RANGE_VAR}={os.environ.get(RANGE_VAR)}')


@pytest.fixture(scope='session')
def umi_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Write a 2 s, 320x200 UMI episode; treat as read-only (copy it to change it)."""
    from react_ros.kinds.umi.sample import write_umi_sample
    return write_umi_sample(tmp_path_factory.mktemp('umi') / 'episode0000', seed=7,
                            duration_s=UMI_SECONDS, width=UMI_SIZE[0], height=UMI_SIZE[1])


@pytest.fixture
def umi_copy(umi_episode: Path, tmp_path: Path) -> Path:
    """Copy the UMI sample for a test that may break it."""
    return Path(shutil.copytree(umi_episode, tmp_path / 'episode'))


def written_once(factory: pytest.TempPathFactory, name: str,
                 write: Callable[[Path], object]) -> Path:
    """`write(root)` at <session temp>/<name> once per test session; treat it as read-only.

    The mark that it is finished stands beside it, not in it (that would change the
    sample): a writer that failed half-way runs again for the next test.
    """
    root = factory.getbasetemp() / name
    done = root.with_name(f'{name}.written')
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        write(root)
        done.touch()
    return root


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root, by relative path."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


def rewrite_mcap(path: Path, edit: Callable[[str, Any], Any | None] | None = None,
                 schema_names: dict[str, str] | None = None) -> None:
    """Rewrite a ROS 2 MCAP in place, passing each deserialised message through `edit`.

    `edit(topic, msg)` returns the message to keep (possibly changed) or None to drop it;
    without it the recorded bytes are copied. `schema_names` renames schemas.
    """
    from mcap.reader import make_reader
    from mcap.writer import Writer
    from rclpy.serialization import deserialize_message, serialize_message

    from react_ros.ros.msgs import message_class

    tmp = path.with_suffix('.tmp')
    with path.open('rb') as src, tmp.open('wb') as dst:
        reader = make_reader(src)
        writer = Writer(dst)
        writer.start(profile='ros2', library='test')
        schema_ids: dict[int, int] = {}
        channel_ids: dict[int, int] = {}
        for schema, channel, message in reader.iter_messages(log_time_order=True):
            if schema.id not in schema_ids:
                schema_ids[schema.id] = writer.register_schema(
                    (schema_names or {}).get(schema.name, schema.name), schema.encoding,
                    schema.data)
            if channel.id not in channel_ids:
                channel_ids[channel.id] = writer.register_channel(
                    channel.topic, channel.message_encoding, schema_ids[schema.id],
                    channel.metadata)
            if edit is None:
                data = message.data
            else:
                msg = edit(channel.topic, deserialize_message(message.data,
                                                              message_class(schema.name)))
                if msg is None:
                    continue
                data = serialize_message(msg)
            writer.add_message(channel_ids[channel.id], message.log_time, data,
                               message.publish_time)
        writer.finish()
    tmp.replace(path)
