"""Calling the player's services (sinks/services.py) from a second terminal, bounded."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from rosgraph_msgs.msg import Clock

from react_ros.errors import ReactRosError
from react_ros.ros import qos
from react_ros.ros.msgs import stamp, to_ns
from react_ros.ros.second_terminal import Session, where

# A client is ready once it has matched the server, but the server may match the
# client's response reader a little later and a response sent before that is lost
# (test/live_support.py measured it): wait this long after the first readiness.
MATCH_S = 0.5
RETRY_S = 2.0  # an idempotent request is sent again when no answer came this soon
SEEK_S = 10.0  # the player answers a seek once its publishing thread took it: up to 10 s


class PlayerServices(Session):
    """The player's services under /<node name>/, each called with a bound."""

    def __init__(self, prog: str, player: str, timeout: float) -> None:
        super().__init__(prog, player, timeout)
        self._clients: dict[str, Any] = {}

    def call(self, name: str, srv_type: Any, *, idempotent: bool = True,
             answer_s: float | None = None, **fields: Any) -> Any:
        """The response of /<player>/<name>; ReactRosError when nothing answers in time."""
        # srv_type: a generated service class; rosidl declares no type for its Request
        path = f'/{self.player}/{name}'
        client = self._clients.get(name)
        if client is None:
            client = self._clients[name] = self.node.create_client(srv_type, path)
            if not self.spin_until(client.service_is_ready, self.timeout):
                if not self.player_seen():
                    raise self.no_player()
                raise ReactRosError(f'{path}: the node {self.player} in {where()} does not '
                                    f'offer it within {self.timeout:g} s (not a react-ros '
                                    'player?)')
            self.spin_for(MATCH_S)
        request = srv_type.Request(**fields)
        bound = self.timeout if answer_s is None else answer_s
        futures = [client.call_async(request)]
        answered = lambda: any(f.done() for f in futures)  # noqa: E731
        waited = 0.0
        while not self.spin_until(answered, min(RETRY_S, bound - waited) if idempotent
                                  else bound):
            waited += RETRY_S
            if not idempotent or waited >= bound:
                raise ReactRosError(f'{path} did not answer within {bound:g} s in {where()} '
                                    '(the player busy, or stopping?)')
            futures.append(client.call_async(request))
        return next(f for f in futures if f.done()).result()

    def clock_now(self) -> int:
        """The player's /clock now, in ns (it ticks while paused too)."""
        got: list[Any] = []
        sub = self.node.create_subscription(Clock, '/clock', got.append, qos.CLOCK)
        try:
            if not self.spin_until(lambda: bool(got), self.timeout):
                if not self.player_seen():
                    raise self.no_player()
                raise ReactRosError(f'no /clock in {where()} within {self.timeout:g} s (a '
                                    'player run with --clock 0?): seek to an absolute time')
            return to_ns(got[-1].clock)
        finally:
            self.node.destroy_subscription(sub)

    def seek(self, seconds: Decimal, relative: bool) -> str:
        from rosbag2_interfaces import srv
        target = int(seconds * 1_000_000_000) + (self.clock_now() if relative else 0)
        target = max(0, target)  # before the start is the start anyway
        if not self.call('seek', srv.Seek, idempotent=False, answer_s=self.timeout + SEEK_S,
                         time=stamp(target)).success:
            raise ReactRosError(f'the player refused to seek to {target / 1e9:.9f} s: past the '
                                'end of what it plays')
        return f'seek to {target // 1_000_000_000}.{target % 1_000_000_000:09d} s'


__all__ = ['PlayerServices']
