"""File readers must work where no ROS 2 is installed (no rclpy, no message packages):
react_ros.formats (shared), the bag reader and MCAP writing of react_ros.rosbag2 (reader,
chunk_writer, write_behind, direct_file) and every kind's own readers
(react_ros/kinds/<k>/, all but its adapter, its sample and its <name>_streams modules, the
adapter's parts that build messages)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent('''
    import importlib, pkgutil, sys
    from pathlib import Path

    BLOCKED = ('rclpy', 'rosidl_', 'rpyutils', 'builtin_interfaces', 'std_msgs',
               'sensor_msgs', 'geometry_msgs', 'diagnostic_msgs', 'tf2_msgs', 'mcap_ros2')

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0].startswith(BLOCKED):
                raise ImportError(f'{name} is blocked in this test')
            return None

    sys.meta_path.insert(0, Block())
    try:
        import rclpy  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit('the import blocker does not work')

    import react_ros.formats
    import react_ros.kinds
    names = [m.name for m in pkgutil.iter_modules(react_ros.formats.__path__)]
    for name in names:
        importlib.import_module(f'react_ros.formats.{name}')
    for name in ('reader', 'chunk_writer', 'write_behind', 'direct_file'):
        importlib.import_module(f'react_ros.rosbag2.{name}')
        names.append(f'rosbag2.{name}')
    for kind in pkgutil.iter_modules(react_ros.kinds.__path__):
        package = importlib.import_module(f'react_ros.kinds.{kind.name}')
        for m in pkgutil.iter_modules(package.__path__):
            if m.name not in ('adapter', 'sample') and not m.name.endswith('_streams'):
                names.append(f'{kind.name}.{m.name}')
                importlib.import_module(f'react_ros.kinds.{kind.name}.{m.name}')
    from react_ros.formats import video
    from react_ros.formats.mcap_bag import McapBag

    root = Path(sys.argv[1])
    bag = McapBag(root / 'data/episode.mcap')
    n = sum(1 for _ in bag.messages())
    assert n == sum(c.count for c in bag.channels()) > 0
    mp4 = root / 'data/left.perception_interface.camera.state.mp4'
    info = video.probe(mp4)
    first = next(video.decode_rgb(mp4))
    assert first.shape == (info.height, info.width, 3)
    leaked = sorted(m for m in sys.modules if m.split('.')[0].startswith(BLOCKED))
    assert not leaked, leaked
    print('ok', sorted(names))
''')


def test_formats_import_and_work_without_rclpy(umi_episode: Path) -> None:
    proc = subprocess.run([sys.executable, '-c', SCRIPT, str(umi_episode)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('ok')
    missing = set(_readers()) - set(eval(proc.stdout[3:]))
    assert not missing, f'readers not imported without rclpy: {sorted(missing)}'


def _readers() -> list[str]:
    """Every module the script must have imported, found from the files: the shared
    formats and, of each kind's folder, all but adapter.py, sample.py and *_streams.py
    (which build ROS messages), so a new kind's readers are covered with no edit here."""
    from react_ros.registry import KINDS
    formats = Path(__file__).resolve().parents[1] / 'react_ros' / 'formats'
    names = [p.stem for p in formats.glob('*.py') if p.stem != '__init__']
    names += ['rosbag2.reader', 'rosbag2.chunk_writer', 'rosbag2.write_behind',
              'rosbag2.direct_file']
    for name, kind in KINDS.items():
        names += [f'{name}.{p.stem}' for p in kind.folder.glob('*.py')
                  if p.stem not in ('__init__', 'adapter', 'sample')
                  and not p.stem.endswith('_streams')]
    assert any('.' in n for n in names), 'no kind has a reader module: the scan is broken'
    return names
