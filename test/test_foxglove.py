"""Foxglove: `react-ros play --foxglove` to Foxglove's own protocol client, and the layouts.

The client is Foxglove's: @foxglove/ws-protocol's FoxgloveClient connects and
subscribes, and @foxglove/rosmsg + @foxglove/rosmsg2-serialization decode each
channel's CDR from the ros2msg schema the server advertises, as the Foxglove app
does (test/foxglove_client/, installed into .venv by scripts/setup_env.sh). What
arrives is compared with the episode's own messages.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from react_ros.registry import KINDS, EpisodeOptions, open_episode
from react_ros.cli import main, write_sample
from react_ros.ros.msgs import message_class, to_ns
from react_ros.streams import merge

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / 'test' / 'foxglove_client' / 'client.js'
NODE_MODULES = Path(sys.prefix) / 'foxglove_client' / 'node_modules'
IMAGE = '/center/image_raw'
TF = '/tf'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Client:
    """test/foxglove_client/client.js in a Node process: JSON lines each way."""

    def __init__(self, url: str) -> None:
        node = shutil.which('node')
        if node is None:
            pytest.skip('no Node.js here: the Foxglove protocol client is an npm package')
        assert NODE_MODULES.is_dir(), \
            f'{NODE_MODULES} is missing: scripts/setup_env.sh installs test/foxglove_client'
        self.proc = subprocess.Popen([node, str(CLIENT), url], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, 'NODE_PATH': str(NODE_MODULES)})
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            ev['recv'] = time.monotonic()  # when it arrived, for the tests that time a gap
            self.events.put(ev)
        assert self.proc.stderr is not None
        self.events.put({'ev': 'exit', 'stderr': self.proc.stderr.read()[-2000:]})

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + '\n')
        self.proc.stdin.flush()

    def until(self, done: Callable[[dict[str, Any]], bool],
              timeout: float) -> list[dict[str, Any]]:
        """Every event up to and including the first for which done() holds."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                ev = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                kinds = [e['ev'] for e in seen]
                raise AssertionError(f'not within {timeout} s; saw {len(seen)} events: '
                                     f'{ {k: kinds.count(k) for k in set(kinds)} }') from None
            assert ev['ev'] not in ('error', 'exit'), f'client: {ev}'
            seen.append(ev)
            if done(ev):
                return seen

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _started(log: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while 'for Foxglove' not in log.read_text():
        assert proc.poll() is None, f'react-ros play exited {proc.returncode}: {log.read_text()}'
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _messages(episode: Any, topic: str) -> Iterator[tuple[int, Any]]:
    """The episode's messages on `topic`, in the order the player merges them."""
    from rclpy.serialization import deserialize_message
    streams = [s for s in episode.streams if s.topic == topic]
    for ev in merge([s.open() for s in streams]):
        msg = ev.msg
        if isinstance(msg, (bytes, bytearray, memoryview)):
            msg = deserialize_message(bytes(msg), message_class(streams[ev.stream_idx].msg_type))
        yield ev.t_ns, msg


def _image(msg: Any) -> dict[str, Any]:
    return {'stamp': to_ns(msg.header.stamp), 'frame_id': msg.header.frame_id,
            'height': msg.height, 'width': msg.width, 'encoding': msg.encoding,
            'step': msg.step, 'sha256': hashlib.sha256(bytes(msg.data)).hexdigest()}


def _image_decoded(m: dict[str, Any]) -> dict[str, Any]:
    h = m['header']
    return {'stamp': h['stamp']['sec'] * 10**9 + h['stamp']['nanosec'],
            'frame_id': h['frame_id'], 'height': m['height'], 'width': m['width'],
            'encoding': m['encoding'], 'step': m['step'], 'sha256': m['data']['sha256']}


def _tf(msg: Any) -> list[tuple[Any, ...]]:
    return [(to_ns(t.header.stamp), t.header.frame_id, t.child_frame_id,
             t.transform.translation.x, t.transform.translation.y, t.transform.translation.z,
             t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
             t.transform.rotation.w) for t in msg.transforms]


def _tf_decoded(m: dict[str, Any]) -> list[tuple[Any, ...]]:
    out = []
    for t in m['transforms']:
        s, tr, r = t['header']['stamp'], t['transform']['translation'], t['transform']['rotation']
        out.append((s['sec'] * 10**9 + s['nanosec'], t['header']['frame_id'], t['child_frame_id'],
                    tr['x'], tr['y'], tr['z'], r['x'], r['y'], r['z'], r['w']))
    return out


def _is(topic: str) -> Callable[[dict[str, Any]], bool]:
    return lambda ev: ev['ev'] == 'message' and ev['topic'] == topic


def _state(request_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda ev: ev['ev'] == 'state' and ev['request_id'] == request_id


def test_foxglove_client_receives_and_decodes_the_episode(umi_episode: Path,
                                                          tmp_path: Path) -> None:
    pytest.importorskip('foxglove', reason='the [foxglove] extra (requirements/foxglove.txt)')
    episode = open_episode(umi_episode, 'umi', EpisodeOptions())
    images = [(t, _image(m)) for t, m in _messages(episode, IMAGE)]
    tfs = [(t, _tf(m)) for t, m in _messages(episode, TF)]
    topics = {s.topic: s.msg_type for s in episode.streams}
    assert len(images) >= 100 and len(tfs) >= 100  # 2 s of a 60 Hz camera, TF of 3 bodies
    port = _free_port()
    log = tmp_path / 'play.log'
    with log.open('wb') as out:
        proc = subprocess.Popen([sys.executable, '-m', 'react_ros.cli', 'play', str(umi_episode),
                                 '--foxglove', str(port), '--wait-for-subscribers', '30'],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    client = None
    try:
        _started(log, proc)
        client = Client(f'ws://127.0.0.1:{port}')
        # every topic of the episode, robot state included, as a ros2msg + CDR channel
        seen = _advertised(client, len(topics))
        channels = {e['channel']['topic']: e['channel'] for e in seen if e['ev'] == 'advertise'}
        assert set(channels) == set(topics)
        for topic, ch in channels.items():
            assert (ch['schemaName'], ch['schemaEncoding'], ch['encoding']) == \
                (topics[topic], 'ros2msg', 'cdr'), topic
        assert 'playbackControl' in next(e for e in seen if e['ev'] == 'serverInfo')['info'][
            'capabilities']

        client.send(op='subscribe', topics=[IMAGE, TF])  # the player starts on this
        first = client.until(lambda ev: ev['ev'] == 'state' and ev['status'] == 'ended', 30)
        # the state goes out on the SDK's control queue, and may overtake the last messages
        n = {IMAGE: len(images) - len([e for e in first if _is(IMAGE)(e)]),
             TF: len(tfs) - len([e for e in first if _is(TF)(e)])}
        if n[IMAGE] > 0 or n[TF] > 0:
            first += client.until(lambda ev: _left(n, ev), 5)
        got_images = [(int(e['timestamp']), _image_decoded(e['msg']))
                      for e in first if _is(IMAGE)(e)]
        got_tf = [(int(e['timestamp']), _tf_decoded(e['msg'])) for e in first if _is(TF)(e)]
        assert got_images == images  # every frame, in order, stamped as the episode stamps it
        assert got_tf == tfs
        times = [int(e['t']) for e in first if e['ev'] == 'time']
        assert times and times == sorted(times) and episode.start_ns <= times[0]

        # Foxglove's seek bar: back to the middle frame and play; then pause
        k = len(images) // 2
        client.send(op='playback', command='play', speed=1.0, seek=str(images[k][0]),
                    id='seek-1')
        after_seek = _images_after(client, 'seek-1', 3)
        state = next(e for e in after_seek if _state('seek-1')(e))
        assert state['did_seek'] and int(state['current_time']) == images[k][0]
        got = [(int(e['timestamp']), _image_decoded(e['msg']))
               for e in after_seek if _is(IMAGE)(e)]
        assert got == images[k:k + len(got)]

        # How long this machine, now, takes to deliver 10 images playing: the paused window
        # below is twice that, so a slow machine is watched for longer, never for too short.
        seen_at = [e['recv'] for e in client.until(_count(_is(IMAGE), 10), 20) if _is(IMAGE)(e)]
        window = max(0.6, 2 * (seen_at[-1] - seen_at[0]))
        client.send(op='playback', command='pause', speed=1.0, seek=None, id='pause-1')
        paused = client.until(_state('pause-1'), 10)[-1]
        assert paused['status'] == 'paused'
        time.sleep(window)
        late = []
        while not client.events.empty():
            late.append(client.events.get())
        # at most what was on its way (the reply may overtake it); playing, ~20 images
        assert len([e for e in late if _is(IMAGE)(e)]) <= 2, f'{window:.2f} s paused'
    finally:
        if client is not None:
            client.close()
        status = _stop(proc)
    assert status == 0, log.read_text()
    assert 'Traceback' not in log.read_text()


def _left(n: dict[str, int], ev: dict[str, Any]) -> bool:
    """Count `ev` off `n` (messages still to come per topic); True when none is left."""
    if ev['ev'] == 'message' and ev['topic'] in n:
        n[ev['topic']] -= 1
    return all(v <= 0 for v in n.values())


def _advertised(client: Client, n: int) -> list[dict[str, Any]]:
    count = 0

    def done(ev: dict[str, Any]) -> bool:
        nonlocal count
        count += ev['ev'] == 'advertise'
        return count == n
    return client.until(done, 20)


def _count(pred: Callable[[dict[str, Any]], bool], n: int) -> Callable[[dict[str, Any]], bool]:
    """Done at the n-th event for which `pred` holds."""
    seen = 0

    def done(ev: dict[str, Any]) -> bool:
        nonlocal seen
        seen += pred(ev)
        return seen >= n
    return done


def _images_after(client: Client, request_id: str, n: int) -> list[dict[str, Any]]:
    """Events until the reply to `request_id` came and then `n` images."""
    replied = False
    count = 0

    def done(ev: dict[str, Any]) -> bool:
        nonlocal replied, count
        replied = replied or _state(request_id)(ev)
        count += replied and _is(IMAGE)(ev)
        return count >= n
    return client.until(done, 20)


def test_foxglove_refuses_a_port_in_use(umi_episode: Path, tmp_path: Path) -> None:
    pytest.importorskip('foxglove', reason='the [foxglove] extra (requirements/foxglove.txt)')
    with socket.socket() as held:
        held.bind(('127.0.0.1', 0))
        held.listen()
        port = held.getsockname()[1]
        run = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'play', str(umi_episode),
                              '--foxglove', str(port)], capture_output=True, text=True,
                             timeout=60)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f'error: --foxglove: cannot serve on 127.0.0.1:{port}'), run.stderr
    assert 'Traceback' not in run.stderr


def test_foxglove_without_the_extra_is_one_line(umi_episode: Path, monkeypatch: Any,
                                                capsys: Any) -> None:
    monkeypatch.setitem(sys.modules, 'foxglove', None)  # `import foxglove` now fails
    assert main(['play', str(umi_episode), '--foxglove']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'foxglove-sdk' in err[0] and "react_ros[foxglove]" in err[0], err


def test_drop_late_has_no_meaning_with_foxglove(umi_episode: Path) -> None:
    pytest.importorskip('foxglove', reason='the [foxglove] extra (requirements/foxglove.txt)')
    run = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'play', str(umi_episode),
                          '--foxglove', '0', '--drop-late'], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 2 and run.stderr.startswith('error: --drop-late'), run.stderr


def test_a_remap_onto_a_name_of_another_type_is_refused_with_foxglove(umi_episode: Path) -> None:
    """A channel carries one type, as a DDS topic does: refused before serving, one line."""
    pytest.importorskip('foxglove', reason='the [foxglove] extra (requirements/foxglove.txt)')
    run = subprocess.run([sys.executable, '-m', 'react_ros.cli', 'play', str(umi_episode),
                          '--foxglove', '0', '-m', '/annotations:=/tf'], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert '/annotations (std_msgs/msg/String)' in line and 'tf2_msgs/msg/TFMessage' in line, line


# --- layouts ------------------------------------------------------------------

def _layout_script() -> Any:
    spec = importlib.util.spec_from_file_location('foxglove_layouts',
                                                  ROOT / 'scripts' / 'foxglove_layouts.py')
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _topics_named(config: dict[str, Any]) -> set[str]:
    """Every topic a classic Foxglove layout's panels name."""
    named: set[str] = set()
    for panel_id, panel in config['configById'].items():
        named |= set(panel.get('topics', {}))
        mode = panel.get('imageMode', {})
        named |= {mode[k] for k in ('imageTopic', 'calibrationTopic') if k in mode}
        for path in panel.get('paths', []):
            named.add(re.match(r'/[^.\[{]+', path['value']).group(0))  # type: ignore[union-attr]
    return named


def _panel_ids(tree: Any) -> list[str]:
    if isinstance(tree, str):
        return [tree]
    return _panel_ids(tree['first']) + _panel_ids(tree['second'])


@pytest.fixture(scope='module')
def sample_topics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    root = tmp_path_factory.mktemp('samples')
    topics = {}
    for kind in KINDS:
        source = write_sample(kind, root / kind, duration=1.0, resolution=(64, 48))
        episode = open_episode(source, kind, EpisodeOptions(episode=KINDS[kind].demo_episode))
        topics[kind] = {s.topic for s in episode.streams}
    return topics


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_layout_is_valid_and_names_only_topics_the_kind_publishes(
        kind: str, sample_topics: dict[str, set[str]]) -> None:
    path = ROOT / 'react_ros' / 'kinds' / kind / f'{kind}.foxglove.json'
    config = json.loads(path.read_text())
    assert set(config) >= {'configById', 'layout'}
    ids = _panel_ids(config['layout'])
    assert sorted(ids) == sorted(config['configById'])  # every panel placed, once
    assert all(re.fullmatch(r'(3D|Image|Plot)![A-Za-z0-9_]+', i) for i in ids), ids
    named = _topics_named(config)
    assert named, f'{path.name} names no topic'
    assert named <= sample_topics[kind], \
        f'{path.name} names topics the {kind} sample does not publish: ' \
        f'{sorted(named - sample_topics[kind])}'
    # every camera of the RViz config has its Image panel
    rviz = (ROOT / 'react_ros' / 'kinds' / kind / f'{kind}.rviz').read_text()
    rviz_images = set(re.findall(r'Value: (/\S+/image_raw)\b', rviz))
    assert rviz_images <= named, sorted(rviz_images - named)


def test_layouts_are_what_the_script_writes() -> None:
    module = _layout_script()
    assert set(module.KINDS) == set(KINDS)
    assert module.main(['--check']) == 0
