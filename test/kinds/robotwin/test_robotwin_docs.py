"""docs/robotwin.md lists exactly the topics an episode publishes, and links the pitfalls."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from robotwin_support import EP0, EP1, robotwin_release

from react_ros.registry import open_episode

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / 'docs' / 'robotwin.md'


def _table_topics() -> list[str]:
    """The first cell of every row of the page's topic table."""
    return [m.group(1) for line in PAGE.read_text(encoding='utf-8').splitlines()
            if (m := re.match(r'^\| (/[^ |]*) \|', line))]


def test_the_topic_table_is_what_the_sample_publishes(tmp_path_factory: pytest.TempPathFactory
                                                      ) -> None:
    from react_ros.registry import EpisodeOptions
    from react_ros.kinds.robotwin.adapter import RobotwinOptions
    root = robotwin_release(tmp_path_factory)
    # with every optional topic: flow of step 1 (the table's kK) and tracks (issue 42)
    every = EpisodeOptions(own=RobotwinOptions(flow_step=('1',), tracks=8))
    published = {s.topic for s in open_episode(root / EP0, 'robotwin', every).streams}
    listed = [t.replace('/kK', '/k1') for t in _table_topics()]
    assert len(listed) == len(set(listed)), 'a topic listed twice'
    assert set(listed) == published, (set(listed) ^ published)
    # without _extra, a subset: every topic it publishes is listed too
    assert {s.topic for s in open_episode(root / EP1, 'robotwin').streams} < published
    assert not any('flow' in s.topic for s in open_episode(root / EP0, 'robotwin').streams)


def test_the_page_links_the_pitfalls_table() -> None:
    text = PAGE.read_text(encoding='utf-8')
    link = re.search(r'\]\((\.\./react_ros/kinds/robotwin/PITFALLS\.md)\)', text)
    assert link and (PAGE.parent / link.group(1)).is_file()


def test_the_rviz_config_shows_the_flow_mask_and_the_tracks(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Issue 42: flow in the RViz config as images (the mono8 mask: RViz's Image display
    draws no 32FC2/32FC3) and the track markers; every topic it names is published."""
    import yaml
    from react_ros.registry import KINDS, EpisodeOptions
    from react_ros.kinds.robotwin.adapter import RobotwinOptions
    config = yaml.safe_load(KINDS['robotwin'].rviz_source.read_text())
    named = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            topic = node.get('Topic')
            if isinstance(topic, dict) and isinstance(topic.get('Value'), str):
                named.append((node.get('Class'), topic['Value']))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(config)
    assert ('rviz_default_plugins/Image', '/head_camera/flow_visible/k1') in named
    assert ('rviz_default_plugins/MarkerArray', '/head_camera/tracks/markers') in named
    every = EpisodeOptions(own=RobotwinOptions(flow_step=('1',), tracks=8))
    published = {s.topic for s in open_episode(robotwin_release(tmp_path_factory) / EP0,
                                               'robotwin', every).streams}
    assert {t for _, t in named} <= published, {t for _, t in named} - published
