"""rosbag2's player services (~/pause, ~/seek, ~/burst, ...) over a Timeline."""
from __future__ import annotations

from typing import Any

from rclpy.node import Node
from rosbag2_interfaces import srv

from react_ros.ros.msgs import to_ns
from react_ros.sinks.timeline import Timeline


def make_services(node: Node, timeline: Timeline) -> list[Any]:
    """Offer the services on `node`; callbacks run on whichever thread spins it."""
    tl = timeline

    def pause(req: Any, res: Any) -> Any:
        tl.pause()
        return res

    def resume(req: Any, res: Any) -> Any:
        tl.resume()
        return res

    def toggle(req: Any, res: Any) -> Any:
        tl.toggle_paused()
        return res

    def is_paused(req: Any, res: Any) -> Any:
        res.paused = tl.paused
        return res

    def set_rate(req: Any, res: Any) -> Any:
        res.success = tl.set_rate(req.rate)
        return res

    def get_rate(req: Any, res: Any) -> Any:
        res.rate = tl.rate
        return res

    def seek(req: Any, res: Any) -> Any:
        res.success = tl.seek(to_ns(req.time))
        return res

    def play_next(req: Any, res: Any) -> Any:
        res.success = tl.play_next(1) == 1
        return res

    def burst(req: Any, res: Any) -> Any:
        res.actually_burst = tl.play_next(req.num_messages or None)
        return res

    return [
        node.create_service(srv.Pause, '~/pause', pause),
        node.create_service(srv.Resume, '~/resume', resume),
        node.create_service(srv.TogglePaused, '~/toggle_paused', toggle),
        node.create_service(srv.IsPaused, '~/is_paused', is_paused),
        node.create_service(srv.SetRate, '~/set_rate', set_rate),
        node.create_service(srv.GetRate, '~/get_rate', get_rate),
        node.create_service(srv.Seek, '~/seek', seek),
        node.create_service(srv.PlayNext, '~/play_next', play_next),
        node.create_service(srv.Burst, '~/burst', burst),
    ]
