"""Refactoring changes no bag: every kind's sample, in every --images mode, converts to
the bytes recorded in test/data/bag_digests.json.

The digests were recorded from the code before a dataset became one folder (d669384);
a change that means to alter what a bag holds records them again, in the same commit,
and says why in CHANGELOG.md:

    scripts/ros_env.sh python test/test_bags_unchanged.py --record [KIND ...]

(naming kinds records only theirs and keeps the others' digests).

Two digests per bag: `bytes`, the files as written (chunking, compression, index and
all), and `content`, the MCAP records a reader sees (schemas, channels, messages,
metadata) with the sample's own folder replaced. A bag that holds the sample's absolute
path (mesh URLs) can only be compared by content, as its folder differs per run; so
that a placeholder can stand in for that folder inside a message (whose strings carry
their length), the sample's folder is padded to PATH_LENGTH characters.

The input is a committed copy of each kind's small sample (test/data/samples/KIND.tar.gz,
written by the kind's sample writer when the digests were recorded), not a sample written
afresh: the writers' bytes depend on the machine. libx264 encoded the UMI and React samples
otherwise in one CI run (frames 2 on, same options, same pictures; `issues ci` of stop 44),
OpenBLAS's kernel changes the float data of four kinds (OPENBLAS_CORETYPE=Haswell), and
RoboTwin's HDF5 changes with the number of CPUs. The converter's own bytes are what this
test is for, so it starts from the same bytes everywhere; `--record` writes the copies
again together with the digests.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent
DIGESTS = ROOT / 'data' / 'bag_digests.json'
SAMPLES = ROOT / 'data' / 'samples'
SEED = 7
PATH_LENGTH = 160
# (name, convert arguments): every --images mode with the default compression (auto,
# chosen per channel) and with lz4 in every chunk (the default before auto: these kept
# the digests recorded before it, which the pipelined MCAP writer reproduces), and the
# other two compressions once, on raw images.
MODES = [('raw', ()), ('jpeg', ('--images', 'jpeg')), ('png', ('--images', 'png')),
         ('h264', ('--images', 'h264')), ('raw-none', ('--compression', 'none')),
         ('raw-zstd', ('--compression', 'zstd')), ('raw-lz4', ('--compression', 'lz4')),
         ('jpeg-lz4', ('--images', 'jpeg', '--compression', 'lz4')),
         ('png-lz4', ('--images', 'png', '--compression', 'lz4')),
         ('h264-lz4', ('--images', 'h264', '--compression', 'lz4'))]


def _kinds() -> list[str]:
    from react_ros.registry import BUILTIN
    return [k.name for k in BUILTIN]


def _unpack(archive: Path, folder: Path) -> None:
    assert archive.is_file(), f'{archive}: no committed sample, record it (see the docstring)'
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter='data')


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob('*') if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b'\0' + path.read_bytes())
    return digest.hexdigest()


class Sample:
    """A kind's small sample in a folder of PATH_LENGTH characters: the committed copy, or
    (`write=True`, when recording) one written by the kind's sample writer."""

    def __init__(self, kind: str, out: Path, write: bool = False) -> None:
        from react_ros.registry import KINDS
        desc = KINDS[kind]
        out.mkdir(parents=True, exist_ok=True)
        pad = PATH_LENGTH - len(str(out.resolve() / kind)) - 1
        assert pad >= 0, f'{out} is too long a folder for this test'
        self.folder = out.resolve() / (kind + '_' + 'x' * pad)
        shutil.rmtree(self.folder, ignore_errors=True)
        if write:
            writer = desc.sample_writer()
            assert writer is not None, kind
            written = Path(writer(self.folder, seed=SEED, **desc.small_sample))
            assert written == self.folder, f'{kind}: the sample is {written}, not its folder'
        else:
            _unpack(SAMPLES / f'{kind}.tar.gz', self.folder)
        self.path = self.folder
        self.digest = _tree_digest(self.folder)
        self.episode = ['--episode', desc.demo_episode] if desc.demo_episode else []

    def pack(self, archive: Path) -> None:
        """This sample as `archive`, the same bytes for the same files (no times, no owners)."""
        def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, '', ''
            info.mode = 0o755 if info.isdir() else 0o644
            return info
        archive.parent.mkdir(parents=True, exist_ok=True)
        with open(archive, 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode='w', format=tarfile.PAX_FORMAT) as tar:
            names = sorted(self.folder.rglob('*'))
            tar.add(self.folder, arcname='.', recursive=False, filter=plain)
            for path in names:
                tar.add(path, arcname=str(path.relative_to(self.folder)), recursive=False,
                        filter=plain)

    def convert(self, mode: str, bag: Path) -> dict[str, Any]:
        """Its exit status and the bag's digests. `bag`'s name is in them (files, metadata)."""
        from react_ros import cli
        status = cli.main(['convert', str(self.path), *self.episode, *dict(MODES)[mode],
                           '-o', str(bag), '-q'])
        if status != 0:  # --images on a kind without images: refused, and that is recorded
            return {'status': status}
        files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted(bag.iterdir())}
        return {'status': 0, 'content': self._content_digest(bag),
                'bytes': None if self._holds_folder(bag) else files}

    def _records(self, bag: Path) -> Iterator[Any]:
        from mcap.stream_reader import StreamReader
        for mcap in sorted(bag.glob('*.mcap')):
            with open(mcap, 'rb') as f:
                yield from StreamReader(f, emit_chunks=False).records

    def _content_digest(self, bag: Path) -> str:
        from mcap.records import Attachment, Channel, Message, Metadata, Schema
        folder, placeholder = str(self.folder).encode(), b'R' * len(str(self.folder))
        digest = hashlib.sha256()
        for record in self._records(bag):
            if isinstance(record, (Schema, Channel, Message, Metadata, Attachment)):
                digest.update(repr(record).encode().replace(folder, placeholder))
        digest.update((bag / 'metadata.yaml').read_bytes().replace(folder, placeholder))
        return digest.hexdigest()

    def _holds_folder(self, bag: Path) -> bool:
        from mcap.records import Message
        folder = str(self.folder).encode()
        return any(isinstance(r, Message) and folder in r.data for r in self._records(bag))


@pytest.fixture(scope='module')
def recorded() -> dict[str, Any]:
    digests: dict[str, Any] = json.loads(DIGESTS.read_text())
    return digests


@pytest.fixture(scope='module')
def samples(recorded: dict[str, Any],
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Sample]:
    out = tmp_path_factory.mktemp('samples')
    return {kind: Sample(kind, out) for kind in _kinds()}


def test_every_kind_has_digests(recorded: dict[str, Any]) -> None:
    assert sorted(recorded) == sorted(_kinds()), 'record the digests: see the docstring'


def test_the_samples_are_what_they_were(samples: dict[str, Sample],
                                        recorded: dict[str, Any]) -> None:
    changed = [k for k, s in samples.items() if s.digest != recorded[k]['sample']]
    assert not changed, f'{changed}: the committed sample is not the one the digests are of'


@pytest.mark.parametrize('mode', [m for m, _ in MODES])
@pytest.mark.parametrize('kind', _kinds())
def test_the_bag_is_what_it_was(kind: str, mode: str, samples: dict[str, Sample],
                                recorded: dict[str, Any], tmp_path: Path,
                                capfd: pytest.CaptureFixture[str]) -> None:
    want = recorded[kind][mode]
    if samples[kind].digest != recorded[kind]['sample']:
        pytest.fail('the sample differs (test_the_samples_are_what_they_were)')
    got = samples[kind].convert(mode, _bag(tmp_path, kind, mode))
    capfd.readouterr()
    assert got['status'] == want['status']
    if want['status'] == 0:
        assert got['content'] == want['content'], 'the messages changed'
        assert got['bytes'] == want['bytes'], 'the files changed (same messages)'


def _bag(folder: Path, kind: str, mode: str) -> Path:
    """Where a mode's bag is written; its name is in the digests. An `-lz4` mode names
    its bag as the mode did when lz4 was the default, so that its digests can be those."""
    return folder / mode / f'{kind}-{mode.removesuffix("-lz4")}'


def _record(out: Path, kinds: list[str]) -> None:
    import tempfile
    results: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    unknown = set(kinds) - set(_kinds())
    if unknown:
        sys.exit(f'no such kind: {", ".join(sorted(unknown))}')
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds or _kinds():
            sample = Sample(kind, Path(tmp) / 'samples', write=True)
            sample.pack(SAMPLES / f'{kind}.tar.gz')
            results[kind] = {'sample': sample.digest}
            for mode, _ in MODES:
                results[kind][mode] = sample.convert(mode, _bag(Path(tmp), kind, mode))
                print(kind, mode, results[kind][mode]['status'], file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + '\n')


if __name__ == '__main__':
    if sys.argv[1:2] != ['--record']:
        sys.exit('usage: python test/test_bags_unchanged.py --record [KIND ...]')
    _record(DIGESTS, sys.argv[2:])
