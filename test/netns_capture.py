"""Run a command in a network namespace of its own and count the DDS packets it sends out.

    unshare -n python test/netns_capture.py [--unset VAR]... [--set VAR=VALUE]... -- CMD...

Inside the fresh namespace (created by `unshare -n`, so it is ours alone):
loopback up, and a veth pair `rr0`/`rr1` with an address and the default route
on rr0, as a machine's network interface would have. A packet socket on rr1,
the far end, sees every frame that leaves through rr0, as tcpdump would on the
wire. RTPS packets (UDP payloads starting with b'RTPS', Fast DDS's discovery
and data) are counted. Prints one JSON line: {"rc": ..., "rtps": ..., "frames": ...}.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True)


def set_up_network() -> None:
    sh('ip', 'link', 'set', 'lo', 'up')
    sh('ip', 'link', 'add', 'rr0', 'type', 'veth', 'peer', 'name', 'rr1')
    # A documentation-range address of this namespace's own (RFC 5737): the
    # namespace has no route to anywhere, whatever it sends stays in it.
    sh('ip', 'addr', 'add', '192.0.2.1/24', 'dev', 'rr0')
    sh('ip', 'link', 'set', 'rr0', 'up')
    sh('ip', 'link', 'set', 'rr1', 'up')
    sh('ip', 'route', 'add', 'default', 'dev', 'rr0')


def is_rtps(frame: bytes) -> bool:
    if len(frame) < 14:
        return False
    ethertype = struct.unpack('!H', frame[12:14])[0]
    if ethertype == ETH_P_IP and len(frame) >= 34:
        ihl = (frame[14] & 0x0F) * 4
        if frame[23] != socket.IPPROTO_UDP:
            return False
        payload = frame[14 + ihl + 8:]
    elif ethertype == ETH_P_IPV6 and len(frame) >= 62:
        if frame[20] != socket.IPPROTO_UDP:
            return False
        payload = frame[14 + 40 + 8:]
    else:
        return False
    return payload[:4] == b'RTPS'


class Capture:
    def __init__(self, interface: str) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((interface, 0))
        self.frames = 0
        self.rtps = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if not ready:
                if self.done.is_set():
                    return  # stopped, and nothing more arrived for 0.1 s
                continue
            frame = self.sock.recv(65535)
            self.frames += 1
            self.rtps += is_rtps(frame)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(5.0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--unset', action='append', default=[])
    ap.add_argument('--set', action='append', default=[])
    ap.add_argument('--timeout', type=float, default=300.0)
    ap.add_argument('cmd', nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ['--'] else args.cmd
    env = dict(os.environ)
    for name in args.unset:
        env.pop(name, None)
    for item in args.set:
        name, _, value = item.partition('=')
        env[name] = value
    set_up_network()
    capture = Capture('rr1')
    try:
        rc = subprocess.run(cmd, env=env, timeout=args.timeout, stdout=sys.stderr).returncode
    finally:
        capture.stop()
    print(json.dumps({'rc': rc, 'rtps': capture.rtps, 'frames': capture.frames}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
